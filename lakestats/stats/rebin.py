"""The table histogram's grid and partition histograms re-binned onto it.

Contract: ``Grid`` is the table grid in the column's storage domain (``lower + i * width``);
``histogram_range`` is the finite range one partition histogram covers; ``rebin`` spreads a
partition histogram over the grid in proportion to overlap (values taken as uniform inside a
source bin; integer bins split by the integers they cover); ``round_counts`` turns the
summed fractional counts into integers with the right total; ``table_histogram`` gives the
table row's histogram fields and the counts to store (exact when every value is known).
Pure NumPy/Arrow: no Spark, no store.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lakestats.stats import histogram as hist
from lakestats.stats import keys
from lakestats.stats.kinds import Kind, kind_of

if TYPE_CHECKING:
    from lakestats.stats.scalar_state import ScalarState


@dataclass
class Grid:
    """The table histogram's bins: ``lower + i * width`` in the column's storage domain."""

    lower: float | int
    width: float | int
    bins: int
    integral: bool
    bins_requested: int = 1000

    def edges(self) -> np.ndarray:
        cached = self.__dict__.get("_edges")
        if cached is None:
            cached = float(self.lower) + np.arange(self.bins + 1, dtype=np.float64) * float(
                self.width
            )
            self.__dict__["_edges"] = cached
        return cached.copy()


def histogram_range(row: dict[str, object], dtype: pa.DataType) -> tuple[float, float]:
    """The finite value range a partition histogram covers, in storage units."""
    kind = kind_of(dtype)
    bins, width = row["histogram_bins"], row["histogram_width"]
    lower = storage_number(row["histogram_lower"], dtype)
    if kind == Kind.FLOATING:
        upper = lower + bins * width if width else lower
        top = keys.decode(row["max"], dtype)
        if math.isfinite(top):
            upper = min(upper, top) if width else top
        return lower, upper
    # the last bin's nominal end can lie past the partition's max: the table range must not
    return lower, min(lower + bins * int(width) - 1, storage_number(row["max"], dtype))


def rebin(row: dict[str, object], counts: np.ndarray, grid: Grid, dtype: pa.DataType) -> np.ndarray:
    """A partition histogram's counts spread over ``grid`` in proportion to overlap.

    Values are taken as uniform inside each source bin: the source's piecewise-linear
    cumulative count is interpolated at the grid's edges and differenced.
    """
    bins, width = row["histogram_bins"], row["histogram_width"]
    lower = float(storage_number(row["histogram_lower"], dtype))
    counts = np.asarray(counts[:bins], dtype=np.float64)
    if grid.width == 0 or width == 0:
        out = np.zeros(grid.bins, dtype=np.float64)
        # one point (or a one-bin grid): the grid bin whose reported edges hold it
        index = int(np.searchsorted(grid.edges()[:-1], lower, side="right")) - 1
        out[min(grid.bins - 1, max(0, index))] += counts.sum()
        return out
    source_edges = lower + np.arange(bins + 1, dtype=np.float64) * float(width)
    # the last source bin holds nothing past the partition's max: spread it only up to there
    top = storage_number(row["max"], dtype)
    end = float(top) + 1.0 if grid.integral else float(top)
    if math.isfinite(end) and end < source_edges[-1]:
        source_edges[-1] = max(end, np.nextafter(source_edges[-2], np.inf))
    cumulative = np.concatenate([[0.0], np.cumsum(counts)])
    target_edges = grid.edges()
    target_edges[-1] = max(target_edges[-1], source_edges[-1])
    return np.diff(np.interp(target_edges, source_edges, cumulative))


def round_counts(values: np.ndarray, total: int) -> np.ndarray:
    """Integer counts summing to ``total``, from fractional ones.

    The running total is rounded, not each count, so the counts of any run of bins are
    within 1 of their fractional sum (rounding bins one by one could drift by many)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    running = np.floor(np.cumsum(np.asarray(values, dtype=np.float64)) + 0.5)
    running = np.clip(running, 0, total).astype(np.int64)
    running[-1] = total
    return np.diff(running, prepend=0)


def storage_number(key: bytes, dtype: pa.DataType) -> float | int:
    kind = kind_of(dtype)
    value = keys.decode(key, dtype)
    if kind == Kind.FLOATING:
        return float(value)
    if kind == Kind.DECIMAL:
        return keys.unscaled_of(value, dtype.scale)
    if kind == Kind.TEMPORAL:
        return int.from_bytes(key, "big") - (1 << 63)
    return int(value)


def table_histogram(
    state: ScalarState,
    grid: Grid | None,
    rebinned: np.ndarray | None,
    exact: hist.Histogram | None,
    dtype: pa.DataType,
) -> tuple[dict, np.ndarray | None]:
    """The histogram fields of the table row and the counts to store."""
    if exact is not None:
        lower = hist.lower_key(exact.lower, dtype)
        return (
            {
                "histogram_lower": lower,
                "histogram_width": float(exact.width),
                "histogram_bins": len(exact.counts),
                "histogram_exact": True,
            },
            exact.counts,
        )
    if grid is None:
        return {}, None
    total = state.row_count - state.null_count - (state.nan_count or 0)
    counts = round_counts(rebinned if rebinned is not None else np.zeros(grid.bins), total)
    lower = hist.lower_key(grid.lower, dtype)
    return (
        {
            "histogram_lower": lower,
            "histogram_width": float(grid.width),
            "histogram_bins": grid.bins,
            "histogram_exact": False,
        },
        counts,
    )
