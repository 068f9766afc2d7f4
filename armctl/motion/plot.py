"""Pictures of a planned program: workspace, tool path, arm poses, joint speeds and angles vs limits.

A planar arm is drawn in its plane; an arm on a rotating base in a top view (x, y: the reach on the
table, the base's range, the path) above a side view (the arm's own vertical plane: distance from the
base axis and height).

matplotlib is an optional extra (``pip install -e '.[plot]'``); it is imported
only when a picture is drawn, and its absence is one clear error.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from armctl.errors import ArmctlError, BadInputError
from armctl.model.kinematics import (
    arm_points,
    base_split_batch,
    fk,
    joint_angles,
    limit_excess,
    tool_point,
)
from armctl.motion.holdplot import cells, shade_holding

INSTALL_HINT = "pip install -e '.[plot]'"


class MissingExtraError(ArmctlError, ImportError):
    """An optional dependency (extra) is not installed."""

    exit_code = 2


def require_matplotlib():
    """Import matplotlib with the non-interactive Agg backend, or raise MissingExtraError naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise MissingExtraError(
            f"plotting needs matplotlib, which is not installed; install it with: {INSTALL_HINT}"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def workspace_image(
    arm, box, *, samples: int = 300_000, bins: int = 140, seed: int = 0, view: str = "plane", z: float | None = None
):
    """Where the tool can be with the joints inside their limits, over ``box`` (x0, x1, y0, y1) in m:
    a (bins, bins) mask from random poses, with one-cell sampling holes filled. ``view`` on a base arm:
    "top" (x, y: the reach on the table, at any height or at height ``z`` m) or "side" (the arm's plane:
    distance from the base axis, z)."""
    if view == "top" and z is not None:
        return _top_at(arm, box, z, samples=samples, bins=bins, seed=seed)
    rng = np.random.default_rng(seed)
    if not arm.layered:
        q = rng.uniform(arm.q_min, arm.q_max, size=(samples, arm.n))
        p = fk(arm.links_m, q)
    else:
        ch = arm.chain
        c = rng.uniform(ch.q_min, ch.q_max, size=(samples, arm.n_links))
        b = rng.uniform(arm.q_min[0], arm.q_max[0], samples) if arm.has_base else None
        if view == "side":
            b = np.zeros(samples)  # the arm's own plane: u along x, z up
        r = None if arm.roll is None else rng.uniform(arm.q_min[-1], arm.q_max[-1], samples)
        q = joint_angles(arm, c, b, r)
        q = q[np.all(limit_excess(arm, q) <= 0, axis=1)]
        p = tool_point(arm, q)
        if view == "side":
            p = p[:, [0, 2]]
    return cells(p, box, bins)


def new_figure(figsize):
    """A matplotlib ``Figure`` with constrained layout, made without pyplot (no backend, no global state: it
    shows inline in Jupyter, ``savefig`` writes it); MissingExtraError naming the extra without matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtraError(
            f"plotting needs matplotlib, which is not installed; install it with: {INSTALL_HINT}"
        ) from None
    return Figure(figsize=figsize, dpi=110, layout="constrained")


def _top_at(arm, box, z: float, *, samples: int, bins: int, seed: int):
    """The top view's mask of where the tool reaches at height ``z`` (m): the distances from the base axis the
    arm's plane reaches at that height (a row of its side view), turned through the base's range."""
    reach = arm.extent_m
    fine = 2 * bins
    side = workspace_image(arm, (-reach, reach, -reach, reach), samples=samples, bins=fine, seed=seed, view="side")
    cell = 2 * reach / fine
    row = int(math.floor((z + reach) / cell))
    cols = side[row] if 0 <= row < fine else np.zeros(fine, dtype=bool)
    xs = np.linspace(box[0], box[1], bins, endpoint=False) + (box[1] - box[0]) / (2 * bins)
    ys = np.linspace(box[2], box[3], bins, endpoint=False) + (box[3] - box[2]) / (2 * bins)
    xx, yy = np.meshgrid(xs, ys)
    az, rho = base_split_batch(xx, yy)

    def reaches(u):
        col = np.floor((u + reach) / cell).astype(int)
        return (col >= 0) & (col < fine) & cols[np.clip(col, 0, fine - 1)]

    def in_base(a):
        return np.any(
            [(a + t >= arm.q_min[0] - 1e-9) & (a + t <= arm.q_max[0] + 1e-9) for t in (-2 * math.pi, 0, 2 * math.pi)],
            axis=0,
        )

    return (in_base(az) & reaches(rho)) | (in_base(az + math.pi) & reaches(-rho))


def plot_plan(plan, output: str | Path, *, title: str = "", poses: int = 6, payload_kg: float | None = None) -> None:
    """Draw ``plan`` (a motion.Plan) to ``output`` (.png or .svg): see ``plan_figure``."""
    fig = plan_figure(plan, title=title, poses=poses, payload_kg=payload_kg)
    try:
        fig.savefig(output)
    except OSError as exc:
        raise BadInputError(f"cannot write {output}: {exc.strerror or exc}") from None


def plan_figure(plan, *, title: str = "", poses: int = 6, payload_kg: float | None = None):
    """A figure of ``plan`` (a motion.Plan): workspace with the tool path and the arm at ``poses`` moments (m;
    an arm on a base: a top view and a side view, shaded by whether every servo holds the arm with ``payload_kg``
    (None: the arm file's ``payload_g``)), joint speeds against their limits (deg/s) and joint angles against
    their limits (deg), over time (s). Legends sit outside the axes; labels that would overlap are left out."""
    from matplotlib.gridspec import GridSpec

    arm, tr = plan.arm, plan.trajectory
    fig = new_figure((14, 10.5 if arm.has_base else 8.2))
    gs = GridSpec(2, 2, figure=fig, width_ratios=[1.05, 1.0])
    ax_v = fig.add_subplot(gs[0, 1])
    ax_q = fig.add_subplot(gs[1, 1], sharex=ax_v)
    s = plan.summary()
    fig.suptitle(
        f"{title + '  -  ' if title else ''}{s['duration_s']:.2f} s, {s['segments']} segments, worst path deviation "
        f"{1000 * s['max_path_deviation_m']:.3f} mm",
        fontsize=12,
    )
    idx = np.unique(np.linspace(0, len(tr) - 1, max(1, poses)).round().astype(int))
    labels = []
    if arm.has_base:
        labels += _draw_top(fig.add_subplot(gs[0, 0]), plan, idx, legend=False)
        labels += _draw_side(fig.add_subplot(gs[1, 0]), plan, idx, payload_kg=payload_kg)
    else:
        labels += draw_plane(fig.add_subplot(gs[:, 0]), plan, idx)
    _draw_joints(ax_v, ax_q, plan)
    _drop_overlaps(fig, labels)
    return fig


def pose_figure(arm, q, *, title: str = ""):
    """A figure of ``arm`` in pose ``q`` (rad) over its reach: in its plane, or on a base arm a top view (the
    reach at the tool's height) beside a side view."""
    from types import SimpleNamespace

    from armctl.motion.trajectory import Trajectory

    q = np.asarray(q, dtype=float)
    g = np.array([np.nan])
    tr = Trajectory(t_s=np.zeros(1), q_rad=q[None, :], gripper_rad=g, step=np.zeros(1, dtype=int))
    plan = SimpleNamespace(trajectory=tr, moves=[], arm=arm)
    idx = np.array([0])
    tool = tool_point(arm, q)
    where = ", ".join(f"{1000 * v:.1f}" for v in tool)
    fig = new_figure((12, 5.6) if arm.has_base else (7, 6.4))
    fig.suptitle(title or f"{arm.name}: tool at ({where}) mm", fontsize=12)
    if arm.has_base:
        top, side = fig.subplots(1, 2, width_ratios=[1, 1.15])
        labels = _draw_top(top, plan, idx, legend=False, z=float(tool[2]), timed=False)
        labels += _draw_side(side, plan, idx, timed=False)
    else:
        labels = draw_plane(fig.add_subplot(), plan, idx, timed=False)
    _drop_overlaps(fig, labels)
    return fig


def _drop_overlaps(fig, labels) -> None:
    """Hide each label (in order) that would overlap one kept before it, a legend, or leave its axes."""
    if not labels:
        return
    fig.draw_without_rendering()  # lay out first: constrained layout moves the axes
    kept = [leg.get_window_extent() for ax in fig.axes if (leg := ax.get_legend()) is not None]
    for text in labels:
        box = text.get_window_extent()
        inside = text.axes.get_window_extent()
        outside = box.x0 < inside.x0 or box.x1 > inside.x1 or box.y0 < inside.y0 or box.y1 > inside.y1
        if outside or any(box.overlaps(k) for k in kept):
            text.set_visible(False)
        else:
            kept.append(box)


def _legend_handles(what: str):
    from matplotlib.lines import Line2D

    return [
        Line2D([], [], color="#1f77b4", lw=2, label="line moves (tool path)"),
        Line2D([], [], color="#ff7f0e", lw=1.3, ls="--", label="joint moves (tool path)"),
        Line2D([], [], color="0.1", marker="o", markerfacecolor="white", lw=3, label=what),
        Line2D([], [], color="#ff7f0e", marker="o", ls="", mec="k", label="start"),
        Line2D([], [], color="#d62728", marker="v", ls="", mec="k", label="gripper closes"),
        Line2D([], [], color="#2ca02c", marker="^", ls="", mec="k", label="gripper opens"),
    ]


def _gripper_marks(ax, plan, where) -> None:
    """Where the gripper closes (picks) and opens (places): ``where(q)`` gives the drawn (x, y)."""
    arm = plan.arm
    for mp in plan.moves:
        if mp.kind == "gripper" and len(mp.t_s) > 1 and arm.gripper is not None:
            closing = bool(mp.gripper_rad[-1] < mp.gripper_rad[0]) == bool(
                arm.gripper.closed_rad < arm.gripper.open_rad
            )
            x, y = where(mp.q_rad[-1])
            ax.plot(
                x,
                y,
                "v" if closing else "^",
                color="#d62728" if closing else "#2ca02c",
                ms=9,
                zorder=8,
                mec="k",
                mew=0.6,
            )


def _shade(ax, mask, box) -> None:
    ax.imshow(
        np.where(mask, 1.0, np.nan),
        extent=box,
        origin="lower",
        cmap="Blues",
        vmin=0,
        vmax=8,
        interpolation="nearest",
        zorder=0,
    )


def _poses(ax, plan, idx, points_of, label_at, timed: bool = True) -> list:
    """The arm at a few moments, fading from early (light) to late (dark); their time labels (returned, so
    the ones that would overlap can be dropped once the figure is laid out)."""
    tr = plan.trajectory
    labels = []
    for j, i in enumerate(idx):
        pts = points_of(tr.q_rad[i])
        shade = 0.25 + 0.7 * (j / max(1, len(idx) - 1)) if len(idx) > 1 else 0.95
        ax.plot(
            pts[:, 0],
            pts[:, 1],
            "-o",
            color=(0.1, 0.1, 0.1, shade),
            lw=3.5,
            ms=5,
            zorder=5,
            markerfacecolor="white",
            markeredgecolor=(0.1, 0.1, 0.1, shade),
        )
        if timed:
            labels.append(
                ax.annotate(
                    f"{tr.t_s[i]:.1f} s",
                    label_at(pts),
                    textcoords="offset points",
                    xytext=(7, 3),
                    fontsize=8,
                    color=(0.1, 0.1, 0.1, max(shade, 0.7)),
                    zorder=6,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75},
                )
            )
    return labels


def _legend_below(ax, what: str, path: bool = True) -> None:
    """The legend of a workspace view, under the axes (never over the reach); ``path``: with the path's marks."""
    ax.legend(
        handles=_legend_handles(what) if path else _legend_handles(what)[2:3],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.13),
        ncol=3,
        fontsize=8,
        frameon=False,
    )


def _paths(ax, plan, where) -> None:
    """The tool path: line moves solid, joint moves dashed (their tool path is a curve, not a line)."""
    for mp in plan.moves:
        if len(mp.t_s) < 2 or mp.kind not in ("line", "joint"):
            continue
        p = where(mp.q_rad)
        if mp.kind == "line":
            ax.plot(p[:, 0], p[:, 1], "-", color="#1f77b4", lw=2.2, zorder=3, solid_capstyle="round")
        else:
            ax.plot(p[:, 0], p[:, 1], "--", color="#ff7f0e", lw=1.3, zorder=2)


def _box(points, pad):
    lo, hi = points.min(axis=0), points.max(axis=0)
    return (lo[0] - pad, hi[0] + pad, lo[1] - pad, hi[1] + pad)


def _with_zones(arm, view: str, box, reach: float):
    """``box`` widened to show each keep-out zone's edge nearest the arm (with a margin), as far as 1.5 times
    ``reach`` from the base: a zone beside or below the path is drawn, not left outside the frame."""
    zones = getattr(arm, "zones", None)
    if not zones:
        return box
    pts = []
    for z in zones.zones:
        if z.kind == "table" and view != "top":
            pts.append((0.0, z.level - 0.04 * reach))
        elif z.kind == "base":
            pts += [(-z.radius, 0.0), (z.radius, z.top)] if view != "top" else [(-z.radius, -z.radius), (z.radius,) * 2]
        elif z.kind == "box":
            if view == "side":
                pts += [
                    (float(np.hypot(x, y)), h)
                    for x in (z.lo[0], z.hi[0])
                    for y in (z.lo[1], z.hi[1])
                    for h in (z.lo[2], z.hi[2])
                ]
            else:
                pts += [(z.lo[0], z.lo[1]), (z.hi[0], z.hi[1])]
    if not pts:
        return box
    p = np.clip(np.asarray(pts, dtype=float), -1.5 * reach, 1.5 * reach)
    pad = 0.04 * reach
    return (
        min(box[0], p[:, 0].min() - pad),
        max(box[1], p[:, 0].max() + pad),
        min(box[2], p[:, 1].min() - pad),
        max(box[3], p[:, 1].max() + pad),
    )


def _in_plane(arm, q):
    """Points of pose(s) ``q`` in the arm's own vertical plane: (distance along the base's direction, z)."""
    pts = arm_points(arm, q)
    b = np.asarray(q, dtype=float)[..., 0][..., None]
    return np.stack([pts[..., 0] * np.cos(b) + pts[..., 1] * np.sin(b), pts[..., 2]], axis=-1)


def _tool_in_plane(arm, q):
    return _in_plane(arm, q)[..., -1, :]


def _draw_top(ax, plan, idx, *, legend: bool = True, z: float | None = None, timed: bool = True) -> list:
    """Top view of a base arm: the reach on the table (at any height, or at height ``z`` m), the base's range
    and angle, the path, the poses. Returns the time labels."""
    arm, tr = plan.arm, plan.trajectory
    top = lambda q: tool_point(arm, q)[..., :2]  # noqa: E731
    reach = arm.reach_from_axis_m
    th = np.linspace(arm.q_min[0], arm.q_max[0], 200)
    rim = reach * np.stack([np.cos(th), np.sin(th)], axis=1)  # the whole range of the base, framed
    pts = np.concatenate([arm_points(arm, tr.q_rad[idx])[..., :2].reshape(-1, 2), top(tr.q_rad), rim, [[0.0, 0.0]]])
    box = _with_zones(arm, "top", _box(pts, 0.06 * reach), reach)
    _shade(ax, workspace_image(arm, box, view="top", z=z), box)
    for a in (arm.q_min[0], arm.q_max[0]):  # the base's end stops
        ax.plot([0, reach * math.cos(a)], [0, reach * math.sin(a)], ":", color="#b45309", lw=1.2, zorder=1)
    ax.plot(rim[:, 0], rim[:, 1], ":", color="#b45309", lw=1.0, zorder=1)
    _paths(ax, plan, top)
    if len(tr.points_m) and tr.points_m.shape[1] >= 2:
        ax.plot(tr.points_m[:, 0], tr.points_m[:, 1], ".", color="white", ms=1.1, mew=0, zorder=4)
    _gripper_marks(ax, plan, top)
    labels = _poses(ax, plan, idx, lambda q: arm_points(arm, q)[1:, :2], lambda p: p[-1], timed)
    if timed:
        ax.plot(*top(tr.q_rad[0]), "o", color="#ff7f0e", ms=9, zorder=7, mec="k", mew=0.6)
    ax.plot(0, 0, "s", color="k", ms=9, zorder=7)
    draw_zones(ax, arm, "top", box)
    ax.set_xlim(box[0], box[1])
    ax.set_ylim(box[2], box[3])
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    height = "at any height" if z is None else f"at z = {1000 * z:.0f} mm"
    ax.set_title(
        f"top view: reach on the table {height} (shaded),\nbase range "
        f"{math.degrees(arm.q_min[0]):.0f}..{math.degrees(arm.q_max[0]):.0f} deg (dotted)",
        fontsize=10,
    )
    ax.grid(True, lw=0.3, alpha=0.6)
    if legend:
        _legend_below(ax, "arm pose (from above)")
    return labels


def _draw_side(ax, plan, idx, *, timed: bool = True, payload_kg: float | None = None) -> list:
    """Side view of a base arm in its own vertical plane: distance from the base axis and height; where a servo
    cannot hold the arm (with ``payload_kg``) shaded over the reach (``armctl.motion.holdplot``)."""
    arm, tr = plan.arm, plan.trajectory
    side = lambda q: _tool_in_plane(arm, q)  # noqa: E731
    reach = arm.reach_from_axis_m
    pts = np.concatenate([_in_plane(arm, tr.q_rad[idx]).reshape(-1, 2), side(tr.q_rad), [[0.0, 0.0]]])
    box = _with_zones(arm, "side", _box(pts, 0.1 * reach), reach)
    reach_mask = workspace_image(arm, box, view="side")
    _shade(ax, reach_mask, box)
    held = shade_holding(ax, arm, box, reach_mask, payload_kg)
    ax.axvline(0.0, color="0.55", lw=0.8, ls="-.", zorder=1)  # the base axis
    _paths(ax, plan, side)
    _gripper_marks(ax, plan, side)
    labels = _poses(ax, plan, idx, lambda q: _in_plane(arm, q), lambda p: p[-2], timed)
    if timed:
        ax.plot(*side(tr.q_rad[0]), "o", color="#ff7f0e", ms=9, zorder=7, mec="k", mew=0.6)
    ax.plot(0, 0, "s", color="k", ms=9, zorder=7)
    draw_zones(ax, arm, "side", box)
    ax.set_xlim(box[0], box[1])
    ax.set_ylim(box[2], box[3])
    ax.set_aspect("equal")
    ax.set_xlabel("distance from the base axis, along the arm (m)")
    ax.set_ylabel("z (m)")
    link = ""
    if arm.parallelogram:
        lo, hi = (math.degrees(v) for v in arm.link_angle_rad)
        link = f", link angle {lo:.0f}..{hi:.0f} deg"
    ax.set_title(f"side view in the arm's plane:\nreachable inside the limits (shaded{link}){held}", fontsize=10)
    ax.grid(True, lw=0.3, alpha=0.6)
    _legend_below(ax, "arm pose (in its plane)", timed)
    return labels


def draw_plane(ax, plan, idx, *, timed: bool = True) -> list:
    """A planar arm in its plane: workspace, tool path, poses. Returns the time labels."""
    arm, tr = plan.arm, plan.trajectory
    tool, joints = arm.tool_point, arm.points
    # Frame the arm's working area: the path and the drawn poses, with a margin.
    allp = np.concatenate([joints(tr.q_rad[idx]).reshape(-1, 2), tool(tr.q_rad), [[0.0, 0.0]]])
    box = _with_zones(arm, "plane", _box(allp, 0.08 * arm.reach_max), arm.reach_max)
    _shade(ax, workspace_image(arm, box), box)  # where the tool can be inside the joint limits
    th = np.linspace(0, 2 * math.pi, 361)
    for r, style in ((arm.reach_max, "-"), (arm.reach_min, ":")):
        if r > 0:
            ax.plot(r * np.cos(th), r * np.sin(th), style, color="0.55", lw=0.8, zorder=1)
    _paths(ax, plan, tool)
    if len(tr.points_m):
        ax.plot(tr.points_m[:, 0], tr.points_m[:, 1], ".", color="white", ms=1.1, mew=0, zorder=4)
    _gripper_marks(ax, plan, tool)
    elbow = -3 if arm.n_links == 3 else -2
    labels = _poses(ax, plan, idx, joints, lambda p: p[elbow], timed)
    if timed:
        ax.plot(*tool(tr.q_rad[0]), "o", color="#ff7f0e", ms=9, zorder=7, mec="k", mew=0.6)
    ax.plot(0, 0, "s", color="k", ms=9, zorder=7)
    draw_zones(ax, arm, "plane", box)
    ax.set_xlim(box[0], box[1])
    ax.set_ylim(box[2], box[3])
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(f"workspace of {arm.name} (shaded: reachable inside the joint limits)", fontsize=10)
    ax.grid(True, lw=0.3, alpha=0.6)
    _legend_below(ax, "arm pose", timed)
    return labels


def _draw_joints(ax_v, ax_q, plan) -> None:
    """Joint speeds (what the servo frames command) against the limits, and joint angles against theirs;
    the limits are named in the legends (outside the axes), not written over the curves."""
    arm, tr = plan.arm, plan.trajectory
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    limits = [math.degrees(v) for v in arm.max_speed_rad_s]
    shared = {round(v, 6) for v in limits if sum(abs(w - v) < 1e-6 for w in limits) > 1}
    speed = np.zeros((0, arm.n))
    if len(tr) > 1:
        t_mid = 0.5 * (tr.t_s[1:] + tr.t_s[:-1])
        speed = np.degrees(np.abs(np.diff(tr.q_rad, axis=0))) / tr.period_s
    for j in range(arm.n):
        c = colors[j % len(colors)]
        peak = float(speed[:, j].max()) if len(speed) else 0.0
        label = f"{arm.joint_names[j]}: peak {peak:.0f}, limit {limits[j]:.0f}"
        if len(speed):
            ax_v.plot(t_mid, speed[:, j], color=c, lw=1.1, label=label)
        # a limit several joints share is one grey line, not lines drawn over each other
        ax_v.axhline(limits[j], color="0.35" if round(limits[j], 6) in shared else c, ls="--", lw=1.0)
    ax_v.set_ylim(0, max(limits) * 1.15)
    ax_v.set_ylabel("joint speed (deg/s)")
    ax_v.set_title("joint speeds against their limits (dashed)", fontsize=10)
    ax_v.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax_v.grid(True, lw=0.3, alpha=0.6)
    _shade_steps(ax_v, plan)

    # Joint angles against their limits.
    qd = np.degrees(tr.q_rad)
    for j in range(arm.n):
        c = colors[j % len(colors)]
        lo, hi = math.degrees(arm.q_min[j]), math.degrees(arm.q_max[j])
        ax_q.plot(tr.t_s, qd[:, j], color=c, lw=1.2, label=f"{arm.joint_names[j]} ({lo:.0f}..{hi:.0f})")
        for lim in (lo, hi):
            ax_q.axhline(lim, color=c, ls=":", lw=0.9)
    if arm.gripper is not None:
        ax_q.plot(tr.t_s, np.degrees(tr.gripper_rad), color="0.45", lw=1.0, ls="-.", label="gripper")
    ax_q.set_xlabel("time (s)")
    ax_q.set_ylabel("angle (deg)")
    ax_q.set_title("joint angles against their limits (dotted)", fontsize=10)
    ax_q.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax_q.grid(True, lw=0.3, alpha=0.6)
    ax_q.set_xlim(0, max(tr.duration_s, tr.period_s))
    _shade_steps(ax_q, plan)


def _shade_steps(ax, plan) -> None:
    """Light background bands for gripper moves and waits, so the arm's motions stand out."""
    t = 0.0
    for mp in plan.moves:
        d = mp.duration_s
        if mp.kind in ("gripper", "wait") and d > 0:
            ax.axvspan(t, t + d, color="0.85", alpha=0.6, lw=0, zorder=0)
        t += d


def draw_zones(ax, arm, view: str, box) -> None:
    """The arm's keep-out zones (``arm.zones``), hatched red with their names, in ``view``: "plane" (a planar
    arm's x, y), "top" (a base arm from above: boxes and the base; the table is everywhere) or "side" (a base
    arm's own plane: the table, the base, and boxes by their distance from the base axis and height)."""
    zones = getattr(arm, "zones", None)
    if not zones:
        return
    from matplotlib.patches import Circle, Rectangle

    style = {"facecolor": "#d62728", "alpha": 0.18, "edgecolor": "#d62728", "hatch": "//", "lw": 1.0, "zorder": 2}
    far = 10.0 * (abs(box[1] - box[0]) + abs(box[3] - box[2]))
    for z in zones.zones:
        label = None
        if z.kind == "table" and view != "top":
            ax.add_patch(Rectangle((box[0] - far, z.level - far), 3 * far, far, **style))
            label = ((box[0] + box[1]) / 2, z.level)
        elif z.kind == "base":
            if view == "top":
                ax.add_patch(Circle((0.0, 0.0), z.radius, **style))
            else:
                ax.add_patch(Rectangle((-z.radius, z.top - far), 2 * z.radius, far, **style))
            label = (0.0, z.top if view != "top" else z.radius)
        elif z.kind == "box":
            if view == "side":  # the box's extent around the base axis: nearest and furthest distance, heights
                corners = np.array([[x, y] for x in (z.lo[0], z.hi[0]) for y in (z.lo[1], z.hi[1])])
                near_x = min(max(0.0, z.lo[0]), z.hi[0]) if not z.lo[0] <= 0 <= z.hi[0] else 0.0
                near_y = min(max(0.0, z.lo[1]), z.hi[1]) if not z.lo[1] <= 0 <= z.hi[1] else 0.0
                r0, r1 = math.hypot(near_x, near_y), float(np.hypot(*corners.T).max())
                ax.add_patch(Rectangle((r0, z.lo[2]), r1 - r0, z.hi[2] - z.lo[2], **{**style, "alpha": 0.1}))
                label = (r0, z.hi[2])
            else:
                ax.add_patch(Rectangle((z.lo[0], z.lo[1]), z.hi[0] - z.lo[0], z.hi[1] - z.lo[1], **style))
                label = (z.lo[0], z.hi[1])
        if label is not None:
            ax.annotate(
                f"keep-out: {z.name}",
                label,
                xytext=(2, 2),
                textcoords="offset points",
                fontsize=7,
                color="#a01010",
                zorder=8,
            )
