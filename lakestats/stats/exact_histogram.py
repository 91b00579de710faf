"""Exact counts of sorted value keys on the table histogram's grid (``analyze --exact``).

The table row stores the grid (``histogram_lower`` key, ``histogram_width``,
``histogram_bins``); bin ``i`` is ``[lower + i * width, lower + (i + 1) * width)`` in the
column's storage domain, the last bin also holding the max (``stats/histogram.py``). A
rank range task counts its (key, count) rows per bin with NumPy; the driver sums the
ranges. Decimals wider than 18 digits and unsigned 64-bit integers are left re-binned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from lakestats.stats import histogram as hist
from lakestats.stats import keys
from lakestats.stats.key_ints import decimal_keys_as_ints, keys_as_ints
from lakestats.stats.kinds import Kind, kind_of


@dataclass(frozen=True)
class ExactGrid:
    kind: Kind
    lower: float | int
    width: float | int
    bins: int


def grid_of(row: dict[str, object], dtype: pa.DataType) -> ExactGrid | None:
    """The grid of a table statistics row, when its keys can be binned exactly here."""
    kind = kind_of(dtype)
    if row.get("histogram_bins") is None or row.get("histogram_lower") is None:
        return None
    if kind not in (Kind.INTEGER, Kind.TEMPORAL, Kind.FLOATING, Kind.DECIMAL):
        return None
    if pat.is_uint64(dtype) or (kind == Kind.DECIMAL and dtype.precision > 18):
        return None
    lower_key = pa.array([row["histogram_lower"]], pa.binary())
    lower = storage_numbers(lower_key, dtype, kind)[0]
    width = float(row["histogram_width"])
    if kind != Kind.FLOATING:
        lower, width = int(lower), int(width)
    return ExactGrid(kind, lower, width, int(row["histogram_bins"]))


def storage_numbers(encoded: pa.Array, dtype: pa.DataType, kind: Kind) -> np.ndarray:
    """The numbers bins count: int64 storage (integers, temporals, unscaled decimals) read
    straight from the keys' bytes, floats decoded."""
    value_type = dtype.value_type if pat.is_dictionary(dtype) else dtype
    if kind in (Kind.INTEGER, Kind.TEMPORAL) and not pat.is_uint64(value_type):
        return keys_as_ints(encoded)
    if kind == Kind.DECIMAL:
        return decimal_keys_as_ints(encoded, value_type.bit_width // 8)[0]
    values = keys.decode_array(encoded, dtype)
    if kind == Kind.FLOATING:
        return values.cast(pa.float64()).to_numpy(zero_copy_only=False)
    if kind == Kind.DECIMAL:
        return keys.unscaled_int64(values)
    return keys.integers(values)


def bin_counts(
    encoded: pa.Array, counts: np.ndarray, dtype: pa.DataType, grid: ExactGrid
) -> np.ndarray:
    """Exact per-bin totals of ``(key, count)`` rows (NaN not counted)."""
    numbers = storage_numbers(encoded, dtype, grid.kind)
    if grid.kind == Kind.FLOATING:
        keep = ~np.isnan(numbers)
        numbers, counts = numbers[keep], counts[keep]
        index = hist.float_bin_index(numbers, float(grid.lower), float(grid.width), grid.bins)
    else:
        offsets = numbers.astype(np.int64).view(np.uint64) - np.uint64(
            int(grid.lower) & ((1 << 64) - 1)
        )
        below = numbers < grid.lower
        index = (offsets // np.uint64(max(1, grid.width))).astype(np.int64)
        index[below] = 0
        index = np.clip(index, 0, grid.bins - 1)
    return np.bincount(index, weights=counts, minlength=grid.bins)[: grid.bins].astype(np.int64)
