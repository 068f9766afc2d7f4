"""What ``connect`` opens: the arm, its calibration, the backend and the port an arm, a port and a calibration
mean (the default port: the backend's simulated board)."""

from __future__ import annotations

import sys
import urllib.parse
from pathlib import Path

from armctl.bus.backend import Backend, backend_class
from armctl.bus.simulators import check_simulator_port, scheme_backend
from armctl.calibration.lerobot import open_calibration
from armctl.calibration.servo import Calibration
from armctl.core.paths import PRESET_CALIBRATION_DIR, state_dir
from armctl.errors import BadInputError
from armctl.model.arm import Arm, load_arm

DEFAULT_ARM = "seed-3link"
#: the simulators that take ``arm`` and ``cal`` options (the arm their servos move)
SIMULATED_ARMS = ("armsim", "feetechsim", "pca9685sim")


def default_port(arm: Arm, cal_path: Path, backend: type[Backend]) -> str:
    """The simulated board of ``backend`` for ``arm``, keeping its servos in the state folder between runs;
    BadInputError if that backend has no simulator (give --port)."""
    url = backend.simulator_url(arm, cal_path, state_dir() / f"{backend.simulator}-{arm.name}.json")
    if url is None:
        raise BadInputError(f"the {backend.name} backend has no simulated board: give --port (a device path)")
    return url


def sim_port_for(port: str, arm: Arm, cal_path: Path) -> str:
    """An armsim:// URL without an arm gets the robot's arm and calibration, so the simulation matches; so does a
    feetechsim:// or pca9685sim:// URL with a truth file (``truth=``: the simulator applies it to the arm)."""
    parts = urllib.parse.urlsplit(port)
    if parts.scheme not in SIMULATED_ARMS or parts.netloc or parts.path.strip("/"):
        return port
    query = urllib.parse.parse_qs(parts.query)
    if parts.scheme != "armsim" and "truth" not in query:
        return port
    extra = {}
    if "arm" not in query:
        extra["arm"] = arm.ref
    if "cal" not in query:
        extra["cal"] = str(_hardware_calibration(arm, cal_path) if "truth" in query else cal_path)
    if not extra:
        return port
    sep = "&" if parts.query else ""
    return f"{parts.scheme}://?{parts.query}{sep}{urllib.parse.urlencode(extra, safe=',/')}"


def _hardware_calibration(arm: Arm, cal_path: Path) -> Path:
    """The calibration a truth file is written against: the example shipped with the arm's preset (the hardware as
    it came), so that a new calibration changes what armctl believes and not the simulated arm; the robot's own
    where the arm has none."""
    shipped = PRESET_CALIBRATION_DIR / f"{arm.name}.yaml"
    return shipped if shipped.is_file() else cal_path


def resolve(arm, port, backend, calibration):
    """(Arm, Calibration, its path, backend class, port URL) as ``connect`` opens them: the one place that
    says which port an arm, a port and a calibration mean (``Watch`` finds the same pose files by it)."""
    arm_obj = arm if isinstance(arm, Arm) else load_arm(arm)
    if isinstance(calibration, Calibration):
        cal, cal_path = calibration, Path(calibration.source)
    else:  # an armctl YAML, or LeRobot's (lerobot:ID, FILE.json) as the armctl calibration it means
        cal, cal_path, notes = open_calibration(calibration, arm_obj)
        for note in notes:
            print(f"armctl: note: {note}", file=sys.stderr)
    cal.check_arm(arm_obj)
    arm_obj = cal.corrected_arm(arm_obj)  # a camera calibration's measured lengths (version 2), if any
    if backend is None:  # by the port (an I2C bus), else the bus the arm's servos speak, else the calibration's kind
        bus = arm_obj.drive.protocol or "feetech"  # a Koch's XL430s: dynamixel; an SO-101's STS3215s: feetech
        backend = scheme_backend(port) or (bus if cal.unit == "steps" else "armctl")
    cls = backend if isinstance(backend, type) and issubclass(backend, Backend) else backend_class(backend)
    if cal.unit != cls.servo_unit:
        kind = {"us": "hobby (PWM) servos", "steps": "serial bus servos"}
        raise BadInputError(
            f"the {cls.name} backend drives {kind.get(cls.servo_unit, cls.servo_unit)}, but calibration "
            f"{cal_path} is for {kind.get(cal.unit, cal.unit)}: give the arm of those servos (--arm so101, koch, "
            "omx: bus servos) or its calibration, or the --backend of that board"
        )
    if port is not None and not str(port).strip():
        raise BadInputError("--port: empty; give a device path or URL, or leave it out for the simulated arm")
    if port is not None:
        check_simulator_port(str(port), cls)  # a simulator of other servos would only time out
    if port is None and isinstance(arm, Arm) and Path(arm.source).suffix not in (".yaml", ".yml", ".urdf"):
        raise BadInputError("the simulated arm needs an arm preset or file; this Arm was built in code: pass port=")
    url = sim_port_for(str(port), arm_obj, cal_path) if port is not None else default_port(arm_obj, cal_path, cls)
    return arm_obj, cal, cal_path, cls, url
