"""Per-term estimates kept by a resident estimator, shared by every predicate that names
the term: a cache keyed by statistics version and normalised term, one level below the
answers.

The estimator (``query.estimate``) estimates a conjunction term by term: first every term
from the scalars for every partition (pruning), then every term with all the statistics
for the partitions left (the survivors). Neither number depends on the other terms of the
conjunction: a term's scalar estimate of partition ``i`` is a function of the term and
the partition's scalars, its full estimate a function of the term and the partition's
statistics. A planner asks many conjunctions that share terms (the same filter with
different companions, a batch of selectivities of one query), so each term's numbers are
kept, per partition, on the resident source (``PartitionSource.cache``) and a
later conjunction with that term reuses them:

* ``Term.scalar``: the scalar pass over all partitions (``rows``, ``lower``, ``upper``;
  the one-by-one scalar fallbacks included);
* ``Term.rows``/``lower``/``upper``/``codes``/``alone``/``one_by_one``: the full estimate
  of the partitions estimated so far (``have``), as ``survivors.leaf`` gives it, or as the
  one-by-one estimate where the vectors hand a partition back (``alone``);
* ``Term.target``: the table-level estimate an equality / IN term is scaled to.

What depends on the conjunction is not kept: which partitions survive, the table level's
per-partition counts of equality terms (``point_counts``, used only with other terms), the
scaling (over the partitions' mixed scalar and full estimates) and the combination. A
statistics version never changes, so nothing goes stale; the handle drops the cache with
its ``Resident``. Entries are dropped least recently used first, fewer the more
partitions (``MAX_VALUES``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

from lakestats.query import listed, survivors_many
from lakestats.query import partition_estimate as pe
from lakestats.query import survivors as sv_full
from lakestats.query.predicate import Predicate, column_set, columns_of, is_set
from lakestats.query.source import PartitionSource
from lakestats.stats import scalar_many as sm
from lakestats.stats import selectivity as sel
from lakestats.stats.column_summary import Estimate

MAX_VALUES = 2_000_000
"""Partition x term numbers kept per resident partitions (about 5 arrays of 8 bytes
each): 16 terms at least, 4096 at most."""


class Term:
    """One term's numbers per partition (see the module docstring)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.scalar: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.have: np.ndarray | None = None
        self.one_by_one: dict[int, Estimate] = {}
        self.target: tuple[object, float] | None = None
        self.normalized: str | None = None

    def _arrays(self) -> None:
        if self.have is None:
            count = self.count
            self.have = np.zeros(count, dtype=bool)
            self.alone = np.zeros(count, dtype=bool)
            self.rows = np.zeros(count, dtype=np.float64)
            self.lower = np.zeros(count, dtype=np.int64)
            self.upper = np.zeros(count, dtype=np.int64)
            self.codes = np.zeros(count, dtype=np.int64)
            self.numbers = np.zeros(count, dtype=bool)  # an alone one's numbers are in

    def covers(self, positions: np.ndarray) -> bool:
        return self.have is not None and bool(self.have[positions].all())

    def fill(self, term: Predicate, partitions: PartitionSource, positions: np.ndarray) -> None:
        """The full estimate of the ``positions`` not estimated yet: ``survivors.leaf``
        where the vectors decide, else marked ``alone`` (estimated one by one when
        asked, ``estimate``)."""
        self._arrays()
        missing = positions[~self.have[positions]]
        if not len(missing):
            return
        cols = columns_of(term)
        vectors = partitions.vectors(cols[0]) if len(cols) == 1 and is_set(term) else None
        if vectors is not None and _many_points(column_set(term).true):
            vectors = None  # estimated one by one, each partition's values at once
        table = listed.listed(partitions, cols[0], missing) if vectors is not None else None
        if table is None or table.too_big:
            self.alone[missing] = True
        else:
            got = sv_full.leaf(vectors, column_set(term), table, missing)
            (self.rows[missing], self.lower[missing], self.upper[missing],
             self.codes[missing], self.alone[missing]) = got
        self.have[missing] = True

    def estimate(self, term: Predicate, partitions: PartitionSource, i: int) -> Estimate:
        """Partition ``i``'s one-by-one estimate (kept)."""
        found = self.one_by_one.get(i)
        if found is None:
            found = self.one_by_one[i] = pe.estimate(term, partitions[i])
            self._numbers(i, found)
        return found

    def _numbers(self, i: int, e: Estimate) -> None:
        """Partition ``i``'s one-by-one numbers in the arrays too (read as vectors)."""
        if self.have is not None:
            self.rows[i], self.lower[i], self.upper[i] = e.rows, e.lower, e.upper
            self.numbers[i] = True

    def record(self, i: int, e: Estimate) -> None:
        """Partition ``i``'s full estimate, computed one by one elsewhere."""
        self._arrays()
        if not self.have[i]:
            self.have[i] = self.alone[i] = True
            self.one_by_one[i] = e
            self._numbers(i, e)

    def table_target(self, table: object, compute: Callable[[], float]) -> float:
        if self.target is None or self.target[0] is not table:
            self.target = (table, compute())
        return self.target[1]


class Terms(OrderedDict):
    """The ``Term`` of each predicate term asked (least recently used dropped)."""

    def __init__(self, partitions: int) -> None:
        super().__init__()
        self.partitions = partitions
        self.size = max(16, min(4096, MAX_VALUES // max(1, partitions)))

    def of(self, term: Hashable) -> Term:
        try:
            found = self.get(term)
        except TypeError:  # an unhashable literal value: not kept
            return Term(self.partitions)
        if found is not None:
            self.move_to_end(term)
            return found
        found = self[term] = Term(self.partitions)
        while len(self) > self.size:
            self.popitem(last=False)
        return found


def prefill(partitions: PartitionSource, terms: list[Predicate]) -> None:
    """The scalar pass of a batch's new terms, each column's single-range terms at once
    (``scalar_many``), kept as ``Term.scalar`` before the batch's predicates are
    estimated one by one (which then reuse them). A term with a partition the stacked
    pass cannot decide is left to the one-term pass."""
    cache = terms_of(partitions)
    by_column: dict[str, dict] = {}
    for term in terms:
        cols = columns_of(term)
        if len(cols) != 1 or not is_set(term):
            continue
        entry = cache.of(term)
        if entry.scalar is not None:
            continue
        cs = column_set(term)
        if sm.takes(cs.true, cs.null == "T"):
            by_column.setdefault(cols[0], {}).setdefault(cs.true[0], []).append(entry)
    live = partitions.row_counts() > 0
    for column, groups in by_column.items():
        vectors = partitions.vectors(column) if len(groups) > 1 else None
        if vectors is None:
            continue
        ranges = list(groups)
        batch = sm.scalar_many(vectors, ranges)
        if batch is None:
            continue
        for x, r in enumerate(ranges):
            if (batch.fallback[x] & live).any():
                continue
            for entry in groups[r]:
                entry.scalar = (batch.rows[x].copy(), batch.lower[x].copy(),
                                batch.upper[x].copy())
        _prefill_full(partitions, column, vectors, groups, batch.upper, live)


def _prefill_full(partitions, column, vectors, groups, upper, live) -> None:  # noqa: ANN001
    """The full estimate of the stacked terms (``survivors_many.leaf_many``) over the
    partitions the column's laid-out listed values already cover where some of them
    keeps rows (a superset of any conjunction's survivors there), kept as
    ``Term.fill`` keeps it."""
    found = partitions.cache.get("listed", {}).get(column)
    if found is None or found[1].too_big:
        return
    covered, table = found
    positions = np.flatnonzero(covered & live & (upper > 0).any(axis=0))
    if not len(positions):
        return
    ranges = list(groups)
    try:
        rows, lower, upper_, codes, alone = survivors_many.leaf_many(
            vectors, ranges, table, positions)
    except (OverflowError, ValueError):  # a key beyond the storage numbers: one by one
        return
    for x, r in enumerate(ranges):
        for entry in groups[r]:
            entry._arrays()
            fresh = ~entry.have[positions]
            missing = positions[fresh]
            entry.rows[missing], entry.lower[missing] = rows[x][fresh], lower[x][fresh]
            entry.upper[missing], entry.codes[missing] = upper_[x][fresh], codes[x][fresh]
            entry.alone[missing] = alone[x][fresh]
            entry.have[missing] = True


def terms_of(partitions: PartitionSource) -> Terms:
    """The source's ``Terms`` (made on first use)."""
    found = partitions.cache.get("terms")
    if found is None:
        found = partitions.cache["terms"] = Terms(len(partitions))
    return found


def _many_points(key_set: tuple) -> bool:
    """Whether the ranges an estimate of ``key_set`` walks are many single values (a long
    IN list): ``selectivity.estimate_keys`` takes them at once per partition, where
    ``survivors.leaf`` would walk them one by one."""
    return key_set != () and sel.many_points(sel.walked(key_set)[1]) is not None


__all__ = ["MAX_VALUES", "Term", "Terms", "prefill", "terms_of"]
