"""Equi-width histograms built from exact value counts.

Bins cover [min, max] of the column's finite values with equal width; bin ``i`` is
``[lower + i * width, lower + (i + 1) * width)`` and the last bin also holds ``max``.
Integer, temporal and decimal columns use integer widths (in storage units: days,
microseconds, unscaled decimal units) that are multiples of the greatest common
divisor of the values' distances from the minimum, so a column with fewer distinct
lattice points than bins gets one bin per point and fewer bins. Floating-point ``-inf``
values are counted in the first bin and ``+inf`` in the last; NaN is not counted.
``lower``, ``width`` and the number of bins are stored in ``statistics.parquet``
(``histogram_lower``, ``histogram_width``, ``histogram_bins``), so every edge can be
recomputed exactly as the writer computed it: an integer width is a float64 that holds it
exactly (``exact_width``: at most 53 significant bits, rounded up), so a reader's
``int(width)`` is the writer's width on every span, a decimal(38)'s or a full int64's too.
Every value is counted in the bin whose
reported edges hold it: integer bins are exact; float bins are checked against the edges
``lower + i * width`` as the reader computes them (``float_bin_index``).

``of_values`` and ``lower_key`` are the one builder of a column's histogram and its stored
``histogram_lower`` key, shared by a partition (``stats/accumulator.py``) and by the exact
table level (``stats/table_frequencies.py``, ``stats/rebin.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakestats.stats import keys
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.type_codec import parse_type


@dataclass(frozen=True)
class Histogram:
    lower: object  # in the domain the values were given in (int or float)
    width: float
    counts: np.ndarray  # int64, one per bin


def exact_width(width: int) -> int:
    """``width`` rounded up to the nearest integer a float64 holds exactly: the stored
    ``histogram_width`` is a double, and a wider integer would come back as another width
    and so other edges than the ones the values were counted in."""
    extra = width.bit_length() - 53
    if extra <= 0:
        return width
    return -(-width >> extra) << extra


def integer_histogram(values: np.ndarray, counts: np.ndarray, bins: int) -> Histogram | None:
    """Histogram of int64 ``values`` (distinct, any order) weighted by ``counts``.

    The width is a multiple of the greatest common divisor of the values' distances
    from the minimum, so values on a lattice (dates stored as timestamps at midnight,
    decimals with unused digits) get bins that each hold some of them.
    """
    if len(values) == 0:
        return None
    lo, hi = int(values.min()), int(values.max())
    offsets = values.view(np.uint64) - np.uint64(lo & ((1 << 64) - 1))
    # the gcd of all offsets divides that of the first ones: most columns' first ones
    # already give 1, and the rest need not be read
    step = int(np.gcd.reduce(offsets[:GCD_FIRST])) or 1
    if step > 1 and len(offsets) > GCD_FIRST:
        step = int(np.gcd.reduce(offsets, initial=np.uint64(step))) or 1
    points = (hi - lo) // step + 1
    width = exact_width(step * max(1, -(-points // bins)))
    nbins = (hi - lo) // width + 1
    index = (offsets // np.uint64(width)).astype(np.int64)
    return Histogram(lo, float(width), _bin_sums(index, counts, nbins))


GCD_FIRST = 1024
"""Offsets whose gcd is taken first (``integer_histogram``)."""


def _bin_sums(index: np.ndarray, counts: np.ndarray, bins: int) -> np.ndarray:
    """Each bin's sum of ``counts`` (``index``: each value's bin): where the values come in
    order (a partition's counted numbers do), the bins are runs summed in one pass (a
    third of the weighted ``np.bincount``'s time, exact at any count)."""
    if len(index) > 1 and not (index[1:] >= index[:-1]).all():
        return np.bincount(index, weights=counts, minlength=bins).astype(np.int64)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(index)) + 1])
    out = np.zeros(bins, dtype=np.int64)
    out[index[starts]] = np.add.reduceat(np.asarray(counts, dtype=np.int64), starts)
    return out


def wide_integer_histogram(values: list[int], counts: np.ndarray, bins: int) -> Histogram | None:
    """Histogram of arbitrary-size Python integers (decimals wider than 18 digits)."""
    if not values:
        return None
    lo, hi = min(values), max(values)
    width = exact_width(max(1, -(-(hi - lo + 1) // bins)))
    nbins = -(-(hi - lo + 1) // width)
    index = np.fromiter(((v - lo) // width for v in values), dtype=np.int64, count=len(values))
    return Histogram(
        lo, float(width), np.bincount(index, weights=counts, minlength=nbins).astype(np.int64)
    )


def float_histogram(values: np.ndarray, counts: np.ndarray, bins: int) -> Histogram | None:
    """Histogram of float64 ``values`` (no NaN) weighted by ``counts``."""
    finite = np.isfinite(values)
    if not finite.any():
        if len(values) == 0:
            return None
        # only infinities: one bin that holds them all
        return Histogram(float(values.min()), 0.0, np.array([int(counts.sum())], dtype=np.int64))
    lo, hi = float(values[finite].min()), float(values[finite].max())
    width = (hi - lo) / bins
    if not math.isfinite(width):
        width = hi / bins - lo / bins
    if width == 0.0:
        return Histogram(lo, 0.0, np.array([int(counts.sum())], dtype=np.int64))
    index = float_bin_index(values, lo, width, bins)
    return Histogram(lo, width, np.bincount(index, weights=counts, minlength=bins).astype(np.int64))


def float_edges(lower: float, width: float, bins: int) -> np.ndarray:
    """The bins' lower edges, computed exactly as they are reported: ``lower + i * width``."""
    return np.float64(lower) + np.arange(bins, dtype=np.float64) * np.float64(width)


def float_bin_index(values: np.ndarray, lower: float, width: float, bins: int) -> np.ndarray:
    """The bin of each value: the one whose reported ``[lower + i*w, lower + (i+1)*w)``
    holds it (the first bin also takes anything below, the last anything above).

    ``floor((v - lower) / width)`` is a guess that rounding can put one bin off at an
    edge (53.8 lands below the edge ``lower + i*w`` that prints as 53.8); the guess is
    checked against the reported edges and the few misses are looked up exactly.
    """
    edges = float_edges(lower, width, bins)
    with np.errstate(invalid="ignore", over="ignore"):
        raw = np.floor((values - lower) / width)
    raw = np.nan_to_num(raw, nan=0.0, posinf=bins - 1, neginf=0)
    index = np.clip(raw, 0, bins - 1).astype(np.int64)
    above = np.append(edges[1:], np.inf)[index]  # the last bin has no upper edge
    wrong = ((values < edges[index]) & (index > 0)) | (values >= above)
    if wrong.any():
        index[wrong] = np.clip(np.searchsorted(edges, values[wrong], side="right") - 1, 0, None)
    return index


def of_values(
    values: pa.Array, counts: np.ndarray, bins: int, numbers: np.ndarray | None = None
) -> Histogram | None:
    """The histogram of a column's distinct ``values`` (no NaN, any order) weighted by
    ``counts``: floats as float64, decimals wider than 18 digits as Python integers, the
    rest as int64 storage numbers (days, time units, unscaled decimals). ``numbers``, the
    float64 (floats) or int64 (integers, temporal) form of ``values``, saves converting them
    again."""
    kind = kind_of(values.type)
    if kind == Kind.FLOATING:
        if numbers is None:
            numbers = values.cast(pa.float64()).to_numpy(zero_copy_only=False)
        return float_histogram(numbers, counts, bins)
    if kind == Kind.DECIMAL and values.type.precision > 18:
        unscaled = [keys.unscaled_of(v, values.type.scale) for v in values.to_pylist()]
        return wide_integer_histogram(unscaled, counts, bins)
    if kind == Kind.DECIMAL:
        numbers = keys.unscaled_int64(values)
    elif numbers is None:
        numbers = keys.integers(values)
    return integer_histogram(numbers.astype(np.int64), counts, bins)


def lower_key(lower: float | int, dtype: pa.DataType) -> bytes:
    """The stored ``histogram_lower``: the key of a histogram's ``lower`` (a storage number
    of a column of type ``dtype``; float64 for floating columns)."""
    kind = kind_of(dtype)
    if kind == Kind.FLOATING:
        return keys.encode(pa.array([float(lower)], pa.float64()))[0].as_py()
    if kind == Kind.DECIMAL:
        value = keys.decimal_from_unscaled(int(lower), dtype.scale)
        return keys.encode(pa.array([value], dtype))[0].as_py()
    if kind == Kind.TEMPORAL:
        storage = keys.physical_int_storage(dtype)
        return keys.encode(pa.array([int(lower)], storage).view(dtype))[0].as_py()
    return keys.encode(pa.array([int(lower)], dtype))[0].as_py()


def bin_edges(
    type_text: str, lower_key: bytes, width: float, bins: int, max_key: bytes, start: int, stop: int
) -> list[tuple[object, object]]:
    """Recompute bin edges exactly as the writer did (``of_values``):
    bin ``i`` is ``[lower + i * width, lower + (i + 1) * width)``; the last is ``[.., max]``."""
    dtype = parse_type(type_text)
    kind = kind_of(dtype)
    if kind == Kind.FLOATING:
        lo = keys.decode(lower_key, dtype)
        top = keys.decode(max_key, dtype)
        out = []
        for i in range(start, stop):
            upper = top if (i == bins - 1 or width == 0.0) else lo + (i + 1) * width
            out.append((lo + i * width, upper))
        return out
    step = int(width)
    if kind == Kind.DECIMAL:
        lo_unscaled = keys.unscaled_of(keys.decode(lower_key, dtype), dtype.scale)
        end = keys.unscaled_of(keys.decode(max_key, dtype), dtype.scale)
        return [
            (
                keys.decimal_from_unscaled(lo_unscaled + i * step, dtype.scale),
                keys.decimal_from_unscaled(_upper(lo_unscaled, step, i, bins, end), dtype.scale),
            )
            for i in range(start, stop)
        ]
    if kind == Kind.INTEGER:
        lo_int = int(keys.decode(lower_key, dtype))
        end = int(keys.decode(max_key, dtype))
        return [(lo_int + i * step, _upper(lo_int, step, i, bins, end)) for i in range(start, stop)]
    lo_int = int.from_bytes(lower_key, "big") - (1 << 63)
    if kind == Kind.TEMPORAL:
        end = int.from_bytes(max_key, "big") - (1 << 63)
        return [
            (
                keys.from_integer(lo_int + i * step, dtype),
                keys.from_integer(_upper(lo_int, step, i, bins, end), dtype),
            )
            for i in range(start, stop)
        ]
    return []


def _upper(lower: int, step: int, i: int, bins: int, end: int) -> int:
    """Bin ``i``'s upper edge: ``lower + (i + 1) * step``, except that the last bin (closed,
    as a float histogram's) ends at max, not at its nominal end past it."""
    return end if i == bins - 1 else lower + (i + 1) * step
