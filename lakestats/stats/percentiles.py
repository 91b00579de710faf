"""Exact percentiles from exact value counts (nearest-rank, as DuckDB's quantile_disc)."""

from __future__ import annotations

import numpy as np

PERCENTILES: tuple[int, ...] = (1, 5, 25, 50, 75, 95, 99)
"""The percentiles every ordered column gets, as ``p01`` … ``p99``."""


def percentile_names() -> list[str]:
    return [f"p{p:02d}" for p in PERCENTILES]


def nearest_rank_indices(sorted_counts: np.ndarray, percents: tuple[int, ...]) -> list[int]:
    """Index into the sorted distinct values of each percentile.

    The p-th percentile of n values is the value of rank ``ceil(n * p / 100)`` (at least
    1), computed in integers so no rounding error moves a boundary.
    """
    cumulative = np.cumsum(sorted_counts, dtype=np.int64)
    n = int(cumulative[-1]) if len(cumulative) else 0
    if n == 0:
        return []
    out = []
    for p in percents:
        rank = max(1, -(-n * p // 100))
        out.append(int(np.searchsorted(cumulative, rank, side="left")))
    return out
