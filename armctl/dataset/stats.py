"""Feature statistics of a LeRobot dataset (meta/stats.json): per feature min, max, mean, std, count and quantiles,
images sampled, episodes' stats aggregated."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
STATS = ("min", "max", "mean", "std", "count", *(f"q{round(q * 100):02d}" for q in QUANTILES))


IMAGE_STATS_STRIDE = 4  # every 4th pixel each way: image stats from a 1/16 sample (as LeRobot samples them)


def feature_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """Stats of ``values`` (N, ...) over the first axis: min, max, mean, std, count and the quantiles."""
    v = np.asarray(values, dtype=np.float64)
    out = {
        "min": v.min(axis=0),
        "max": v.max(axis=0),
        "mean": v.mean(axis=0),
        "std": v.std(axis=0),
        "count": np.array([len(v)]),
    }
    for q, name in zip(QUANTILES, STATS[5:]):
        out[name] = np.quantile(v, q, axis=0)
    return out


def image_stats(frames: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Per-channel stats of RGB frames (H, W, 3 uint8), scaled to 0..1, each of shape (3, 1, 1) as LeRobot keeps
    them; pixels sampled every ``IMAGE_STATS_STRIDE`` each way; count = frames."""
    px = np.concatenate([f[::IMAGE_STATS_STRIDE, ::IMAGE_STATS_STRIDE].reshape(-1, 3) for f in frames], axis=0).astype(
        np.float64
    )
    px /= 255.0
    st = feature_stats(px)
    out = {k: v.reshape(3, 1, 1) for k, v in st.items() if k != "count"}
    out["count"] = np.array([len(frames)])
    return out


def aggregate_stats(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Stats of several episodes together: exact min, max, mean, std (pooled), count; quantiles as the
    count-weighted mean of the episodes' (LeRobot aggregates them the same way)."""
    counts = np.array([float(np.asarray(p["count"]).reshape(-1)[0]) for p in parts])
    total = counts.sum()
    w = counts / total
    shape = np.asarray(parts[0]["mean"]).shape

    def weighted(key):
        return sum(wi * np.asarray(p[key], dtype=np.float64) for wi, p in zip(w, parts)).reshape(shape)

    mean = weighted("mean")
    second = sum(
        wi * (np.asarray(p["std"], dtype=np.float64) ** 2 + np.asarray(p["mean"], dtype=np.float64) ** 2)
        for wi, p in zip(w, parts)
    )
    out = {
        "min": np.min([np.asarray(p["min"]) for p in parts], axis=0),
        "max": np.max([np.asarray(p["max"]) for p in parts], axis=0),
        "mean": mean,
        "std": np.sqrt(np.maximum(second - mean**2, 0.0)),
        "count": np.array([int(total)]),
    }
    for k in STATS[5:]:
        if all(k in p for p in parts):
            out[k] = weighted(k)
    return out


def jsonable(stats: Mapping[str, np.ndarray]) -> dict:
    return {k: np.asarray(v).tolist() for k, v in stats.items()}
