"""``survivors.leaf`` of many single-range conditions on one column at once (a planner's
batch).

A batch brings many new conditions per column; each one's full estimate over the
partitions is ~60 NumPy operations on short arrays, so per condition the cost is their
overhead. Here the conditions of one column whose key set is one range (those
``scalar_many`` stacks) are estimated together, condition x partition: the clips the
stacked scalar pass kept, the listed counts from one ``searchsorted`` over all of them,
and the histogram ranges as one flat list of (condition, partition) pairs through
``Listed.histogram_pairs``. The arithmetic is ``leaf``'s, elementwise and in the same
order, so each row is what ``leaf`` gives for that condition (the tests compare them).
"""

from __future__ import annotations

import bisect

import numpy as np

from lakestats.query import listed
from lakestats.query import survivors as sv_full
from lakestats.stats import key_ranges as kr
from lakestats.stats import selectivity as sel
from lakestats.stats import selectivity_vector as sv
from lakestats.stats.column_summary import NAN_KEY
from lakestats.stats.kinds import Kind, kind_of


def _listed_in(table: listed.Listed, parts: np.ndarray, ranges: list[kr.KeyRange]) -> np.ndarray:
    """``table.listed_in(parts, r)`` for every range (rows)."""
    if table.fixed is not None:
        fixed = table.fixed
        fixed.asked = max(fixed.asked, 2)  # ranked from now on
        ordered, keys_, stride, span_start, span_end = fixed._ranked()
        start = np.array([fixed._position(ordered, r.start) for r in ranges], dtype=np.int64)
        end = np.array([fixed._position(ordered, r.end) for r in ranges], dtype=np.int64)
        cumulative = fixed.cumulative
    else:
        ordered = table.ordered
        start = np.array([max(0, bisect.bisect_left(ordered, r.start, key=sel.key_position))
                          for r in ranges], dtype=np.int64)
        end = np.array([bisect.bisect_left(ordered, r.end, key=sel.key_position) for r in ranges],
                       dtype=np.int64)
        keys_, stride = table.keys, table.stride
        span_start, span_end = table.span_start, table.span_end
        cumulative = table.cumulative
    lo = np.maximum(start[:, None], span_start[parts][None, :])
    hi = np.maximum(lo, np.minimum(end[:, None], span_end[parts][None, :]))
    base = (parts * stride)[None, :]
    a = np.searchsorted(keys_, base + lo, side="left")
    b = np.searchsorted(keys_, base + hi, side="left")
    return cumulative[b] - cumulative[a]


def leaf_many(
    vectors: sv.Vectors,
    ranges: list[kr.KeyRange],
    table: listed.Listed,
    parts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per range (rows) and partition of ``parts`` (columns): ``leaf`` of the condition
    whose key set is that one range and that NULL does not satisfy (rows, lower, upper,
    method codes, fallback)."""
    rcount, count = len(ranges), len(parts)
    row_count = vectors.row_count[parts]
    null_count = vectors.null_count[parts]
    non_null = row_count - null_count
    fallback = np.broadcast_to(~table.known[parts], (rcount, count))
    floating = kind_of(vectors.dtype) == Kind.FLOATING
    nan = vectors.nan_count[parts]
    by_freq = table.complete[parts]
    clips = [sv.clip(vectors, r) for r in ranges]
    m = clips[0].m[parts]
    nonempty = np.stack([c.nonempty[parts] for c in clips])
    whole = np.stack([c.whole[parts] for c in clips])
    inner = nonempty & ~whole
    rest_p = m - table.total[parts]
    counted = inner & (by_freq | (rest_p <= 0))
    is_range = np.array([r.point is None for r in ranges], dtype=bool)[:, None]
    clipped = np.stack([sv_full._clipped_point(c, r)[parts] for c, r in zip(clips, ranges,
                                                                         strict=True)])
    ranged = is_range & inner & ~counted & table.usable[parts] & ~clipped
    value = np.where(whole, m, 0)
    listed_in = None
    if counted.any() or ranged.any():
        listed_in = _listed_in(table, parts, ranges)
        value = np.where(counted, listed_in, value)
    r_rows, r_lower, r_upper = value.astype(np.float64), value.copy(), value.copy()
    r_code = np.where(counted, listed.FREQUENCIES, listed.MIN_MAX)
    if ranged.any():
        x, y = np.nonzero(ranged)
        at = parts[y]
        dtype = np.int64 if table.integral else np.float64

        def number(key: bytes | None) -> int | float:
            return 0 if key is None else sel.storage_number(vectors.dtype, key)

        lows = [r.lower for r in ranges]
        highs = [r.upper for r in ranges]
        has_lo = np.array([k is not None for k, _ in lows], dtype=bool)[x]
        has_hi = np.array([k is not None for k, _ in highs], dtype=bool)[x]
        lo_num = np.asarray([number(k) for k, _ in lows], dtype=dtype)[x]
        hi_num = np.asarray([number(k) for k, _ in highs], dtype=dtype)[x]
        lo_inclusive = np.array([inc for _, inc in lows], dtype=bool)[x]
        hi_inclusive = np.array([inc for _, inc in highs], dtype=bool)[x]
        at_min = np.stack([c.start_is_min for c in clips])[x, at]
        at_max = np.stack([c.end_is_max for c in clips])[x, at]
        lo = np.where(has_lo & ~at_min, lo_num, table.min_num[at])
        hi = np.where(has_hi & ~at_max, hi_num, table.max_num[at])
        got = table.histogram_pairs(at, lo, at_min | lo_inclusive, hi, at_max | hi_inclusive,
                                    listed_in[x, y], rest_p[y])
        r_rows[x, y], r_lower[x, y], r_upper[x, y], r_code[x, y] = got
        counted = counted | ranged
    fallback = fallback | (inner & ~counted)
    if floating:
        has_nan = np.array([r.contains(NAN_KEY) for r in ranges], dtype=bool)[:, None]
        has_nan = has_nan & (nan > 0)
        plus = sv._of(r_rows + nan, r_lower + nan, r_upper + nan)
        r_rows = np.where(has_nan, plus[0], r_rows)
        r_lower = np.where(has_nan, plus[1], r_lower)
        r_upper = np.where(has_nan, plus[2], r_upper)
    rows = 0.0 + r_rows
    lower = 0 + r_lower
    upper = 0 + r_upper
    code = 0 | r_code
    rows, lower, upper = sv._of(rows, lower, upper)
    empty = np.broadcast_to(non_null == 0, (rcount, count))
    rows = np.where(empty, 0.0, rows)
    lower = np.where(empty, 0, lower)
    upper = np.where(empty, 0, upper)
    code = np.where(empty, listed.EMPTY, code)
    fallback = fallback & ~empty
    return rows, lower, upper, code, fallback


__all__ = ["leaf_many"]
