"""The full estimate of the partitions left after pruning, as vector operations.

``predicates._estimate_batched`` prunes every partition at once from the scalars; the
partitions left (the survivors) are then estimated with all their statistics. Per
partition, a single-column condition's estimate (``predicates._leaf_estimate``, i.e.
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
* anything else (a histogram's edge bins, an unlisted value, key interpolation, LIKE,
  several columns): that partition's condition is estimated as before, one by one
  (``fallback``).

The numbers are those of the per-partition path (sums of exact integer counts, the same
``Estimate.of`` clamps, the same method names); the property test compares the two on
random predicates.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

import numpy as np

from lakestats.stats import key_ranges as kr
from lakestats.stats import selectivity as sel
from lakestats.stats import selectivity_vector as sv
from lakestats.stats.kinds import Kind, kind_of

_MIN_MAX, FREQUENCIES, _EMPTY, _NULLS = 1, 2, 4, 8
_NAMES = ((_MIN_MAX, "min/max"), (FREQUENCIES, "frequencies"), (_EMPTY, "empty"))
_METHODS: dict[int, str] = {}


def method_name(code: int) -> str:
    """The method text of a code (its names sorted and joined as ``selectivity._sum``
    does, then `` + null count`` as ``_leaf_estimate`` adds it)."""
    found = _METHODS.get(code)
    if found is None:
        names = sorted(name for bit, name in _NAMES if code & bit)
        found = " + ".join(names) + (" + null count" if code & _NULLS else "")
        _METHODS[code] = found
    return found


class Listed:
    """One column's listed (frequent) values over the partitions it was built for
    (``known``), flat: entry ``e`` is partition ``part[e]``'s value at ``position[e]`` of
    the sorted union ``positions`` with count ``counts[e]``, ordered by partition then
    value; ``cumulative`` sums them. Per partition: ``complete`` frequencies, ``total``
    listed count, and where its [min, max] falls in the union (``span_start``,
    ``span_end``)."""

    def __init__(self, partitions: Sequence, column: str, positions_: np.ndarray) -> None:
        count = len(partitions)
        self.known = np.zeros(count, dtype=bool)
        self.complete = np.zeros(count, dtype=bool)
        self.total = np.zeros(count, dtype=np.int64)
        per_part = []
        union: set[bytes] = set()
        for p in positions_.tolist():
            s = partitions[p].summary(column)
            listed, counts = sel._listed(s)
            if any(a >= b for a, b in itertools.pairwise(listed)):
                continue  # unsorted (never written so): estimated one by one
            freq = s.frequencies
            self.known[p] = True
            self.complete[p] = freq is not None and freq.complete
            self.total[p] = int(counts.sum())
            per_part.append((p, listed, counts, s.min_key, s.max_key))
            union.update(listed)
        ordered = sorted(union)
        self.positions = [(1, k, 1) for k in ordered]
        where = {k: i for i, k in enumerate(ordered)}
        self.stride = len(ordered) + 1
        self.span_start = np.zeros(count, dtype=np.int64)
        self.span_end = np.zeros(count, dtype=np.int64)
        flat: list[int] = []
        flat_counts: list[np.ndarray] = []
        for p, listed, counts, low, high in per_part:
            base = p * self.stride
            flat.extend(base + where[k] for k in listed)
            flat_counts.append(counts)
            if low is not None and high is not None:
                self.span_start[p] = bisect.bisect_left(self.positions, (1, low, 1))
                self.span_end[p] = bisect.bisect_left(self.positions, (1, high, 2))
        self.keys = np.asarray(flat, dtype=np.int64)
        counts_all = (np.concatenate(flat_counts) if flat_counts
                      else np.zeros(0, dtype=np.int64)).astype(np.int64)
        self.cumulative = np.concatenate([[0], np.cumsum(counts_all)]).astype(np.int64)

    def listed_in(self, parts: np.ndarray, r: kr.KeyRange) -> np.ndarray:
        """Per partition of ``parts``: the listed count inside ``r`` clipped to the
        partition's [min, max] (``selectivity._listed_in`` of the clipped range)."""
        start = max(0, bisect.bisect_left(self.positions, r.start))
        end = bisect.bisect_left(self.positions, r.end)
        lo = np.maximum(start, self.span_start[parts])
        hi = np.maximum(lo, np.minimum(end, self.span_end[parts]))
        base = parts * self.stride
        a = np.searchsorted(self.keys, base + lo, side="left")
        b = np.searchsorted(self.keys, base + hi, side="left")
        return self.cumulative[b] - self.cumulative[a]


def listed(partitions: Sequence, column: str, survivors: np.ndarray) -> Listed:
    """The column's ``Listed`` covering ``survivors``, kept on ``partitions`` (a resident
    estimator's) and rebuilt with the partitions it did not cover yet."""
    cache = getattr(partitions, "listed_cache", None)
    found = cache.get(column) if cache is not None else None
    if found is not None and found[0][survivors].all():
        return found[1]
    wanted = np.zeros(len(partitions), dtype=bool)
    if found is not None:
        wanted |= found[0]
    wanted[survivors] = True
    built = Listed(partitions, column, np.flatnonzero(wanted))
    if cache is not None:
        cache[column] = (wanted, built)
    return built


def leaf(
    vectors: sv.Vectors,
    cs,  # noqa: ANN001 - predicates.ColumnSet
    table: Listed,
    parts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``predicates._leaf_estimate`` of a single-column set condition (``cs``) for the
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
    for r in ranges:
        c = sv.clip(vectors, r)
        m = c.m[parts]
        nonempty, whole = c.nonempty[parts], c.whole[parts]
        inner = nonempty & ~whole
        counted = inner & (by_freq | (m - table.total[parts] <= 0))
        fallback |= inner & ~counted
        value = np.where(whole, m, 0)
        if counted.any():
            value = np.where(counted, table.listed_in(parts, r), value)
        r_rows, r_lower, r_upper = value.astype(np.float64), value, value
        if floating and r.contains(sel.NAN_KEY):
            has_nan = nan > 0
            plus = sv._of(r_rows + nan, r_lower + nan, r_upper + nan)
            r_rows = np.where(has_nan, plus[0], r_rows)
            r_lower = np.where(has_nan, plus[1], r_lower)
            r_upper = np.where(has_nan, plus[2], r_upper)
        rows = rows + r_rows
        lower = lower + r_lower
        upper = upper + r_upper
        code |= np.where(counted, FREQUENCIES, _MIN_MAX)
    if ranges:
        rows, lower, upper = sv._of(rows, lower, upper)
    if flip:
        rows, lower, upper = sv._of(non_null - rows, non_null - upper, non_null - lower)
    empty = (non_null == 0) | (not key_set)
    rows = np.where(empty, 0.0, rows)
    lower = np.where(empty, 0, lower)
    upper = np.where(empty, 0, upper)
    code = np.where(empty, _EMPTY, code)
    fallback &= ~empty
    if cs.null == "T":
        add = null_count > 0
        plus = sv._of(rows + null_count, lower + null_count, upper + null_count)
        rows = np.where(add, plus[0], rows)
        lower = np.where(add, plus[1], lower)
        upper = np.where(add, plus[2], upper)
        code = np.where(add, code | _NULLS, code)
    return rows, lower, upper, code, fallback


__all__ = ["FREQUENCIES", "Listed", "leaf", "listed", "method_name"]
