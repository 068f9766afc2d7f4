"""Per-row max / min / any of a (K, m) array of per-joint values (K path points or samples, m joints), taken
column by column.

numpy's reduction along a short last axis (``x.max(axis=1)`` on a (1000, 2) array) costs about 30 us, 30 times
an elementwise ``np.maximum`` of the columns; a line's planning takes several of them. The answers are the
same bit for bit (a maximum or minimum is one of its arguments; NaN propagates as in ``np.max``).
"""

from __future__ import annotations

import numpy as np


def _fold(ufunc, x) -> np.ndarray:
    """``ufunc.reduce(x, axis=-1)`` of an array with at least one column, column by column."""
    out = x[..., 0].copy()
    for j in range(1, x.shape[-1]):
        ufunc(out, x[..., j], out=out)
    return out


def row_max(x) -> np.ndarray:
    """``x.max(axis=1)`` of a 2-D array with at least one column."""
    return _fold(np.maximum, np.asarray(x))


def row_min(x) -> np.ndarray:
    """``x.min(axis=1)`` of a 2-D array with at least one column."""
    return _fold(np.minimum, np.asarray(x))


def row_any(x) -> np.ndarray:
    """``np.any(x, axis=-1)`` of a boolean array (any shape, at least one column): a (..., m) array gives (...)."""
    return _fold(np.logical_or, np.asarray(x, dtype=bool))
