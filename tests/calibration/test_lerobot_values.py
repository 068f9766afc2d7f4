"""LeRobot's normalised values (``lerobot.normalize``) against LeRobot's documented formulas, written here
apart from armctl (motors_bus.py ``_normalize``, LeRobot 0.4.4-0.6.1; a Feetech bus applies drive_mode):

- DEGREES: (raw - mid) * 360 / 4095, mid = (range_min + range_max) / 2, not clamped, drive_mode ignored;
- RANGE_0_100: clamped, (raw - min) / (max - min) * 100, drive_mode 1 -> 100 - value;
- RANGE_M100_100: clamped, (raw - min) / (max - min) * 200 - 100, drive_mode 1 -> -value.
"""

from __future__ import annotations

import pytest

from armctl.calibration.lerobot import DEGREES, RANGE_0_100, RANGE_M100_100, normalize


def reference(raw, mode, lo, hi, drive_mode):
    if mode == DEGREES:
        return (raw - (lo + hi) / 2) * 360 / 4095
    b = min(hi, max(lo, raw))
    if mode == RANGE_0_100:
        v = (b - lo) / (hi - lo) * 100
        return 100 - v if drive_mode else v
    v = (b - lo) / (hi - lo) * 200 - 100
    return -v if drive_mode else v


@pytest.mark.parametrize("drive_mode", [0, 1])
@pytest.mark.parametrize("mode", [DEGREES, RANGE_0_100, RANGE_M100_100])
def test_normalize_is_lerobots(mode, drive_mode):
    lo, hi = 2027, 3447
    for raw in (0, 2000, 2027, 2028, 2600, 3446, 3447, 3500, 4095):
        assert normalize(raw, mode, lo, hi, drive_mode) == pytest.approx(reference(raw, mode, lo, hi, drive_mode))


def test_drive_mode_turns_the_ranges_round_but_not_degrees():
    assert normalize(2027, RANGE_0_100, 2027, 3447, 1) == 100.0 and normalize(2027, RANGE_0_100, 2027, 3447, 0) == 0.0
    assert normalize(3447, RANGE_M100_100, 2027, 3447, 1) == -100.0
    assert (
        normalize(3000, DEGREES, 1000, 3000, 1)
        == normalize(3000, DEGREES, 1000, 3000, 0)
        == pytest.approx(1000 * 360 / 4095)
    )
    with pytest.raises(ValueError):
        normalize(5, RANGE_0_100, 7, 7)
