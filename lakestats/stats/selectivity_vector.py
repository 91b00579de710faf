"""``selectivity``'s scalar-only estimates, for every partition at once (NumPy/Arrow).

``scalar_estimates(v, key_set, null_true)`` returns, per partition, what
``selectivity.estimate_keys`` (plus the null rows when ``null_true``) gives for a
``ColumnSummary`` that has only its scalars (counts, min and max keys; no frequencies, no
histogram): the numbers the estimator (``query.estimate``) uses to prune a partition
before it loads anything.
The arithmetic is the scalar path's, case by case (min/max pruning, a range covering
[min, max], an equality's ``rows / distinct`` with bound ``rows``, the key interpolation of
a range over min/max), so the results are the same numbers; the only Python work is per
range of ``key_set``, never per partition. Key interpolation needs equal-width keys
(numbers, dates, decimals); string partitions whose interpolation cannot be vectorised are
listed in ``Vectors.fallback`` for the caller to estimate one by one.

Over 400 lines because the many-values sum (``_points_sum``: an IN list of 100,000 values)
must equal, to the bit, the range-by-range arithmetic it sits beside.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.stats import key_ranges as kr
from lakestats.stats.arrays import binary_scalar, numbers
from lakestats.stats.column_summary import NAN_KEY
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.selectivity import many_points, point_range, split_nan, walked


@dataclass
class Vectors:
    """One column's scalars for P partitions (missing ``min``/``max``: null)."""

    dtype: pa.DataType
    row_count: np.ndarray  # int64
    null_count: np.ndarray  # int64
    nan_count: np.ndarray  # int64 (nulls as 0)
    distinct_count: np.ndarray  # float64, NaN where unknown
    min_key: pa.Array  # binary
    max_key: pa.Array  # binary
    _fractions: _Fractions | None = field(default=None, repr=False, compare=False)
    _clips: dict = field(default_factory=dict, repr=False, compare=False)
    _fixed: dict = field(default_factory=dict, repr=False, compare=False)

    def fractions(self) -> _Fractions:
        """The key interpolation's matrices, made once per vectors (they depend only on
        min and max)."""
        if self._fractions is None:
            self._fractions = _Fractions(self)
        return self._fractions


@dataclass
class Batch:
    """Per partition estimates: ``rows`` (float64), ``lower``, ``upper`` (int64), and
    ``fallback``: partitions whose numbers are not computed here (ask the scalar path)."""

    rows: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    fallback: np.ndarray

    @property
    def exact(self) -> np.ndarray:
        return self.lower == self.upper


def _of(rows: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple:
    """``Estimate.of`` elementwise."""
    lower = np.asarray(lower, dtype=np.int64)
    upper = np.maximum(lower, np.asarray(upper, dtype=np.int64))
    rows = np.asarray(rows, dtype=np.float64)
    finite = np.isfinite(rows)
    clipped = np.minimum(np.maximum(np.where(finite, rows, 0.0), lower), upper)
    return np.where(finite, clipped, (lower + upper) / 2), lower, upper


def _cmp(keys: pa.Array, key: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``keys < key`` and ``keys == key`` (False where a key is null)."""
    scalar = binary_scalar(key)
    return numbers(pc.less(keys, scalar), False, bool), numbers(pc.equal(keys, scalar), False, bool)


def _cmp_of(v: Vectors, name: str, key: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``_cmp(getattr(v, name), key)``; where every key has one width, as ``key`` does,
    on a NumPy array of fixed-width bytes (compared as ``memcmp``), made once."""
    found = v._fixed.get(name)
    if found is None:
        fractions = v.fractions()
        matrix = fractions.low_matrix if name == "min_key" else fractions.high_matrix
        found = v._fixed[name] = (None, None, 0) if matrix is None else (
            np.ascontiguousarray(matrix).view(f"S{fractions.width}").ravel(),
            numbers(getattr(v, name).is_valid(), False, bool),
            fractions.width,
        )
    fixed, valid, width = found
    if fixed is None or len(key) != width:
        return _cmp(getattr(v, name), key)
    scalar = np.bytes_(key)
    return (fixed < scalar) & valid, (fixed == scalar) & valid


def _matrix(keys: pa.Array, width: int) -> np.ndarray | None:
    """Keys of ``width`` bytes as a (P, width) uint8 matrix (nulls as zeros), or None when
    some key has another width."""
    keys = keys.cast(pa.binary())
    lengths = numbers(pc.binary_length(keys), width)
    if len(keys) and not np.all(lengths == width):
        return None
    filled = keys.fill_null(binary_scalar(b"\x00" * width)) if keys.null_count else keys
    if isinstance(filled, pa.ChunkedArray):
        filled = filled.combine_chunks()
    offsets = np.frombuffer(filled.buffers()[1], dtype=np.int32)[
        filled.offset : filled.offset + len(filled) + 1
    ]
    data = np.frombuffer(filled.buffers()[2], dtype=np.uint8)
    start = int(offsets[0]) if len(offsets) else 0
    return data[start : start + width * len(filled)].reshape(len(filled), width)


def _positions(matrix: np.ndarray, common: np.ndarray) -> np.ndarray:
    """``selectivity._key_fraction``'s position of each row's key: the 8 bytes after the
    common prefix (zero padded) as a fraction of 2**64."""
    rows = matrix.shape[0]
    padded = np.concatenate([matrix, np.zeros((rows, 8), dtype=np.uint8)], axis=1)
    index = common[:, None] + np.arange(8)[None, :]
    tail = padded[np.arange(rows)[:, None], index].astype(np.uint64)
    value = np.zeros(rows, dtype=np.uint64)
    for i in range(8):
        value = (value << np.uint64(8)) | tail[:, i]
    return value.astype(np.float64) / 2.0**64


class _Fractions:
    """``_key_fraction`` for every partition: min/max matrices and their common prefixes."""

    def __init__(self, v: Vectors) -> None:
        width = None
        for key in (v.min_key, v.max_key):
            lengths = pc.binary_length(key.cast(pa.binary())).drop_null()
            if len(lengths):
                width = int(pc.max(lengths).as_py())
        self.width = width
        self.low_matrix = _matrix(v.min_key, width) if width else None
        self.high_matrix = _matrix(v.max_key, width) if width else None
        self.ok = self.low_matrix is not None and self.high_matrix is not None
        self._commons: tuple[np.ndarray, np.ndarray] | None = None
        if self.ok:
            differ = self.low_matrix != self.high_matrix
            self.common = np.where(differ.any(axis=1), differ.argmax(axis=1), width)
            self.low = _positions(self.low_matrix, self.common)
            self.high = _positions(self.high_matrix, self.common)

    def constant(self, key: bytes) -> np.ndarray | None:
        """``key``'s position in every partition's frame: computed once per distinct
        common prefix length (few), then spread to the partitions."""
        if not self.ok or len(key) != self.width:
            return None
        if self._commons is None:
            self._commons = np.unique(self.common, return_inverse=True)
        commons, inverse = self._commons
        matrix = np.broadcast_to(np.frombuffer(key, dtype=np.uint8), (len(commons), self.width))
        return _positions(np.ascontiguousarray(matrix), commons)[inverse.reshape(-1)]

    def fraction(self, start_is_min, lo_key, end_is_max, hi_key) -> np.ndarray | None:  # noqa: ANN001
        a = self.low if lo_key is None else np.where(start_is_min, self.low, lo_key)
        b = self.high if hi_key is None else np.where(end_is_max, self.high, hi_key)
        span = self.high - self.low
        with np.errstate(invalid="ignore", divide="ignore"):
            share = (np.minimum(self.high, b) - np.maximum(self.low, a)) / span
        share = np.minimum(1.0, np.maximum(0.0, share))
        return np.where(span <= 0, 0.5, share)


@dataclass
class Clip:
    """How ``r`` meets each partition's [min, max] (``selectivity._ordered_part``'s first
    cases): ``m`` the non-null, non-NaN rows; ``nonempty`` where the clipped range holds
    some of them (False where ``m`` is 0 or min/max is missing); ``whole`` where it
    covers [min, max]."""

    m: np.ndarray
    nonempty: np.ndarray
    whole: np.ndarray
    start_is_min: np.ndarray
    end_is_max: np.ndarray
    min_eq_hi: np.ndarray | None
    lo_eq_max: np.ndarray | None


def clip(v: Vectors, r: kr.KeyRange) -> Clip:
    """``r`` against every partition's [min, max] (see ``Clip``), remembered for the last
    ranges asked (the pruning pass and the survivors' estimate ask the same ones)."""
    found = v._clips.get(r)
    if found is None:
        if len(v._clips) >= 64:
            v._clips.clear()
        found = v._clips[r] = _clip(v, r)
        for array in vars(found).values():
            if isinstance(array, np.ndarray):
                array.setflags(write=False)
    return found


def _clip(v: Vectors, r: kr.KeyRange) -> Clip:
    count = len(v.row_count)
    m = v.row_count - v.null_count - v.nan_count
    has = numbers(v.min_key.is_valid(), False, bool) & numbers(v.max_key.is_valid(), False, bool)
    live = (m > 0) & has
    lo, lo_inclusive = r.lower
    hi, hi_inclusive = r.upper
    t = 1 if lo_inclusive else 2  # start tag of the range
    u = 2 if hi_inclusive else 1  # end tag
    if lo is None:
        start_is_min = np.ones(count, dtype=bool)
        lo_lt_max = lo_eq_max = None
    else:
        min_lt_lo, min_eq_lo = _cmp_of(v, "min_key", lo)
        start_is_min = (~min_lt_lo & ~min_eq_lo) | (min_eq_lo & (t == 1))  # lo <= min
        lo_lt_max, lo_eq_max = _cmp_of(v, "max_key", lo)  # max < lo, max == lo
    if hi is None:
        end_is_max = np.ones(count, dtype=bool)
    else:
        max_lt_hi, max_eq_hi = _cmp_of(v, "max_key", hi)
        hi_gt_max = max_lt_hi
        end_is_max = hi_gt_max | (max_eq_hi & (u == 2))
        min_lt_hi, min_eq_hi = _cmp_of(v, "min_key", hi)
    # the clipped range is non-empty when its start is before its end
    if lo is None and hi is None:
        nonempty = np.ones(count, dtype=bool)
    elif lo is None:  # start (min, 1), end (hi, u) or (max, 2)
        nonempty = end_is_max | min_lt_hi | (min_eq_hi & (u == 2))
    elif hi is None:  # start (lo, t) or (min, 1), end (max, 2)
        max_gt_lo = ~lo_lt_max & ~lo_eq_max
        nonempty = start_is_min | max_gt_lo | (lo_eq_max & (t == 1))
    else:
        max_gt_lo = ~lo_lt_max & ~lo_eq_max
        both_inner = (lo < hi) or (lo == hi and t < u)
        nonempty = np.where(
            start_is_min & end_is_max,
            True,
            np.where(
                start_is_min,
                min_lt_hi | (min_eq_hi & (u == 2)),
                np.where(end_is_max, max_gt_lo | (lo_eq_max & (t == 1)), both_inner),
            ),
        )
    nonempty &= live
    whole = nonempty & start_is_min & end_is_max
    return Clip(m, nonempty, whole, start_is_min, end_is_max,
                min_eq_hi if hi is not None else None,
                lo_eq_max if lo is not None else None)


def _ordered_part(v: Vectors, r: kr.KeyRange, fractions: _Fractions) -> Batch:
    """``selectivity._ordered_part`` without frequencies or histogram."""
    count = len(v.row_count)
    c = clip(v, r)
    m, nonempty, whole = c.m, c.nonempty, c.whole
    start_is_min, end_is_max = c.start_is_min, c.end_is_max
    min_eq_hi, lo_eq_max = c.min_eq_hi, c.lo_eq_max
    lo, lo_inclusive = r.lower
    hi, hi_inclusive = r.upper
    t = 1 if lo_inclusive else 2  # start tag of the range
    u = 2 if hi_inclusive else 1  # end tag
    # a single key: the clipped start and end on the same key, tags 1 and 2
    if r.point is not None:
        point = nonempty & ~whole
    else:
        point = np.zeros(count, dtype=bool)
        if hi is not None and u == 2:  # start at min, end at hi: min == hi
            point |= start_is_min & ~end_is_max & min_eq_hi
        if lo is not None and t == 1:  # start at lo, end at max: lo == max
            point |= ~start_is_min & end_is_max & lo_eq_max
        point &= nonempty & ~whole
    ranged = nonempty & ~whole & ~point
    rows = np.zeros(count, dtype=np.float64)
    lower = np.zeros(count, dtype=np.int64)
    upper = np.zeros(count, dtype=np.int64)
    fallback = np.zeros(count, dtype=bool)
    rows[whole] = m[whole]
    lower[whole] = m[whole]
    upper[whole] = m[whole]
    if point.any():  # selectivity._unlisted_value without frequencies or histogram
        distinct_rest = v.distinct_count - (v.nan_count > 0)
        usable = np.isfinite(distinct_rest) & (distinct_rest > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            average = np.where(usable, m / np.where(usable, distinct_rest, 1.0), m / 2)
        rows[point] = np.minimum(average, m)[point]
        upper[point] = m[point]
    if ranged.any():
        lo_pos = fractions.constant(lo) if lo is not None else None
        hi_pos = fractions.constant(hi) if hi is not None else None
        vectorised = (
            fractions.ok
            and (lo is None or lo_pos is not None)
            and (hi is None or hi_pos is not None)
        )
        if vectorised:
            share = fractions.fraction(start_is_min, lo_pos, end_is_max, hi_pos)
            rows[ranged] = (m * share)[ranged]
            upper[ranged] = m[ranged]
        else:
            fallback |= ranged
    rows, lower, upper = _of(rows, lower, upper)
    return Batch(rows, lower, upper, fallback)


def _range(v: Vectors, r: kr.KeyRange, fractions: _Fractions) -> Batch:
    ordered = _ordered_part(v, r, fractions)
    if kind_of(v.dtype) != Kind.FLOATING or not r.contains(NAN_KEY):
        return ordered
    nan = v.nan_count
    rows, lower, upper = np.where(
        nan > 0,
        _of(ordered.rows + nan, ordered.lower + nan, ordered.upper + nan),
        (ordered.rows, ordered.lower, ordered.upper),
    )
    return Batch(rows, lower.astype(np.int64), upper.astype(np.int64), ordered.fallback)


def _sum(parts: list[Batch], count: int) -> Batch:
    if not parts:
        zero = np.zeros(count, dtype=np.int64)
        return Batch(zero.astype(np.float64), zero, zero, np.zeros(count, dtype=bool))
    rows, lower, upper = _of(
        sum(p.rows for p in parts), sum(p.lower for p in parts), sum(p.upper for p in parts)
    )
    fallback = np.logical_or.reduce([p.fallback for p in parts])
    return Batch(rows, lower, upper, fallback)


def _sum_ranges(v: Vectors, ranges: kr.KeySet, fractions: _Fractions, count: int) -> Batch:
    """``_sum`` of each range's batch; many single values at once (``_points_sum``)."""
    points = many_points(ranges)
    if points is not None:
        found = _points_sum(v, points, count)
        if found is not None:
            return found
    return _sum([_range(v, r, fractions) for r in ranges], count)


def _points_sum(v: Vectors, points: list[bytes], count: int) -> Batch | None:
    """``_sum([_range(v, r, fractions) for r in ranges], count)`` of the single-value
    ranges of ``points`` (sorted, distinct), as ``selectivity._points_sum`` sums them;
    None where a partition's min is above its max (then the ranges are walked)."""
    values, nan = split_nan(points, kind_of(v.dtype) == Kind.FLOATING)
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
    one, _, _ = _of(np.minimum(average, m), np.zeros(count, dtype=np.int64), m)
    rows = np.zeros(count, dtype=np.float64)
    for p in np.flatnonzero(~whole & (inside > 0)).tolist():
        c = int(inside[p])  # c additions of the same value, in order, as the loop makes
        rows[p] = np.add.accumulate(np.full(c, one[p]))[-1] if c > 1 else one[p]
    rows = np.where(whole, m.astype(np.float64), rows)
    lower = np.where(whole, m, 0).astype(np.int64)
    upper = (m * inside).astype(np.int64)
    fallback = np.zeros(count, dtype=bool)
    if nan:
        last = _range(v, point_range(NAN_KEY), v.fractions())
        rows, lower, upper = rows + last.rows, lower + last.lower, upper + last.upper
        fallback = last.fallback
    if not values and not nan:
        return _sum([], count)
    rows, lower, upper = _of(rows, lower, upper)
    return Batch(rows, lower, upper, fallback)


def scalar_estimates(v: Vectors, key_set: kr.KeySet, null_true: bool) -> Batch:
    """Per partition: ``selectivity.estimate_keys`` of ``key_set`` from the scalars alone,
    plus the null rows when NULL satisfies the predicate (``null_true``)."""
    count = len(v.row_count)
    non_null = v.row_count - v.null_count
    fractions = v.fractions()
    flip, ranges = walked(key_set) if key_set else (False, key_set)
    if not key_set:
        out = _sum([], count)
    elif flip:
        kept = _sum_ranges(v, ranges, fractions, count)
        rows, lower, upper = _of(non_null - kept.rows, np.maximum(0, non_null - kept.upper),
                                 non_null - kept.lower)
        out = Batch(rows, lower, upper, kept.fallback)
    else:
        out = _sum_ranges(v, ranges, fractions, count)
    empty = non_null == 0
    out.rows[empty], out.lower[empty], out.upper[empty] = 0.0, 0, 0
    out.fallback[empty] = False
    if null_true:
        n = v.null_count
        rows, lower, upper = _of(out.rows + n, out.lower + n, out.upper + n)
        keep = n > 0
        out = Batch(
            np.where(keep, rows, out.rows),
            np.where(keep, lower, out.lower),
            np.where(keep, upper, out.upper),
            out.fallback,
        )
    return out


__all__ = ["Batch", "Clip", "Vectors", "clip", "scalar_estimates"]
