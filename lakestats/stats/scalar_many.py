"""``selectivity_vector.scalar_estimates`` of many single-range conditions on one column at
once (a planner's batch).

A batch of predicates brings many new conditions on few columns (``l_quantity < 12``,
``l_quantity < 40``, ...). Each one's scalar pass is some 30 NumPy operations on arrays of
one element per partition, so per condition the cost is the operations' overhead, not the
partitions. Here the conditions of one column whose key set is one range (a comparison,
``BETWEEN``, an equality, ``IS NOT NULL``) are stacked: every array is condition x
partition and the same operations run once. The arithmetic is ``_clip`` /
``_ordered_part`` / ``_range`` / ``scalar_estimates`` elementwise, in the same order, so
each row is the numbers the one-condition pass gives (the tests compare them). Conditions
this does not take (several ranges, the ``<>`` complement, ``IS NULL``, a key of another
width than the stored min/max) are left to the one-condition pass (None).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lakestats.stats import key_ranges as kr
from lakestats.stats import selectivity_vector as sv
from lakestats.stats.arrays import numbers
from lakestats.stats.column_summary import NAN_KEY
from lakestats.stats.kinds import Kind, kind_of


def takes(key_set: kr.KeySet, null_true: bool) -> bool:
    """Whether ``scalar_many`` computes this condition (one range, no complement)."""
    if null_true or len(key_set) != 1:
        return False
    rest = kr.complement(key_set)
    return not (rest and all(r.point is not None for r in rest) and len(rest) <= 2)


def _compare(v: sv.Vectors, name: str, keys_: list[bytes | None]) -> tuple | None:
    """``selectivity_vector._cmp_of`` of each key against every partition (condition x
    partition; rows of a missing key are False), or None when a key's width is not the
    stored keys' (the one-condition pass compares those with Arrow)."""
    present = [k for k in keys_ if k is not None]
    if not present:
        false = np.zeros((len(keys_), len(v.row_count)), dtype=bool)
        return false, false
    sv._cmp_of(v, name, present[0])  # makes the fixed-width array once
    fixed, valid, width = v._fixed[name]
    if fixed is None or any(len(k) != width for k in present):
        return None
    filler = present[0]
    probe = np.array([k if k is not None else filler for k in keys_], dtype=f"S{width}")
    has = np.array([k is not None for k in keys_], dtype=bool)[:, None]
    lt = (fixed[None, :] < probe[:, None]) & valid[None, :] & has
    eq = (fixed[None, :] == probe[:, None]) & valid[None, :] & has
    return lt, eq


def _constants(fractions: sv._Fractions, keys_: list[bytes | None], count: int) -> np.ndarray:
    """``fractions.constant`` of each key (rows; zeros for a missing key), in one
    ``_positions`` over every key x distinct common prefix length."""
    if fractions._commons is None:
        fractions._commons = np.unique(fractions.common, return_inverse=True)
    commons, inverse = fractions._commons
    width = fractions.width
    blob = b"".join(k if k is not None else bytes(width) for k in keys_)
    keys_matrix = np.frombuffer(blob, dtype=np.uint8).reshape(len(keys_), width)
    matrix = np.repeat(keys_matrix, len(commons), axis=0)
    positions = sv._positions(matrix, np.tile(commons, len(keys_)))
    return positions.reshape(len(keys_), len(commons))[:, inverse.reshape(-1)]


def scalar_many(v: sv.Vectors, ranges: Sequence[kr.KeyRange]) -> sv.Batch | None:
    """Per range (rows) and partition (columns): ``scalar_estimates(v, (r,), False)``;
    None when some key's width differs from the stored keys' (ask one by one)."""
    count = len(v.row_count)
    rcount = len(ranges)
    lows = [r.lower for r in ranges]
    highs = [r.upper for r in ranges]
    lo_keys = [k for k, _ in lows]
    hi_keys = [k for k, _ in highs]
    has_lo = np.array([k is not None for k in lo_keys], dtype=bool)[:, None]
    has_hi = np.array([k is not None for k in hi_keys], dtype=bool)[:, None]
    lo_inc = np.array([inc for _, inc in lows], dtype=bool)[:, None]  # t == 1
    hi_inc = np.array([inc for _, inc in highs], dtype=bool)[:, None]  # u == 2
    got = [_compare(v, "min_key", lo_keys), _compare(v, "max_key", lo_keys),
           _compare(v, "max_key", hi_keys), _compare(v, "min_key", hi_keys)]
    if any(g is None for g in got):
        return None
    (min_lt_lo, min_eq_lo), (lo_lt_max, lo_eq_max), (max_lt_hi, max_eq_hi), (
        min_lt_hi, min_eq_hi) = got
    # _clip
    m = v.row_count - v.null_count - v.nan_count
    has = numbers(v.min_key.is_valid(), False, bool) & numbers(v.max_key.is_valid(), False, bool)
    live = (m > 0) & has
    start_is_min = np.where(has_lo, (~min_lt_lo & ~min_eq_lo) | (min_eq_lo & lo_inc), True)
    end_is_max = np.where(has_hi, max_lt_hi | (max_eq_hi & hi_inc), True)
    max_gt_lo = ~lo_lt_max & ~lo_eq_max
    both_inner = np.array(
        [lo is not None and hi is not None and (lo < hi or (lo == hi and t and u))
         for (lo, t), (hi, u) in zip(lows, highs, strict=True)], dtype=bool
    )[:, None]  # (lo < hi) or (lo == hi and t < u): t < u when both ends are inclusive
    only_hi = end_is_max | min_lt_hi | (min_eq_hi & hi_inc)
    only_lo = start_is_min | max_gt_lo | (lo_eq_max & lo_inc)
    both = np.where(
        start_is_min & end_is_max,
        True,
        np.where(
            start_is_min,
            min_lt_hi | (min_eq_hi & hi_inc),
            np.where(end_is_max, max_gt_lo | (lo_eq_max & lo_inc), both_inner),
        ),
    )
    nonempty = np.where(
        has_lo & has_hi, both, np.where(has_hi, only_hi, np.where(has_lo, only_lo, True))
    )
    nonempty = nonempty & live
    whole = nonempty & start_is_min & end_is_max
    for x, r in enumerate(ranges):  # the clips, as ``selectivity_vector.clip`` keeps them
        if r not in v._clips:
            if len(v._clips) >= 64:
                v._clips.clear()
            found = v._clips[r] = sv.Clip(
                m, nonempty[x], whole[x], start_is_min[x], end_is_max[x],
                min_eq_hi[x] if hi_keys[x] is not None else None,
                lo_eq_max[x] if lo_keys[x] is not None else None,
            )
            for array in vars(found).values():
                if isinstance(array, np.ndarray):
                    array.setflags(write=False)
    # _ordered_part
    is_point = np.array([r.point is not None for r in ranges], dtype=bool)[:, None]
    point_range = (has_hi & hi_inc & start_is_min & ~end_is_max & min_eq_hi) | (
        has_lo & lo_inc & ~start_is_min & end_is_max & lo_eq_max
    )
    point = np.where(is_point, True, point_range) & nonempty & ~whole
    ranged = nonempty & ~whole & ~point
    mm = np.broadcast_to(m, (rcount, count))
    rows = np.where(whole, mm, 0).astype(np.float64)
    lower = np.where(whole, mm, 0).astype(np.int64)
    upper = lower.copy()
    fallback = np.zeros((rcount, count), dtype=bool)
    if point.any():
        distinct_rest = v.distinct_count - (v.nan_count > 0)
        usable = np.isfinite(distinct_rest) & (distinct_rest > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            average = np.where(usable, m / np.where(usable, distinct_rest, 1.0), m / 2)
        capped = np.minimum(average, m)
        rows = np.where(point, capped[None, :], rows)
        upper = np.where(point, mm, upper)
    if ranged.any():
        fractions = v.fractions()
        usable = np.array([fractions.ok] * rcount, dtype=bool)[:, None]
        if fractions.ok:  # the keys have the stored width (``_compare``): no None
            lo_pos = _constants(fractions, lo_keys, count)  # rows without a key: unused,
            hi_pos = _constants(fractions, hi_keys, count)  # start_is_min/end_is_max hold
            share = fractions.fraction(start_is_min, lo_pos, end_is_max, hi_pos)
            take = ranged & usable
            rows = np.where(take, m * share, rows)
            upper = np.where(take, mm, upper)
        fallback |= ranged & ~usable
    rows, lower, upper = sv._of(rows, lower, upper)
    # _range: NaN rows
    if kind_of(v.dtype) == Kind.FLOATING:
        nan_in = np.array([r.contains(NAN_KEY) for r in ranges], dtype=bool)[:, None]
        nan = v.nan_count
        plus = sv._of(rows + nan, lower + nan, upper + nan)
        add = nan_in & (nan > 0)
        rows = np.where(add, plus[0], rows)
        lower = np.where(add, plus[1], lower).astype(np.int64)
        upper = np.where(add, plus[2], upper).astype(np.int64)
    # scalar_estimates: the sum of one range, empty partitions
    rows, lower, upper = sv._of(0 + rows, 0 + lower, 0 + upper)
    empty = (v.row_count - v.null_count) == 0
    rows = np.where(empty, 0.0, rows)
    lower = np.where(empty, 0, lower)
    upper = np.where(empty, 0, upper)
    fallback = fallback & ~empty
    return sv.Batch(rows, lower, upper, fallback)


__all__ = ["scalar_many", "takes"]
