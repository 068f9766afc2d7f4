"""``ArmctlTeleop``: an armctl leader arm (``armctl.open_leader``: bus servos moved by hand), or a gamepad
(``armctl.teleop.gamepad``: ``--teleop.gamepad=0``), as a LeRobot ``Teleoperator``. Each ``get_action`` reads the
leader once and maps it onto the follower as ``armctl follow`` does (``armctl.teleop.follow.Teleop``: joint to joint
for the same model, else the tool point), giving the follower's ``<joint>.pos`` in the naming and units
``lerobot_robot_armctl`` takes (``arm_features``). A gamepad's sticks move the follower's pose at a speed
proportional to their deflection, from where the follower stands (an armctl robot of that arm in this process:
``armctl.teleop.followers``; else its home); let go, the pose stands; unplugged, ``get_action`` raises LinkError.
"""

from __future__ import annotations

import logging
import math

from lerobot.teleoperators.teleoperator import Teleoperator

import armctl
from armctl.calibration.lerobot import open_calibration
from armctl.dataset.recorder import arm_features
from armctl.errors import BadInputError
from armctl.model.arm import load_arm
from armctl.teleop import followers
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
        leaders = [w for w, on in (("--teleop.port", config.port), ("--teleop.gamepad", config.gamepad is not None),
                                   ("--teleop.keyboard", config.keyboard)) if on]  # fmt: skip
        if len(leaders) > 1:
            raise BadInputError(f"{' and '.join(leaders)}: one leader, an arm on a port, a gamepad or the keyboard")
        if not leaders:
            raise BadInputError(
                "--teleop.port: give the leader arm's port (a device path, or feetechsim://?hand=...), "
                "or --teleop.gamepad=0 for a gamepad, or --teleop.keyboard=true for the terminal's keys"
            )
        self.padded = config.gamepad is not None or config.keyboard  # a gamepad or the keyboard leads
        self.arm = load_arm((config.follower_arm or config.arm) if self.padded else config.arm)
        self.follower = load_arm(config.follower_arm or config.arm)
        _, self.calibration_path, _ = open_calibration(config.calibration, self.arm)
        fcal, _, _ = open_calibration(config.follower_calibration, self.follower)
        self.features = arm_features(self.follower, fcal)
        same = self.follower.name == self.arm.name and self.follower.joint_names == self.arm.joint_names
        self.map = config.map or ("joints" if same else "tool")
        self.leader = None
        self.teleop: Teleop | None = None
        self.pad, self.player = None, None  # the gamepad (--teleop.gamepad), and the tests' script playing on it
        self.placed = False  # a pad's start pose is the follower's (read at the first action), not home

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
        if self.padded:
            return True  # a gamepad or a keyboard needs no calibration
        return self.calibration_path is not None and self.calibration_path.is_file()

    def connect(self, calibrate: bool = True) -> None:
        if self.leader is not None:
            raise RuntimeError(f"{self} is already connected")
        if calibrate and not self.is_calibrated:
            self.calibrate()
        cfg = self.config
        if self.padded:
            self._connect_pad()
            return
        self.leader = armctl.open_leader(arm=self.arm, port=cfg.port, calibration=cfg.calibration)
        try:
            self.teleop = Teleop(self.leader, self.follower, map=self.map)
            self.teleop.start(self.follower.home_rad, float("nan"))
            self.configure()
        except BaseException:
            self.disconnect()
            raise
        log.info("%s connected: %s leader on %s (map %s)", self, self.arm.name, cfg.port, self.map)

    def _connect_pad(self) -> None:
        """A gamepad or the keyboard as the leader: its sticks (keys) move the follower's pose (``GamepadLeader``)
        from where it stands (``_place``; home until then), each action the pose it integrates to (``armctl jog
        --gamepad``'s mapping; X, or the key m, switches joint / Cartesian mode)."""
        from armctl.teleop.gamepad import GamepadLeader

        cfg, arm = self.config, self.follower
        if cfg.keyboard:
            from armctl.teleop.keypad import KEYS_HELP, KeyboardPad

            self.pad = KeyboardPad()
            print(f"armctl: the keyboard leads the {arm.name}: {KEYS_HELP}")
        else:
            from armctl.cli.gamepad import script_player
            from armctl.teleop.gamepad import open_gamepad

            self.player = script_player()  # ARMCTL_GAMEPAD_SCRIPT: SDL's virtual joystick, played (the tests)
            device = str(self.player.pad.index) if self.player is not None and not cfg.gamepad else cfg.gamepad
            self.pad = open_gamepad(device or None)
        leader = GamepadLeader(self.pad, arm, speed_mm_s=cfg.gamepad_speed_mm_s)
        grip = arm.gripper
        leader.start(arm.home_rad, grip.open_rad if grip is not None else float("nan"))
        self.leader, self.placed = leader, False
        self.teleop = Teleop(leader, arm, map="joints", on_frame=leader.commanded)
        self.teleop.start(arm.home_rad, leader.g)
        log.info("%s connected: %s %r leading a %s", self, self.pad.index, self.pad.name, arm.name)

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
        if self.pad is not None:
            if not self.placed:
                self._place()
            self._poll_gamepad()
        target = tp.target()
        fcal = self.features.calibration
        held = {h.name: h.position_steps + target.held_steps[h.name] for h in fcal.held if h.name in target.held_steps}
        tp.sent(target.leader_t_s, target.q_rad, target.gripper_rad, target, {})
        values = self.features.values(target.q_rad, target.gripper_rad, held or None)
        return {n: float(v) for n, v in zip(self.features.names, values)}

    def _place(self) -> None:
        """Start the pad from where the follower stands: LeRobot connects the robot after the teleoperator
        (lerobot-teleoperate) or before it (lerobot-record), and reads the robot before the first action."""
        self.placed = True
        stands = followers.standing(self.follower.name)
        if stands is None:
            log.info("%s: no armctl %s connected in this process: the pad starts from home", self, self.follower.name)
            return
        q, g = stands
        g = g if math.isfinite(g) else self.leader.g
        self.leader.start(q, g)
        self.teleop.start(q, g)

    def _poll_gamepad(self) -> None:
        """Read the gamepad or the keys (a script played first, in the tests): X (m) switches joint / Cartesian mode."""
        import time

        if self.player is not None:
            self.player.play(time.monotonic())
        for b in self.pad.poll().presses:
            if b == "x":
                self.leader.set_mode("joints" if self.leader.mode == "tool" else "tool")
                log.info("%s: gamepad in %s mode", self, "joint" if self.leader.mode == "joints" else "Cartesian")

    def send_feedback(self, feedback: dict) -> None:
        """A hand-moved leader takes no feedback."""

    def disconnect(self) -> None:
        leader, self.leader, self.teleop = self.leader, None, None
        pad, self.pad = self.pad, None
        if pad is not None:
            pad.close()
        elif leader is not None:
            leader.close()
