"""The accuracy map (bed mesh): grid over the reach, bilinear errors, targets corrected through it, saved and read."""

import numpy as np
import pytest

from armctl.calibration.accuracymap import AccuracyMap, grid_targets, plot_map
from armctl.errors import ConfigError
from armctl.model.arm import load_arm


def _field(p):
    """A smooth error field (m): what a map of a real arm might hold."""
    x, y = p[..., 0], p[..., 1]
    return np.stack([0.004 + 0.02 * x, -0.003 + 0.03 * y * x, 0.002 * np.ones_like(x)], axis=-1)


def test_grid_is_reachable_and_a_linear_field_is_interpolated_exactly():
    arm = load_arm("mearm")
    xs, ys, targets = grid_targets(arm, 0.05, 0.03)
    assert len(targets) > 10
    assert all(len(t) == 3 and t[2] == 0.05 for t in targets)
    landed = targets + _field(targets)
    amap = AccuracyMap.from_points(xs, ys, 0.05, targets, landed)
    assert amap.measured == len(targets)
    inner = targets[len(targets) // 2]
    assert np.allclose(amap.error_at(inner), _field(inner), atol=1e-12)
    # between grid points of a bilinear field: exact; the correction lands the tool on the target
    mid = inner + [0.013, 0.007, 0.0]
    assert amap.error_at(mid) is not None
    send = amap.corrected(mid)
    assert np.linalg.norm(send + _field(send) - mid) < 2e-4
    assert amap.error_at([5.0, 5.0, 0.05]) is None  # off the grid: the map says nothing
    assert np.allclose(amap.corrected([5.0, 5.0, 0.05]), [5.0, 5.0, 0.05])


def test_round_trip_and_bad_maps(tmp_path):
    xs, ys = np.array([0.0, 0.1]), np.array([0.0, 0.1, 0.2])
    errors = np.full((3, 2, 2), np.nan)
    errors[0, 0] = [0.001, -0.002]
    errors[2, 1] = [0.0005, 0.0]
    amap = AccuracyMap(xs, ys, 0.0, errors)
    back = AccuracyMap.from_dict(amap.to_dict())
    assert np.allclose(back.errors, errors, equal_nan=True) and back.measured == 2
    assert np.allclose(back.error_at([0.0, 0.0]), [0.001, -0.002])
    for bad in (
        {},
        {"xs_m": [0, 1], "ys_m": [0], "error_mm": [[None]]},
        {"xs_m": [1, 0], "ys_m": [0], "error_mm": [[None, None]]},
    ):
        with pytest.raises(ConfigError, match="accuracy_map"):
            AccuracyMap.from_dict(bad)
    pytest.importorskip("matplotlib")
    plot_map(amap, tmp_path / "map.png")
    assert (tmp_path / "map.png").read_bytes()[:4] == b"\x89PNG"
