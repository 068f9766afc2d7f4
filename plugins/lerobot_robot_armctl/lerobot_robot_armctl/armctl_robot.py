"""``ArmctlRobot``: any armctl arm as a LeRobot ``Robot`` (``--robot.type=armctl``), driven through armctl's follow.

At ``connect()`` armctl opens the arm (``armctl.connect``: the port locked, the pose read or restored, no jump)
and starts ``Robot.follow`` on an ``ActionSource``: from then on every ``send_action`` is checked whole
(``lerobot_robot_armctl.actions``: joint and linkage limits, reach, keep-out zones on the way; a refused action
holds the arm and is counted in ``held_actions``, logged once per run of refusals) and becomes the follow's
target, which armctl steps towards within the joint speed limits, holding at the zones frame by frame.
``get_observation`` returns the joints as the servos measure them (as commanded on PWM servos, which cannot
report), in the dataset naming armctl records (``armctl.dataset.recorder.arm_features``), plus camera frames.
"""

from __future__ import annotations

import logging
import math
import time
from functools import cached_property

from lerobot.cameras.utils import make_cameras_from_configs
from lerobot.robots.robot import Robot

import armctl
from armctl.calibration.lerobot import open_calibration
from armctl.dataset.recorder import arm_features
from armctl.errors import ArmctlError
from armctl.model.arm import load_arm
from armctl.teleop import followers

from .actions import ActionSource, follow_actions
from .config_armctl_robot import ArmctlRobotConfig

log = logging.getLogger("armctl.lerobot")


class ArmctlRobot(Robot):
    """An armctl arm (``ArmctlRobotConfig``) as a LeRobot robot; ``held_actions``: the actions armctl refused."""

    config_class = ArmctlRobotConfig
    name = "armctl"

    def __init__(self, config: ArmctlRobotConfig):
        self.arm = load_arm(config.arm)  # an unknown arm: ConfigError (one line) before anything opens
        cal, self.calibration_path, _ = open_calibration(config.calibration, self.arm)
        self.features = arm_features(self.arm, cal)
        # the datasets' robot_type: the arm, as armctl's own datasets name it (LeRobot's so_follower for the SO-101),
        # so that `armctl replay` and a reader of the dataset know which arm it was
        self.name = self.features.robot_type
        super().__init__(config)
        self.config = config
        self.source = ActionSource(self.arm, cal, self.features, self.arm.home_rad, math.nan, map=config.map)
        self.cameras = make_cameras_from_configs(config.cameras)
        self.robot: armctl.Robot | None = None
        self.motion = None
        self._driving: int | None = None  # its token in armctl.teleop.followers while connected

    @cached_property
    def _cameras_ft(self) -> dict[str, tuple]:
        return {k: (c.height, c.width, 3) for k, c in self.config.cameras.items()}

    @property
    def observation_features(self) -> dict:
        return {**dict.fromkeys(self.features.names, float), **self._cameras_ft}

    @property
    def action_features(self) -> dict:
        return dict.fromkeys(self.source.names, float)

    @property
    def held_actions(self) -> int:
        """Actions refused by armctl's checks so far (the arm held where it was)."""
        return self.source.held_actions

    @property
    def is_connected(self) -> bool:
        return (
            self.robot is not None
            and not self.robot.closed
            and self.motion is not None
            and not self.motion.done
            and all(cam.is_connected for cam in self.cameras.values())
        )

    @property
    def is_calibrated(self) -> bool:
        """True: armctl found the arm's calibration (``--robot.calibration``, ``./calibration/<arm>.yaml``, the
        user's folder, else the example shipped with the preset, as ``armctl`` does)."""
        return self.calibration_path is not None and self.calibration_path.is_file()

    def connect(self, calibrate: bool = True) -> None:
        if self.robot is not None:
            raise RuntimeError(f"{self} is already connected")
        if calibrate and not self.is_calibrated:
            self.calibrate()
        cfg = self.config
        self.robot = armctl.connect(cfg.arm, port=cfg.port, backend=cfg.backend, calibration=cfg.calibration)
        try:
            r = self.robot
            self.source, self.motion = follow_actions(r, map=cfg.map, rate_hz=cfg.rate_hz)
            self._driving = followers.driving(r.arm.name, self.source.stands)
            self.features = self.source.features  # (the calibration in the backend's addressing)
            for cam in self.cameras.values():
                cam.connect()
            self.configure()
        except BaseException:
            self.disconnect()
            raise
        log.info("%s connected: %s on %s, calibration %s", self, r.arm.name, r.port, self.calibration_path)

    def calibrate(self) -> None:
        """armctl calibrates its arms itself: this says how (``armctl calibrate``), and which file is in use."""
        cfg = self.config
        port = f" --port {cfg.port}" if cfg.port else ""
        where = f"in use: {self.calibration_path}" if self.is_calibrated else "none found"
        print(
            f"armctl: calibration of {self.arm.name!r} ({where}): run `armctl --arm {cfg.arm}{port} calibrate` "
            f"(or `armctl calibrate --from-lerobot ID` for LeRobot's), then pass --robot.calibration=FILE"
        )

    def configure(self) -> None:
        """Nothing to write: armctl configures the servos when it opens the port (limits from the calibration)."""

    def get_observation(self) -> dict:
        self._check()
        obs = self.source.observation()
        for key, cam in self.cameras.items():
            t0 = time.perf_counter()
            obs[key] = cam.async_read()
            log.debug("%s read %s: %.1f ms", self, key, (time.perf_counter() - t0) * 1e3)
        return obs

    def send_action(self, action: dict) -> dict:
        self._check()
        return self.source.offer(action)

    def _check(self) -> None:
        if self.robot is None or self.motion is None:
            raise RuntimeError(f"{self} is not connected")
        if self.motion.done:  # the follow ended: a lost link, a stop; its error says which
            self.motion.wait()
            raise RuntimeError(f"{self}: armctl's follow ended ({self.motion.stop_reason or 'stopped'})")

    def disconnect(self) -> None:
        m, r = self.motion, self.robot
        self.motion = self.robot = None
        if self._driving is not None:
            followers.stopped(self._driving)
            self._driving = None
        try:
            if m is not None and not m.done:
                m.cancel()
                try:
                    m.wait(timeout=5.0)
                except ArmctlError:
                    pass  # the stop it was asked for
        finally:
            if r is not None:
                r.close()
            for cam in self.cameras.values():
                if cam.is_connected:
                    cam.disconnect()
        s = self.source
        if s.held_actions:
            log.warning(
                "armctl: %d of %d actions refused and held (last: %s)",
                s.held_actions,
                s.held_actions + s.accepted,
                s.last_refusal,
            )
