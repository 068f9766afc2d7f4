"""An ACT policy with fresh random weights driving the simulated MeArm through lerobot_robot_armctl (run with
LeRobot's python by test_lerobot_rollout.py): ``python act_rollout.py ARM_FILE CALIBRATION SECONDS FPS``.

Each step: LeRobot's observation of the arm, normalised about the middle of the joint ranges, and an environment
state of noise go into the policy (ACT, random weights, no VAE); its action is un-normalised about the middle of
the ranges with 0.8 of each range per unit (so it often leaves them), sent with ``send_action``. Recorded for
the test: every action, whether armctl held it, the pose the arm was commanded to when it came, and afterwards
the simulated board's servo pulses (armsim's log). Prints one JSON line."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.policies.act.configuration_act import ACTConfig
from lerobot.policies.act.modeling_act import ACTPolicy
from lerobot.utils.robot_utils import precise_sleep
from lerobot_robot_armctl import ArmctlRobot, ArmctlRobotConfig


def make_policy(n: int) -> ACTPolicy:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # a small model: torch's thread pool would only spin against the arm's threads
    cfg = ACTConfig(
        input_features={
            "observation.state": PolicyFeature(FeatureType.STATE, (n,)),
            "observation.environment_state": PolicyFeature(FeatureType.ENV, (n,)),
        },
        output_features={"action": PolicyFeature(FeatureType.ACTION, (n,))},
        chunk_size=10,
        n_action_steps=10,
        dim_model=64,
        n_heads=4,
        dim_feedforward=128,
        n_encoder_layers=1,
        n_decoder_layers=1,
        use_vae=False,
        device="cpu",
        pretrained_backbone_weights=None,
    )
    return ACTPolicy(cfg).eval()


def servo_log(robot) -> list:
    """(sim time s, channel, width us) of every pulse change the simulated board made."""

    def read(backend):
        sim = backend.ser.sim
        sim.pump(backend.ser.sim_time_s())
        return [(t, ch, w) for t, ch, w in sim.pulses if w is not None]

    return robot.robot.call(read)


def main(arm_file: str, calibration: str, seconds: float, fps: int) -> None:
    robot = ArmctlRobot(ArmctlRobotConfig(arm=arm_file, port="armsim://", calibration=calibration))
    names = list(robot.action_features)
    arm = robot.arm
    lo = np.degrees(arm.q_min).tolist() + [0.0]
    hi = np.degrees(arm.q_max).tolist() + [100.0]
    mid, half = (np.array(lo) + np.array(hi)) / 2, (np.array(hi) - np.array(lo)) / 2
    policy = make_policy(len(names))
    gen = torch.Generator().manual_seed(1)
    steps, loop_s = [], []
    robot.connect()
    try:
        t_end = time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            t0 = time.perf_counter()
            obs = robot.get_observation()
            state = torch.tensor([(obs[k] - m) / h for k, m, h in zip(names, mid, half)], dtype=torch.float32)
            env = torch.randn(len(names), generator=gen)
            with torch.no_grad():
                out = policy.select_action(
                    {"observation.state": state[None], "observation.environment_state": env[None]}
                )
            action = {k: float(m + 0.8 * 2 * h * v) for k, m, h, v in zip(names, mid, half, out[0].tolist())}
            q_from = np.degrees(robot.source.q_cmd).tolist()
            before = robot.held_actions
            robot.send_action(action)
            steps.append({"action": action, "held": robot.held_actions > before, "q_from_deg": q_from})
            precise_sleep(max(0.0, 1.0 / fps - (time.perf_counter() - t0)))  # as LeRobot's loops wait
            loop_s.append(time.perf_counter() - t0)
        time.sleep(1.0)  # the last steps played
        pulses = servo_log(robot)
        held, refusal = robot.held_actions, robot.source.last_refusal
    finally:
        robot.disconnect()
    print(json.dumps({"steps": steps, "held_actions": held, "last_refusal": refusal, "pulses": pulses,
                      "loop_hz": len(loop_s) / sum(loop_s), "names": names}))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
