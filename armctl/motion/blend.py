"""Blending lines: runs of lines that ask for a blend timed as one motion through rounded corners (ChainPath)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from armctl.errors import MotionError
from armctl.ik.branch import arm_branch_ik
from armctl.ik.redundancy import REACH_TOL_M
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_point, unwind
from armctl.motion.lines import LinePath, continuous
from armctl.motion.moves import MIN_TIMING_SEGMENTS, LineMove, MovePlan
from armctl.motion.refusals import outside_limits
from armctl.motion.summary import line_deviation
from armctl.motion.timing import caps_from_joints, profile_for, timed

#: Share of a line's tool acceleration a rounded corner may spend turning (normal, v^2 kappa) and speeding
#: up or slowing down (tangential): 0.6^2 + 0.8^2 = 1, so the tool's acceleration stays within the bound.
BLEND_NORMAL_SHARE = 0.6
BLEND_TANGENT_SHARE = 0.8
#: A corner turning more than 170 degrees is passed at rest (the tool turns back and stops there anyway).
MAX_BLEND_TURN_COS = math.cos(math.radians(170.0))
#: The rounding is drawn to pass this share of ``blend_m`` from the corner: the servos go from sample to sample
#: in joint space, and that chord can bulge a micrometre past the exact curve (seen: 0.67 um at 0.5 mm).
BLEND_MARGIN = 0.98


def corner_reach(d_in: float, d_out: float, u_in, u_out, blend_m: float) -> float:
    """How far (m) before and after a corner its rounding starts and ends.

    The corner between a line of length ``d_in`` along unit vector ``u_in`` and one of length ``d_out``
    along ``u_out`` is replaced by the quadratic Bezier from C - d u_in to C + d u_out with C as its control
    point; its middle passes C at d sin(theta/2) / 2 (theta the turn), the furthest it gets from C. So
    d = 2 blend / sin(theta/2) (with ``BLEND_MARGIN``), at most half of each line (two roundings never overlap).
    """
    c = float(np.clip(np.dot(u_in, u_out), -1.0, 1.0))
    half = math.sqrt(max(0.0, (1.0 - c) / 2.0))  # sin(theta / 2)
    d = 2.0 * BLEND_MARGIN * blend_m / half if half > 1e-12 else math.inf
    return min(d, 0.5 * d_in, 0.5 * d_out)


def _phi_of(path: LinePath, u):
    return path.phi_at(u)


class _Grid:
    """The pieces of a ChainPath as they are added: path parameters, speed caps and accelerations per piece."""

    def __init__(self):
        self.pieces = []  # (kind, index, s0, s1, data)
        self.s_pts, self.caps, self.accs = [], [], []
        self.s0 = 0.0


def _corner_caps(kappa, acc_c: float, v_c: float, chord) -> np.ndarray:
    """The tool speed along a rounding of curvature ``kappa``: within ``v_c`` and BLEND_NORMAL_SHARE of
    ``acc_c`` turning; ``chord`` (m, s): a straight step of that period bulges at most that far inside it."""
    with np.errstate(divide="ignore"):
        v_kappa = np.sqrt(BLEND_NORMAL_SHARE * acc_c / np.maximum(kappa, 1e-300))
    if chord is not None:
        with np.errstate(divide="ignore"):
            v_kappa = np.minimum(v_kappa, np.sqrt(8.0 * chord[0] / np.maximum(kappa, 1e-300)) / chord[1])
    return np.minimum(v_c, v_kappa)


class ChainPath:
    """Consecutive lines with rounded corners, as one path: the path parameter s runs over the pieces
    (line stretches in each line's own units, corners by arc length, or the tool's turn if longer); the
    tool point and angle at any s, and joint angles by closed-form IK on the chain's branch."""

    def __init__(self, arm: Arm, paths: list[LinePath], moves: list[LineMove], chord: dict | None = None):
        """``paths``: the lines as planned alone; ``moves``: their LineMoves (speed, acceleration, segment
        length, blend distance of the corner at each one's end). ``chord``: corner index -> (m, s): the
        tool slowed through that corner so a straight step of that period across the rounding bulges at most
        that far inside it, (v T)^2 kappa / 8 (a servo's steps cut a fast, tight rounding)."""
        self.arm = arm
        self.paths = paths
        n = len(paths)
        dist = [float(np.linalg.norm(p.end - p.start)) for p in paths]
        dirs = [(p.end - p.start) / d for p, d in zip(paths, dist, strict=True)]
        self.reach = [
            corner_reach(dist[i], dist[i + 1], dirs[i], dirs[i + 1], moves[i].blend_m) for i in range(n - 1)
        ]  # d of each corner
        u0 = [0.0] + [self.reach[i - 1] / dist[i] for i in range(1, n)]
        u1 = [1.0 - self.reach[i] / dist[i] for i in range(n - 1)] + [1.0]
        grid = _Grid()
        self.bounds = []  # s where each line hands over to the next (the corner's middle)
        for i, p in enumerate(paths):
            self._add_line(grid, i, p, u0[i], u1[i], moves[i])
            if i == n - 1:
                break
            self._add_corner(grid, i, dirs, u1[i], u0[i + 1], moves[i], moves[i + 1], chord)
        self.pieces = grid.pieces
        self.s = np.concatenate(grid.s_pts)
        self.cap = np.concatenate(grid.caps)
        self.accel = np.concatenate(grid.accs)
        self.length = float(self.s[-1])
        self.side, self.elbow = paths[0].side, paths[0].elbow
        self.q = None
        pts, phi = self.geometry(self.s)
        self.points = pts
        q, excess = self._ik(pts, phi, float(paths[0].q[0, 0]))
        self.excess = excess
        self.q = continuous(q, paths[0].q[0])

    @staticmethod
    def _add_line(grid: _Grid, i: int, p: LinePath, ua: float, ub: float, mv: LineMove) -> None:
        """The straight stretch of line ``i`` (``ua``..``ub`` of it; none between two roundings that meet)."""
        eps = 1e-6 / p.length  # no grid points closer than a micrometre (slopes between them are noise)
        if i == 0 or (ub - ua) > eps:
            grid_u = p.s / p.length
            inner = grid_u[(grid_u > ua + eps) & (grid_u < ub - eps)]
            uu = np.concatenate([[ua], inner, [ub]])
            ss = grid.s0 + (uu - ua) * p.length
            grid.pieces.append(("line", i, grid.s0, float(ss[-1]), (ua, ub)))
            grid.s_pts.append(ss if not grid.s_pts else ss[1:])
            scale = p.speed_scale if p.speed_scale > 0 else 1.0
            grid.caps.append(np.full(len(ss) - (0 if len(grid.caps) == 0 else 1), mv.speed_m_s / scale))
            grid.accs.append(np.full(len(ss) - 1, mv.accel_m_s2 / scale))
            grid.s0 = float(ss[-1])

    def _add_corner(self, grid: _Grid, i: int, dirs, ub: float, u0_next: float, m_in, m_out, chord) -> None:
        """The rounded corner between line ``i`` and line ``i + 1``: a quadratic Bezier, its tool speed capped
        by its curvature (and ``chord``), its tangential acceleration by BLEND_TANGENT_SHARE."""
        p, q = self.paths[i], self.paths[i + 1]
        d = self.reach[i]
        c = p.end
        a, b = c - d * dirs[i], c + d * dirs[i + 1]
        ph_a, ph_b = float(_phi_of(p, ub)), float(_phi_of(q, u0_next))
        ph_c = float(_phi_of(p, 1.0))  # the tool angle at the corner: the control value of its own Bezier
        k = max(MIN_TIMING_SEGMENTS, math.ceil(8 * d / min(m_in.segment_m, m_out.segment_m)))
        t = np.linspace(0.0, 1.0, 8 * k + 1)
        pts = _bezier(a, c, b, t)
        arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])
        arc_len = float(arc[-1])
        turn = float(self.arm.links_m[-1]) * (abs(ph_c - ph_a) + abs(ph_b - ph_c)) if self.arm.n_links == 3 else 0.0
        length = max(arc_len, turn, 1e-12)
        scale = arc_len / length
        tt = t[::8]
        ss = grid.s0 + np.interp(tt, t, arc) / max(arc_len, 1e-300) * length
        acc_c = min(m_in.accel_m_s2, m_out.accel_m_s2)
        v_c = min(m_in.speed_m_s, m_out.speed_m_s)
        vcap = _corner_caps(_bezier_curvature(a, c, b, tt), acc_c, v_c, chord[i] if chord and i in chord else None)
        vcap = vcap / (scale if scale > 0 else 1.0)
        grid.pieces.append(("corner", i, grid.s0, float(ss[-1]), (a, c, b, (ph_a, ph_c, ph_b), t, arc, length)))
        grid.s_pts.append(ss[1:])
        grid.caps.append(vcap[1:])
        grid.caps[-2][-1] = min(grid.caps[-2][-1], vcap[0])
        grid.accs.append(np.full(len(ss) - 1, BLEND_TANGENT_SHARE * acc_c / (scale if scale > 0 else 1.0)))
        self.bounds.append(float(np.interp(0.5, tt, ss)))
        grid.s0 = float(ss[-1])

    def geometry(self, s):
        """Tool points (K, dim) and tool angles (K,) at path parameters ``s``."""
        s = np.asarray(s, dtype=float)
        pts = np.zeros((len(s), len(self.paths[0].start)))
        phi = np.zeros(len(s))
        starts = np.array([pc[2] for pc in self.pieces])
        which = np.clip(np.searchsorted(starts, s, side="right") - 1, 0, len(self.pieces) - 1)
        for j, (kind, i, s0, s1, data) in enumerate(self.pieces):
            m = which == j
            if not np.any(m):
                continue
            f = np.clip((s[m] - s0) / (s1 - s0), 0.0, 1.0) if s1 > s0 else np.zeros(int(m.sum()))
            if kind == "line":
                p = self.paths[i]
                u = data[0] + f * (data[1] - data[0])
                pts[m] = p.start + u[:, None] * (p.end - p.start)
                phi[m] = _phi_of(p, u)
            else:
                a, c, b, (ph_a, ph_c, ph_b), t, arc, _ = data
                tt = np.interp(f * arc[-1], arc, t)
                pts[m] = _bezier(a, c, b, tt)
                # the tool angle along the same quadratic Bezier (its rate along the path is then the
                # lines' at both ends: no jump in any joint's speed where the rounding starts or ends)
                phi[m] = (1 - tt) ** 2 * ph_a + 2 * (1 - tt) * tt * ph_c + tt * tt * ph_b
        return pts, phi

    def _ik(self, pts, phi, base_ref: float):
        arm = self.arm
        ph = None if arm.n_links == 2 else phi
        roll = self.paths[0].roll0 if arm.roll is not None else None  # a blended run keeps its roll
        return arm_branch_ik(arm, pts, ph, self.side, self.elbow, base_ref, roll)

    def at(self, s) -> np.ndarray:
        """Joint angles (rad) at path parameters ``s``, continuous with the grid's."""
        s = np.asarray(s, dtype=float)
        pts, phi = self.geometry(s)
        ref = np.stack([np.interp(s, self.s, self.q[:, j]) for j in range(self.q.shape[1])], axis=-1)
        q, _ = self._ik(pts, phi, float(ref[0, 0]))
        return unwind(q, ref)


def _bezier(a, c, b, t):
    t = np.asarray(t, dtype=float)[:, None]
    return (1 - t) ** 2 * a + 2 * (1 - t) * t * c + t * t * b


def _bezier_curvature(a, c, b, t):
    t = np.asarray(t, dtype=float)[:, None]
    d1 = 2 * (1 - t) * (c - a) + 2 * t * (b - c)
    d2 = np.broadcast_to(2 * (b - 2 * c + a), d1.shape)
    sp = np.linalg.norm(d1, axis=1)
    if d1.shape[1] == 2:
        cross = np.abs(d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0])
    else:
        cross = np.linalg.norm(np.cross(d1, d2), axis=1)
    return np.divide(cross, sp**3, out=np.zeros_like(sp), where=sp > 1e-300)


def _blendable(arm: Arm, a: MovePlan, b: MovePlan, move_a) -> bool:
    """Lines ``a`` then ``b`` may share a rounded corner: both plain lines that move the tool, on one branch,
    and ``a`` asks for a blend without a stop; an arm's wrist roll turning on neither (a turning roll rests there)."""
    if not (isinstance(move_a, LineMove) and move_a.blend_m > 0 and not move_a.stop):
        return False
    pa, pb = a.path, b.path
    if pa is None or pb is None or a.kind != "line" or b.kind != "line":
        return False
    if arm.roll is not None and (pa.droll != 0.0 or pb.droll != 0.0 or pa.roll0 != pb.roll0):
        return False
    da, db = np.linalg.norm(pa.end - pa.start), np.linalg.norm(pb.end - pb.start)
    if da < 1e-9 or db < 1e-9:
        return False
    if np.dot(pa.end - pa.start, pb.end - pb.start) / (da * db) < MAX_BLEND_TURN_COS:
        return False  # turning back (nearly) the way it came: the tool stops there anyway
    return pa.side == pb.side and pa.elbow == pb.elbow


def blend_chain(arm: Arm, moves, plans: list[MovePlan], *, period_s: float, max_joint_step_rad: float):
    """Replace runs of consecutive line plans whose moves ask for a blend (``LineMove.blend_m``) by one timed
    motion through rounded corners (``ChainPath``): the tool passes each shared corner within the blend
    distance, under every limit of the lines (tool speed and acceleration, joint speed and acceleration),
    and comes to rest only at the end of the run. A corner that cannot be rounded (it would leave the
    joint limits or jump between branches) is passed at rest, as without a blend. Returns the new plans
    (one per move, each holding its share of the samples: up to the middle of its end corner)."""
    out = list(plans)
    i = 0
    while i < len(plans):
        j = i
        while j + 1 < len(plans) and _blendable(arm, plans[j], plans[j + 1], moves[j]):
            j += 1
        if j > i:
            done = _blend_run(arm, moves[i : j + 1], plans[i : j + 1], period_s, max_joint_step_rad)
            out[i : j + 1] = done
        i = j + 1
    return out


#: How often a blended run is re-planned with tighter roundings where its sampled trajectory strayed further
#: than ``blend_m`` from the lines (a servo's straight steps between samples cut a tight, fast corner).
BLEND_DEVIATION_TRIES = 6
#: At most this many points measured between each pair of samples there (the worst point of a servo's step
#: across a corner lies where it is as far from both lines, anywhere along the step; the points are 1% of the
#: blend distance apart).
BLEND_CHECK_SUB_MAX = 1024


def _blend_run(arm, moves, plans, period, max_step):
    """One run of blendable lines: split where a corner cannot be rounded, time each part; where the tool,
    measured on the sampled trajectory (joints interpolated linearly between samples, as a servo moves),
    strays further from the lines than a corner's blend distance, that rounding is made tighter and the run
    timed again."""
    blends = [mv.blend_m for mv in moves[:-1]]
    asked = list(blends)
    # each line's own deviation between samples, planned alone (a servo's steps on a small arm): where that is
    # more than the blend distance already, a corner may stray as far as its lines do, no further
    own = [
        line_deviation(arm, mp.q_rad, *mp.line_m, sub=16) if mp.line_m is not None and len(mp.q_rad) > 1 else 0.0
        for mp in plans
    ]
    last: dict = {}  # corner: (its blend, its deviation / allowed) on the try before
    chord: dict = {}  # corners slowed down so the servo's steps cut their rounding less (see ChainPath)
    for _ in range(BLEND_DEVIATION_TRIES):
        tried = [replace(mv, blend_m=b) for mv, b in zip(moves[:-1], blends, strict=True)] + [moves[-1]]
        out, split = _blend_run_once(arm, tried, plans, period, max_step, chord)
        if split:  # cut at a corner that cannot be rounded: each part was planned (and measured) on its own
            return out
        excess = _corner_excess(arm, out, asked, own)
        if not excess:
            return out
        stuck = [i for i in excess if i in last and excess[i] > 0.999 * last[i][1]]
        if len(stuck) == len(excess) and all(i in chord for i in stuck):
            # tighter and slower roundings did not help: the servo's steps are longer than the lines around the
            # corner (a flattened curve's short lines), their chords cut it whatever the rounding; keep the blend
            return out
        now = {}
        for i in stuck:
            if i not in chord:
                # a tighter rounding came out further off (its sharper bend cut more by the servo's straight
                # steps): round at 0.9 of the blend and slow down there so the steps leave the rest to spare
                blends[i] = 0.9 * asked[i]
                chord[i] = ((1.0 - 0.9 * BLEND_MARGIN) * asked[i], period)
                del excess[i]
        for i, ratio in excess.items():
            b = blends[i]
            factor = 0.97 / ratio
            if i in last and last[i][0] > b and last[i][1] > ratio:
                # tightened before and it helped, less than in proportion (the servo's chords cut part of the
                # corner, S-curve re-timing): aim at 0.97 along the slope the two tries show
                slope = (last[i][1] - ratio) / (last[i][0] - b)
                factor = min(factor, max(0.25, 1.0 - (ratio - 0.97) / (slope * b)))
            now[i] = (b, ratio)
            blends[i] = b * factor
        last = now
    return out


def _corner_excess(arm, out: list[MovePlan], blends, own=None) -> dict:
    """Corners (index: deviation / allowed > 1) where the sampled trajectory of a blended run strays further
    from the two lines than the corner's blend distance (or than ``own``, each line's deviation planned alone,
    where that is larger: the servo's chords on the lines themselves, which no rounding changes), measured
    with ``line_deviation`` on the samples of the rounding and one either side, finely between samples.

    Not blend + own: a line's own deviation is that of its fastest steps, mid-line; near a corner it is
    slower and its chords far shorter (seen: 0.5044 mm at blend 0.5 mm, allowed by a line's own 7.7 um)."""
    bad = {}
    for i, b in enumerate(blends):
        a, c = out[i], out[i + 1]
        if b <= 0 or a.line_m is None or c.line_m is None:
            continue
        n = max(2, len(a.q_rad) // 2)
        m = max(2, len(c.q_rad) // 2)
        q = np.concatenate([a.q_rad[-n:], c.q_rad[1:m]])
        # only the rounding (within its reach d of the corner) and a sample either side: elsewhere the samples
        # are on the lines as without a blend (a servo's steps there are the lines' own business)
        (a0, a1), (c0, c1) = (
            (np.asarray(x, dtype=float) for x in a.line_m),
            (np.asarray(x, dtype=float) for x in c.line_m),
        )
        da, dc = float(np.linalg.norm(a1 - a0)), float(np.linalg.norm(c1 - c0))
        if da <= 0 or dc <= 0:
            continue
        d = corner_reach(da, dc, (a1 - a0) / da, (c1 - c0) / dc, b)
        near = np.nonzero(np.linalg.norm(tool_point(arm, q) - a1, axis=1) <= d + 1e-9)[0]
        if len(near) == 0:
            continue
        q = q[max(near[0] - 1, 0) : near[-1] + 2]
        if len(q) < 2:
            continue
        step = float(np.linalg.norm(np.diff(tool_point(arm, q), axis=0), axis=1).max())
        sub = int(min(BLEND_CHECK_SUB_MAX, max(8, math.ceil(step / (0.01 * b)))))
        # the distance to the nearer line changes at most as fast as the tool moves: between two measured
        # points (step / sub apart, nearly) it exceeds the larger by at most half that
        dev = line_deviation(arm, q, *a.line_m, also=[c.line_m], sub=sub) + 0.5 * step / sub
        allowed = b if own is None else max(b, own[i], own[i + 1])
        if dev > allowed * (1.0 + 1e-9):
            bad[i] = dev / allowed
    return bad


def _blend_run_once(arm, moves, plans, period, max_step, chord=None):
    """One run of blendable lines with the blend distances of ``moves``: split where a corner cannot be
    rounded, time each part."""
    paths = [mp.path for mp in plans]
    try:
        chain = ChainPath(arm, paths, moves, chord)
    except (FloatingPointError, ValueError):  # pragma: no cover - degenerate geometry: keep the stops
        return plans, True
    bad = _bad_corners(arm, chain, max_step)
    if bad:
        return _split_run(arm, moves, plans, period, max_step, bad[0])
    sampled = _time_chain(arm, chain, moves, period)
    if sampled is None:  # could not be timed under every limit through the corners: keep the stops
        return plans, True
    q, s_samp = sampled
    q[0], q[-1] = chain.q[0], chain.q[-1]
    if np.any(outside_limits(arm, q)):
        return plans, True  # a joint peaking between grid points: keep the stops
    if len(q) - 1 > sum(len(mp.t_s) - 1 for mp in rest_junctions(arm, plans, period)):
        # slower than stopping at every corner (a corner near a singularity, where the joints' limits slow the
        # rounding down to nearly a stop anyway, and its curvature costs more): that corner is passed at rest
        if len(plans) > 2:
            return _split_run(arm, moves, plans, period, max_step, _slowest_corner(arm, chain, q, s_samp))
        return plans, True
    if arm.zones:  # a rounded corner that cuts into a keep-out zone is passed at rest (each line was checked)
        hit, corner = _zone_corner(arm, chain, q, s_samp)
        if hit:
            return _split_run(arm, moves, plans, period, max_step, corner) if corner is not None else (plans, True)
    return _run_plans(plans, chain, q, s_samp, period), False


def _split_run(arm, moves, plans, period, max_step, k):
    """The run cut at corner ``k``, each side blended on its own: (plans, True)."""
    left = _blend_run(arm, moves[: k + 1], plans[: k + 1], period, max_step) if k > 0 else plans[:1]
    right = (
        _blend_run(arm, moves[k + 1 :], plans[k + 1 :], period, max_step) if len(plans) - k - 1 > 1 else plans[k + 1 :]
    )
    return list(left) + list(right), True


def _time_chain(arm, chain: ChainPath, moves, period):
    """(samples q, their path parameters) of the chain timed as one motion under the tool's and the joints'
    limits (the longest jerk time of the moves); None if it cannot be."""
    limit = arm.max_speed_rad_s
    cap, _ = caps_from_joints(chain.s, chain.q, limit, np.inf)
    cap = np.minimum(cap, chain.cap)
    accel = chain.accel
    profile = profile_for(chain.s, chain.q, arm.max_accel_rad_s2, cap, accel)
    jerk = max(mv.jerk_time_s for mv in moves)
    try:
        _, q, _, s_samp = timed(
            chain.s,
            cap,
            accel,
            chain.at,
            limit,
            period,
            label_kind="blended line",
            jerk_time_s=jerk,
            with_s=True,
            profile=profile,
            keep_caps=True,
            accel_limit=arm.max_accel_rad_s2 if jerk > 0 else None,
        )
    except MotionError:
        return None
    return q, s_samp


def _zone_corner(arm, chain: ChainPath, q, s_samp) -> tuple[bool, int | None]:
    """(True, the corner nearest the first sample in a keep-out zone, or None if the chain has no corner), or
    (False, None) if no sample is in a zone."""
    from armctl.model.zones import first_violation

    v = first_violation(arm, arm.zones, q)
    if v is None:
        return False, None
    s_v = float(np.interp(v.at, np.arange(len(s_samp)), s_samp))
    corners = [(abs(0.5 * (s0 + s1) - s_v), i) for kind, i, s0, s1, _ in chain.pieces if kind == "corner"]
    return True, (min(corners)[1] if corners else None)


def _run_plans(plans, chain: ChainPath, q, s_samp, period) -> list[MovePlan]:
    """The blended samples ``q`` shared out to the run's moves: each up to the middle of its end corner."""
    cuts = [0] + [int(np.searchsorted(s_samp, b)) for b in chain.bounds] + [len(q) - 1]
    cuts = [min(max(c, 0), len(q) - 1) for c in cuts]
    for k in range(1, len(cuts)):
        cuts[k] = max(cuts[k], cuts[k - 1])
    g0 = plans[0].gripper_rad[0]
    out = []
    for k, mp in enumerate(plans):
        a, b = cuts[k], cuts[k + 1]
        qq = q[a : b + 1]
        out.append(
            MovePlan(
                kind="line",
                label=mp.label,
                t_s=np.arange(len(qq)) * period,
                q_rad=qq,
                gripper_rad=np.full(len(qq), g0),
                points_m=mp.points_m,
                segments=mp.segments,
                line_m=mp.line_m,
                slowed=False,
                path=mp.path,
                blended=True,
            )
        )
    return out


def _bad_corners(arm, chain: ChainPath, max_step: float) -> list[int]:
    """Corners (indices) whose rounding leaves the reach or the joint limits, or makes a joint jump."""
    bad = []
    step = np.abs(np.diff(chain.q, axis=0)).max(axis=1)
    outside = outside_limits(arm, chain.q)
    for kind, i, s0, s1, _ in chain.pieces:
        if kind != "corner":
            continue
        m = (chain.s >= s0) & (chain.s <= s1)
        idx = np.nonzero(m)[0]
        if np.any(chain.excess[idx] > REACH_TOL_M) or np.any(outside[idx]) or np.any(step[idx[:-1]] > 2.0 * max_step):
            bad.append(i)
    return bad


def rest_junctions(arm: Arm, plans: list[MovePlan], period_s: float) -> list[MovePlan]:
    """The plans with one more rest sample at the start of a move wherever the sampled acceleration at its
    shared sample with the move before exceeds a joint's limit.

    Each move is timed alone, from rest to rest: its first step from rest and its last step into rest each
    keep within the limits, but where the next move turns a joint back, the two steps add up on the shared
    sample (seen: 1.24x the shoulder's limit between two short lines near full reach). Resting one sample
    there splits them again. Junctions within the limits (every ordinary plan) are left as they are."""
    out = list(plans)
    limit = np.asarray(arm.max_accel_rad_s2, dtype=float) * (1 + 1e-9) * period_s**2
    last = None  # the last step of the trajectory so far
    for j, mp in enumerate(out):
        if len(mp.t_s) < 2:
            continue
        q = mp.q_rad
        first = q[1] - q[0]
        if last is not None and np.any(np.abs(first - last) > limit):
            out[j] = replace(
                mp,
                t_s=np.arange(len(q) + 1) * period_s,
                q_rad=np.concatenate([q[:1], q]),
                gripper_rad=np.concatenate([mp.gripper_rad[:1], mp.gripper_rad]),
            )
        last = q[-1] - q[-2]
    return out


def _slowest_corner(arm, chain: ChainPath, q, s_samp) -> int:
    """The corner (index) that the sampled trajectory ``q`` (at path parameters ``s_samp``) passes slowest: the
    tool's speed at the sample nearest each corner's middle."""
    v = np.linalg.norm(np.diff(tool_point(arm, q), axis=0), axis=1)
    v = np.concatenate([v[:1], np.maximum(v[1:], v[:-1]), v[-1:]])  # at each sample: the faster step either side
    near = [int(np.clip(np.searchsorted(s_samp, b), 0, len(v) - 1)) for b in chain.bounds]
    return int(np.argmin(v[near]))
