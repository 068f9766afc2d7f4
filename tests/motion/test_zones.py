"""Keep-out zones: capsule clearances and whole-move checks against a dense point-sampling oracle, and the
refusals in programs, the CLI and the Python API."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armctl import motion
from armctl.errors import ConfigError, MotionError, ZoneError
from armctl.model import capsule
from armctl.model.arm import Arm, load_arm
from armctl.model.zones import Zone, Zones, _first_entry, first_violation, link_segments
from tests.helpers import require_module

# ------------------------------------------------------------------------------------------- the oracle


def _inside(zone: Zone, p, grow: float = 0.0) -> np.ndarray:
    """Plain membership of points ``p`` (..., d) in a zone, its faces moved out by ``grow`` (in, if < 0):
    the inequalities that define it."""
    p = np.asarray(p, dtype=float)
    if zone.kind == "table":
        return p[..., -1] <= zone.level + grow
    if zone.kind == "box":
        return np.all((p >= np.array(zone.lo) - grow) & (p <= np.array(zone.hi) + grow), axis=-1)
    rho = np.sqrt(np.sum(p[..., :-1] ** 2, axis=-1))
    return (rho <= zone.radius + grow) & (p[..., -1] <= zone.top + grow)


def _directions(d: int, m: int | None = None) -> np.ndarray:
    if d == 2:
        a = np.linspace(0.0, 2 * math.pi, m or 180, endpoint=False)
        return np.stack([np.cos(a), np.sin(a)], axis=-1)
    m = m or 600
    k = np.arange(m) + 0.5  # a Fibonacci sphere
    phi = np.arccos(1 - 2 * k / m)
    th = math.pi * (1 + 5**0.5) * k
    return np.stack([np.cos(th) * np.sin(phi), np.sin(th) * np.sin(phi), np.cos(phi)], axis=-1)


def _capsule_points(a, b, ra, rb, n_t: int = 301) -> tuple[np.ndarray, np.ndarray]:
    """Points of a tapered capsule (its axis and its surface): (points (n_t, m, d), t (n_t,))."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    t = np.linspace(0.0, 1.0, n_t)
    centre = a + t[:, None] * (b - a)
    r = ra + t * (rb - ra)
    dirs = _directions(len(a))
    pts = centre[:, None, :] + r[:, None, None] * dirs[None, :, :]
    return np.concatenate([centre[:, None, :], pts], axis=1), t


MARGIN = 0.0015  # m: what the oracle's sampling can miss is well below this


coord = st.floats(-0.4, 0.4)


@st.composite
def zone_strategy(draw, d: int) -> Zone:
    kind = draw(st.sampled_from(["table", "box", "base"]))
    if kind == "table":
        return Zone("table", "table", level=draw(st.floats(-0.3, 0.1)))
    if kind == "box":
        lo = [draw(st.floats(-0.4, 0.3)) for _ in range(d)]
        hi = [v + draw(st.floats(0.02, 0.3)) for v in lo]
        return Zone("box", "box", lo=tuple(lo), hi=tuple(hi))
    return Zone("base", "base", radius=draw(st.floats(0.01, 0.15)), top=draw(st.floats(-0.3, 0.1)))


@given(data=st.data(), d=st.sampled_from([2, 3]))
@settings(max_examples=150, deadline=None)
def test_capsule_clearance_matches_dense_sampling(data, d):
    zone = data.draw(zone_strategy(d))
    a = np.array([data.draw(coord) for _ in range(d)])
    b = np.array([data.draw(coord) for _ in range(d)])
    ra = data.draw(st.floats(0.0, 0.04))
    rb = data.draw(st.floats(0.0, ra))
    c, t = capsule.clearance(zone.sd, a, b, ra, rb, linear=zone.kind == "table")
    assert 0.0 <= t <= 1.0
    bound, _ = capsule.clearance(zone.sd, a, b, ra, rb, far=0.02)  # a lower bound where surely far
    assert bound <= c + 1e-9 and (bound > 0.02 or bound == pytest.approx(c, abs=1e-9))
    pts, _ = _capsule_points(a, b, ra, rb)
    if np.any(_inside(zone, pts)):  # a point of the capsule is in the zone (or on its surface: touching)
        assert c <= 1e-9  # a segment along a box's face finds 4e-11 m; zones refuse below -TOUCH_M (1e-7 m)
    if np.any(_inside(zone, pts, -MARGIN)):  # ... well inside it
        assert c < -MARGIN + 1e-12
    if c < -MARGIN:  # the sampling finds a point inside
        assert np.any(_inside(zone, pts))
    if c > 1e-12:  # clear (a capsule that only touches the surface counts as in, on either side)
        assert not np.any(_inside(zone, pts))


@st.composite
def arm_with_zone(draw):
    """A random planar 2/3-link arm or an arm on a base (serial or parallelogram) with one zone."""
    kind = draw(st.sampled_from(["planar", "base", "parallelogram"]))
    if kind == "planar":
        links = [draw(st.floats(0.08, 0.35)) for _ in range(draw(st.sampled_from([2, 3])))]
        arm = Arm.from_lengths(links)
    elif kind == "base":
        links = [draw(st.floats(0.08, 0.3)) for _ in range(draw(st.sampled_from([2, 3])))]
        arm = Arm.from_lengths(
            links, base=True, base_offset_m=draw(st.floats(0, 0.05)), shoulder_height_m=draw(st.floats(0, 0.1))
        )
    else:
        links = [draw(st.floats(0.08, 0.3)) for _ in range(2)]
        arm = Arm.from_lengths(
            links, base=True, linkage="parallelogram", link_angle_deg=[0, 180], base_offset_m=draw(st.floats(0, 0.05))
        )
    zone = draw(zone_strategy(arm.dim))
    zones = Zones((zone,), link_radius_m=draw(st.floats(0.0, 0.03)), tool_radius_m=0.0)
    q0 = np.radians([draw(st.floats(-170, 170)) for _ in range(arm.n)])
    q1 = q0 + np.radians([draw(st.floats(-120, 120)) for _ in range(arm.n)])
    return arm, zones, q0, q1


def _oracle_hits(arm, zones, q0, q1, grow: float, k: int = 601, n_t: int = 121):
    """Per pose along the joint-linear move q0 -> q1 (k poses): is any sampled point of any checked link's
    capsule inside the zone, its faces moved out by ``grow``?"""
    zone = zones.zones[0]
    f = np.linspace(0.0, 1.0, k)
    q = q0 + f[:, None] * (q1 - q0)
    seg = link_segments(arm, q)
    dirs = _directions(arm.dim, 120 if arm.dim == 2 else 200)
    t = np.linspace(0.0, 1.0, n_t)
    hits = np.zeros(k, dtype=bool)
    for i in range(arm.n_links):
        if not zone.checks_link(i):
            continue
        ra = zones.link_radius_m
        rb = zones.tool_radius_m if i == arm.n_links - 1 else ra
        r = ra + t * (rb - ra)
        for c0 in range(0, k, 40):
            a, b = seg[c0 : c0 + 40, i, 0], seg[c0 : c0 + 40, i, 1]
            centre = a[:, None, :] + t[None, :, None] * (b - a)[:, None, :]  # (c, n_t, d)
            pts = centre[:, :, None, :] + r[None, :, None, None] * dirs[None, None, :, :]
            inside = _inside(zone, pts, grow).any(axis=(1, 2)) | _inside(zone, centre, grow).any(axis=1)
            hits[c0 : c0 + 40] |= inside
    return f, hits


SHALLOW = 0.008  # m: the pose, point and direction spacing of _oracle_hits (at most 6 mm apart) is inside this


@given(arm_with_zone())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_whole_move_check_matches_dense_pose_sampling(case):
    """Only the two end poses are given: whatever happens between them is found by the checker. A move that
    starts inside the zone is checked by the rule every other link and zone of such a move is checked by
    (``_first_entry``): first_violation lets a link already inside only leave (tests/motion/test_zones_escape.py)."""
    arm, zones, q0, q1 = case
    v = first_violation(arm, zones, np.stack([q0, q1]))
    if first_violation(arm, zones, q0[None, :]) is not None:
        v = _first_entry(arm, zones, np.stack([q0, q1]))
    f, deep = _oracle_hits(arm, zones, q0, q1, -MARGIN)
    if np.any(deep):  # somewhere along the move a link is well inside: the checker must refuse, no later
        assert v is not None
        assert v.at <= f[np.argmax(deep)] + 1e-9
    if v is None:
        return
    f2, shallow = _oracle_hits(arm, zones, q0, q1, SHALLOW)
    assert np.any(shallow), "refused, but no pose along the move comes near the zone"
    assert v.at >= f2[np.argmax(shallow)] - 2.0 / (len(f2) - 1)
    assert v.depth_m > 0


def test_zone_refusal_names_zone_link_and_where():
    arm = load_arm("seed-3link").with_zones(
        Zones((Zone("box", "box 'tray'", lo=(0.3, -0.3), hi=(0.45, -0.2)),), link_radius_m=0.015)
    )
    q0 = motion.solve_pose(arm, (0.4, -0.1), -math.pi / 2, arm.home_rad)
    with pytest.raises(ZoneError) as e:
        motion.plan_moves(arm, [motion.LineMove((0.4, -0.25), phi_rad=-math.pi / 2, label="down")], q_start=q0)
    err = e.value
    assert isinstance(err, MotionError) and err.exit_code == 3
    assert err.zone == "box 'tray'" and err.link == "link 3 (wrist to tool)"
    assert 0.6 < err.fraction < 0.7  # the tool enters the box at y = -0.2: 2/3 of the way down
    assert "down: link 3 (wrist to tool) would enter box 'tray' 67% along the line" in str(err)
    assert err.depth_m == pytest.approx(0.05, abs=1e-3)


def test_a_joint_move_through_a_zone_between_its_samples_is_refused():
    """A fast swing whose samples all clear a thin box, though the link sweeps through it."""
    arm = Arm.from_lengths([0.4, 0.3], max_speed_deg_s=[1000, 1000])
    zones = Zones((Zone("box", "box 'post'", lo=(0.55, -0.004), hi=(0.8, 0.004)),), link_radius_m=0.0)
    arm = arm.with_zones(zones)
    q0, q1 = np.radians([-30.0, 0.0]), np.radians([30.0, 0.0])
    traj_q = np.stack([q0, q1])
    assert np.all(np.abs(link_segments(arm, traj_q)[:, -1, 1, 1]) > 0.004)  # both ends clear of it
    with pytest.raises(ZoneError, match=r"link 2 \(joint2 to tool\) would enter box 'post' 50% through the joint"):
        motion.plan_moves(arm, [motion.JointMove(tuple(q1), speed_fraction=1.0)], q_start=q0)


def test_base_zone_skips_the_first_link_and_the_tool_may_touch_the_table():
    arm = load_arm("mearm")
    zones = Zones(
        (Zone("table", "the table", level=-0.04), Zone("base", "the base", radius=0.05, top=0.0)),
        link_radius_m=0.008,
    )
    zarm = arm.with_zones(zones)
    q = motion.solve_pose(zarm, (0.18, 0.0, -0.04), None, arm.home_rad)  # the tool point on the table
    assert first_violation(zarm, zones, q[None, :]) is None
    with pytest.raises(ZoneError, match="would enter the table"):
        motion.plan_moves(zarm, [motion.LineMove((0.18, 0.0, -0.05))], q_start=q)


ARM_WITH_ZONES = """\
name: seed-3link
links_m: [0.40, 0.30, 0.20]
joints:
  - {name: shoulder, min_deg: -90, max_deg: 90, max_speed_deg_s: 120}
  - {name: elbow, min_deg: -135, max_deg: 135, max_speed_deg_s: 150}
  - {name: wrist, min_deg: -135, max_deg: 135, max_speed_deg_s: 180}
home_deg: [45, -90, -45]
gripper: {open_deg: 60, closed_deg: 10, max_speed_deg_s: 180}
zones:
  link_radius_mm: 15
  table_y_mm: -300
  base: {radius_mm: 60, top_y_mm: -40}
  boxes:
    - {name: tray, min_mm: [300, -300], max_mm: [450, -200]}
"""


def test_arm_file_zones_parse_and_bad_keys_name_the_line(tmp_path):
    p = tmp_path / "zoned.yaml"
    p.write_text(ARM_WITH_ZONES)
    arm = load_arm(p)
    assert [z.kind for z in arm.zones.zones] == ["table", "base", "box"]
    assert arm.zones.link_radius_m == pytest.approx(0.015)
    bad = ARM_WITH_ZONES.replace("table_y_mm", "table_z_mm")
    p.write_text(bad)
    with pytest.raises(ConfigError, match=r"zoned.yaml:11, key 'zones.table_z_mm'.*vertical plane"):
        load_arm(p)
    p.write_text(ARM_WITH_ZONES.replace("[450, -200]", "[450, -200, 3]"))
    with pytest.raises(ConfigError, match=r"boxes\[0\].max_mm'.*expected 2 numbers"):
        load_arm(p)
    p.write_text(ARM_WITH_ZONES.replace("table_y_mm: -300", "table_y_mm: -100"))  # home's tool is at y -129
    with pytest.raises(ConfigError, match="home pose is inside a keep-out zone: link 3 .* the table"):
        load_arm(p)


PROGRAM = """\
arm: seed-3link
zones:
  link_radius_mm: 15
  boxes:
    - {name: tray, min_mm: [300, -300], max_mm: [450, -200]}
poses:
  above: {xy_mm: [400, -100], phi_deg: -90}
  into: {xy_mm: [400, -250], phi_deg: -90}
steps:
  - {joint: above}
  - {line: into}
"""


@pytest.fixture(autouse=True)
def _own_state_folder(tmp_path, monkeypatch):
    """Each test starts from the simulated arm at home: the session's state folder holds the poses (and the
    journals of killed runs) other tests left on the same simulated ports."""


def _armctl(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "armctl", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_plan_run_and_jog_refuse_a_zone(tmp_path):
    prog = tmp_path / "p.yaml"
    prog.write_text(PROGRAM)
    for cmd in (["plan", str(prog)], ["run", str(prog), "--dry-run"]):
        r = _armctl(*cmd)
        assert r.returncode == 3, r.stderr
        assert r.stdout == ""
        line = r.stderr.strip()
        assert "\n" not in line
        assert "p.yaml:11: step 2: link 3 (wrist to tool) would enter box 'tray' 67% along the line" in line
    prog.write_text(PROGRAM.replace("[400, -250]", "[550, -150]"))
    assert _armctl("plan", str(prog), "--summary").returncode == 0
    prog.write_text(PROGRAM.replace("[300, -300]", "[300, -300, 0]"))
    r = _armctl("plan", str(prog))
    assert r.returncode == 2 and "expected 3 numbers, found 2" in r.stderr
    arm = tmp_path / "zoned.yaml"
    arm.write_text(ARM_WITH_ZONES)
    r = _armctl("--arm", str(arm), "jog", "0.4", "-0.25", "--phi", "-90", "--json")
    assert r.returncode == 3
    assert "would enter box 'tray'" in r.stderr
    ws = json.loads(_armctl("--arm", str(arm), "workspace", "--json").stdout)
    assert [z["name"] for z in ws["zones"]][-1] == "box 'tray'" and ws["link_radius_mm"] == pytest.approx(15)
    r = _armctl("--arm", str(arm), "status", "--json")
    assert r.returncode == 0
    assert json.loads(r.stdout)["tool_m"][1] == pytest.approx(-0.1294, abs=1e-3)  # nothing moved


def test_python_api_raises_zone_error_and_nothing_moves(tmp_path):
    import armctl

    p = tmp_path / "zoned.yaml"
    p.write_text(ARM_WITH_ZONES)
    with armctl.connect(str(p)) as robot:
        robot.move_to(0.4, -0.1, phi=-math.pi / 2, path="joint")
        before = robot.where().tool_m
        with pytest.raises(armctl.errors.ZoneError) as e:
            robot.move_to(0.4, -0.25, phi=-math.pi / 2)
        assert e.value.zone == "box 'tray'"
        assert robot.where().tool_m == pytest.approx(before, abs=1e-6)


def test_program_zones_on_the_wrong_arm_kind(tmp_path):
    prog = tmp_path / "p.yaml"
    prog.write_text(PROGRAM.replace("arm: seed-3link", "arm: mearm"))
    r = _armctl("plan", str(prog))
    assert r.returncode == 2 and "mearm" in r.stderr and "[x, y, z]" in r.stderr


@pytest.mark.parametrize("text", [textwrap.dedent(PROGRAM)])
def test_plan_plot_draws_zones(tmp_path, text):
    require_module("matplotlib", "plots are drawn with matplotlib (armctl[plot])")
    prog = tmp_path / "p.yaml"
    prog.write_text(text.replace("[400, -250]", "[550, -150]"))
    out = tmp_path / "p.svg"
    r = _armctl("plot", str(prog), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "keep-out: box &#x27;tray&#x27;" in out.read_text() or "keep-out: box 'tray'" in out.read_text()


def test_a_blended_corner_into_a_zone_is_passed_at_rest():
    """Two lines clear of a box, whose rounded corner would cut into it: the corner is passed at rest."""
    from armctl.model.kinematics import tool_point

    arm = load_arm("seed-3link")
    box = Zones((Zone("box", "box 'post'", lo=(0.47, -0.14), hi=(0.499, -0.101)),), link_radius_m=0.0)
    down = -math.pi / 2
    q0 = motion.solve_pose(arm, (0.3, -0.1), down, arm.home_rad)
    moves = [
        motion.LineMove((0.5, -0.1), phi_rad=down, blend_m=0.005),
        motion.LineMove((0.5, -0.25), phi_rad=down),
    ]

    def speed_at_corner(a):
        tr = motion.plan_moves(a, moves, q_start=q0).trajectory
        p = tool_point(a, tr.q_rad)
        i = int(np.argmin(np.hypot(p[:, 0] - 0.5, p[:, 1] + 0.1)))
        v = np.hypot(*np.diff(p, axis=0).T) / tr.period_s
        return float(min(np.hypot(p[i, 0] - 0.5, p[i, 1] + 0.1), 1.0)), float(v[max(i - 1, 0) : i + 1].min()), tr

    gap, v_free, _ = speed_at_corner(arm)
    assert v_free > 0.01 and gap > 1e-4  # without the box: rounded, never at rest
    zoned = arm.with_zones(box)
    gap, v_zone, tr = speed_at_corner(zoned)
    assert gap < 1e-9 and v_zone < 0.2 * v_free  # with it: through the corner itself, at rest
    assert first_violation(zoned, box, tr.q_rad) is None


def test_the_ramp_to_a_programs_start_is_checked_against_its_zones(tmp_path):
    """A program whose own box lies where the arm swings from where it is to the program's start: the
    program plans (it starts past the box), but running it is refused before anything moves."""
    import armctl
    from armctl.model.kinematics import tool_point
    from armctl.program import load_program_text, plan_program

    arm = load_arm("seed-3link")
    start = motion.solve_pose(arm, (0.3, 0.3), None, arm.home_rad)
    mid = tool_point(arm, 0.5 * (arm.home_rad + start))  # the tool halfway through the ramp (a joint move)
    lo = [round(1000 * v - 10) for v in mid]
    hi = [round(1000 * v + 10) for v in mid]
    text = f"""\
arm: seed-3link
zones:
  boxes:
    - {{name: lamp, min_mm: {lo}, max_mm: {hi}}}
start: {{q_deg: {[round(math.degrees(v), 6) for v in start]}}}
steps:
  - {{line: {{xy_mm: [300, 320]}}}}
"""
    prog = load_program_text(text, str(tmp_path / "p.yaml"))
    plan_program(prog, arm)  # the program itself stays clear of its box
    with armctl.connect("seed-3link") as robot:
        before = robot.where().tool_m
        with pytest.raises(ZoneError, match="would enter box 'lamp'"):
            robot.run(prog)
        assert robot.where().tool_m == pytest.approx(before, abs=1e-6)


def test_the_zones_example_arm_file():
    """examples/seed-3link-zones.yaml: the pick-and-place example plans inside its zones; a jog into its
    parts bin is refused (exit 3) naming the bin."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    arm = str(root / "examples" / "seed-3link-zones.yaml")
    assert [z.kind for z in load_arm(arm).zones.zones] == ["table", "base", "box"]
    r = _armctl("--arm", arm, "plan", str(root / "examples" / "pick_and_place.yaml"), "--summary")
    assert r.returncode == 0, r.stderr
    r = _armctl("--arm", arm, "jog", "0.7", "-0.2", "--phi", "-90", "--port", "armsim://?rate=20")
    assert r.returncode == 3 and "would enter box 'parts bin'" in r.stderr


def test_the_plot_frames_zones_beside_and_below_the_path():
    """A box to the side of the path and the table below it are inside the plot's frame (each zone's edge with a
    margin), not cut off at the path's own extent."""
    require_module("matplotlib", "plots are drawn with matplotlib (armctl[plot])")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from armctl.motion.plot import draw_plane

    zones = Zones(
        (Zone("table", "the table", level=-0.3), Zone("box", "box 'bin'", lo=(0.68, -0.28), hi=(0.8, -0.16))),
        link_radius_m=0.0,
    )
    arm = load_arm("seed-3link").with_zones(zones)
    plan = motion.plan_moves(arm, [motion.LineMove((0.45, 0.1))], q_start=arm.home_rad)
    plan.arm = arm
    fig, ax = plt.subplots()
    draw_plane(ax, plan, [0, len(plan.trajectory.q_rad) - 1], timed=False)
    x1, y0 = ax.get_xlim()[1], ax.get_ylim()[0]
    plt.close(fig)
    assert x1 > 0.8 and y0 < -0.3  # the whole box, and the table's top with some of the table
