"""Sensitive columns: served with their counts, never with their values.

A table's ``sensitive = [...]`` in the tables file names columns (a struct's name covers
its fields) whose values must not leave the service. ``GuardedTable`` is the only handle
the routes and pages get (``TableSet.get``): it has exactly the lookups they make, each
answering as the table handle does with those values withheld at the source, so every
route and page (and every answer cached from one) is covered alike:

* statistics rows keep only the counts (``KEPT``: rows, nulls, distinct count and its
  bounds) and say ``"sensitive": true``; min, max, percentiles, mean, lengths, histogram
  and frequency fields and any user-defined statistic are dropped;
* frequencies, histograms and partitions-containing of such a column are refused
  (``SensitiveColumnError``, 403), as is an estimate, a ``stats`` filter or a derived
  entry whose predicate compares one with a value (its row count would tell whether a
  value occurs); ``IS [NOT] NULL`` stays answered;
* the profile keeps only the alerts about such a column that count (nulls, distinctness),
  without a value; ``history`` withholds the predicate of a derived entry that compares
  one.

A sensitive name the table lacks, or a partition column (its values name the
partitions), is a ``ConfigurationError``: the table is not served rather than served
open.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import lakestats.api as ls
from lakestats.answers import Alert, VersionInfo, Versions, frozen_row
from lakestats.errors import ConfigurationError, LakestatsError, SensitiveColumnError

if TYPE_CHECKING:
    from lakestats.answers import (
        BatchStatistics,
        Estimate,
        EstimateBatch,
        Frequencies,
        GroupDistinct,
        Histogram,
        Partition,
        Partitions,
        PartitionsContaining,
        PartitionStatistics,
        Row,
        StatisticsRows,
        TableProfile,
        TableStatistics,
        TableSummary,
    )

KEPT = frozenset({
    "column", "column_path", "name", "type", "table_type", "row_count", "null_count",
    "distinct_count", "all_distinct", "distinct_count_exact", "distinct_count_lower",
    "distinct_count_upper",
})
"""What a sensitive column's statistics row keeps: names, its type and counts."""
COUNTING_ALERTS = frozenset({"all_null", "high_nulls", "unique", "high_cardinality"})
"""Alerts whose message is counts only; ``constant`` is kept with its value left out."""
MARK = "sensitive"


class Sensitivity:
    """Which columns of one table are sensitive: a name given, or a field of a struct
    given (``a`` covers ``a.b``)."""

    def __init__(self, table: str, names: Iterable[str]) -> None:
        self.table = table
        self.names = frozenset(names)

    def __bool__(self) -> bool:
        return bool(self.names)

    def covers(self, column: str) -> bool:
        if column in self.names:
            return True
        parts = column.split(".")
        return any(".".join(parts[:i]) in self.names for i in range(1, len(parts)))

    def refuse(self, column: str, what: str) -> None:
        """Raise ``SensitiveColumnError`` when ``column`` is sensitive."""
        if self.covers(column):
            raise SensitiveColumnError(
                f"column {column!r} of table {self.table!r} is sensitive: its {what} are "
                "not served (its row, null and distinct counts are)"
            )

    def row(self, row: Row) -> Row:
        """``row`` as served: whole, or only ``KEPT`` and the mark."""
        name = str(row.get("column", row.get("name")))
        if not self.covers(name):
            return row
        return frozen_row({**{k: v for k, v in row.items() if k in KEPT}, MARK: True})

    def rows(self, rows: Sequence[Row]) -> tuple[Row, ...]:
        return tuple(self.row(r) for r in rows)

    def alert(self, alert: Alert) -> Alert | None:
        if alert.column is None or not self.covers(alert.column):
            return alert
        if alert.kind in COUNTING_ALERTS:
            return alert
        if alert.kind == "constant":
            return Alert(alert.kind, alert.column, "one value (sensitive: not shown)")
        return None

    def check(self, columns: Iterable[str], partition_keys: Iterable[str]) -> None:
        """Every sensitive name is a column (or struct) of the table and none is a
        partition column; ``ConfigurationError`` naming the first that is not."""
        known = list(columns)
        keys = set(partition_keys)
        for name in sorted(self.names):
            if name in keys:
                raise ConfigurationError(
                    f"table {self.table!r}: sensitive column {name!r} is a partition "
                    "column, whose values name the partitions; it cannot be withheld"
                )
            if not any(c == name or c.startswith(name + ".") for c in known):
                raise ConfigurationError(
                    f"table {self.table!r}: sensitive column {name!r} is not a column with "
                    f"statistics; columns: {', '.join(known[:20])}"
                )


class GuardedTable:
    """A table handle as the service may answer from it (see the module docstring)."""

    def __init__(self, table: ls.LakestatsTable, sensitivity: Sensitivity) -> None:
        self.table = table  # for this module only: the routes use the lookups below
        self.sensitivity = sensitivity

    # -- passed through: no values of a column -----------------------------
    def snapshot_as_of(self, moment: int) -> int:
        """The snapshot current at ``moment`` (epoch ms), for ``as_of``."""
        return ls.snapshot_as_of(self.table.format, moment)

    def latest_version(self) -> int:
        return self.table.latest_version()

    def forget_table_state(self) -> None:
        self.table.forget_table_state()

    def summary(self) -> TableSummary:
        return self.table.summary()

    def partitions(self) -> Partitions:
        return self.table.partitions()

    def partition(self, partition: str | dict[str, object]) -> Partition:
        return self.table.partition(partition)

    def check_columns(self, names: list[str] | None) -> None:
        self.table.check_columns(names)

    def check(self) -> None:
        """``Sensitivity.check`` against the latest version (nothing to check before the
        table is analyzed)."""
        if not self.sensitivity:
            return
        try:
            summary = self.table.summary()
            keys = {k for p in self.table.partitions() for k in p.partition}
        except LakestatsError:
            return
        self.sensitivity.check([c.name for c in summary.columns], keys)

    # -- statistics rows: counts only for sensitive columns -----------------
    def table_statistics(
        self, snapshot_id: int | None = None, columns: list[str] | None = None
    ) -> TableStatistics:
        found = self.table.table_statistics(snapshot_id, columns)
        if not self.sensitivity:
            return found
        return dataclasses.replace(found, columns=self.sensitivity.rows(found.columns))

    def statistics(
        self, partition: str | None = None, columns: list[str] | None = None
    ) -> StatisticsRows:
        found = self.table.statistics(partition, columns)
        if not self.sensitivity:
            return found
        return dataclasses.replace(found, columns=self.sensitivity.rows(found.columns))

    def partition_statistics(
        self, partition: str, columns: list[str] | None = None
    ) -> PartitionStatistics:
        found = self.table.partition_statistics(partition, columns)
        if not self.sensitivity:
            return found
        return dataclasses.replace(found, columns=self.sensitivity.rows(found.columns))

    def stats(
        self,
        columns: list[str],
        where: str | None = None,
        by_partition: bool = True,
        snapshot_id: int | None = None,
    ) -> BatchStatistics:
        if where is not None:  # a derived entry's predicate is answered here too
            self.check_predicate(where, snapshot_id)
        found = self.table.stats(
            columns, where=where, by_partition=by_partition, snapshot_id=snapshot_id
        )
        return self._batch(found)

    def _batch(self, found: BatchStatistics) -> BatchStatistics:
        if not self.sensitivity:
            return found
        rows = self.sensitivity.rows
        parts = found.partitions
        return dataclasses.replace(
            found,
            columns=rows(found.columns),
            partitions=None
            if parts is None
            else tuple(dataclasses.replace(p, columns=rows(p.columns)) for p in parts),
        )

    def profile(self, snapshot: int | None = None) -> TableProfile:
        found = self.table.profile(snapshot)
        if not self.sensitivity:
            return found
        kept = (self.sensitivity.alert(a) for a in found.alerts)
        return dataclasses.replace(found, alerts=tuple(a for a in kept if a is not None))

    def history(self) -> Versions:
        found = self.table.history()
        if not self.sensitivity:
            return found
        return Versions(tuple(self._version(v) for v in found.versions))

    def _version(self, info: VersionInfo) -> VersionInfo:
        derived = info.derived
        if derived is None or not self._compares_sensitive(str(derived.get("predicate"))):
            return info
        withheld: Mapping[str, object] = {
            **{k: v for k, v in derived.items() if k not in ("predicate", "key")},
            "predicate": None,
            MARK: True,
        }
        return dataclasses.replace(info, derived=withheld)

    def _compares_sensitive(self, where: str) -> bool:
        """Whether ``where`` compares a sensitive column with a value (a predicate that no
        longer parses counts as one: it is withheld rather than guessed)."""
        try:
            compared = self.table.compared_columns(where)
        except LakestatsError:
            return True
        return any(self.sensitivity.covers(c) for c in compared)

    # -- values only: refused for sensitive columns -------------------------
    def frequencies(
        self, column: str, partition: str | None = None, top: int | None = None
    ) -> Frequencies:
        self.sensitivity.refuse(column, "most frequent values")
        return self.table.frequencies(column, partition, top)

    def histogram(
        self, column: str, partition: str | None = None, start: int = 0, stop: int | None = None
    ) -> Histogram:
        self.sensitivity.refuse(column, "histogram bins (their edges are values)")
        return self.table.histogram(column, partition, start, stop)

    def partitions_containing(self, column: str, value: str) -> PartitionsContaining:
        self.sensitivity.refuse(column, "values (which partitions hold one)")
        return self.table.partitions_containing(column, value)

    # -- predicates: refused when they compare a sensitive column ----------
    def check_predicate(self, where: str, snapshot_id: int | None = None) -> None:
        """Refuse ``where`` when it compares a sensitive column with a value: the rows it
        keeps would tell whether (and how often) a value occurs."""
        if not self.sensitivity:
            return
        for column in self.table.compared_columns(where, snapshot_id):
            self.sensitivity.refuse(column, "values (predicates comparing it with a value)")

    def estimate(
        self, where: str, snapshot_id: int | None = None, table_level: bool = False
    ) -> Estimate:
        self.check_predicate(where, snapshot_id)
        return self.table.estimate(where, snapshot_id, table_level=table_level)

    def group_distinct(
        self, columns: list[str], snapshot_id: int | None = None
    ) -> GroupDistinct:
        """Distinct combinations: a count, answered for sensitive columns too (as their
        distinct counts are)."""
        return self.table.group_distinct(columns, snapshot_id)

    def estimate_many(
        self, wheres: Sequence[str], snapshot_id: int | None = None, table_level: bool = False
    ) -> EstimateBatch:
        for i, where in enumerate(wheres):
            try:
                self.check_predicate(where, snapshot_id)
            except LakestatsError as exc:
                raise type(exc)(f"predicate {i + 1} of {len(wheres)}: {exc}") from exc
        return self.table.estimate_many(wheres, snapshot_id, table_level=table_level)

    def derived_columns(self, where: str, snapshot_id: int | None = None) -> list[str] | None:
        self.check_predicate(where, snapshot_id)
        return self.table.derived_columns(where, snapshot_id)
