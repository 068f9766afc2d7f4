"""`armctl plot` as a user runs it: nothing drawn over anything (no text over other text, legends outside the
axes), a base arm gets a top and a side view; figures for Python (plan.plot(), pose figures)."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import require_module

require_module("matplotlib", "plots are drawn with matplotlib (armctl[plot])")

from matplotlib.image import imread  # noqa: E402 (after require_module)
from matplotlib.text import Text  # noqa: E402 (after require_module)

from armctl.model.arm import load_arm  # noqa: E402 (after require_module)
from armctl.motion.plot import plan_figure, pose_figure  # noqa: E402 (after require_module)
from armctl.program import load_program, plan_program  # noqa: E402 (after require_module)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "pick_and_place.yaml": "seed-3link",
    "pick_and_place_2link.yaml": "seed-2link",
    "pick_and_place_mearm.yaml": "mearm",
    "pick_and_place_braccio.yaml": "braccio",
    "pick_and_place_so101.yaml": "so101",
}


def _texts(fig):
    """Every text drawn, with its box on the canvas (after layout): tick labels only of the ticks inside the
    view (matplotlib keeps others, undrawn), everything else that is visible and not empty."""
    fig.draw_without_rendering()
    ticks, drawn = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            eps = 1e-9 * max(1.0, abs(hi - lo))
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update((id(tick.label1), id(tick.label2)))
                if lo - eps <= tick.get_loc() <= hi + eps:
                    drawn += [lab for lab in (tick.label1, tick.label2) if lab.get_visible()]
    texts = drawn + [t for t in fig.findobj(Text) if id(t) not in ticks and t.get_visible()]
    out = []
    for t in texts:
        if not t.get_text().strip():
            continue
        box = t.get_window_extent()
        if box.width > 0 and box.height > 0:
            out.append((t, box))
    return out


def _assert_nothing_overlaps(fig):
    texts = _texts(fig)
    assert len(texts) > 12
    for (a, ba), (b, bb) in itertools.combinations(texts, 2):
        assert not ba.overlaps(bb), f"{a.get_text()!r} drawn over {b.get_text()!r}"
    legends = [leg for ax in fig.axes if (leg := ax.get_legend()) is not None]
    assert legends
    for leg in legends:
        lb = leg.get_window_extent()
        for ax in fig.axes:
            assert not lb.overlaps(ax.bbox), f"a legend over the axes {ax.get_title()!r}"
        for t, box in texts:
            if t.axes is not None and t.axes.get_legend() is not leg and not _inside(t, leg):
                assert not lb.overlaps(box), f"a legend over {t.get_text()!r}"


def _inside(text, legend) -> bool:
    return text in legend.get_texts() or text is legend.get_title()


@pytest.mark.parametrize("program", sorted(EXAMPLES))
def test_plan_figure_nothing_drawn_over_anything(program):
    prog = load_program(ROOT / "examples" / program)
    plan = plan_program(prog, load_arm(EXAMPLES[program]))
    fig = plan_figure(plan, title=program)
    _assert_nothing_overlaps(fig)
    titles = [ax.get_title() for ax in fig.axes]
    if plan.arm.has_base:
        assert any(t.startswith("top view") for t in titles) and any(t.startswith("side view") for t in titles)
        assert len(fig.axes) == 4
    else:
        assert len(fig.axes) == 3
    # a limit several joints share is said once per joint in the legend, not written over the curves
    speed_legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert all(", limit " in t for t in speed_legend)


@pytest.mark.parametrize("arm", ["seed-3link", "mearm", "so101"])
def test_pose_figure_nothing_drawn_over_anything(arm):
    a = load_arm(arm)
    fig = pose_figure(a, a.home_rad)
    _assert_nothing_overlaps(fig)
    if a.has_base:
        assert "at z = " in fig.axes[0].get_title()


def test_top_view_at_a_height_shades_only_what_reaches_it():
    """Top view of mearm at two heights: the shaded ring is the side view's row at that height, turned."""
    from armctl.model.workspace import shortfall
    from armctl.motion.plot import workspace_image

    arm = load_arm("mearm")
    box = (-0.25, 0.25, -0.25, 0.25)
    for z in (0.0, 0.08):
        mask = workspace_image(arm, box, view="top", z=z, bins=60)
        xs = [box[0] + (i + 0.5) * 0.5 / 60 for i in range(60)]
        agree = total = 0
        for r in range(0, 60, 3):
            for c in range(0, 60, 3):
                reach = shortfall(arm, (xs[c], xs[r], z)) < 0.004
                total += 1
                agree += reach == bool(mask[r, c])
        assert agree / total > 0.95, (z, agree, total)
    assert not (
        workspace_image(arm, box, view="top", z=0.0, bins=60) == workspace_image(arm, box, view="top", z=0.08, bins=60)
    ).all()


def test_cli_plot_base_arm_png(tmp_path):
    out = tmp_path / "mearm.png"
    p = subprocess.run(
        [sys.executable, "-m", "armctl", "plot", str(ROOT / "examples" / "pick_and_place_mearm.yaml"), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    img = imread(out)
    assert img.shape[0] > 900 and img.shape[1] > 1200
