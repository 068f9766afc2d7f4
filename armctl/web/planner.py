"""A page program's preview, parsed and planned in a process of its own, within a time and a memory budget.

Planning a long program takes the Python interpreter for seconds; in the server's own process that would delay the
heartbeats and stops of a moving arm (its other threads wait for the interpreter), and a heartbeat late past the
watchdog stops the arm. A fresh interpreter (``python -m armctl.web.planner``) does the work instead, and the
server only waits on its pipe. Past ``budget_s`` the child is killed and the preview refused (422); its address
space is capped at ``MEMORY_BYTES`` where the OS allows (a MemoryError is refused the same way). The request and
the limits in force in the server (``armctl --limit``) go to the child pickled; the answer comes back as JSON.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

from armctl.core import limits

MEMORY_BYTES = 2 << 30  # the child's address space (numpy and the interpreter take about 0.5 GiB of it)


def preview(body: dict, arm, *, budget_s: float) -> tuple[int, dict]:
    """(HTTP status, JSON reply) of ``api.load_page_program`` + ``api.program_preview`` of ``body`` on ``arm``,
    done in a child process within ``budget_s`` seconds (then 422)."""
    root = str(Path(__file__).resolve().parents[2])  # this armctl, whatever the child's sys.path would find
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    request = pickle.dumps((body, arm, {name: limits.get(name) for name in limits.LIMITS}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "armctl.web.planner"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        out, _ = proc.communicate(request, timeout=budget_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        why = f"planning the program took longer than {budget_s:g} s: refused (split the program), nothing moved"
        return 422, {"ok": False, "error": why}
    try:
        answer = json.loads(out)
        return int(answer["status"]), dict(answer["reply"])
    except (ValueError, KeyError, TypeError):
        why = f"planning the program failed (exit code {proc.returncode}): nothing moved"
        return 422, {"ok": False, "error": why}


def _serve() -> None:
    """The child: one request from stdin, its answer as JSON on stdout."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass  # no such limit here (Windows): the time budget still holds
    from armctl.web import api

    body, arm, limit_values = pickle.loads(sys.stdin.buffer.read())
    for name, value in limit_values.items():
        limits.set_limit(name, value)
    try:
        prog, plan, _ = api.load_page_program(body, arm)
        status, reply = 200, {"ok": True, **api.program_preview(prog, plan)}
    except api.ApiError as exc:
        status, reply = exc.status, exc.body()
    except MemoryError:
        status, reply = 422, {"ok": False, "error": f"planning the program needs more than {MEMORY_BYTES >> 30} GiB"}
    sys.stdout.write(api.finite_json({"status": status, "reply": reply}))
    sys.stdout.flush()


if __name__ == "__main__":
    _serve()
