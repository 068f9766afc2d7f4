"""Keep-out zones: the table, boxes on the bench and the arm's own base, checked against the links as capsules.

A ``Zones`` holds the zones (``Zone``: a table plane, an axis-aligned box, the base's column) and the
capsule radii: every link is a capsule of ``link_radius_m`` around its segment, except that the last link
narrows to ``tool_radius_m`` at the tool point (default 0: the tool may touch the paper or the part it
picks). The base zone is checked against every link but the first, which is mounted on it.

``first_violation`` checks a whole motion, given as joint-angle samples between which each joint moves
linearly (as a servo does between frames): not only at the samples. Between two samples no point of a link
moves further than ``D = sum_i |dq_i| R_i`` (R_i: how far joint i's axis is from the furthest link point it
moves), and clearance changes no faster than the points move, so an interval whose end clearances ca, cb
have ca + cb > D is clear throughout; others are halved until they are (or a pose inside a zone is found,
or D < ``RESOLUTION_M``: a graze of at most that much is taken as touching).

A motion that starts with a link already inside a zone (the arm was left there, or the zones were added
around it) may only take that link out: its depth in that zone must not grow along the motion until it is
out (checked at poses no link point moves more than ``ESCAPE_STEP_M`` apart, so between them it may grow by
at most half that), and once out it must not go back in (the rule above). Every other link and zone: the
rule above from the start. ``Violation.inside_m`` > 0 says a refusal is of this kind.

Coordinates are the arm's: (x, y) with y up on a planar arm, (x, y, z) with z up on an arm with a base.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from armctl.core.config import Section
from armctl.errors import ZoneError
from armctl.model import capsule
from armctl.model.kinematics import arm_points, chain_angles, joint_positions

DEFAULT_LINK_RADIUS_M = 0.010
#: Clearance below -TOUCH_M is a violation; a link touching a zone (clearance 0) is not.
TOUCH_M = 1e-7
#: Intervals of a motion are halved until their points move less than this (m).
RESOLUTION_M = 1e-6
#: Clearances surely above this are taken as their lower bound (enough to prove a stretch clear).
FAR_M = 0.02
#: A link that starts a motion inside a zone has its depth checked at poses this far apart at most (m).
ESCAPE_STEP_M = 0.001


@dataclass(frozen=True)
class Zone:
    """One keep-out region: ``kind`` table (everything below ``level``), box (``lo``..``hi``) or base (the
    column of ``radius`` about the base axis, below ``top``); ``name`` says it in refusals."""

    kind: str
    name: str
    level: float = 0.0
    lo: tuple[float, ...] = ()
    hi: tuple[float, ...] = ()
    radius: float = 0.0
    top: float = 0.0

    def sd(self, p) -> np.ndarray:
        """Signed distance (m) of points ``p`` (..., dim) to the zone."""
        if self.kind == "table":
            return capsule.sd_below(p, self.level)
        if self.kind == "box":
            return capsule.sd_box(p, self.lo, self.hi)
        return capsule.sd_column(p, self.radius, self.top)

    def checks_link(self, i: int) -> bool:
        """The base zone does not check link 1 (index 0): it stands on the base."""
        return not (self.kind == "base" and i == 0)


@dataclass(frozen=True)
class Zones:
    """The keep-out zones of an arm or a program and the links' capsule radii (m)."""

    zones: tuple[Zone, ...] = ()
    link_radius_m: float = DEFAULT_LINK_RADIUS_M
    tool_radius_m: float = 0.0
    source: str = field(default="", compare=False)
    dim: int | None = field(default=None, compare=False)  # 2 (x, y) or 3 (x, y, z); None: no points given

    def __bool__(self) -> bool:
        return bool(self.zones)

    def __len__(self) -> int:
        return len(self.zones)

    def merged(self, other: Zones | None) -> Zones:
        """These zones and ``other``'s (a program's added to its arm's): every zone of both, the larger radii."""
        if other is None:
            return self
        return Zones(
            zones=self.zones + other.zones,
            link_radius_m=max(self.link_radius_m, other.link_radius_m),
            tool_radius_m=max(self.tool_radius_m, other.tool_radius_m),
            source=other.source or self.source,
            dim=self.dim or other.dim,
        )


def merge(a: Zones | None, b: Zones | None) -> Zones | None:
    """``a`` and ``b`` merged (either may be None)."""
    if a is None:
        return b
    return a.merged(b)


# ----------------------------------------------------------------------------------------------- parsing


def parse_zones(sec: Section, *, has_base: bool | None) -> Zones:
    """Read a ``zones:`` mapping (arm file or program; see docs/programs.md). ``has_base``: the arm's points
    are (x, y, z), else (x, y); None (a program, read before its arm is known): as the keys say (``table_z_mm``,
    ``top_z_mm`` and 3-value boxes are an arm on a base's), checked against the arm when it is planned."""
    radius = sec.number("link_radius_mm", DEFAULT_LINK_RADIUS_M * 1000.0, lo=0, hi=1000) / 1000.0
    tool = sec.number("tool_radius_mm", 0.0, lo=0, hi=1000) / 1000.0
    if tool > radius:
        raise sec.error("tool_radius_mm", f"{tool * 1000:g} mm is more than link_radius_mm ({radius * 1000:g} mm)")
    dim = None if has_base is None else (3 if has_base else 2)
    said = ""

    def settle(d: int, key: str, sub=None):
        nonlocal dim, said
        if dim is None:
            dim, said = d, key
            return
        if d != dim:
            where = sub or sec
            if said:
                why = f"'{said}' is for an arm {'on a base' if dim == 3 else 'in a plane'}"
            else:
                why = "this arm " + (
                    "stands on a rotating base: heights are z"
                    if dim == 3
                    else "works in a vertical plane: heights are y"
                )
            raise where.error(
                key,
                f"{why}; "
                + ("write z heights and [x, y, z] corners" if dim == 3 else "write y heights and [x, y] corners"),
            )

    zones: list[Zone] = []
    for up, d in (("y", 2), ("z", 3)):
        key = f"table_{up}_mm"
        if sec.has(key):
            settle(d, key)
            level = sec.number(key, lo=-10_000, hi=10_000) / 1000.0
            zones.append(Zone("table", f"the table ({up} = {level * 1000:g} mm)", level=level))
    if sec.has("base"):
        b = sec.section("base")
        r = b.number("radius_mm", lo=0, lo_open=True, hi=10_000) / 1000.0
        ups = [u for u in ("y", "z") if b.has(f"top_{u}_mm")]
        if len(ups) != 1:
            raise b.error(
                None,
                "the base needs radius_mm and its top's height: top_z_mm (an arm on a base) or top_y_mm (a planar arm)",
            )
        up = ups[0]
        settle(2 if up == "y" else 3, f"top_{up}_mm", b)
        top = b.number(f"top_{up}_mm", lo=-10_000, hi=10_000) / 1000.0
        b.done()
        zones.append(
            Zone("base", f"the base (radius {r * 1000:g} mm, top at {up} = {top * 1000:g} mm)", radius=r, top=top)
        )
    if sec.has("boxes"):
        items = sec.items("boxes")
        for i, raw in enumerate(items):
            line = items.item_lines[i] if hasattr(items, "item_lines") else None
            bx = Section(raw, path=sec.path, key=f"{sec.key}.boxes[{i}]", line=line)
            name = bx.string("name", f"box {i + 1}")
            lo = bx.numbers("min_mm", count=(2, 3) if dim is None else dim)
            settle(len(lo), "min_mm", bx)
            hi = bx.numbers("max_mm", count=dim)
            if any(h <= low for low, h in zip(lo, hi)):
                raise bx.error("max_mm", f"every max_mm value must be greater than min_mm's ({lo} .. {hi})")
            bx.done()
            zones.append(
                Zone("box", f"box '{name}'", lo=tuple(v / 1000.0 for v in lo), hi=tuple(v / 1000.0 for v in hi))
            )
    sec.done()
    return Zones(tuple(zones), link_radius_m=radius, tool_radius_m=tool, source=str(sec.path), dim=dim)


# ----------------------------------------------------------------------------------------------- the links


def link_names(arm) -> list[str]:
    """One name per link: 'link 1 (shoulder to elbow)', ..., the last 'to tool'."""
    chain = list(arm.joint_names[arm.chain_joints])
    ends = chain[1:] + ["tool"]
    return [f"link {i + 1} ({a} to {b})" for i, (a, b) in enumerate(zip(chain, ends))]


def link_segments(arm, q) -> np.ndarray:
    """The links' segments at poses ``q`` (..., n): shape (..., n_links, 2, dim), metres."""
    q = np.asarray(q, dtype=float)
    if arm.has_base:
        pts = arm_points(arm, q)[..., 2:, :]  # the shoulder, elbow(s), tool (the foot and axis top dropped)
    else:
        pts = joint_positions(arm.links_m, chain_angles(arm, q))
    return np.stack([pts[..., :-1, :], pts[..., 1:, :]], axis=-2)


def link_radii(arm, zones: Zones) -> np.ndarray:
    """(n_links, 2): the capsule radius at each end of each link."""
    r = np.full((arm.n_links, 2), zones.link_radius_m)
    r[-1, 1] = zones.tool_radius_m
    return r


def clearances(arm, zones: Zones, q, *, far: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Clearance (m) of every link from every zone at poses ``q`` (..., n): (..., n_links, n_zones), +inf
    where a zone does not check a link; and where along each link (t in [0, 1]) it is least. ``far``: a
    clearance surely above this may be given as a lower bound (``capsule.clearance``)."""
    seg = link_segments(arm, q)
    a, b = seg[..., 0, :], seg[..., 1, :]
    r = link_radii(arm, zones)
    shape = a.shape[:-1] + (len(zones.zones),)
    out = np.full(shape, np.inf)
    where = np.zeros(shape)
    for k, z in enumerate(zones.zones):
        c, t = capsule.clearance(z.sd, a, b, r[:, 0], r[:, 1], linear=z.kind == "table", far=far)
        for i in range(arm.n_links):
            if z.checks_link(i):
                out[..., i, k] = c[..., i]
                where[..., i, k] = t[..., i]
    return out, where


def reach_radii(arm) -> np.ndarray:
    """Per joint: the furthest any link point it moves can be from its axis (m), an upper bound. A wrist roll
    (``armctl.model.hand``) turns the tool point ``offset_m`` about its axis: up to twice that (and the tool's
    place beside the plane) beyond the last link for the other joints."""
    links = np.asarray(arm.links_m, dtype=float)
    roll = getattr(arm, "roll", None)
    hand = 0.0 if roll is None else 2.0 * roll.offset_m + abs(roll.lateral_m)
    if arm.parallelogram:  # joint 2 turns the forearm; joint 1 carries it (no single axis): the whole chain
        chain = np.full(arm.n_links, float(links.sum()))
    else:
        chain = np.array([links[i:].sum() for i in range(arm.n_links)]) + hand
    if arm.has_base:
        chain = np.concatenate([[abs(arm.base_offset_m) + links.sum() + hand], chain])
    return chain if roll is None else np.append(chain, roll.offset_m)


@dataclass(frozen=True)
class Violation:
    """Where a motion first enters a zone: at sample position ``at`` (index + fraction to the next sample),
    pose ``q``, link index ``link``, zone index ``zone``, the point on the link where it enters, and
    ``depth_m``: how deep the motion takes that link into that zone (at its samples). ``inside_m`` > 0: the
    link started the motion that deep inside the zone, and the motion takes it deeper (``back_in`` False) or,
    once out, back in (``back_in`` True)."""

    at: float
    q: np.ndarray
    link: int
    zone: int
    depth_m: float
    point_m: np.ndarray
    inside_m: float = 0.0
    back_in: bool = False


def _worst(arm, zones: Zones, q, far: float | None = None, skip=None):
    """Per pose: the least clearance (a lower bound where it is above ``far``), and (link, zone, t along
    the link) where it is; ``skip`` (n_links, n_zones) bool: pairs left out."""
    c, t = clearances(arm, zones, q, far=far)
    if skip is not None:
        c = np.where(skip, np.inf, c)
    flat = c.reshape(c.shape[:-2] + (-1,))
    k = np.argmin(flat, axis=-1)
    rows = np.arange(len(k))
    link, zone = np.divmod(k, c.shape[-1])
    return flat[rows, k], link, zone, t.reshape(flat.shape)[rows, k]


def first_violation(arm, zones: Zones | None, q_samples) -> Violation | None:
    """The first place where the motion through ``q_samples`` (K, n), joints linear between samples, takes
    a link more than ``TOUCH_M`` into a zone; None if it stays clear all the way. A link that starts inside
    a zone (K >= 2) may only leave it (the module's docstring); one pose (K = 1): any link inside is a
    violation."""
    if not zones:
        return None
    q = np.asarray(q_samples, dtype=float)
    if q.ndim == 1:
        q = q[None, :]
    if len(q) < 2:
        return _first_entry(arm, zones, q)
    inside = clearances(arm, zones, q[0])[0] < -TOUCH_M
    if not inside.any():
        return _first_entry(arm, zones, q)
    found = [v for v in (_first_entry(arm, zones, q, inside),) if v is not None]
    qd, at = _dense(arm, q, ESCAPE_STEP_M)
    cd, td = clearances(arm, zones, qd)
    for li, zi in np.argwhere(inside):
        d = -cd[:, li, zi]
        out = np.flatnonzero(d <= TOUCH_M)
        e = int(out[0]) if out.size else len(d)
        before = np.minimum.accumulate(d[:e])  # the least depth so far: the depth may never pass it
        deeper = np.flatnonzero(d[1:e] > before[:-1] + TOUCH_M) + 1 if e > 1 else np.array([], dtype=int)
        if deeper.size:
            j = int(deeper[0]) - 1  # the last pose checked before it goes deeper: where it starts to
            seg = link_segments(arm, qd[j])[li]
            found.append(
                Violation(
                    at=float(at[j]),
                    q=qd[j].copy(),
                    link=int(li),
                    zone=int(zi),
                    depth_m=float(d.max()),
                    point_m=seg[0] + td[j, li, zi] * (seg[1] - seg[0]),
                    inside_m=float(d[0]),
                )
            )
        elif e < len(d) - 1:  # out: from there on it may not go back in
            only = np.ones_like(inside)
            only[li, zi] = False
            v = _first_entry(arm, zones, qd[e:], only)
            if v is not None:
                a = float(np.interp(e + v.at, np.arange(len(at)), at))
                found.append(dataclasses.replace(v, at=a, inside_m=float(d[0]), back_in=True))
    return min(found, key=lambda v: v.at) if found else None


def _dense(arm, q, step: float):
    """The motion through ``q`` (K, n) resampled so that no link point moves more than ``step`` (m) between
    samples; and each sample's place in ``q`` (index + fraction to the next sample)."""
    R = reach_radii(arm)
    D = np.abs(np.diff(q, axis=0)) @ R
    m = np.clip(np.ceil(D / step), 1, 100_000).astype(int)
    qs, ats = [], []
    for k, mk in enumerate(m):
        u = np.arange(mk) / mk
        qs.append(q[k] + u[:, None] * (q[k + 1] - q[k]))
        ats.append(k + u)
    qs.append(q[-1:])
    ats.append(np.array([float(len(q) - 1)]))
    return np.concatenate(qs), np.concatenate(ats)


def _first_entry(arm, zones: Zones, q, skip=None) -> Violation | None:
    """``first_violation``'s rule for a motion starting clear: the first place a link goes more than
    ``TOUCH_M`` into a zone; the (link, zone) pairs in ``skip`` (n_links, n_zones) are not checked."""
    R = reach_radii(arm)
    c, link, zone, _ = _worst(arm, zones, q, FAR_M, skip)
    found = []  # (at, q, clear before: (at, q) or None)
    bad = np.flatnonzero(c < -TOUCH_M)
    if bad.size:
        i = int(bad[0])
        found.append((float(i), q[i], None if i == 0 else (float(i - 1), q[i - 1])))
    # intervals to prove clear: both ends clear (an end inside a zone is already reported)
    qa, qb = q[:-1], q[1:]
    ca, cb = c[:-1], c[1:]
    ta = np.arange(len(q) - 1, dtype=float)
    tb = ta + 1.0
    for _ in range(64):
        D = np.abs(qb - qa) @ R
        open_ = (ca + cb <= D) & (ca >= -TOUCH_M) & (cb >= -TOUCH_M) & (D > RESOLUTION_M)
        if not np.any(open_):
            break
        qa, qb, ca, cb, ta, tb = qa[open_], qb[open_], ca[open_], cb[open_], ta[open_], tb[open_]
        qm, tm = 0.5 * (qa + qb), 0.5 * (ta + tb)
        cm, _, _, _ = _worst(arm, zones, qm, FAR_M, skip)
        hit = np.flatnonzero(cm < -TOUCH_M)
        if hit.size:
            j = int(hit[np.argmin(tm[hit])])
            found.append((float(tm[j]), qm[j], (float(ta[j]), qa[j])))
        qa, qb = np.concatenate([qa, qm]), np.concatenate([qm, qb])
        ca, cb = np.concatenate([ca, cm]), np.concatenate([cm, cb])
        ta, tb = np.concatenate([ta, tm]), np.concatenate([tm, tb])
        # drop intervals that already start after a violation found: the first one is what is reported
        if found:
            first = min(f[0] for f in found)
            keep = ta < first
            qa, qb, ca, cb, ta, tb = qa[keep], qb[keep], ca[keep], cb[keep], ta[keep], tb[keep]
    if not found:
        return None
    at, qv, before = min(found, key=lambda f: f[0])
    if before is not None:  # bisect from the last clear pose to where the link enters
        t0, q0 = before
        for _ in range(40):
            tm, qm = 0.5 * (t0 + at), 0.5 * (q0 + qv)
            if _worst(arm, zones, qm[None, :], None, skip)[0][0] < -TOUCH_M:
                at, qv = tm, qm
            else:
                t0, q0 = tm, qm
    cv, li, zi, t = (v[0] for v in _worst(arm, zones, qv[None, :], None, skip))
    li, zi = int(li), int(zi)
    seg = link_segments(arm, qv)[li]
    deepest = float(-clearances(arm, zones, q)[0][:, li, zi].min())  # how deep the move would take it
    return Violation(
        at=at,
        q=np.array(qv),
        link=li,
        zone=zi,
        depth_m=max(float(-cv), deepest),
        point_m=seg[0] + t * (seg[1] - seg[0]),
    )


def refusal(arm, zones: Zones, v: Violation, where: str, *, fraction: float = 0.0, hint: str = "") -> ZoneError:
    """The one refusal of a move into a zone: names the link, the zone, ``where`` along the move (as the
    caller says it: '35% along the line, at (x, y) m') and how deep."""
    link = link_names(arm)[v.link]
    zone = zones.zones[v.zone].name
    p = ", ".join(f"{float(c):.4f}" for c in v.point_m)
    radii = f"links are capsules of radius {zones.link_radius_m * 1000:g} mm"
    if v.inside_m > 0:  # the arm is already in the zone: only a move taking that link out is allowed
        msg = (
            f"{link} is already inside {zone} ({v.inside_m * 1000:.1f} mm deep at the start of the move): only a "
            f"move that takes it out is allowed (never deeper, not back in once out), and this one takes it "
            f"{'back in' if v.back_in else 'deeper'} {where} (the link's point ({p}) m; up to "
            f"{v.depth_m * 1000:.1f} mm deep; {radii})"
        )
        hint = "move that link straight out of it first (a joint move away from it)"
    else:
        msg = (
            f"{link} would enter {zone} {where} (the link's point ({p}) m first; up to {v.depth_m * 1000:.1f} mm "
            f"deep; {radii})"
        )
    if hint:
        msg += f"; {hint}"
    return ZoneError(msg, zone=zone, link=link, fraction=fraction, point_m=v.point_m, depth_m=v.depth_m)


def pose_refusal(arm, zones: Zones | None, q) -> str | None:
    """Why pose ``q`` is inside a zone (one line), or None if it is clear."""
    v = first_violation(arm, zones, np.asarray(q, dtype=float)[None, :])
    if v is None:
        return None
    return str(refusal(arm, zones, v, "at this pose"))


def describe(zones: Zones | None) -> list[dict]:
    """The zones as plain data (mm) for JSON and the web page."""
    if not zones:
        return []
    out = []
    for z in zones.zones:
        d = {"kind": z.kind, "name": z.name}
        if z.kind == "table":
            d["level_mm"] = z.level * 1000.0
        elif z.kind == "box":
            d["min_mm"] = [v * 1000.0 for v in z.lo]
            d["max_mm"] = [v * 1000.0 for v in z.hi]
        else:
            d["radius_mm"] = z.radius * 1000.0
            d["top_mm"] = z.top * 1000.0
        out.append(d)
    return out


__all__ = [
    "DEFAULT_LINK_RADIUS_M",
    "Violation",
    "Zone",
    "Zones",
    "clearances",
    "describe",
    "first_violation",
    "link_names",
    "link_segments",
    "merge",
    "parse_zones",
]
