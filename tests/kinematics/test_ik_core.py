"""The C kernel (armctl.ik._core) gives what the pure-Python solver gives, only faster.

``solve`` and ``solve_batch`` take a C path for DLS without a tool angle, every
case of it: reachable targets (with the nearest-pose slide on 3 links), targets
out of reach, and targets the joint limits block (the start-pose search, the
closest pose inside the limits). The pure-Python path (used when the extension
is not built) is the reference. test_ik.py runs all its tests on both paths;
here they are compared result by result on random arms, targets and start
poses, reachable or not.
"""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from armctl import ik
from armctl.model.arm import Arm, load_arm
from armctl.model.kinematics import fk, plain
from tests.helpers import arm_and_pose, require

CORE = ik.kernel.core


def test_the_c_kernel_is_built():
    require(CORE is not None, "armctl.ik._core is not built (no C compiler at pip install?); IK runs in pure Python")


@pytest.fixture(scope="module")
def core():
    require(CORE is not None, "armctl.ik._core is not built")
    return CORE


def pure_python(fn, *args, **kwargs):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ik.kernel, "core", None)
        return fn(*args, **kwargs)


def same(a, b):
    assert a.ok == b.ok and a.reason == b.reason, (a, b)
    assert a.restarts == b.restarts and a.iterations == b.iterations, (a, b)
    assert np.allclose(a.q, b.q, rtol=0, atol=1e-9), (a.q, b.q)
    assert a.error_m == pytest.approx(b.error_m, abs=1e-12)
    assert a.shortfall_m == pytest.approx(b.shortfall_m, abs=1e-12)


@st.composite
def case(draw):
    """A random 2- or 3-link arm and limits, a start pose inside them, a target near or beyond reach."""
    arm, q0 = draw(arm_and_pose(narrowest_deg=5.0))
    reach = float(sum(arm.links_m))
    target = (draw(st.floats(-1.3 * reach, 1.3 * reach)), draw(st.floats(-1.3 * reach, 1.3 * reach)))
    return arm, target, q0


@settings(max_examples=400, deadline=None)
@given(case())
def test_c_and_python_agree_on_random_arms(core, c):
    arm, target, q0 = c
    same(ik.solve(arm, target, q0=q0), pure_python(ik.solve, arm, target, q0=q0))


@pytest.mark.parametrize("lo", [-math.pi, np.nextafter(-math.pi, 0.0)])
@pytest.mark.parametrize("hi", [math.pi, np.nextafter(math.pi, 0.0)])
def test_c_and_python_break_a_turn_tie_alike(core, lo, hi):
    """The arm folded onto the shoulder (q2 = pi), its limits [-pi, pi] give or take one ulp, from q0 = 0:
    -pi and pi are equally near. Both kernels take the turn nearest by rounding (pi), then clip it onto the
    limits (the C kernel took -pi when the upper limit was one ulp under pi; found by hypothesis)."""
    arm = Arm.from_lengths([1.0, 1.0], q_min_deg=[-5, -180], q_max_deg=[5, 180])
    arm = dataclasses.replace(arm, q_min=np.array([arm.q_min[0], lo]), q_max=np.array([arm.q_max[0], hi]))
    c, py = ik.solve(arm, (0.0, 0.0), q0=np.zeros(2)), pure_python(ik.solve, arm, (0.0, 0.0), q0=np.zeros(2))
    same(c, py)
    assert c.q[1] == py.q[1] == min(math.pi, hi)


def _hard_targets(arm, rng, count):
    """Near-singular poses (the joints after the shoulder within 0.01 rad of straight), targets behind
    the shoulder beyond reach and within it, and points of the reach annulus at random."""
    shoulder = rng.uniform(arm.q_min[:1], arm.q_max[:1], (count, 1))
    near = np.concatenate([shoulder, rng.uniform(-0.01, 0.01, (count, arm.n - 1))], axis=1)
    ang = rng.uniform(math.pi / 2, 3 * math.pi / 2, count)
    r = arm.reach_max * rng.uniform(0.05, 2.0, count)
    r_any = rng.uniform(arm.reach_min, arm.reach_max, count)
    ang_any = rng.uniform(-math.pi, math.pi, count)
    return np.concatenate(
        [
            fk(arm.links_m, np.clip(near, arm.q_min, arm.q_max)),
            np.stack([r * np.cos(ang), r * np.sin(ang)], axis=1),
            np.stack([r_any * np.cos(ang_any), r_any * np.sin(ang_any)], axis=1),
        ]
    )


@pytest.mark.parametrize("name", ["seed-2link", "seed-3link"])
def test_c_and_python_agree_on_the_presets(core, name):
    arm = load_arm(name)
    rng = np.random.default_rng(7)
    q = rng.uniform(arm.q_min, arm.q_max, (300, arm.n))
    edges = [[0.0, 0.0], [arm.reach_max, 0]]
    targets = np.concatenate([fk(arm.links_m, q), rng.uniform(-1.5, 1.5, (100, 2)), edges, _hard_targets(arm, rng, 60)])
    # random start poses, then home (from where the slide has furthest to go)
    starts = rng.uniform(arm.q_min, arm.q_max, (len(targets), arm.n))
    starts[200:] = arm.home_rad
    kinds = set()
    for t, q0 in zip(targets, starts):
        c = ik.solve(arm, t, q0=q0)
        same(c, pure_python(ik.solve, arm, t, q0=q0))
        # every case takes the C path
        assert core.solve(*_arm_args(arm), t, q0, ik.DEFAULT_TOL_M, ik.DEFAULT_MAX_ITER) is not None
        kinds.add("ok" if c.ok else c.reason.split(":")[0])
    assert kinds == {"ok", "unreachable", "no pose inside the joint limits reaches the target"}, kinds


@settings(max_examples=300, deadline=None)
@given(case())
def test_c_takes_every_case(core, c):
    """No finite input leaves the C kernel for the Python path: it returns an answer (ok, out of reach,
    or blocked by the limits) whatever the arm, target and start pose."""
    arm, target, q0 = c
    P = plain(arm)
    assert core.solve(P.links, P.lo, P.hi, target, q0, ik.DEFAULT_TOL_M, ik.DEFAULT_MAX_ITER) is not None


def _arm_args(arm):
    P = plain(arm)
    return P.links, P.lo, P.hi


@pytest.mark.parametrize("name", ["seed-2link", "seed-3link"])
def test_batch_rows_are_the_single_solves(core, name):
    arm = load_arm(name)
    rng = np.random.default_rng(3)
    q = rng.uniform(arm.q_min, arm.q_max, (200, arm.n))
    targets = np.concatenate([fk(arm.links_m, q), rng.uniform(-1.5, 1.5, (50, 2)), _hard_targets(arm, rng, 30)])
    res = ik.solve_batch(arm, targets)
    for i, t in enumerate(targets):
        one = pure_python(ik.solve, arm, t)
        assert bool(res.ok[i]) == one.ok and res.reasons[i] == one.reason, (i, t)
        assert np.allclose(res.q[i], one.q, atol=1e-9), (i, res.q[i], one.q)
        assert res.shortfall_m[i] == pytest.approx(one.shortfall_m, abs=1e-12)
        assert res.error_m[i] == pytest.approx(one.error_m, abs=1e-12)


def test_odd_input_falls_back_to_the_checks(core):
    arm = load_arm("seed-3link")
    P = plain(arm)
    for target, q0 in [((math.nan, 0.1), P.home), ((0.3, 0.2), [0.0, math.inf, 0.0]), ((0.3,), P.home), ("ab", P.home)]:
        assert core.solve(P.links, P.lo, P.hi, target, q0, 1e-9, 100) is None
    assert core.solve(P.links, P.lo, P.hi, (0.3, 0.2), P.home, 1e-9, 10**30) is None  # max_iter beyond a C long


def test_arrays_and_lists_give_the_same_answer(core):
    """Float64 arrays are read from their buffer; any other array (strided, float32, big-endian, ints)
    as a sequence: every form gives the answer its values give as a list."""
    arm = load_arm("seed-3link")
    P = plain(arm)
    q0 = [0.3, -1.2, 0.4]
    for target in (np.array([0.5, 0.3]), np.array([[0.5, 9.0], [0.3, 9.0]])[:, 0], np.array([0.5, 0.25], "f4")):
        for start in (np.array(q0), np.array(q0, ">f8"), np.array([[v, 9.0] for v in q0])[:, 0], np.array([0, -1, 0])):
            got = core.solve(P.links, P.lo, P.hi, target, start, 1e-9, 100)
            want = core.solve(P.links, P.lo, P.hi, target.tolist(), start.tolist(), 1e-9, 100)
            assert got == want


def test_the_kernel_is_the_python_kernel_step_for_step(core):
    rng = np.random.default_rng(11)
    for n in (2, 3):
        for _ in range(300):
            links = list(rng.uniform(0.05, 1.0, n))
            lo = list(rng.uniform(-3.0, -0.1, n))
            hi = list(rng.uniform(0.1, 3.0, n))
            q0 = [float(rng.uniform(a, b)) for a, b in zip(lo, hi)]
            tx, ty = rng.uniform(-1.2, 1.2, 2) * sum(links)
            lam = 0.01 * (links[0] + links[1])
            c = ik.kernel.dls_fast(links, tx, ty, q0, lo, hi, 1e-9, 100, lam)
            p = ik.kernel._dls_py(links, tx, ty, q0, lo, hi, 1e-9, 100, lam)
            assert (c.iterations, c.fk_evals, c.jac_evals) == (p.iterations, p.fk_evals, p.jac_evals)
            assert np.allclose(c.q, p.q, rtol=0, atol=1e-12) and c.err == pytest.approx(p.err, abs=1e-15)
