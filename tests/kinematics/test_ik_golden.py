"""Golden IK answers: the solvers give the joint angles they gave before the restructure of issue 22.

``tests/golden/ik_answers.json`` holds, for a fixed seeded set of targets on several presets (reachable,
edge-of-reach, unreachable, on the base axis, bad input), what every public solver answered: ``ik.solve``
with each method, ``ik.solve_batch`` (with and without a tool angle), ``motion.solve_pose`` (its pose or
its exception type and message), the reach checks of ``workspace`` and the closed-form helpers. Angles
and distances are compared to 1e-9. The hypothesis tests compare the one closed-form 2-link solver with
frozen copies of the five it replaced.

The C kernel and the pure-Python one both must give the golden answers. Regenerate (and review the
diff) with ``ARMCTL_UPDATE_GOLDEN=1 pytest tests/kinematics/test_ik_golden.py``.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armctl import ik, motion
from armctl.model import kinematics, workspace
from armctl.model.arm import Arm, load_arm

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "ik_answers.json"
PRESETS = ("seed-2link", "seed-3link", "mearm", "eezybot-mk2", "so101", "braccio")
METHODS = ("dls", "analytic", "newton", "broyden")
ROUND = 10  # decimals kept; compared with ATOL
ATOL = 1e-9
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


# ------------------------------------------------------------------------------------------- the cases


def _targets(arm: Arm, rng) -> list[list[float]]:
    """Reachable (tool points of random poses inside the limits), edge of reach, unreachable, degenerate."""
    out = []
    for _ in range(8):
        q = rng.uniform(arm.q_min, arm.q_max)
        out.append(np.asarray(kinematics.tool_point(arm, q), dtype=float).tolist())
    r = arm.reach_max
    if arm.has_base:
        h = arm.shoulder_height_m
        u = arm.base_offset_m + r
        out += [
            [u * math.cos(0.3), u * math.sin(0.3), h],  # straight out: the rim
            [(u - 1e-7) * math.cos(-0.4), (u - 1e-7) * math.sin(-0.4), h],  # just inside it
            [1.3 * u, 0.2, h + 0.05],  # beyond it
            [-0.5 * u, -0.1, h],  # behind the base
            [0.0, 0.0, h + 0.5 * r],  # on the base axis
            [0.0, 0.0, h + 2.0 * r],  # on the axis, out of reach
            [0.3 * u, 0.1, h - 0.9 * r],  # low down
            [0.05 * u, -0.02, h + 0.1 * r],  # near the axis
        ]
    else:
        out += [
            [r, 0.0],
            [(r - 1e-7) * math.cos(0.7), (r - 1e-7) * math.sin(0.7)],
            [1.25 * r * math.cos(-0.3), 1.25 * r * math.sin(-0.3)],
            [-0.6 * r, -0.2 * r],  # behind the shoulder
            [0.5 * arm.reach_min, 0.0],  # inside the inner rim (or at the shoulder)
            [0.0, 0.0],
            [3.0 * r, 3.0 * r],
        ]
    return out


def _r(x):
    return None if x is None else round(float(x), ROUND) + 0.0


def _rq(q):
    return [_r(v) for v in np.asarray(q, dtype=float).ravel()]


def _res(res) -> dict:
    return {"q": _rq(res.q), "ok": bool(res.ok), "short": _r(res.shortfall_m), "reason": res.reason}


def _call(fn, *a, **kw) -> dict:
    try:
        out = fn(*a, **kw)
    except Exception as exc:  # the exception is the answer: its type and message
        return {"raises": type(exc).__name__, "message": str(exc)}
    return out


def _solve(arm, t, phi, q0, method) -> dict:
    return _res(ik.solve(arm, t, phi=phi, q0=q0, method=method))


def _closed(q):
    return None if q is None else _rq(q)


def _solve_pose(arm, t, phi, q0) -> dict:
    def run():
        return {"q": _rq(motion.solve_pose(arm, t, phi, q0))}

    return _call(run)


def compute(name: str) -> dict:
    """Every golden answer for preset ``name``."""
    arm = load_arm(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    targets = _targets(arm, rng)
    q_rand = [rng.uniform(arm.q_min, arm.q_max).tolist() for _ in targets]
    phis = [None] + ([0.0, -1.2] if arm.n_links == 3 else [])
    cases = []
    for i, t in enumerate(targets):
        case: dict = {"target": _rq(t), "q0": _rq(q_rand[i]), "solve": {}}
        for phi in phis:
            for method in METHODS:
                for start in ("home", "q0"):
                    q0 = None if start == "home" else q_rand[i]
                    key = f"{method}/{start}/{phi}"
                    case["solve"][key] = _call(_solve, arm, t, phi, q0, method)
            case[f"solve_pose/{phi}"] = _solve_pose(arm, t, phi, np.array(q_rand[i]))
        case["check_reachable"] = _call(lambda a, p: {"ok": workspace.check_reachable(a, p)}, arm, t)
        case["shortfall"] = _r(workspace.shortfall(arm, t))
        if arm.layered:
            near = workspace.nearest_reachable(arm, t, None, q_rand[i])
            case["nearest"] = {"point": _rq(near.point_m), "short": _r(near.shortfall_m)}
        cases.append(case)
    batch = {}
    for phi in phis:
        for start in ("home", "q0"):
            q0 = None if start == "home" else np.array(q_rand)
            ph = None if phi is None else np.full(len(targets), phi)
            res = ik.solve_batch(arm, np.array(targets), phi=ph, q0=q0)
            batch[f"{start}/{phi}"] = {
                "q": [_rq(q) for q in res.q],
                "ok": [bool(v) for v in res.ok],
                "short": [_r(v) for v in res.shortfall_m],
                "reasons": list(res.reasons),
            }
    bad = {
        "nan": _call(lambda: _res(ik.solve(arm, [math.nan] * arm.dim))),
        "short": _call(lambda: _res(ik.solve(arm, [0.1]))),
        "method": _call(lambda: _res(ik.solve(arm, targets[0], method="nope"))),
        "batch_nan": _call(lambda: _res(ik.solve_batch(arm, [[math.nan] * arm.dim]))),
    }
    return {"cases": cases, "batch": batch, "bad": bad}


def closed_forms() -> dict:
    """The closed-form helpers on a grid of points: both branches, reach limits, turns inside limits."""
    rng = np.random.default_rng(22)
    pts = np.concatenate([rng.uniform(-1.0, 1.0, (40, 2)), [[0.7, 0.0], [0.1, 0.0], [0.0, 0.0], [0.4, 0.3]]])
    out = {"analytic_2link": [[_rq(s) for s in ik.analytic_2link(0.4, 0.3, x, y)] for x, y in pts.tolist()]}
    for elbow in (1.0, -1.0):
        q1, q2, ex = _two_link_branch(0.4, 0.3, pts[:, 0], pts[:, 1], elbow)
        out[f"ik_two_link/{elbow}"] = [_rq(q1), _rq(q2), _rq(ex)]
    for name in ("mearm", "eezybot-mk2", "braccio", "so101"):
        arm = load_arm(name)
        if arm.n_links != 2:
            continue
        r = arm.reach_max
        uv = rng.uniform(-1.1 * r, 1.1 * r, (40, 2))
        ref = np.array(np.broadcast_to(arm.home_rad, (len(uv), arm.n)))
        qc, found = ik.batch_closed_form(arm, uv[:, 0], uv[:, 1], ref)
        out[f"batch_closed_form/{name}"] = [[_rq(q) if f else None for q, f in zip(qc, found)]]
        P = workspace.plain(arm)
        c = 1 if arm.has_base else 0
        out[f"closed_form_2link/{name}"] = [
            _closed(workspace.closed_form_2link(P, u, v, ref[0, c], ref[0, c + 1])) for u, v in uv.tolist()
        ]
    return out


def _all() -> dict:
    return {"presets": {name: compute(name) for name in PRESETS}, "closed_forms": closed_forms()}


# ------------------------------------------------------------------------------------------- comparison


def _same(new, old, where: str) -> None:
    if isinstance(old, dict):
        assert isinstance(new, dict) and new.keys() == old.keys(), f"{where}: keys {sorted(new)} != {sorted(old)}"
        for k in old:
            _same(new[k], old[k], f"{where}/{k}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), f"{where}: {new} != {old}"
        for i, (a, b) in enumerate(zip(new, old)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(old, float) and isinstance(new, float):
        assert abs(new - old) <= ATOL or (math.isnan(new) and math.isnan(old)), f"{where}: {new!r} != {old!r}"
    else:
        assert new == old, f"{where}: {new!r} != {old!r}"


def test_golden_ik_answers(kernel):
    new = _all()
    if os.environ.get("ARMCTL_UPDATE_GOLDEN") == "1" and kernel == "c":
        text = json.dumps(new, indent=1, sort_keys=True)
        # lists of numbers on one line each: a reviewable diff
        text = re.sub(r"\[[-0-9.e,\s]*\]", lambda m: " ".join(m.group(0).split()), text)
        GOLDEN.write_text(text + "\n")
    old = json.loads(GOLDEN.read_text())
    _same(json.loads(json.dumps(new)), old, "ik")


# ------------------------------------------------------------------------------------------- frozen closed forms


def _two_link_branch(l1, l2, x, y, elbow):
    """The elbow-branch closed form the line paths use (``branch_ik``), as (q1, q2, excess)."""
    _, ((q1, q2),) = kinematics.two_link_batch(l1, l2, x, y, (elbow,), snap=0.0)
    return q1, q2, kinematics.annulus_excess(np.sqrt(x * x + y * y), abs(l1 - l2), l1 + l2)


def frozen_analytic_2link(l1, l2, x, y):
    """``ik.analytic_2link`` as it was before issue 22."""
    r2 = x * x + y * y
    c2 = (r2 - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)
    if c2 > 1.0 + 1e-12 or c2 < -1.0 - 1e-12:
        return []
    c2 = min(1.0, max(-1.0, c2))
    s2 = 0.0 if 1.0 - abs(c2) < 1e-12 else math.sqrt(1.0 - c2 * c2)
    base = math.atan2(y, x)
    elbow, off = math.atan2(s2, c2), math.atan2(l2 * s2, l1 + l2 * c2)
    if not s2 > 0.0:
        return [(base - off, elbow)]
    return [(base + off, -elbow), (base - off, elbow)]


def frozen_ik_two_link(l1, l2, x, y, elbow):
    """``motion._ik_two_link`` (``branch_ik._ik_two_link``) as it was before issue 22."""
    r2 = x * x + y * y
    r = np.sqrt(r2)
    excess = np.maximum(r - (l1 + l2), abs(l1 - l2) - r)
    c2 = np.clip((r2 - l1 * l1 - l2 * l2) / (2.0 * l1 * l2), -1.0, 1.0)
    q2 = elbow * np.arccos(c2)
    q1 = np.arctan2(y, x) - np.arctan2(l2 * np.sin(q2), l1 + l2 * np.cos(q2))
    return q1, q2, excess


LINK = st.floats(0.02, 1.0)
COORD = st.floats(-2.5, 2.5)


@SETTINGS
@given(LINK, LINK, COORD, COORD)
def test_analytic_2link_as_frozen(l1, l2, x, y):
    new = kinematics.two_link(l1, l2, x, y)
    old = frozen_analytic_2link(l1, l2, x, y)
    assert len(new) == len(old)
    for a, b in zip(new, old):
        assert a == pytest.approx(b, abs=1e-12)


@SETTINGS
@given(LINK, LINK, st.lists(st.tuples(COORD, COORD), min_size=1, max_size=8), st.sampled_from([1.0, -1.0]))
def test_two_link_branch_as_frozen(l1, l2, pts, elbow):
    p = np.array(pts)
    q1, q2, ex = _two_link_branch(l1, l2, p[:, 0], p[:, 1], elbow)
    f1, f2, fex = frozen_ik_two_link(l1, l2, p[:, 0], p[:, 1], elbow)
    np.testing.assert_allclose(ex, fex, atol=1e-12)
    # the same tool point (the angles themselves are ill-conditioned where the arm is straight or folded)
    for a1, a2, b1, b2 in zip(q1, q2, f1, f2):
        pa = kinematics.fk([l1, l2], [a1, a2])
        pb = kinematics.fk([l1, l2], [b1, b2])
        assert np.allclose(pa, pb, atol=1e-9)
        assert math.copysign(1.0, a2) == math.copysign(1.0, b2) or abs(a2) < 1e-6 or abs(a2 - math.pi) < 1e-6
