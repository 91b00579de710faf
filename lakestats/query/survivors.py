"""The full estimate of the partitions left after pruning, as vector operations.

The estimator (``query.estimate``) prunes every partition at once from the scalars; the
partitions left (the survivors) are then estimated with all their statistics. Per
partition, a single-column condition's estimate (``partition_estimate.leaf_estimate``, i.e.
``selectivity.estimate_keys`` plus the null rows) walks the condition's key ranges and,
for each, clips it to [min, max], then either keeps nothing, keeps every value, or reads
the listed values (frequencies) in it. Here the same cases are decided for all survivors
at once, per key range:

* the clip (``selectivity_vector.clip``): no value in range, or the whole [min, max]
  ("min/max");
* complete frequencies, or listed values that account for every row ("frequencies"): the
  listed count in the clipped range, from one flat array of every partition's listed
  values (``Listed``: positions in the union of the listed keys, cumulative counts), two
  ``searchsorted`` per range;
* a range over a histogram ("histogram", "frequencies + histogram", "histogram
  (approx.)"): the bins' remainders (listed values taken out) flat with cumulative sums,
  the bins strictly inside summed and the (at most two) edge bins' shares computed with
  the writer's bin arithmetic, elementwise (``Listed.histogram_range``);
* anything else (an unlisted value's bound, key interpolation of strings, a range that
  clipping leaves as one key, LIKE, several columns, integers near the int64 ends): that
  partition's condition is estimated as before, one by one (``fallback``).

The numbers are those of the per-partition path (sums of exact integer counts, the same
``Estimate.of`` clamps, the same method names); the property test compares the two on
random predicates.

The listed values of the survivors are laid out flat per column by ``query.listed``.
"""

from __future__ import annotations

import numpy as np

from lakestats.query.listed import (
    EMPTY,
    FREQUENCIES,
    MIN_MAX,
    NULLS,
    Listed,
)
from lakestats.query.predicate.sets import ColumnSet
from lakestats.stats import key_ranges as kr
from lakestats.stats import selectivity as sel
from lakestats.stats import selectivity_vector as sv
from lakestats.stats.column_summary import NAN_KEY
from lakestats.stats.kinds import Kind, kind_of


def _clipped_point(c: sv.Clip, r: kr.KeyRange) -> np.ndarray:
    """Where ``r`` clipped to [min, max] holds one key (min at an inclusive upper end, or
    max at an inclusive lower end), as ``selectivity_vector._ordered_part`` finds."""
    point = np.zeros(len(c.m), dtype=bool)
    if r.upper[0] is not None and r.upper[1]:
        point |= c.start_is_min & ~c.end_is_max & c.min_eq_hi
    if r.lower[0] is not None and r.lower[1]:
        point |= ~c.start_is_min & c.end_is_max & c.lo_eq_max
    return point & c.nonempty & ~c.whole


def leaf(
    vectors: sv.Vectors,
    cs: ColumnSet,
    table: Listed,
    parts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``partition_estimate.leaf_estimate`` of a single-column set condition (``cs``) for the
    partitions ``parts``: rows, lower, upper, method codes and ``fallback`` (partitions
    whose estimate needs more than the cases above: the caller estimates them one by
    one; their numbers here are meaningless)."""
    count = len(parts)
    row_count = vectors.row_count[parts]
    null_count = vectors.null_count[parts]
    non_null = row_count - null_count
    fallback = ~table.known[parts]
    key_set = cs.true
    floating = kind_of(vectors.dtype) == Kind.FLOATING
    nan = vectors.nan_count[parts]
    rest = sel._complement(key_set) if key_set else ()
    flip = bool(rest) and all(r.point is not None for r in rest) and len(rest) <= len(key_set) + 1
    ranges = rest if flip else key_set
    rows = np.zeros(count, dtype=np.float64)
    lower = np.zeros(count, dtype=np.int64)
    upper = np.zeros(count, dtype=np.int64)
    code = np.zeros(count, dtype=np.int64)
    by_freq = table.complete[parts]

    def number(key: bytes) -> int | float:
        return sel.storage_number(vectors.dtype, key)

    for r in ranges:
        c = sv.clip(vectors, r)
        m = c.m[parts]
        nonempty, whole = c.nonempty[parts], c.whole[parts]
        inner = nonempty & ~whole
        rest_p = m - table.total[parts]
        counted = inner & (by_freq | (rest_p <= 0))
        ranged = None
        if r.point is None:  # a range, unless clipping leaves one key
            ranged = inner & ~counted & table.usable[parts] & ~_clipped_point(c, r)[parts]
        value = np.where(whole, m, 0)
        listed_in = None
        if counted.any() or (ranged is not None and ranged.any()):
            listed_in = table.listed_in(parts, r)
            value = np.where(counted, listed_in, value)
        r_rows, r_lower, r_upper = value.astype(np.float64), value.copy(), value.copy()
        r_code = np.where(counted, FREQUENCIES, MIN_MAX)
        if ranged is not None and ranged.any():
            at = np.flatnonzero(ranged)
            got = table.histogram_range(parts[at], c, r, number, listed_in[at], rest_p[at])
            r_rows[at], r_lower[at], r_upper[at], r_code[at] = got
            counted = counted | ranged
        fallback |= inner & ~counted
        if floating and r.contains(NAN_KEY):
            has_nan = nan > 0
            plus = sv._of(r_rows + nan, r_lower + nan, r_upper + nan)
            r_rows = np.where(has_nan, plus[0], r_rows)
            r_lower = np.where(has_nan, plus[1], r_lower)
            r_upper = np.where(has_nan, plus[2], r_upper)
        rows = rows + r_rows
        lower = lower + r_lower
        upper = upper + r_upper
        code |= r_code
    if ranges:
        rows, lower, upper = sv._of(rows, lower, upper)
    if flip:
        rows, lower, upper = sv._of(non_null - rows, np.maximum(0, non_null - upper),
                                    non_null - lower)
    empty = (non_null == 0) | (not key_set)
    rows = np.where(empty, 0.0, rows)
    lower = np.where(empty, 0, lower)
    upper = np.where(empty, 0, upper)
    code = np.where(empty, EMPTY, code)
    fallback &= ~empty
    if cs.null == "T":
        add = null_count > 0
        plus = sv._of(rows + null_count, lower + null_count, upper + null_count)
        rows = np.where(add, plus[0], rows)
        lower = np.where(add, plus[1], lower)
        upper = np.where(add, plus[2], upper)
        code = np.where(add, code | NULLS, code)
    return rows, lower, upper, code, fallback


__all__ = ["leaf"]
