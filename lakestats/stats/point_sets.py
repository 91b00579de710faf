"""Many single values at once (an IN list of 100,000 values, or its NOT IN's complement):
the sum of their estimates as ``selectivity`` and ``selectivity_vector`` compute it range
by range, without a Python step per value and partition.

A value outside a partition's [min, max] keeps nothing, so only the values inside count;
those are one slice of the sorted values per partition. Per partition, each value inside
keeps its listed count (complete frequencies), the whole partition (min = max = the value),
or what its histogram bin says of an unlisted value (``selectivity._unlisted_value``, which
depends on the value only through its bin: computed once per bin). The sums are taken in
the values' order with the same float additions as the range-by-range loop (zeros add
nothing), so the numbers are the same to the bit; tests/query/test_in_lists.py compares
the two.
"""

from __future__ import annotations

import bisect

import numpy as np
import pyarrow.types as pat

from lakestats.stats import key_ranges as kr
from lakestats.stats import selectivity as sel
from lakestats.stats import selectivity_vector as sv
from lakestats.stats.kinds import Kind, kind_of


def _point(key: bytes) -> kr.KeyRange:
    return kr.KeyRange((1, key, 1), (1, key, 2))


def _split_nan(points: list[bytes], floating: bool) -> tuple[list[bytes], bool]:
    """The values without NaN (the largest key, so the last) and whether it was there."""
    if floating and points and points[-1] == sel.NAN_KEY:
        return points[:-1], True
    return points, False


def summary_sum(s: sel.ColumnSummary, points: list[bytes]) -> sel.Estimate:
    """``selectivity._sum([_range(s, r) for r in ranges])`` of the single-value ranges of
    ``points`` (sorted, distinct)."""
    values, nan = _split_nan(points, s.kind == Kind.FLOATING)
    rows: list[float] = []
    lower = upper = 0
    methods: set[str] = set()
    m = s.ordered_values
    if m <= 0 or s.min_key is None or s.max_key is None:
        inside: list[bytes] = []
    else:
        a = bisect.bisect_left(values, s.min_key)
        b = bisect.bisect_right(values, s.max_key)
        inside = values[a:b] if a < b else []
    if len(inside) < len(values):
        methods.add("min/max")
    if inside and s.min_key == s.max_key:  # the one value inside covers [min, max]
        rows.append(float(m))
        lower = upper = m
        methods.add("min/max")
    elif inside:
        counts_of = _counts(s)
        freq = s.frequencies
        _, counts = sel._listed(s)
        rest = m - int(counts.sum())
        if (freq is not None and freq.complete) or rest <= 0:
            found = [counts_of.get(k, 0) for k in inside]
            rows = [float(c) for c in found]
            lower = upper = sum(found)
            methods.add("frequencies")
        else:
            rows, lower, upper = _unlisted(s, inside, counts_of, rest, methods)
    if nan:
        e = sel._range(s, _point(sel.NAN_KEY))
        rows.append(e.rows)
        lower += e.lower
        upper += e.upper
        methods.add(e.method)
    if not values and not nan:
        return sel.Estimate.count(0, "empty")
    return sel.Estimate.of(sum(rows), lower, upper, " + ".join(sorted(methods)))


def _counts(s: sel.ColumnSummary) -> dict[bytes, int]:
    """Listed value -> its listed count (summed over repeats, as ``_listed_in`` sums an
    unsorted list), kept on the summary."""
    memo = sel._memo(s)
    found = memo.get("counts_of")
    if found is None:
        listed, counts = sel._listed(s)
        found = {}
        for key, count in zip(listed, counts.tolist(), strict=True):
            found[key] = found.get(key, 0) + count
        memo["counts_of"] = found
    return found


def _unlisted(
    s: sel.ColumnSummary,
    inside: list[bytes],
    counts_of: dict[bytes, int],
    rest: int,
    methods: set[str],
) -> tuple[list[float], int, int]:
    """Rows, lower, upper of values inside [min, max] with truncated frequencies: a listed
    value's exact count, an unlisted one's ``_unlisted_value`` (one per histogram bin)."""
    listed, counts = sel._listed(s)
    hist = s.histogram if s.kind in sel._HISTOGRAM_KINDS else None
    binned = hist is not None and len(hist.counts) > 0
    found = [counts_of.get(k, 0) for k in inside]
    unlisted = [k for k, c in zip(inside, found, strict=True) if not c]
    bins = _bins(s, hist, unlisted) if binned and unlisted else None
    per_bin: dict[int, sel.Estimate] = {}
    rows: list[float] = []
    lower = upper = 0
    u = 0
    for key, count in zip(inside, found, strict=True):
        if count:
            rows.append(float(count))
            lower += count
            upper += count
            methods.add("frequencies")
            continue
        b = int(bins[u]) if bins is not None else -1
        u += 1
        e = per_bin.get(b)
        if e is None:
            e = per_bin[b] = sel._unlisted_value(s, key, listed, counts, rest, 0, hist)
            methods.add(e.method)
        rows.append(e.rows)
        lower += e.lower
        upper += e.upper
    return rows, lower, upper


def _bins(s: sel.ColumnSummary, hist: sel.Histogram, keys_: list[bytes]) -> np.ndarray:
    """``selectivity._bin_of`` of each key: in NumPy for integers, dates and timestamps
    whose arithmetic stays inside int64, else one by one."""
    nbins = len(hist.counts)
    if hist.width == 0:
        return np.zeros(len(keys_), dtype=np.int64)
    eight = s.kind in (Kind.INTEGER, Kind.TEMPORAL) and not pat.is_uint64(s.dtype)
    width, low = (int(hist.width), int(hist.lower)) if sel._integral(s) else (0, 0)
    if eight and width > 0 and abs(low) < 1 << 61 and all(len(k) == 8 for k in keys_):
        raw = np.frombuffer(b"".join(keys_), dtype=">u8").astype(np.uint64)
        numbers = (raw ^ np.uint64(1 << 63)).view(np.int64)
        if np.all(np.abs(numbers) < 1 << 61):
            return np.clip((numbers - low) // width, 0, nbins - 1)
    return np.array([sel._bin_of(s, hist, sel._number(s, k)) for k in keys_], dtype=np.int64)


def vector_sum(v: sv.Vectors, points: list[bytes], count: int) -> sv.Batch | None:
    """``selectivity_vector._sum([_range(v, r, fractions) for r in ranges], count)`` of
    the single-value ranges of ``points`` (sorted, distinct); None where a partition's
    min is above its max (then the ranges are walked)."""
    values, nan = _split_nan(points, kind_of(v.dtype) == Kind.FLOATING)
    m = v.row_count - v.null_count - v.nan_count
    lows, highs = v.min_key.to_pylist(), v.max_key.to_pylist()
    live = (m > 0) & np.array([lo is not None and hi is not None for lo, hi in zip(
        lows, highs, strict=True)], dtype=bool)
    inside = np.zeros(count, dtype=np.int64)
    whole = np.zeros(count, dtype=bool)
    for p in np.flatnonzero(live).tolist():
        low, high = lows[p], highs[p]
        if low > high:
            return None
        inside[p] = max(0, bisect.bisect_right(values, high) - bisect.bisect_left(values, low))
        whole[p] = low == high and inside[p] > 0
    # one value inside, not the whole: selectivity_vector._ordered_part's point case
    distinct_rest = v.distinct_count - (v.nan_count > 0)
    usable = np.isfinite(distinct_rest) & (distinct_rest > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        average = np.where(usable, m / np.where(usable, distinct_rest, 1.0), m / 2)
    one, _, _ = sv._of(np.minimum(average, m), np.zeros(count, dtype=np.int64), m)
    rows = np.zeros(count, dtype=np.float64)
    for p in np.flatnonzero(~whole & (inside > 0)).tolist():
        c = int(inside[p])  # c additions of the same value, in order, as the loop makes
        rows[p] = np.add.accumulate(np.full(c, one[p]))[-1] if c > 1 else one[p]
    rows = np.where(whole, m.astype(np.float64), rows)
    lower = np.where(whole, m, 0).astype(np.int64)
    upper = (m * inside).astype(np.int64)
    fallback = np.zeros(count, dtype=bool)
    if nan:
        last = sv._range(v, _point(sel.NAN_KEY), v.fractions())
        rows, lower, upper = rows + last.rows, lower + last.lower, upper + last.upper
        fallback = last.fallback
    if not values and not nan:
        return sv._sum([], count)
    rows, lower, upper = sv._of(rows, lower, upper)
    return sv.Batch(rows, lower, upper, fallback)


__all__ = ["summary_sum", "vector_sum"]
