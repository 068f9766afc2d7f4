"""A policy rollout in LeRobot's own loop (run with LeRobot's python by test_lerobot_rollout.py):

    python record_rollout.py policy DIR N W H        # save an ACT policy with fresh random weights in DIR
    python record_rollout.py record OUT.json ARGS... # run `lerobot-record ARGS...`, write what the test checks

``policy``: ACT (random weights, no VAE, no pretrained backbone) for N joint+gripper values and one W x H camera,
its pre/post processors normalising the state about the middle of the MeArm's ranges, and its actions about the
home pose with 0.2 of each range per unit (so they often leave the limits), saved as ``--policy.path`` loads it.
``record``: ``lerobot-record`` itself (its ``main``: parser, plugins, the record loop at --dataset.fps), with
``ArmctlRobot.send_action`` and ``disconnect`` wrapped to note, for the test, each action, whether armctl held
it, the pose the arm was commanded to when it came and LeRobot's loop times; and, before the port closes, the
simulated board's own log of servo pulses (armsim's). Writes them to OUT.json."""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np

#: the camera: the simulated arm's picture, its sensor grain strong (noise=16: 64 gray levels), which makes the
#: random policy's actions random from step to step
CAMERA = "simcam://?size={w}x{h}&fps=0&noise=16"


def save_policy(folder: str, n: int, width: int, height: int) -> None:
    import torch
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    from armctl.model.arm import load_arm

    torch.manual_seed(0)
    arm = load_arm("mearm")
    lo = np.degrees(arm.q_min).tolist() + [0.0]
    hi = np.degrees(arm.q_max).tolist() + [100.0]
    mid, half = (np.array(lo) + np.array(hi)) / 2, (np.array(hi) - np.array(lo)) / 2
    home = np.array(np.degrees(arm.home_rad).tolist() + [50.0])  # a pose inside the linkage's limits
    assert len(mid) == n
    cfg = ACTConfig(
        input_features={
            "observation.state": PolicyFeature(FeatureType.STATE, (n,)),
            "observation.images.front": PolicyFeature(FeatureType.VISUAL, (3, height, width)),
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
    policy = ACTPolicy(cfg).eval()
    with torch.no_grad():  # the action head scaled so its actions, over the pictures it sees, are about 0 +- 1
        head = policy.model.action_head
        head.weight.normal_(0.0, 1.0)
        out = torch.cat([policy.predict_action_chunk(x)[0] for x in at_rest(arm, mid, half, width, height)])
        head.weight /= out.std(dim=0)[:, None]
        head.bias -= out.mean(dim=0) / out.std(dim=0)
    f32 = lambda v: np.asarray(v, dtype=np.float32)  # noqa: E731
    stats = {
        "observation.state": {"mean": f32(mid), "std": f32(half)},
        "action": {"mean": f32(home), "std": f32(0.4 * half)},
        "observation.images.front": {"mean": f32([[[0.5]]] * 3), "std": f32([[[0.25]]] * 3)},
    }
    pre, post = make_pre_post_processors(cfg, dataset_stats=stats)
    policy.save_pretrained(folder)
    pre.save_pretrained(folder)
    post.save_pretrained(folder)


def at_rest(arm, mid, half, width: int, height: int, count: int = 20) -> list[dict]:
    """The policy's normalised inputs with the simulated arm at home: its state and ``count`` of its camera's
    pictures (CAMERA: their sensor grain is the policy's randomness)."""
    import torch

    import armctl
    from armctl.vision.sources import open_camera

    with armctl.connect("mearm") as robot:
        state = np.degrees(robot.where().q_rad).tolist() + [50.0]
        with open_camera(CAMERA.format(w=width, h=height)) as cam:
            pictures = [cam.read()[:, :, ::-1] / 255.0 for _ in range(count)]
    s = torch.tensor((np.array(state) - mid) / half, dtype=torch.float32)[None]
    return [
        {"observation.state": s, "observation.images.front": torch.tensor(((p - 0.5) / 0.25).transpose(2, 0, 1).copy(),
                                                                           dtype=torch.float32)[None]}
        for p in pictures
    ]  # fmt: skip


def servo_log(robot) -> list:
    """(sim time s, channel, width us) of every pulse change the simulated board made."""

    def read(backend):
        sim = backend.ser.sim
        sim.pump(backend.ser.sim_time_s())
        return [(t, ch, w) for t, ch, w in sim.pulses if w is not None]

    return robot.robot.call(read)


def record(out_file: str, argv: list[str]) -> None:
    import torch
    from lerobot.scripts import lerobot_record

    torch.set_num_threads(1)  # a small model: torch's thread pool would only spin against the arm's threads
    from lerobot_robot_armctl import ArmctlRobot

    steps, seen = [], {}
    send, disconnect = ArmctlRobot.send_action, ArmctlRobot.disconnect

    def send_action(self, action):
        q_from = np.degrees(self.source.q_cmd).tolist()
        before = self.held_actions
        sent = send(self, action)
        steps.append(
            {
                "t": time.perf_counter(),
                "action": {k: float(v) for k, v in action.items()},
                "held": self.held_actions > before,
                "q_from_deg": q_from,
            }
        )
        return sent

    def disconnect_(self):
        if self.robot is not None and not self.robot.closed:
            time.sleep(1.0)  # the last steps played
            seen.update(pulses=servo_log(self), held_actions=self.held_actions, refusal=self.source.last_refusal)
        disconnect(self)

    ArmctlRobot.send_action, ArmctlRobot.disconnect = send_action, disconnect_
    sys.argv = ["lerobot-record", *argv]
    lerobot_record.main()
    ts = np.array([s["t"] for s in steps])
    loop_hz = (len(ts) - 1) / (ts[-1] - ts[0]) if len(ts) > 1 else math.nan
    names = list(steps[0]["action"]) if steps else []
    with open(out_file, "w", encoding="utf-8") as f:
        json.dump({"steps": steps, "loop_hz": loop_hz, "names": names, **seen}, f)


if __name__ == "__main__":
    if sys.argv[1] == "policy":
        save_policy(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        record(sys.argv[2], sys.argv[3:])
