"""`armctl run` on a terminal, driven as a user would through tmux (send-keys, capture-pane): Space holds,
the progress line says so and stops advancing; + raises the speed override; Enter resumes; q stops with a
line that says how to go on; `run --resume` then finishes the program."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.helpers import require

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "pick_and_place.yaml"


class Tmux:
    def __init__(self, tmp_path: Path):
        self.sock = f"armctl-test-{uuid.uuid4().hex[:8]}"
        self.tmp = tmp_path

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.sock, *args], capture_output=True, text=True, check=True).stdout

    def start(self, command: str) -> None:
        self.tmux("new-session", "-d", "-x", "150", "-y", "30", "-s", "t", command)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-t", "t")

    def wait_for(self, pattern: str, timeout_s: float = 60.0) -> re.Match:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            m = re.search(pattern, self.screen())
            if m:
                return m
            time.sleep(0.1)
        raise AssertionError(f"never saw {pattern!r} on the terminal:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)


def _percent(screen: str) -> float:
    found = re.findall(r"\[\s*([0-9.]+)%\]", screen)
    return float(found[-1]) if found else -1.0


def test_space_holds_plus_speeds_up_enter_resumes_q_stops_then_resume(tmp_path):
    require(shutil.which("tmux") is not None, "tmux is not installed")
    state = tmp_path / "state"
    port = f"armsim://?rate=2&state={tmp_path / 'sim.json'}"
    env = f"ARMCTL_STATE_DIR={shlex.quote(str(state))} PYTHONPATH={shlex.quote(str(ROOT))}"
    python = shlex.quote(sys.executable)
    base = f"cd {shlex.quote(str(ROOT))} && env {env} {python} -m armctl --port {shlex.quote(port)}"
    t = Tmux(tmp_path)
    try:
        t.start(f"{base} run {PROGRAM}; echo EXIT=$?; sleep 60")
        t.wait_for(r"s left")
        t.wait_for(r"\[\s*(1[0-9]|[2-9][0-9])\.[0-9]%\]")  # some way in
        t.keys("Space")
        t.wait_for(r"HELD \(Enter resumes\)", 20)
        time.sleep(0.3)
        held = _percent(t.screen())
        time.sleep(1.0)
        assert _percent(t.screen()) == held, "the progress went on while held"
        for _ in range(5):
            t.keys("+")
        t.wait_for(r"speed 150 %")
        t.keys("Enter")
        deadline = time.monotonic() + 20
        while _percent(t.screen()) <= held and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _percent(t.screen()) > held, "Enter did not resume"
        assert "HELD" not in t.screen().splitlines()[-1]
        time.sleep(0.5)
        t.keys("q")
        stopped = t.wait_for(r"stopped with q in step (\d+) of (\d+)", 20)
        t.wait_for(r"EXIT=130")
        step = int(stopped.group(1))
        assert 1 < step < int(stopped.group(2))
        t.close()
        t = Tmux(tmp_path)
        t.start(f"{base} run {PROGRAM} --resume; echo EXIT=$?; sleep 60")
        t.wait_for(rf"resuming at step {step} of", 30)
        t.wait_for(r"EXIT=0", 120)
        assert "ran " in t.screen()
    finally:
        t.close()
    assert os.path.isdir(state)


def _killed_while_carrying(base_env: dict, port: str) -> None:
    """`run --from-step lift` (the gripper closes first), killed (SIGKILL) while it carries."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "armctl", "--port", port, "run", str(PROGRAM), "--from-step", "lift"],
        cwd=ROOT,
        env=base_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    from armctl.model.arm import load_arm
    from armctl.robot.state import _slots

    closed = load_arm("seed-3link").gripper.closed_rad
    state = Path(base_env["ARMCTL_STATE_DIR"])

    def journaled_closed() -> bool:  # the pose journal (written once a frame while moving): gripper closed
        for path in state.glob("pose-*.bin"):
            slots = _slots(path.read_bytes())
            doc = max(slots, key=lambda s: s[0])[1] if slots else {}
            g = doc.get("gripper_rad")
            if not doc.get("clean", True) and g is not None and abs(g - closed) < 1e-3:
                return True
        return False

    deadline = time.monotonic() + 60
    while not journaled_closed() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # moving on towards the lift, carrying
    proc.kill()
    proc.wait(timeout=30)


def test_after_an_unclean_stop_a_run_says_and_asks_what_it_does_with_the_gripper(tmp_path):
    require(shutil.which("tmux") is not None, "tmux is not installed")
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"), PYTHONPATH=str(ROOT))
    port = f"armsim://?rate=2&state={tmp_path / 'sim.json'}"
    _killed_while_carrying(env, port)
    t = Tmux(tmp_path)
    try:
        python = shlex.quote(sys.executable)
        envs = f"ARMCTL_STATE_DIR={shlex.quote(env['ARMCTL_STATE_DIR'])} PYTHONPATH={shlex.quote(str(ROOT))}"
        where = shlex.quote(str(ROOT))
        t.start(f"cd {where} && env {envs} {python} -m armctl --port {shlex.quote(port)} run {PROGRAM}; sleep 60")
        t.wait_for(r"stopped uncleanly in step \d+ of 31: the gripper is closed: this run starts over at step 1", 30)
        t.wait_for(r"Enter: start over, r: resume there instead, q: quit\?")
        t.keys("r", "Enter")
        t.wait_for(r"resuming at step \d+ of 31: .*the gripper stays closed", 30)
        t.wait_for(r"s left")
        t.keys("q")
        t.wait_for(r"stopped with q in step")
    finally:
        t.close()


def test_after_an_unclean_stop_a_run_not_on_a_terminal_does_not_guess(tmp_path):
    """No terminal (a service, a cron job): no option is refused (starting over would drop the part); --restart
    starts over and says what it does with the gripper."""
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"), PYTHONPATH=str(ROOT))
    port = f"armsim://?rate=2&state={tmp_path / 'sim.json'}"
    _killed_while_carrying(env, port)

    def run(*extra):
        return subprocess.run(
            [sys.executable, "-m", "armctl", "--port", port, "run", str(PROGRAM), *extra],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )

    refused = run()
    assert refused.returncode == 2, refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert "stopped uncleanly in step" in line and "(the gripper is closed)" in line and "nothing moved" in line
    assert (
        "--resume" in line
        and "--from-step" in line
        and "--restart (start over at step 1, turning the gripper open" in line
    )
    done = run("--restart")
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if "--restart" in x)
    assert "the gripper is closed: this run starts over at step 1 and turns it open" in line
