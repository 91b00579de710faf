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

import numpy as np
import pyarrow as pa

from lakestats.stats import histogram as hist
from lakestats.stats import keys
from lakestats.stats.kinds import Kind, kind_of


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
    return range_of_numbers(
        storage_number(row["histogram_lower"], dtype),
        row["histogram_width"],
        row["histogram_bins"],
        storage_number(row["max"], dtype),
        kind_of(dtype) == Kind.FLOATING,
    )


def range_of_numbers(
    lower: float | int, width: float, bins: int, top: float | int, floating: bool
) -> tuple[float, float]:
    """``histogram_range`` given numbers: the lower edge and the max in storage units
    (``storage_number``), the bin width and count."""
    if floating:
        upper = lower + bins * width if width else lower
        if math.isfinite(top):
            upper = min(upper, top) if width else top
        return lower, upper
    # the last bin's nominal end can lie past the partition's max: the table range must not
    return lower, min(lower + bins * int(width) - 1, top)


def rebin(row: dict[str, object], counts: np.ndarray, grid: Grid, dtype: pa.DataType) -> np.ndarray:
    """A partition histogram's counts spread over ``grid`` in proportion to overlap.

    Values are taken as uniform inside each source bin: the source's piecewise-linear
    cumulative count is interpolated at the grid's edges and differenced.
    """
    return rebin_numbers(
        float(storage_number(row["histogram_lower"], dtype)),
        row["histogram_width"],
        row["histogram_bins"],
        storage_number(row["max"], dtype),
        counts,
        grid,
    )


def rebin_numbers(
    lower: float,
    width: float,
    bins: int,
    top: float | int,
    counts: np.ndarray,
    grid: Grid,
) -> np.ndarray:
    """``rebin`` of a histogram given as numbers: its lower edge and the column's max in
    storage units (``storage_number``), its bin width and count."""
    counts = np.asarray(counts[:bins], dtype=np.float64)
    if grid.width == 0 or width == 0:
        out = np.zeros(grid.bins, dtype=np.float64)
        # one point (or a one-bin grid): the grid bin whose reported edges hold it
        index = int(np.searchsorted(grid.edges()[:-1], lower, side="right")) - 1
        out[min(grid.bins - 1, max(0, index))] += counts.sum()
        return out
    source_edges = lower + np.arange(bins + 1, dtype=np.float64) * float(width)
    # the last source bin holds nothing past the partition's max: spread it only up to there
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


_SIGN = np.uint64(1 << 63)


def storage_numbers(keys_array: pa.Array | pa.ChunkedArray, dtype: pa.DataType) -> list:
    """``storage_number`` of every key (None where null): 8-byte integer, temporal and
    floating keys decoded at once (the same numbers), other kinds key by key."""
    if isinstance(keys_array, pa.ChunkedArray):
        keys_array = keys_array.combine_chunks()
    kind = kind_of(dtype)
    eight = (
        kind in (Kind.TEMPORAL, Kind.FLOATING)
        or (kind == Kind.INTEGER and not pa.types.is_uint64(_value_type(dtype)))
    )
    binary = keys_array.cast(pa.large_binary())
    if not eight or not len(binary):
        return [None if k is None else storage_number(k, dtype) for k in binary.to_pylist()]
    valid = binary.is_valid().to_numpy(zero_copy_only=False)
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int64)
    offsets = offsets[binary.offset : binary.offset + len(binary) + 1]
    if not np.array_equal(np.diff(offsets), np.where(valid, 8, 0)):
        return [None if k is None else storage_number(k, dtype) for k in binary.to_pylist()]
    raw = np.frombuffer(binary.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    words = np.zeros(len(binary), np.uint64)
    words[valid] = raw.view(">u8").astype(np.uint64)
    if kind == Kind.FLOATING:
        negative = (words >> np.uint64(63)) == 0
        numbers = np.where(negative, ~words, words ^ _SIGN).view(np.float64).tolist()
    else:
        numbers = (words ^ _SIGN).view(np.int64).tolist()
    return [n if v else None for n, v in zip(numbers, valid, strict=True)]


def _value_type(dtype: pa.DataType) -> pa.DataType:
    return dtype.value_type if pa.types.is_dictionary(dtype) else dtype


def table_histogram(
    values: int,
    grid: Grid | None,
    rebinned: np.ndarray | None,
    exact: hist.Histogram | None,
    dtype: pa.DataType,
) -> tuple[dict, np.ndarray | None]:
    """The histogram fields of the table row and the counts to store (``values``: the
    column's rows that are neither null nor NaN, what the rounded counts add up to)."""
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
    counts = round_counts(rebinned if rebinned is not None else np.zeros(grid.bins), values)
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
