"""Compare what a board really did (the virtual Uno's pulse log) with what was planned and commanded.

Shared by the hardware-in-the-loop tests and bench/hil.py. Units: pulse widths
in microseconds, times in simulated microseconds (pulse log) or seconds
(plans), tool points in metres.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # imported as tools.hil_compare (tests) and as hil_compare (bench/hil.py)
    from tools.virtual_uno import Pulse

FRAME_US = 20000.0


@dataclass(frozen=True)
class Frame:
    """The pulses of one servo frame: rising time of the anchor pin and one width per pin (None: no pulse)."""

    t_us: float
    widths_us: tuple[float | None, ...]


def frames_from_pulses(pulses: list[Pulse], pins: list[int], *, window_us: float = 19000.0) -> list[Frame]:
    """Group pulses into servo frames anchored on the first pin's pulses.

    Works for our firmware (channels one after another from 1 ms after each
    boundary) and for the Servo library (pins in attach order every ~20 ms).
    """
    by_pin = {p: [x for x in pulses if x.pin == p] for p in pins}
    frames = []
    idx = dict.fromkeys(pins, 0)
    for a in by_pin[pins[0]]:
        widths = []
        for p in pins:
            seq = by_pin[p]
            i = idx[p]
            while i < len(seq) and seq[i].t_us < a.t_us - 100.0:
                i += 1
            idx[p] = i
            widths.append(seq[i].width_us if i < len(seq) and seq[i].t_us < a.t_us + window_us else None)
        frames.append(Frame(a.t_us, tuple(widths)))
    # the log may end in the middle of a frame (simulator stopped): drop a last frame missing pulses
    while len(frames) >= 2 and sum(w is None for w in frames[-1].widths_us) > sum(
        w is None for w in frames[-2].widths_us
    ):
        frames.pop()
    return frames


# --- what the host commanded (our protocol) -------------------------------------------------------


def host_bytes_from_wire_log(path: str | Path) -> bytes:
    """Every byte the host sent, in order, from an ``armctl --wire-log`` file."""
    out = bytearray()
    for line in Path(path).read_text(encoding="ascii").splitlines():
        if line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1] == ">":
            out += ast.literal_eval(parts[2])
    return bytes(out)


def commanded_frames(
    host_bytes: bytes, *, protocol: int | None = None, channels: int | None = None
) -> list[tuple[float | None, ...]]:
    """Per-frame widths (us) the host's moves ask for, replayed on the Python reference board.

    The board gets every line at once with an unbounded queue and no
    watchdog, so lines naked FULL/SEQ on the real link (and resent later)
    count once, like on the real board. ``protocol`` is the version the host
    spoke (default the newest, our firmware's) and ``channels`` the board's
    (default our firmware's in that version). Returns the frames from the
    first one with any pulse to the end of the last move.
    """
    from armctl.bus import codec
    from armctl.sim.board import Board

    b = Board(protocol=protocol or codec.PROTOCOL_VERSION, channels=channels, depth=10**9, boot=0)
    b.receive(host_bytes, 0.0)
    b.wdog_s, b.wdog_deadline = 0.0, None
    out: list[tuple[float | None, ...]] = []
    k = 0
    while True:
        k += 1
        b.advance_to(k * b.frame_s)
        widths = tuple(None if w is None else w / 2 for w in b.out)
        if out or any(w is not None for w in widths):
            out.append(widths)
        if b.left_frames == 0 and not b.queue and (out or k > 10):
            break
    return out


def match_with_holds(measured: list[tuple], commanded: list[tuple], *, tol_us: float = 1.0):
    """Check that ``measured`` is ``commanded`` played in order, frames possibly repeated (underruns/holds).

    Returns (ok, late, max_error_us, where): ``late`` counts frames repeated
    before the last commanded frame was reached (board underruns; holding
    the last one afterwards is normal), ``where`` names the first frame that
    matches neither the current nor the next commanded frame.
    Every commanded frame must be reached; frames after the last are holds.
    """

    def close(a, b):
        return all((x is None) == (y is None) and (x is None or abs(x - y) <= tol_us) for x, y in zip(a, b))

    def err(a, b):
        return max((abs(x - y) for x, y in zip(a, b) if x is not None and y is not None), default=0.0)

    j, holds, worst = 0, 0, 0.0
    for i, m in enumerate(measured):
        # advance whenever the next commanded frame fits: holding is only the fallback, so a pulse
        # that fits both neighbours (they differ by < 2 tol) never forces a false mismatch later
        if i and j + 1 < len(commanded) and close(m, commanded[j + 1]):
            j += 1
        elif close(m, commanded[j]):
            if i and j + 1 < len(commanded):
                holds += 1
        else:
            return (
                False,
                holds,
                worst,
                f"measured frame {i} {m} matches neither commanded {j} {commanded[j]}"
                + (f" nor {j + 1} {commanded[j + 1]}" if j + 1 < len(commanded) else ""),
            )
        worst = max(worst, err(m, commanded[j]))
    if j != len(commanded) - 1:
        return False, holds, worst, f"only {j + 1} of {len(commanded)} commanded frames were played"
    return True, holds, worst, ""


def from_first_pulse(frames: list[Frame]) -> list[Frame]:
    """Frames from the first one with any pulse (the start of the first move)."""
    for i, f in enumerate(frames):
        if any(w is not None for w in f.widths_us):
            return frames[i:]
    return []


# --- geometry ------------------------------------------------------------------------------------


def _tool(arm_or_links, q: np.ndarray) -> np.ndarray:
    """FK of ``q``: through ``kinematics.tool_point`` for an Arm (a base arm's (x, y, z), a parallelogram's
    linkage), else the planar chain of the link lengths given."""
    from armctl.model.kinematics import fk, tool_point

    if hasattr(arm_or_links, "links_m"):
        return tool_point(arm_or_links, q)
    return fk(arm_or_links, q)


def tool_points(widths_us: np.ndarray, cal, arm_or_links) -> np.ndarray:
    """Tool points (N, 2 or 3) m for joint pulse widths (N, n_joints) us through the calibration and FK
    (``arm_or_links``: an Arm, or a planar arm's link lengths)."""
    return _tool(arm_or_links, cal.values_to_joints(np.asarray(widths_us, dtype=float)))


def planned_path(q_rad: np.ndarray, arm_or_links, *, substeps: int = 8) -> np.ndarray:
    """The planned tool path as a dense polyline (joint-space interpolation between samples)."""
    q = np.asarray(q_rad, dtype=float)
    s = np.linspace(0.0, 1.0, substeps, endpoint=False)
    dense = (q[:-1, None, :] + (q[1:] - q[:-1])[:, None, :] * s[None, :, None]).reshape(-1, q.shape[1])
    dense = np.vstack([dense, q[-1:]])
    return _tool(arm_or_links, dense)


def distance_to_path(points: np.ndarray, path: np.ndarray, *, chunk: int = 64) -> np.ndarray:
    """Shortest distance (m) from each point (N, 2 or 3) to the polyline ``path`` (M, 2 or 3)."""
    a, b = path[:-1], path[1:]
    ab = b - a
    ab2 = np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-30)
    out = np.empty(len(points))
    for k in range(0, len(points), chunk):
        p = points[k : k + chunk, None, :]
        t = np.clip(np.einsum("kij,ij->ki", p - a[None], ab) / ab2, 0.0, 1.0)
        closest = a[None] + t[..., None] * ab[None]
        out[k : k + chunk] = np.sqrt(((p - closest) ** 2).sum(-1)).min(axis=1)
    return out
