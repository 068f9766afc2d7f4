"""``ArmctlTeleop``: an armctl leader arm (``armctl.open_leader``: bus servos moved by hand) as a LeRobot
``Teleoperator``. Each ``get_action`` reads the leader once and maps it onto the follower as ``armctl follow``
does (``armctl.teleop.follow.Teleop``: joint to joint for the same model, else the tool point), giving the
follower's ``<joint>.pos`` in the naming and units ``lerobot_robot_armctl`` takes (``arm_features``).
"""

from __future__ import annotations

import logging

from lerobot.teleoperators.teleoperator import Teleoperator

import armctl
from armctl.calibration.lerobot import open_calibration
from armctl.dataset.recorder import arm_features
from armctl.errors import BadInputError
from armctl.model.arm import load_arm
from armctl.teleop.follow import Teleop

from .config_armctl_teleop import ArmctlTeleopConfig

log = logging.getLogger("armctl.lerobot")


class ArmctlTeleop(Teleoperator):
    """An armctl leader (``ArmctlTeleopConfig``) giving the follower's ``<joint>.pos`` actions."""

    config_class = ArmctlTeleopConfig
    name = "armctl"

    def __init__(self, config: ArmctlTeleopConfig):
        super().__init__(config)
        self.config = config
        if not config.port:
            raise BadInputError("--teleop.port: give the leader arm's port (a device path, or feetechsim://?hand=...)")
        self.arm = load_arm(config.arm)
        self.follower = load_arm(config.follower_arm or config.arm)
        _, self.calibration_path, _ = open_calibration(config.calibration, self.arm)
        fcal, _, _ = open_calibration(config.follower_calibration, self.follower)
        self.features = arm_features(self.follower, fcal)
        same = self.follower.name == self.arm.name and self.follower.joint_names == self.arm.joint_names
        self.map = config.map or ("joints" if same else "tool")
        self.leader = None
        self.teleop: Teleop | None = None

    @property
    def action_features(self) -> dict:
        return dict.fromkeys(self.features.names, float)

    @property
    def feedback_features(self) -> dict:
        return {}

    @property
    def is_connected(self) -> bool:
        return self.leader is not None

    @property
    def is_calibrated(self) -> bool:
        return self.calibration_path is not None and self.calibration_path.is_file()

    def connect(self, calibrate: bool = True) -> None:
        if self.leader is not None:
            raise RuntimeError(f"{self} is already connected")
        if calibrate and not self.is_calibrated:
            self.calibrate()
        cfg = self.config
        self.leader = armctl.open_leader(arm=self.arm, port=cfg.port, calibration=cfg.calibration)
        try:
            self.teleop = Teleop(self.leader, self.follower, map=self.map)
            self.teleop.start(self.follower.home_rad, float("nan"))
            self.configure()
        except BaseException:
            self.disconnect()
            raise
        log.info("%s connected: %s leader on %s (map %s)", self, self.arm.name, cfg.port, self.map)

    def calibrate(self) -> None:
        """armctl calibrates leaders itself: this says how."""
        print(
            f"armctl: calibrate the {self.arm.name!r} leader with `armctl --arm {self.config.arm} --port "
            f"{self.config.port} calibrate` (or use LeRobot's: --teleop.calibration=lerobot:ID)"
        )

    def configure(self) -> None:
        """Nothing to write: ``open_leader`` turned the leader's torque off (it is moved by hand)."""

    def get_action(self) -> dict[str, float]:
        if self.teleop is None:
            raise RuntimeError(f"{self} is not connected")
        tp = self.teleop
        target = tp.target()
        fcal = self.features.calibration
        held = {h.name: h.position_steps + target.held_steps[h.name] for h in fcal.held if h.name in target.held_steps}
        tp.sent(target.leader_t_s, target.q_rad, target.gripper_rad, target, {})
        values = self.features.values(target.q_rad, target.gripper_rad, held or None)
        return {n: float(v) for n, v in zip(self.features.names, values)}

    def send_feedback(self, feedback: dict) -> None:
        """A hand-moved leader takes no feedback."""

    def disconnect(self) -> None:
        leader, self.leader, self.teleop = self.leader, None, None
        if leader is not None:
            leader.close()
