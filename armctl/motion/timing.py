"""Timing a path: trapezoid and S-curve speed profiles under speed caps and tool/joint acceleration limits, sampled
and re-timed locally until every sampled joint speed is within its limit."""

from __future__ import annotations

import math

import numpy as np

from armctl.errors import MotionError
from armctl.motion.moves import MAX_MOVE_S, SPEED_MARGIN
from armctl.motion.rows import row_max, row_min
from armctl.motion.trajectory import DEFAULT_PERIOD_S


def speed_profile(s, cap, accel: float):
    """Fastest speeds at path points ``s`` under speed caps ``cap`` and acceleration ``accel`` (one value, or
    one per segment).

    Starts and ends at rest. Between points the acceleration is constant.
    Returns (v (K,), t (K,)): speed at each point and the time it is passed.
    Units are those of ``s`` (m or rad, or 1 for a normalised path) per second.
    """
    s = np.asarray(s, dtype=float)
    ds = np.diff(s)
    u_cap = np.asarray(cap, dtype=float) ** 2
    u_cap[0] = u_cap[-1] = 0.0
    # ``accel`` may be one bound or one per segment (len(s) - 1): v^2 grows by 2 a ds over each
    reach = np.concatenate([[0.0], np.cumsum(2.0 * accel * ds)])  # v^2 gained accelerating from 0
    fwd = reach + np.minimum.accumulate(u_cap - reach)
    back = reach[-1] - reach
    u = back + np.minimum.accumulate((fwd - back)[::-1])[::-1]
    v = np.sqrt(np.maximum(u, 0.0))
    vsum = v[:-1] + v[1:]
    dt = np.divide(2.0 * ds, vsum, out=np.zeros_like(ds), where=vsum > 0)
    return v, np.concatenate([[0.0], np.cumsum(dt)])


def _s_at(t_query, s, v, t):
    """Path parameter at times ``t_query`` for a profile (s, v, t) with constant accel between points."""
    k = np.clip(np.searchsorted(t, t_query, side="right") - 1, 0, len(s) - 2)
    ds = s[k + 1] - s[k]
    acc = np.divide(v[k + 1] ** 2 - v[k] ** 2, 2.0 * ds, out=np.zeros_like(ds), where=ds > 0)
    tau = np.clip(t_query - t[k], 0.0, t[k + 1] - t[k])
    return np.clip(s[k] + v[k] * tau + 0.5 * acc * tau * tau, s[k], s[k + 1])


def check_duration(duration: float, kind: str = "move") -> None:
    if not duration <= MAX_MOVE_S:
        raise MotionError(
            f"this {kind} would take {duration:.4g} s, more than the {MAX_MOVE_S:.0f} s one move may take"
            + ("" if kind == "wait" else "; raise its speed or acceleration")
        )


def sample_times(duration: float, period: float):
    """Sample times covering ``duration`` stretched to whole periods: (local times, profile times)."""
    check_duration(duration)
    k = max(1, math.ceil(duration / period - 1e-9))
    t_local = np.arange(k + 1) * period
    return t_local, t_local * (duration / (k * period))


def s_curve(s, v, t, jerk_time_s: float):
    """Smooth a trapezoid profile (s, v, t) into an S-curve: (times, path parameter) on a fine grid.

    The speed is averaged over a sliding window of ``jerk_time_s``: the
    acceleration then ramps over that time instead of jumping (jerk <= accel /
    jerk_time_s), the peak speed and acceleration do not grow, and the move
    takes ``jerk_time_s`` longer. Starts and ends at rest, on the same path.
    """
    duration = float(t[-1])
    n = max(2, math.ceil(jerk_time_s / min(jerk_time_s / 16, DEFAULT_PERIOD_S / 4)))
    h = jerk_time_s / n
    steps = max(1, math.ceil(duration / h))
    tf = np.arange(steps + 1) * (duration / steps)
    sf = _s_at(tf, s, v, t)
    sf[-1] = s[-1]
    # a moving average of s(t) over the window is the integral of the window-averaged speed
    padded = np.concatenate([np.zeros(n), sf, np.full(n, s[-1])])
    cs = np.concatenate([[0.0], np.cumsum(padded)])
    sm = (cs[n + 1 :] - cs[1 : len(cs) - n]) / n
    sm = sm[: steps + n + 1]
    return np.arange(len(sm)) * (duration / steps), sm


def timed(
    s,
    cap,
    accel,
    q_at,
    speed_limit,
    period,
    *,
    label_kind: str,
    jerk_time_s: float = 0.0,
    with_s: bool = False,
    profile=speed_profile,
    keep_caps: bool = False,
    accel_limit=None,
    durations: list | None = None,
):
    """Time a path and sample it; re-time locally until no sampled joint speed exceeds its limit.

    ``q_at(s)`` gives (K, m) channel angles; ``speed_limit`` (m,) rad/s;
    ``jerk_time_s`` > 0 smooths the trapezoid into an S-curve. ``keep_caps``: the S-curve must keep under the
    speed caps too (a blended chain's corners: averaging the speed over the window lifts it where the caps
    dip, and the turn's v^2 kappa with it), slowed locally where it does not; ``accel_limit`` (m,) rad/s^2: the
    same for each joint's sampled acceleration (nothing changes where every sample is within it);
    ``durations``: a list that gets each speed profile's duration appended (the first is that of ``cap`` as
    given). Returns (t_local, q_samples, slowed).
    """
    cap = np.array(cap, dtype=float)
    cap0 = cap.copy()
    for _ in range(12):
        v, t = profile(s, cap, accel)
        if durations is not None:
            durations.append(float(t[-1]))
        if not t[-1] > 0 and s[-1] > s[0]:  # speeds so small that v^2 vanished against the rounding of accel*s
            raise MotionError(f"the speed or acceleration of this {label_kind} is too small to time it")
        if jerk_time_s > 0 and t[-1] > 0:
            ts, ss = s_curve(s, v, t, jerk_time_s)
            if keep_caps and _lower_caps_under_smoothing(s, cap, cap0, v, ts, ss):
                continue
            t_local, t_prof = sample_times(float(ts[-1]), period)
            s_samp = np.interp(t_prof, ts, ss)
        else:
            t_local, t_prof = sample_times(float(t[-1]), period)
            s_samp = _s_at(t_prof, s, v, t)
        s_samp[0], s_samp[-1] = s[0], s[-1]
        q = q_at(s_samp)
        dq = np.diff(q, axis=0)
        ratio = row_max(np.abs(dq) / period / speed_limit)  # (not .max(axis=1): ~30 us a call on (500, 2))
        too_fast = bool(np.any(ratio > 1.0 + 1e-12))
        if accel_limit is not None and len(q) > 2 and not too_fast:
            # a blended run's S-curve (where averaging lifted the speed through a bend, a joint's q_ss s'^2 grows
            # with it), a free tool angle's profile turning at a knot within one sample: slow down around each
            # sample whose sampled acceleration is over the limit
            acc = row_max(np.abs(dq[1:] - dq[:-1]) / period**2 / accel_limit)  # dq[1:] - dq[:-1]: np.diff(q, 2)
            over = np.nonzero(acc > 1.0 + 1e-9)[0]
            for i in over:
                lo, hi = np.searchsorted(s, [s_samp[i], s_samp[i + 2]])
                sl = slice(max(lo - 2, 0), min(hi + 2, len(s)))
                cap[sl] = np.minimum(cap[sl], v[sl] * 0.99 / acc[i])
            if len(over):
                continue
        if not too_fast:
            return (t_local, q, False, s_samp) if with_s else (t_local, q, False)
        # Slow the path down where a sample interval was too fast, by that much and a bit.
        for i in np.nonzero(ratio > 1.0 + 1e-12)[0]:
            lo, hi = np.searchsorted(s, [s_samp[i], s_samp[i + 1]])
            sl = slice(max(lo - 1, 0), min(hi + 1, len(s)))
            cap[sl] = np.minimum(cap[sl], v[sl] * 0.99 / ratio[i])
    raise MotionError(f"could not time this {label_kind} under the joint speed limits")  # pragma: no cover


def _lower_caps_under_smoothing(s, cap, cap0, v, ts, ss) -> bool:
    """Where the smoothed profile (``ts``, ``ss``) passes a point of the path faster than the caps ``cap0`` of the
    grid points around it allow, lower ``cap`` there (in place) by that much and a bit. True if any was.

    Allowed between two grid points: the squared caps interpolated linearly (what the unsmoothed profile, its
    squared speed linear in s over a segment, can reach there), not the larger cap of the two: a rounding's
    sharpest point is one grid point whose low v^2 kappa cap the larger one hid (seen: the tool at 1.32x its
    acceleration through a 169 degree turn)."""
    vs = np.diff(ss) / np.maximum(np.diff(ts), 1e-300)
    mid = 0.5 * (ss[:-1] + ss[1:])
    allowed = np.sqrt(np.interp(mid, s, cap0 * cap0))
    ratio = vs / np.maximum(allowed, 1e-300)
    over = np.nonzero(ratio > 1.0 + 1e-9)[0]
    if len(over) == 0:
        return False
    for i in over:
        lo, hi = np.searchsorted(s, [ss[i], ss[i + 1]])
        sl = slice(max(lo - 2, 0), min(hi + 2, len(s)))
        cap[sl] = np.minimum(cap[sl], v[sl] * 0.99 / ratio[i])
    return True


def caps_from_joints(s, q, speed_limit, base_cap):
    """Per-point speed cap: ``base_cap`` and, per segment, what keeps every joint under its limit."""
    ds = np.diff(s)
    rate = np.abs(np.diff(q, axis=0)) / np.maximum(ds, 1e-300)[:, None]  # rad per unit s
    return _caps_from_rates(rate, len(s), speed_limit, base_cap)


def _caps_from_rates(rate, k: int, speed_limit, base_cap):
    """``caps_from_joints`` from the segments' |dq/ds| (K-1, m) of a path of ``k`` points."""
    seg_cap = row_min(SPEED_MARGIN * speed_limit / np.maximum(rate, 1e-300))
    seg_cap = np.minimum(seg_cap, base_cap)
    cap = np.full(k, float(base_cap))
    cap[:-1] = np.minimum(cap[:-1], seg_cap)
    cap[1:] = np.minimum(cap[1:], seg_cap)
    return cap, bool(np.any(seg_cap < base_cap * (1 - 1e-9)))


def joint_accel_bounds(s, q, accel_limit, cap, accel):
    """Speed caps (per point) and path accelerations (per segment) that keep every joint's acceleration
    within ``accel_limit`` (rad/s^2) on the path (s, q).

    A joint's acceleration is q_s s'' + q_ss s'^2 (q_s, q_ss its first and second derivatives along s).
    The caps leave at most half of each limit to the curvature term (q_ss cap^2 <= A / 2); each segment's
    path acceleration then keeps |q_s| a + |q_ss| cap^2 <= 0.98 A with the segment's largest cap (the
    speed there is never higher). Where nothing binds, ``cap`` and ``accel`` come back unchanged (the same
    objects), so arms whose joints never reach their limits plan exactly as before.
    """
    s = np.asarray(s, dtype=float)
    q = np.asarray(q, dtype=float)
    A = np.asarray(accel_limit, dtype=float)
    if len(s) < 2:
        return cap, accel
    slope, curv = _derivatives(s, q)
    curv = np.abs(curv)
    cap = np.asarray(cap, dtype=float)
    with np.errstate(divide="ignore"):
        v2 = row_min(0.5 * A / np.maximum(curv, 1e-300))
    new_cap = cap
    if np.any(v2 < cap * cap):
        new_cap = np.minimum(cap, np.sqrt(v2))
    seg_cap2 = np.maximum(new_cap[:-1], new_cap[1:]) ** 2
    seg_curv = np.maximum(curv[:-1], curv[1:])
    room = SPEED_MARGIN * A[None, :] - seg_curv * seg_cap2[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        a_j = row_min(np.where(np.abs(slope) > 1e-300, room / np.abs(slope), np.inf))
    a_j = np.maximum(a_j, 1e-9)
    new_acc = accel
    if np.any(a_j < np.asarray(accel)):
        new_acc = np.minimum(accel, a_j)
    return new_cap, new_acc


def _derivatives(s, q):
    """Per segment dq/ds (K-1, m) and per point d2q/ds2 (K, m) of a path sampled at (s, q)."""
    ds = np.diff(s)
    slope = np.diff(q, axis=0) / np.maximum(ds, 1e-300)[:, None]
    curv = np.zeros_like(q)
    if len(ds) > 1:
        curv[1:-1] = 2.0 * np.diff(slope, axis=0) / np.maximum(ds[:-1] + ds[1:], 1e-300)[:, None]
        curv[0], curv[-1] = curv[1], curv[-2]
    return slope, curv


def joint_accel_profile(s, cap, accel, q, accel_limit):
    """Fastest speeds at path points ``s`` (as ``speed_profile``: caps, path acceleration ``accel``, rest at
    both ends) that also keep each joint's acceleration q_s s'' + q_ss s'^2 within ``accel_limit`` (rad/s^2,
    with the planning margin) at both ends of every segment, the path acceleration constant over each.

    The time-optimal profile's two passes (as in TOPP-RA): backwards, the largest squared speed at each point
    from which the rest of the path can still be braked to rest; forwards, the largest acceleration every
    constraint allows, within that bound. The constraints are linear in the squared speeds of a segment's
    two ends, so each step is a few divisions per joint. Returns (v, t).
    """
    s = np.asarray(s, dtype=float)
    K = len(s)
    ds = np.diff(s).tolist()
    slope, curv = _derivatives(s, np.asarray(q, dtype=float))
    A = (SPEED_MARGIN * np.asarray(accel_limit, dtype=float)).tolist()
    acc = np.broadcast_to(np.asarray(accel, dtype=float), (K - 1,)).tolist()
    U = (np.asarray(cap, dtype=float) ** 2).tolist()
    U[0] = U[-1] = 0.0
    sl, cv = slope.tolist(), curv.tolist()
    m = len(A)

    def upper(hi, alpha, beta, a_lim):
        # -a_lim <= alpha x + beta <= a_lim: the upper bound on x it gives
        if alpha > 1e-300:
            return min(hi, (a_lim - beta) / alpha)
        if alpha < -1e-300:
            return min(hi, (-a_lim - beta) / alpha)
        return hi

    ub = [0.0] * K
    for k in range(K - 2, -1, -1):
        un, h = ub[k + 1], 2.0 * ds[k]
        if h <= 0.0:
            ub[k] = min(U[k], un)
            continue
        hi = min(U[k], un + h * acc[k])  # x = u_k; a = (un - x) / h >= -acc
        for j in range(m):
            g = sl[k][j] / h
            hi = upper(hi, cv[k][j] - g, g * un, A[j])  # at the segment's start
            hi = upper(hi, -g, (g + cv[k + 1][j]) * un, A[j])  # at its end
        ub[k] = max(hi, 0.0)
    u = [0.0] * K
    for k in range(K - 1):
        x, h = u[k], 2.0 * ds[k]
        if h <= 0.0:
            u[k + 1] = min(x, ub[k + 1])
            continue
        hi = min(ub[k + 1], x + h * acc[k])  # y = u_{k+1}; a = (y - x) / h <= acc
        for j in range(m):
            g = sl[k][j] / h
            hi = upper(hi, g, (cv[k][j] - g) * x, A[j])
            hi = upper(hi, g + cv[k + 1][j], -g * x, A[j])
        u[k + 1] = max(hi, 0.0)
    v = np.sqrt(np.maximum(np.array(u), 0.0))
    vsum = v[:-1] + v[1:]
    dsa = np.diff(s)
    dt = np.divide(2.0 * dsa, vsum, out=np.zeros_like(dsa), where=vsum > 0)
    return v, np.concatenate([[0.0], np.cumsum(dt)])


def profile_for(s, q, accel_limit, cap, accel):
    """The speed profile function a path needs: ``speed_profile`` where no joint acceleration limit can
    bind (the very numbers of the planner before joint acceleration limits), else one that keeps
    ``speed_profile``'s answer where it keeps every joint within its limit and otherwise gives
    ``joint_accel_profile``'s."""
    s = np.asarray(s, dtype=float)
    if len(s) < 3:
        return speed_profile
    ds = s[1:] - s[:-1]
    slope = (q[1:] - q[:-1]) / ds[:, None]
    return _profile_of(s, ds, slope, np.abs(slope), q, accel_limit, cap, accel)


def line_caps_and_profile(s, q, speed_limit, base_cap, accel_limit, accel):
    """``caps_from_joints(s, q, speed_limit, base_cap)[0]`` and ``profile_for(s, q, accel_limit, cap,
    accel)`` of one path with the segments' slopes computed once (the same numbers: where every segment is
    longer than 1e-300, the floor caps_from_joints puts under ds changes nothing): (cap, profile)."""
    s = np.asarray(s, dtype=float)
    q = np.asarray(q, dtype=float)
    ds = np.diff(s)
    if len(s) < 3 or not float(ds.min()) >= 1e-300:
        cap, _ = caps_from_joints(s, q, speed_limit, base_cap)
        return cap, profile_for(s, q, accel_limit, cap, accel)
    slope = np.diff(q, axis=0) / ds[:, None]
    rate = np.abs(slope)  # = |dq| / ds, as caps_from_joints divides (the sign does not change a quotient's bits)
    cap, _ = _caps_from_rates(rate, len(s), speed_limit, base_cap)
    return cap, _profile_of(s, ds, slope, rate, q, accel_limit, cap, accel)


def _profile_of(s, ds, slope, rate, q, accel_limit, cap, accel):
    """``profile_for`` given the path's segment lengths ``ds``, slopes dq/ds and their magnitudes ``rate``."""
    A = SPEED_MARGIN * np.asarray(accel_limit, dtype=float)
    # the most any joint could accelerate anywhere on the path: steepest slope at the largest path
    # acceleration plus sharpest bend at the highest speed cap (a quick bound, all joints at once:
    # where it holds, nothing binds; whole-array reductions, as this runs for every line)
    a_max = accel if isinstance(accel, float) else float(np.max(accel))
    bend = float(np.abs(slope[1:] - slope[:-1]).max()) / (0.5 * float((ds[:-1] + ds[1:]).min()))
    if float(rate.max()) * a_max + bend * float(cap.max()) ** 2 <= float(A.min()):
        return speed_profile
    slope, curv = _derivatives(s, q)

    def profile(s_, cap_, acc_):
        v, t = speed_profile(s_, cap_, acc_)
        u = v * v
        a = np.diff(u) / np.maximum(2.0 * np.diff(s_), 1e-300)
        worst = np.maximum(
            np.abs(slope * a[:, None] + curv[:-1] * u[:-1, None]), np.abs(slope * a[:, None] + curv[1:] * u[1:, None])
        )
        if np.all(worst <= A * (1.0 + 1e-9)):
            return v, t
        return joint_accel_profile(s_, cap_, acc_, q, accel_limit)

    return profile
