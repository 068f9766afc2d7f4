"""``python -m armctl.bus.sim_pty URL``: the name README, docs and scripts give ``python -m armctl.sim.pty``
(a simulator served on a pseudo-terminal), kept so they still work."""

from __future__ import annotations

import runpy

if __name__ == "__main__":
    runpy.run_module("armctl.sim.pty", run_name="__main__", alter_sys=True)
