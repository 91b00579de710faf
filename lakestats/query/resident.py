"""A resident estimator: one statistics version's estimate inputs, kept in memory.

An open ``LakestatsTable`` keeps one ``Resident`` per statistics version it estimated
against (``LakestatsTable.estimate`` / ``estimate_many``), so a planner's repeated questions
are answered from memory after the first:

* the column types (for parsing) and each predicate text's parsed tree (``parse``: a text
  is parsed once, then looked up), and the conditions of simple conjunctions (a new
  conjunction of conditions seen before parses nothing);
* the partition index rows of every column a predicate named so far, as vectors by
  partition (``index_source.IndexPartitions``, to which each predicate's columns are
  added), its ``IndexPartition`` objects with the summaries, frequencies and histograms
  they loaded, and the partition histograms' rows they read (read once per version);
* each predicate term's per-partition estimates, shared by every predicate that names the
  term (``term_cache``, kept on the source);
* the table-level statistics rows (``sources.ReaderPartition``, likewise grown);
* the answers, keyed by the normalized predicate and the estimate's options (equivalent
  spellings share one).

The numbers are those of a fresh estimate: the same estimator runs over the same data
(``query.estimate``); only what it read before is not read again. A statistics version
never changes once published, so nothing here goes stale; a new version gets a new
``Resident`` (the handle keys them by version number and drops them when it re-reads the
table). Derived statistics (``analyze --where``) can appear without a new version: their
lookup is remembered for ``DERIVED_RECHECK_SECONDS`` only.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Container, Hashable
from typing import TypeVar

from lakestats import answers
from lakestats.query import (
    column_groups,
    group_partitions,
    index_source,
    predicate,
    sources,
    term_cache,
)
from lakestats.query import estimate as estimator
from lakestats.query.group_statistics import GroupStatistics
from lakestats.store.reader import StatisticsReader
from lakestats.threads import collection_paused, thread_map

ANSWERS = 4096
"""Answers kept per version (least recently used dropped first)."""
PARSED = 4096
"""Parsed predicate texts kept per version."""
DERIVED_RECHECK_SECONDS = 2.0
"""How long a derived-statistics lookup (found or not) is reused before the store is
listed again (the service's ``refresh_seconds``)."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Lru(OrderedDict):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def take(self, key: Hashable, make: Callable[[], V]) -> V:
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = make()
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)
        return value


class Resident:
    """One statistics version's estimator inputs and answers (see the module docstring)."""

    def __init__(self, reader: StatisticsReader) -> None:
        self.reader = reader
        self.version = reader.version.version
        self.snapshot_id = reader.version.snapshot_id
        self.types = sources.column_types(reader)
        self.lock = threading.RLock()
        self._parsed = _Lru(PARSED)
        self._conditions: dict[str, predicate.Predicate] = {}
        self._answers = _Lru(ANSWERS)
        self._normalized: dict[int, tuple[predicate.Predicate, str]] = {}
        self._derived: dict[str, tuple[float, object]] = {}
        self._derived_keys: tuple[float, frozenset[str]] | None = None
        self._index: index_source.IndexPartitions | None = None
        self._files: sources.ListSource | None = None
        self._table: sources.ReaderPartition | None = None
        self._has_index: bool | None = None
        self._groups: tuple[GroupStatistics, ...] | None = None
        self._partition_groups: dict[str, tuple[GroupStatistics, ...]] = {}

    # -- parsing ------------------------------------------------------------------------
    def parse(self, where: str, unanalyzed: Container[str]) -> predicate.Predicate:
        """``predicate.parse`` once per text (a failing text is not remembered)."""
        with self.lock:
            if where in self._parsed:
                self._parsed.move_to_end(where)
                return self._parsed[where]
        with self.lock:  # the conditions parsed before are reused (a planner repeats them)
            pred = predicate.parse(where, self.types, unanalyzed, self._conditions)
        with self.lock:
            self._parsed.take(where, lambda: pred)
        return pred

    def normalized(self, pred: predicate.Predicate) -> str:
        """``predicate.normalize(pred)``, once per parsed predicate object."""
        found = self._normalized.get(id(pred))
        if found is None or found[0] is not pred:
            if len(self._normalized) >= PARSED:
                self._normalized.clear()
            found = self._normalized[id(pred)] = (pred, predicate.normalize(pred))
        return found[1]

    def answered(self, key: Hashable) -> bool:
        """Whether the answer of ``key`` is kept."""
        with self.lock:
            return key in self._answers

    def derived(self, normalized: str, find: Callable[[], object]) -> object:
        """``find()`` (the derived statistics of ``normalized``, or None), reused for
        ``DERIVED_RECHECK_SECONDS``."""
        now = time.monotonic()
        with self.lock:
            found = self._derived.get(normalized)
        if found is not None and now - found[0] < DERIVED_RECHECK_SECONDS:
            return found[1]
        value = find()
        with self.lock:
            if len(self._derived) >= ANSWERS:
                self._derived.clear()
            self._derived[normalized] = (now, value)
        return value

    def derived_keys(self, listing: Callable[[], frozenset[str]]) -> frozenset[str]:
        """``listing()`` (the keys of the derived stores), reused for
        ``DERIVED_RECHECK_SECONDS``: a predicate whose key is absent has none."""
        now = time.monotonic()
        with self.lock:
            found = self._derived_keys
        if found is not None and now - found[0] < DERIVED_RECHECK_SECONDS:
            return found[1]
        value = listing()
        with self.lock:
            self._derived_keys = (now, value)
        return value

    # -- estimating ---------------------------------------------------------------------
    def answer(self, key: Hashable, compute: Callable[[], V]) -> V:
        """``compute()`` once per ``key`` (normalized predicate and options)."""
        with self.lock:
            return self._answers.take(key, compute)

    def estimate(
        self, pred: predicate.Predicate, table_level: bool, source: str
    ) -> answers.Estimate:
        """``query.estimate`` of ``pred`` over the resident partitions (the caller holds
        ``lock``), with the cyclic garbage collector paused
        (``threads.collection_paused``)."""
        with collection_paused():
            columns = predicate.columns_of(pred)
            parts: index_source.IndexPartitions | sources.ListSource
            if table_level:
                parts = sources.ListSource([self.table_partition(columns)])
            elif source == "index" and self.has_index():
                parts = self.index_partitions(columns)
            else:
                parts = self.file_partitions(columns)
            table = None
            if not table_level and self.reader.version.table_files:
                table = self.table_partition(columns)

            def estimate_of(p: predicate.Predicate) -> answers.Estimate:
                return estimator.estimate(p, parts, table, self.version, self.snapshot_id)

            live = sum(1 for e in self.reader.version.partitions if e.row_count > 0)
            return group_partitions.refine(pred, estimate_of(pred), self.groups(), estimate_of,
                                           self.partition_groups, live)

    def groups(self) -> tuple[GroupStatistics, ...]:
        """The version's table-level column groups, read once."""
        if self._groups is None:
            self._groups = column_groups.load(self.reader)
        return self._groups

    def partition_groups(
        self, names: list[str]
    ) -> dict[str, tuple[GroupStatistics, ...]]:
        """The column groups of the named partitions (their ``groups.parquet``), each read
        once; a partition without one has none."""
        files = {e.name: e.files.get("groups") for e in self.reader.version.partitions}
        wanted = [n for n in names if n not in self._partition_groups]
        read = thread_map(
            lambda n: column_groups.read(self.reader, files[n]) if files.get(n) else (), wanted
        )
        self._partition_groups.update(zip(wanted, read, strict=True))
        return {n: self._partition_groups[n] for n in names}

    def derived_answer(self, found: StatisticsReader) -> answers.Estimate:
        """The answer from ``found``, the derived statistics of a predicate."""
        return estimator.derived(self.reader, found)

    def prepare(self, preds: list[predicate.Predicate], table_level: bool, source: str) -> None:
        """Before a batch's predicates are estimated one by one: their new terms' scalar
        passes, column by column at once (``term_cache.prefill``); the same numbers."""
        if table_level or source != "index" or not self.has_index():
            return
        tops = []
        for pred in preds:
            if self.answered((self.normalized(pred), bool(table_level), source)):
                continue  # answered before: nothing to compute
            pred = predicate.push_not(pred)
            tops.extend(predicate.terms(pred) if isinstance(pred, predicate.And) else [pred])
        if not tops:
            return
        columns = sorted({c for t in tops for c in predicate.columns_of(t)})
        with self.lock, collection_paused():
            term_cache.prefill(self.index_partitions(columns), tops)

    def has_index(self) -> bool:
        if self._has_index is None:
            self._has_index = self.reader.partition_index() is not None
        return self._has_index

    def index_partitions(self, columns: list[str]) -> index_source.IndexPartitions:
        if self._index is None:
            self._index = index_source.IndexPartitions(
                self.reader, index_source.column_data(self.reader, columns)
            )
        else:
            self._index.add_columns(columns)
        return self._index

    def file_partitions(self, columns: list[str]) -> sources.ListSource:
        if self._files is None:
            self._files = sources.partitions_of(self.reader, columns)
        else:
            for part in self._files:
                part.add_columns(columns)
        return self._files

    def table_partition(self, columns: list[str]) -> sources.ReaderPartition:
        if self._table is None:
            self._table = sources.table_level(self.reader, columns)[0]
        else:
            self._table.add_columns(columns)
        return self._table


__all__ = ["ANSWERS", "DERIVED_RECHECK_SECONDS", "PARSED", "Resident"]
