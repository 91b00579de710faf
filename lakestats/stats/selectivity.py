"""How many rows of one partition a single-column condition keeps: estimates with sound bounds.

Pure NumPy/Arrow. A ``ColumnSummary`` is what the statistics files say about one column in
one partition; the estimators return an ``Estimate``: a point estimate ``rows`` and bounds
``lower <= true count <= upper`` that always hold (``exact`` when they meet). The method:

* NULL rows never satisfy a value condition; ``IS NULL`` is ``null_count`` (exact).
* NaN is one value, above ``+inf`` (as in Spark and DuckDB): counted exactly from ``nan_count``.
* min/max pruning: a range outside ``[min, max]`` keeps nothing, a range covering it keeps
  every non-null, non-NaN row (both exact).
* complete frequencies (every value listed): exact counts for any set of values.
* truncated frequencies: listed values are exact; an unlisted value has at most the smallest
  listed count (``unlisted_bound``). The rest is read from the histogram after the listed
  values are taken out of their bins (PostgreSQL's MCV + histogram combination): bins fully
  inside a range are exact, the (at most two) edge bins are interpolated linearly and bound
  the error by their own count. An equality on an unlisted value gets the remaining rows per
  remaining distinct value, capped by its bin's remainder and by ``unlisted_bound``.
* no histogram (strings, binary): the remainder is interpolated over the key bytes between
  min and max, bounded by all of it.
* many single values (an IN list of 100,000 values): summed at once (``_points_sum``) to the
  same numbers, to the bit, as range by range.

Over 400 lines because each condition kind's estimator and its bound proof sit together;
splitting them would separate a bound from the argument that it holds.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from lakestats.stats import key_ranges as kr
from lakestats.stats import keys
from lakestats.stats.column_summary import (
    NAN_KEY,
    ColumnSummary,
    Estimate,
    Histogram,
)
from lakestats.stats.kinds import Kind, kind_of

# -- public estimators ------------------------------------------------------------------


def estimate_keys(s: ColumnSummary, key_set: kr.KeySet) -> Estimate:
    """Rows whose (non-null) key is in ``key_set``: the sum over its ranges, or all
    non-null rows minus the complement when the complement is a few single values
    (``<>``, ``NOT IN``), which estimates much better than two interpolated ranges."""
    if s.non_null == 0 or not key_set:
        return Estimate.count(0, "empty")
    flip, ranges = walked(key_set)
    if flip:  # the values' bounds may sum past the rows: no fewer than none are kept
        kept = _sum_ranges(s, ranges)
        return Estimate.of(s.non_null - kept.rows, max(0, s.non_null - kept.upper),
                           s.non_null - kept.lower, kept.method)
    return _sum_ranges(s, ranges)


MANY_POINTS = 64
"""Single values from which a set's ranges are summed at once (``_points_sum``)."""


def walked(key_set: kr.KeySet) -> tuple[bool, kr.KeySet]:
    """Whether ``estimate_keys`` estimates ``key_set`` as all rows minus its complement
    (a few single values: ``<>``, ``NOT IN``), and the ranges it sums."""
    if key_set[0].start != kr.BEFORE_ALL:  # the complement starts with a range: no flip
        return False, key_set
    rest = _complement(key_set)
    flip = bool(rest) and len(rest) <= len(key_set) + 1 and rest[0].point is not None
    if flip and kr.point_keys(rest) is not None:
        return True, rest
    return False, key_set


def many_points(ranges: kr.KeySet) -> list[bytes] | None:
    """The values of ``ranges`` when they are ``MANY_POINTS`` single values or more."""
    return kr.point_keys(ranges) if len(ranges) >= MANY_POINTS else None


def _sum_ranges(s: ColumnSummary, ranges: kr.KeySet) -> Estimate:
    """``_sum`` of each range's estimate; many single values at once (``_points_sum``)."""
    points = many_points(ranges)
    if points is not None:
        return _points_sum(s, points)
    return _sum([_range(s, r) for r in ranges])


def point_range(key: bytes) -> kr.KeyRange:
    return kr.KeyRange((1, key, 1), (1, key, 2))


def split_nan(points: list[bytes], floating: bool) -> tuple[list[bytes], bool]:
    """The values without NaN (the largest key, so the last) and whether it was there."""
    if floating and points and points[-1] == NAN_KEY:
        return points[:-1], True
    return points, False


def _points_sum(s: ColumnSummary, points: list[bytes]) -> Estimate:
    """``_sum([_range(s, r) for r in ranges])`` of the single-value ranges of ``points``
    (sorted, distinct), without a Python step per value (an IN list of 100,000 values, or
    its NOT IN's complement): a value outside [min, max] keeps nothing, so only the values
    inside count, one slice of the sorted values; each keeps its listed count (complete
    frequencies), the whole column (min = max = the value) or what its histogram bin says of
    an unlisted value (computed once per bin). The sums are taken in the values' order with
    the same float additions as the range-by-range loop, so the numbers are the same to the
    bit (tests/query/test_in_lists.py)."""
    values, nan = split_nan(points, s.kind == Kind.FLOATING)
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
        counts_of = _listed_counts(s)
        freq = s.frequencies
        _, counts = _listed(s)
        rest = m - int(counts.sum())
        if (freq is not None and freq.complete) or rest <= 0:
            found = [counts_of.get(k, 0) for k in inside]
            rows = [float(c) for c in found]
            lower = upper = sum(found)
            methods.add("frequencies")
        else:
            rows, lower, upper = _unlisted(s, inside, counts_of, rest, methods)
    if nan:
        e = _range(s, point_range(NAN_KEY))
        rows.append(e.rows)
        lower += e.lower
        upper += e.upper
        methods.add(e.method)
    if not values and not nan:
        return Estimate.count(0, "empty")
    return Estimate.of(sum(rows), lower, upper, " + ".join(sorted(methods)))


def _listed_counts(s: ColumnSummary) -> dict[bytes, int]:
    """Listed value -> its listed count (summed over repeats, as ``_listed_in`` sums an
    unsorted list), kept on the summary."""
    memo = _memo(s)
    found = memo.get("counts_of")
    if found is None:
        listed, counts = _listed(s)
        found = {}
        for key, count in zip(listed, counts.tolist(), strict=True):
            found[key] = found.get(key, 0) + count
        memo["counts_of"] = found
    return found


def _unlisted(
    s: ColumnSummary,
    inside: list[bytes],
    counts_of: dict[bytes, int],
    rest: int,
    methods: set[str],
) -> tuple[list[float], int, int]:
    """Rows, lower, upper of values inside [min, max] with truncated frequencies: a listed
    value's exact count, an unlisted one's ``_unlisted_value`` (one per histogram bin)."""
    listed, counts = _listed(s)
    hist = s.histogram if s.kind in _HISTOGRAM_KINDS else None
    binned = hist is not None and len(hist.counts) > 0
    found = [counts_of.get(k, 0) for k in inside]
    unlisted = [k for k, c in zip(inside, found, strict=True) if not c]
    bins = _bins(s, hist, unlisted) if binned and unlisted else None
    per_bin: dict[int, Estimate] = {}
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
            e = per_bin[b] = _unlisted_value(s, key, listed, counts, rest, 0, hist)
            methods.add(e.method)
        rows.append(e.rows)
        lower += e.lower
        upper += e.upper
    return rows, lower, upper


def _bins(s: ColumnSummary, hist: Histogram, keys_: list[bytes]) -> np.ndarray:
    """``_bin_of`` of each key: in NumPy for integers, dates and timestamps
    whose arithmetic stays inside int64, else one by one."""
    nbins = len(hist.counts)
    if hist.width == 0:
        return np.zeros(len(keys_), dtype=np.int64)
    eight = s.kind in (Kind.INTEGER, Kind.TEMPORAL) and not pat.is_uint64(s.dtype)
    width, low = (int(hist.width), int(hist.lower)) if _integral(s) else (0, 0)
    if eight and width > 0 and abs(low) < 1 << 61 and all(len(k) == 8 for k in keys_):
        raw = np.frombuffer(b"".join(keys_), dtype=">u8").astype(np.uint64)
        numbers = (raw ^ np.uint64(1 << 63)).view(np.int64)
        if np.all(np.abs(numbers) < 1 << 61):
            return np.clip((numbers - low) // width, 0, nbins - 1)
    return np.array([_bin_of(s, hist, _number(s, k)) for k in keys_], dtype=np.int64)


def _complement(key_set: kr.KeySet) -> kr.KeySet:
    """``kr.complement``, remembered for the last key sets asked (a conjunct's key set is
    one object asked once per partition)."""
    found = _COMPLEMENTS.get(id(key_set))
    if found is None or found[0] is not key_set:
        if len(_COMPLEMENTS) >= 256:
            _COMPLEMENTS.clear()
        found = _COMPLEMENTS[id(key_set)] = (key_set, kr.complement(key_set))
    return found[1]


_COMPLEMENTS: dict[int, tuple[kr.KeySet, kr.KeySet]] = {}


def like(
    s: ColumnSummary, matches: Callable[[str], bool], candidates: kr.KeySet, negated: bool
) -> Estimate:
    """``LIKE`` with any pattern: exact over complete frequencies; otherwise the listed
    values matched exactly and the rest bounded by the rows in ``candidates`` (the
    pattern's literal prefix), scaled by the share of listed candidates that match."""
    positive = _like(s, matches, candidates)
    if not negated:
        return positive
    n = s.non_null
    return Estimate.of(n - positive.rows, n - positive.upper, n - positive.lower, positive.method)


# -- internals ----------------------------------------------------------------------------


def _sum(parts: list[Estimate]) -> Estimate:
    if not parts:
        return Estimate.count(0, "empty")
    methods = sorted({p.method for p in parts})
    return Estimate.of(
        sum(p.rows for p in parts),
        sum(p.lower for p in parts),
        sum(p.upper for p in parts),
        " + ".join(methods),
    )


def _memo(s: ColumnSummary) -> dict:
    """What the estimators derive from a summary alone (its listed values, their
    positions, the histogram's remainders), kept on it: a resident estimator
    (``lakestats.query.resident``) asks one summary many questions."""
    return s.__dict__.setdefault("_derived", {})


def _listed(s: ColumnSummary) -> tuple[list[bytes], np.ndarray]:
    """Listed values other than NaN (NaN is counted by ``nan_count``)."""
    memo = _memo(s)
    if "listed" not in memo:
        memo["listed"] = _listed_values(s)
    return memo["listed"]


def _listed_in(s: ColumnSummary, r: kr.KeyRange) -> int:
    """The listed count of the values inside ``r``: a slice of the listed values when they
    are sorted (a range's keys are contiguous among sorted keys), else tested one by one."""
    listed, counts = _listed(s)
    if not len(listed):
        return 0
    memo = _memo(s)
    ordered = memo.get("ordered")
    if ordered is None:
        ordered = memo["ordered"] = strictly_increasing(listed)
    if not ordered:
        inside = np.fromiter((r.contains(k) for k in listed), dtype=bool, count=len(listed))
        return int(counts[inside].sum())
    start = bisect.bisect_left(listed, r.start, key=key_position)
    stop = bisect.bisect_left(listed, r.end, key=key_position)
    return int(counts[start:stop].sum())


def key_position(key: bytes) -> tuple[int, bytes, int]:
    """A key's position among key range ends (``key_ranges.KeyRange.start``/``end``)."""
    return (1, key, 1)


def strictly_increasing(values: Sequence[bytes]) -> bool:
    """Whether every value is less than the next (sorted, no duplicate), in C loops."""
    values = values if isinstance(values, list) else list(values)
    return values == sorted(values) and len(set(values)) == len(values)


def _listed_values(s: ColumnSummary) -> tuple[list[bytes], np.ndarray]:
    freq = s.frequencies
    if freq is None or not freq.keys:
        return [], np.zeros(0, dtype=np.int64)
    keys_ = list(freq.keys)
    counts = np.asarray(freq.counts, dtype=np.int64)
    if s.kind == Kind.FLOATING and keys_ and keys_[-1] == NAN_KEY:
        return keys_[:-1], counts[:-1]
    return keys_, counts


def _range(s: ColumnSummary, r: kr.KeyRange) -> Estimate:
    nan_part = 0
    if s.kind == Kind.FLOATING and s.nan_count and r.contains(NAN_KEY):
        nan_part = s.nan_count
    ordered = _ordered_part(s, r)
    if nan_part == 0:
        return ordered
    return Estimate.of(ordered.rows + nan_part, ordered.lower + nan_part, ordered.upper + nan_part,
                       ordered.method)


def _ordered_part(s: ColumnSummary, r: kr.KeyRange) -> Estimate:
    """Rows with a key in ``r`` among the non-null, non-NaN values (all in [min, max])."""
    m = s.ordered_values
    if m <= 0 or s.min_key is None or s.max_key is None:
        return Estimate.count(0, "min/max")
    memo = _memo(s)
    span = memo.get("span")
    if span is None:
        span = memo["span"] = kr.between(s.min_key, True, s.max_key, True)
    clipped = kr.intersect((r,), span)
    if not clipped:
        return Estimate.count(0, "min/max")
    r = clipped[0]
    if r == span[0]:
        return Estimate.count(m, "min/max")
    counted = s.range_count(r) if s.range_count is not None and r.point is None else None
    if counted is not None:  # the exact ranks: two lookups
        return Estimate.count(counted, "ranks")
    freq = s.frequencies
    listed, counts = _listed(s)
    listed_in = _listed_in(s, r)
    if freq is not None and freq.complete:
        return Estimate.count(listed_in, "frequencies")
    rest = m - int(counts.sum())
    if rest <= 0:
        return Estimate.count(listed_in, "frequencies")
    point = r.point
    hist = s.histogram if s.kind in _HISTOGRAM_KINDS else None
    if point is not None:
        return _unlisted_value(s, point, listed, counts, rest, listed_in, hist)
    if hist is not None and len(hist.counts):
        return _histogram_range(s, r, hist, listed, counts, rest, listed_in)
    fraction = _key_fraction(s, r)
    method = "frequencies + key interpolation" if listed else "key interpolation"
    return Estimate.of(listed_in + rest * fraction, listed_in, listed_in + rest, method)


_HISTOGRAM_KINDS = (Kind.INTEGER, Kind.FLOATING, Kind.DECIMAL, Kind.TEMPORAL)


def _unlisted_value(
    s: ColumnSummary,
    key: bytes,
    listed: list[bytes],
    counts: np.ndarray,
    rest: int,
    listed_in: int,
    hist: Histogram | None,
) -> Estimate:
    if listed_in:  # the value is listed: its count is exact
        return Estimate.count(listed_in, "frequencies")
    freq = s.frequencies
    bound = rest if freq is None or freq.unlisted_bound is None else min(rest, freq.unlisted_bound)
    distinct_rest = None
    if s.distinct_count is not None:
        distinct_rest = s.distinct_count - len(listed) - (1 if s.nan_count else 0)
    average = rest / distinct_rest if distinct_rest and distinct_rest > 0 else bound / 2
    method = "frequency bound"
    if hist is not None and len(hist.counts):
        remainder = _remainders(s, hist, listed, counts)
        b = _bin_of(s, hist, _number(s, key))
        in_bin = int(remainder[b])
        if hist.exact:
            bound = min(bound, in_bin)
        method = "histogram"
        if distinct_rest and distinct_rest > 0 and rest > 0:
            # rows per distinct value in this bin, assuming the value occurs (as planners do)
            distinct_in_bin = max(1.0, min(in_bin, distinct_rest * in_bin / rest))
            if _integral(s):
                lo, hi = _bin_span_int(s, hist, b)
                distinct_in_bin = max(1.0, min(distinct_in_bin, hi - lo + 1))
            average = in_bin / distinct_in_bin if in_bin else 0.0
    return Estimate.of(min(average, bound), 0, bound, method)


def _histogram_range(
    s: ColumnSummary,
    r: kr.KeyRange,
    hist: Histogram,
    listed: list[bytes],
    counts: np.ndarray,
    rest: int,
    listed_in: int,
) -> Estimate:
    remainder = _remainders(s, hist, listed, counts)
    lo_key, lo_inclusive = r.lower
    hi_key, hi_inclusive = r.upper
    lo_num, hi_num = _number(s, lo_key), _number(s, hi_key)
    first, last = _bin_of(s, hist, lo_num), _bin_of(s, hist, hi_num)
    full = int(remainder[first + 1 : last].sum()) if last > first + 1 else 0
    point = float(full)
    edge = 0
    for b in sorted({first, last}):
        share = _bin_share(s, hist, b, lo_num, lo_inclusive, hi_num, hi_inclusive)
        if share >= 1.0 and _integral(s):
            full += int(remainder[b])
            point += float(remainder[b])
            continue
        edge += int(remainder[b])
        point += float(remainder[b]) * share
    if not hist.exact:  # re-binned: the bins are estimates, only the totals bound
        return Estimate.of(listed_in + point, listed_in, listed_in + rest, "histogram (approx.)")
    method = "frequencies + histogram" if len(listed) else "histogram"
    return Estimate.of(listed_in + point, listed_in + full, listed_in + full + edge, method)


def _remainders(
    s: ColumnSummary, hist: Histogram, listed: list[bytes], counts: np.ndarray
) -> np.ndarray:
    """Bin counts with the listed values taken out (never below zero); computed once per
    summary and histogram."""
    memo = _memo(s)
    found = memo.get("remainders")
    if found is None or found[0] is not hist or found[1] is not listed:
        found = memo["remainders"] = (hist, listed, _remainders_of(s, hist, listed, counts))
    return found[2]


def _remainders_of(
    s: ColumnSummary, hist: Histogram, listed: list[bytes], counts: np.ndarray
) -> np.ndarray:
    remainder = np.asarray(hist.counts, dtype=np.int64).copy()
    for key, c in zip(listed, counts, strict=True):
        remainder[_bin_of(s, hist, _number(s, key))] -= int(c)
    return np.maximum(remainder, 0)


def _integral(s: ColumnSummary) -> bool:
    return s.kind in (Kind.INTEGER, Kind.DECIMAL, Kind.TEMPORAL)


def _number(s: ColumnSummary, key: bytes) -> int | float:
    return storage_number(s.dtype, key)


def storage_number(dtype: pa.DataType, key: bytes) -> int | float:
    """A key in a histogram's storage units: the integer of integer and temporal values,
    the unscaled integer of decimals, the double of floating-point values."""
    kind = kind_of(dtype)
    if kind == Kind.FLOATING:
        return keys.decode(key, pa.float64())
    raw = int.from_bytes(key, "big")
    if kind == Kind.DECIMAL:
        return raw - (1 << (len(key) * 8 - 1))
    if pat.is_uint64(dtype):
        return raw
    return raw - (1 << 63)


def _bin_of(s: ColumnSummary, hist: Histogram, value: int | float) -> int:
    """The bin the writer put ``value`` in (the same arithmetic, so it is monotone and the
    bins strictly between two values' bins hold only values between them)."""
    nbins = len(hist.counts)
    if hist.width == 0:
        return 0
    if _integral(s):
        return min(max(int((value - int(hist.lower)) // int(hist.width)), 0), nbins - 1)
    # IEEE double arithmetic as NumPy's float64 (Python floats are doubles): NaN to the
    # first bin, infinities to the ends
    raw = (float(value) - float(hist.lower)) / float(hist.width)
    if math.isnan(raw):
        return 0
    if math.isinf(raw):
        b = nbins - 1 if raw > 0 else 0
    else:
        b = min(max(math.floor(raw), 0), nbins - 1)
    # the guess checked against the reported edges, as the writer checks it
    # (``histogram.float_bin_index``): rounding can put it a bin off at an edge, and edges
    # past the largest double (a span of ±1e308) are infinite, their bins empty
    lower, width, value = float(hist.lower), float(hist.width), float(value)
    while b > 0 and value < lower + b * width:
        b -= 1
    while b < nbins - 1 and value >= lower + (b + 1) * width:
        b += 1
    return b


def _bin_span_int(s: ColumnSummary, hist: Histogram, b: int) -> tuple[int, int]:
    """Inclusive integer span of bin ``b``, clipped to [min, max]."""
    width = int(hist.width)
    lo = int(hist.lower) + b * width
    hi = lo + width - 1
    top = _number(s, s.max_key) if s.max_key is not None else hi
    return lo, min(hi, int(top)) if b == len(hist.counts) - 1 or top < hi else hi


_BELOW_ONE = math.nextafter(1.0, 0.0)


def _bin_share(
    s: ColumnSummary,
    hist: Histogram,
    b: int,
    lo: int | float,
    lo_inclusive: bool,
    hi: int | float,
    hi_inclusive: bool,
) -> float:
    """The share of bin ``b`` inside the range, values assumed uniform in the bin."""
    if _integral(s):
        start, end = _bin_span_int(s, hist, b)
        q_lo = int(lo) if lo_inclusive else int(lo) + 1
        q_hi = int(hi) if hi_inclusive else int(hi) - 1
        covered = min(end, q_hi) - max(start, q_lo) + 1
        span = end - start + 1
        if covered >= span:
            return 1.0
        # short of the whole bin stays short of 1.0 (a huge span would round to it)
        return max(0.0, min(covered / span, _BELOW_ONE))
    if hist.width == 0:
        return 0.5
    start = float(hist.lower) + b * hist.width
    end = float(hist.lower) + (b + 1) * hist.width
    if b == len(hist.counts) - 1 and s.max_key is not None:
        end = max(end, float(_number(s, s.max_key)))
    with np.errstate(invalid="ignore", over="ignore"):
        covered = min(end, float(hi)) - max(start, float(lo))
        share = covered / (end - start) if end > start else 0.5
    return 0.5 if not math.isfinite(share) else min(1.0, max(0.0, share))


def _key_fraction(s: ColumnSummary, r: kr.KeyRange) -> float:
    """Where a range falls between min and max, reading keys as base-256 fractions after
    their common prefix (PostgreSQL's convert_to_scalar for strings)."""
    lo_key, hi_key = s.min_key or b"", s.max_key or b""
    common = 0
    while common < min(len(lo_key), len(hi_key)) and lo_key[common] == hi_key[common]:
        common += 1

    def position(key: bytes | None, default: float) -> float:
        if key is None:
            return default
        tail = key[common : common + 8].ljust(8, b"\x00")
        return int.from_bytes(tail, "big") / 2.0**64

    low, high = position(lo_key, 0.0), position(hi_key, 1.0)
    if high <= low:
        return 0.5
    a = max(low, position(r.lower[0], low))
    b = min(high, position(r.upper[0], high))
    return min(1.0, max(0.0, (b - a) / (high - low)))


def _like(s: ColumnSummary, matches: Callable[[str], bool], candidates: kr.KeySet) -> Estimate:
    if s.non_null == 0:
        return Estimate.count(0, "empty")
    freq = s.frequencies
    listed, counts = _listed(s)
    texts = [k.decode("utf-8", errors="replace") for k in listed]
    hit = np.fromiter((matches(t) for t in texts), dtype=bool, count=len(texts))
    listed_hit = int(counts[hit].sum()) if len(listed) else 0
    if freq is not None and freq.complete:
        return Estimate.count(listed_hit, "frequencies")
    in_candidates = np.fromiter(
        (any(r.contains(k) for r in candidates) for k in listed), dtype=bool, count=len(listed)
    )
    listed_candidates = int(counts[in_candidates].sum()) if len(listed) else 0
    candidate = estimate_keys(s, candidates)
    rest_point = max(0.0, candidate.rows - listed_candidates)
    rest_upper = max(0, candidate.upper - listed_candidates)
    share = listed_hit / listed_candidates if listed_candidates else 0.5
    return Estimate.of(
        listed_hit + rest_point * share, listed_hit, listed_hit + rest_upper, "like sample"
    )


__all__ = [
    "estimate_keys",
    "like",
    "storage_number",
]
