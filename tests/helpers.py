"""Plain helpers the tests import (``from tests.helpers import require, require_module``); fixtures live in the
conftest.py files (tests/README.md).

ARMCTL_REQUIRE_SIM=1 (set by .ci/run) turns a missing AVR toolchain, simulator, firmware build or test dependency
into a test failure instead of a skip, so CI can never pass by skipping.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import numpy as np
import pytest
from hypothesis import strategies as st


def require(condition: bool, reason: str) -> None:
    """Skip the calling test when ``condition`` is false, or fail under ARMCTL_REQUIRE_SIM=1."""
    if condition:
        return
    if os.environ.get("ARMCTL_REQUIRE_SIM") == "1":
        pytest.fail(f"required in CI (ARMCTL_REQUIRE_SIM=1) but missing: {reason}")
    pytest.skip(reason, allow_module_level=True)


def require_module(name: str, why: str) -> ModuleType:
    """The module ``name``, imported; when it does not import, skip the caller (a test, or a whole test module at
    its top) with ``why``, or fail under ARMCTL_REQUIRE_SIM=1."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        require(False, f"{name} does not import ({e}): {why}")
        raise  # not reached: require() skipped or failed


@st.composite
def arm_and_pose(draw, narrowest_deg: float = 20.0):
    """A random 2- or 3-link arm with random limits (each side at least ``narrowest_deg`` from 0), and
    a pose inside them."""
    from armctl.model.arm import Arm

    n = draw(st.sampled_from([2, 3]))
    links = [draw(st.floats(0.05, 1.0)) for _ in range(n)]
    lo = [draw(st.floats(-180, -narrowest_deg)) for _ in range(n)]
    hi = [draw(st.floats(narrowest_deg, 180)) for _ in range(n)]
    arm = Arm.from_lengths(links, q_min_deg=lo, q_max_deg=hi)
    q = [draw(st.floats(a, b)) for a, b in zip(arm.q_min, arm.q_max)]
    return arm, np.array(q)


@st.composite
def base_arm_and_pose(draw, narrowest_deg: float = 20.0, base: bool | None = None, linkage: str | None = None):
    """A random arm with a rotating base and/or a parallelogram linkage (``base``/``linkage`` None: drawn),
    random limits (link angles too), shoulder offsets, and a pose inside every limit."""
    from armctl.model.arm import Arm

    has_base = draw(st.booleans()) if base is None else base
    kind = linkage or draw(st.sampled_from(["serial", "parallelogram"]))
    if not has_base and kind == "serial":
        kind = "parallelogram"  # a planar serial arm is arm_and_pose's
    k = 2 if kind == "parallelogram" else draw(st.sampled_from([2, 3]))
    links = [draw(st.floats(0.05, 1.0)) for _ in range(k)]
    lo = [draw(st.floats(-180, -narrowest_deg)) for _ in range(k)]
    hi = [draw(st.floats(narrowest_deg, 180)) for _ in range(k)]
    la = None
    if kind == "parallelogram":
        a = draw(st.floats(0, 150))
        la = [a, draw(st.floats(a + 20, 180))]
    extra = {}
    if has_base:
        lo.insert(0, draw(st.floats(-180, -narrowest_deg)))
        hi.insert(0, draw(st.floats(narrowest_deg, 180)))
        extra = {"base_offset_m": draw(st.floats(-0.1, 0.1)), "shoulder_height_m": draw(st.floats(-0.2, 0.2))}
    from hypothesis import assume

    from armctl.errors import ConfigError

    try:
        arm = Arm.from_lengths(
            links, q_min_deg=lo, q_max_deg=hi, base=has_base, linkage=kind, link_angle_deg=la, **extra
        )
    except ConfigError:  # joint limits that cannot keep the link angle: not an arm
        assume(False)
    # a pose inside every limit: the chain's joints drawn inside their box (serial angles for a
    # parallelogram's forearm, so the link angle is inside too), then checked
    from armctl.model.kinematics import joint_angles

    ch = arm.chain
    c = [draw(st.floats(a, b)) for a, b in zip(ch.q_min, ch.q_max)]
    b = draw(st.floats(arm.q_min[0], arm.q_max[0])) if has_base else None
    q = joint_angles(arm, np.array(c), b)
    assume(arm.within_limits(q))
    return arm, q


def so101_with_held_roll(folder):
    """The so101 preset as a user who holds its wrist roll has it (``held_joints: {wrist_roll: 0}`` in a copy of its
    sidecar, in ``folder``): 4 joints, the roll servo held."""
    from pathlib import Path

    from armctl.core.paths import PRESET_DIR
    from armctl.model.arm import load_arm

    folder = Path(folder)
    (folder / "so101.urdf").write_text((PRESET_DIR / "so101.urdf").read_text())
    sidecar = (PRESET_DIR / "so101.armctl.yaml").read_text()
    assert "home_deg: [0, 76, -74, -5, 0]" in sidecar
    sidecar = sidecar.replace("home_deg: [0, 76, -74, -5, 0]", "home_deg: [0, 76, -74, -5]")
    (folder / "so101.armctl.yaml").write_text(sidecar + "held_joints: {wrist_roll: 0}\n")
    arm = load_arm(str(folder / "so101.urdf"))
    assert arm.n == 4 and arm.roll is None
    return arm


def makers_so101_urdf(folder, *, tool_beside_m: float = 0.0, rounded: bool = False):
    """The SO-101's URDF as its maker ships it (SO-ARM100's ``so101_new_calib.urdf``: the same joints as
    armctl/presets/so101.urdf, its moving jaw and gripper joint, a fixed side frame on the base as onshape-to-robot
    writes one), with no sidecar, in ``folder``; ``tool_beside_m`` moves the tool frame that far to the arm's right
    (m, at the zero pose); ``rounded``: pi/2 and pi as the published file writes them (1.5708, 3.14159)."""
    from pathlib import Path

    from armctl.core.paths import PRESET_DIR

    text = (PRESET_DIR / "so101.urdf").read_text().replace('<robot name="so101">', '<robot name="so101_new_calib">')
    frame = '<origin xyz="-0.0079 -0.0002 -0.0981" rpy="0 3.14159265358979 0"/>'
    assert frame in text
    # gripper_link's y is the root's +y at the zero pose (within 2.8 deg): the arm's left
    moved = f'<origin xyz="-0.0079 {-0.0002 - tool_beside_m!r} -0.0981" rpy="0 3.14159265358979 0"/>'
    text = text.replace(frame, moved)
    text = text.replace(
        "</robot>",
        '  <link name="baseframe"/>\n  <joint name="baseframe_frame" type="fixed">\n'
        '    <origin xyz="0.020791 0.0157608 0.0324817" rpy="0 0 0"/>\n    <parent link="base_link"/>\n'
        '    <child link="baseframe"/>\n  </joint>\n</robot>',
    )
    if rounded:
        text = text.replace("1.5707963267949", "1.5708").replace("3.14159265358979", "3.14159")
    path = Path(folder) / "so101_new_calib.urdf"
    path.write_text(text)
    assert not path.with_name("so101_new_calib.armctl.yaml").exists()
    return path
