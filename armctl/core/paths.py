"""Where armctl keeps files, and how it writes them.

- **Config** (the user's own calibrations): ``$ARMCTL_CONFIG_DIR``, else the OS's place for it
  (``platformdirs``): ``$XDG_CONFIG_HOME/armctl`` or ``~/.config/armctl`` on Linux,
  ``~/Library/Application Support/armctl`` on macOS, ``%APPDATA%\\armctl`` on Windows. Calibrations live in
  its ``calibration/`` folder.
- **State** (the pose the arm was left in per port, port locks, the simulated arm's servos):
  ``$ARMCTL_STATE_DIR``, else ``$XDG_STATE_HOME/armctl`` or ``~/.local/state/armctl`` on Linux,
  ``~/Library/Application Support/armctl`` on macOS, ``%LOCALAPPDATA%\\armctl`` on Windows.
  Versions before 0.2 kept it in ``~/.cache/armctl``; poses stored there are still read.
- Presets and their example calibrations ship inside the package (``armctl/presets``).

Every file armctl writes goes through ``atomic_write``: a temporary file in the same folder, fsync,
rename over the old one. A crash leaves the old file or the new one, never half of one, and the
leftover temporary files of a killed write are removed by the next write to that file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from armctl.errors import BadInputError

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # armctl/, above core/
PRESET_DIR = PACKAGE_DIR / "presets"
PRESET_CALIBRATION_DIR = PRESET_DIR / "calibration"


def preset_names() -> list[str]:
    """Names of the built-in arm presets (arm YAML files, and URDFs with their sidecars)."""
    names = {p.stem for p in PRESET_DIR.glob("*.yaml") if not p.name.endswith(".armctl.yaml")}
    return sorted(names | {p.stem for p in PRESET_DIR.glob("*.urdf")})


def _home() -> Path:
    try:
        return Path.home()
    except RuntimeError:  # no $HOME and no passwd entry
        raise BadInputError(
            "no home directory: set ARMCTL_CONFIG_DIR and ARMCTL_STATE_DIR (or HOME) to writable directories"
        ) from None


def _user_dir(env: str, kind: str) -> Path:
    own = os.environ.get(env)
    if own:
        return Path(own)
    import platformdirs

    if kind == "config":  # roaming on Windows (%APPDATA%): a user's calibrations follow them
        path = Path(platformdirs.user_config_dir("armctl", appauthor=False, roaming=True))
    else:  # the pose a port's arm was left in belongs to this machine (%LOCALAPPDATA%)
        path = Path(platformdirs.user_state_dir("armctl", appauthor=False))
    if not path.is_absolute():  # no home: platformdirs answered with "~/..."
        _home()
        raise BadInputError(f"no home directory: set {env} to a writable directory")
    return path


def config_dir() -> Path:
    """The user's armctl configuration folder (see the module docstring)."""
    return _user_dir("ARMCTL_CONFIG_DIR", "config")


def user_calibration_dir() -> Path:
    """Where ``armctl calibrate`` saves calibrations that did not come from a folder of the user's."""
    return config_dir() / "calibration"


def state_dir() -> Path:
    """The folder of armctl's small state files (see the module docstring)."""
    return _user_dir("ARMCTL_STATE_DIR", "state")


def legacy_state_dir() -> Path | None:
    """Where armctl 0.1 kept its state (read only, for the last pose of a port); None if overridden."""
    if os.environ.get("ARMCTL_STATE_DIR"):
        return None
    base = os.environ.get("XDG_CACHE_HOME")
    try:
        return (Path(base) if base else Path.home() / ".cache") / "armctl"
    except RuntimeError:
        return None


def _tmp_prefix(path: Path) -> str:
    return f".{path.name}."


def remove_stale_temporaries(path: Path) -> None:
    """Delete temporary files a killed ``atomic_write`` to ``path`` left behind (best effort)."""
    prefix = _tmp_prefix(path)
    with contextlib.suppress(OSError):
        for leftover in path.parent.glob(f"{prefix}*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _umask() -> int:
    mask = os.umask(0o022)  # (read it by setting it, and put it back at once)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, data: str | bytes, *, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, fsync, rename).

    ``durable`` also fsyncs the folder, so the rename survives a power cut. OSError as the OS gives it.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:  # the file keeps its permissions; a new one gets the usual (0666 less the umask), not mkstemp's 0600
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):  # POSIX (Windows has only a read-only flag: chmod below)
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        if not hasattr(os, "fchmod"):  # after the rename: Windows deletes no read-only file (the leftover's)
            os.chmod(path, mode)
        if durable and os.name == "posix":  # Windows cannot open a folder to fsync it; NTFS logs the rename
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return path
