"""The plain lookups of a table's statistics: one version's partitions, rows, frequencies,
histograms, exact ranks and quantiles, the profile and the history.

``StatisticsLookups`` is the part of ``LakestatsTable`` (``lakestats.table``) that only
reads what a statistics version holds: each method checks its request and asks the
version's reader (``lakestats.store.reader``), so none of them plans the table or starts
Spark. Kept apart from the handle's own state (readers, estimators, staleness) so either
reads in one sitting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from lakestats.errors import (
    CorruptStatisticsError,
    InvalidArgumentError,
    LakestatsError,
    StatisticsNotFoundError,
)
from lakestats.lazy import LazyModule
from lakestats.options import AnalyzeOptions
from lakestats.stats.leaves import leaves_of
from lakestats.stats.literals import parse_value
from lakestats.stats.type_codec import parse_type
from lakestats.store import derived, layout, manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import VersionKind
from lakestats.store.reader import StatisticsReader
from lakestats.store.verify import version_bytes

if TYPE_CHECKING:
    from lakestats import answers
    from lakestats.answers import Row
    from lakestats.formats import TableFormat
else:  # the answers' dataclasses compile on first use: a lookup builds few of them
    answers = LazyModule("lakestats.answers")

# the flags that say whether a column's figures are exact (True) or estimated (False)
EXACTNESS_FLAGS = ("distinct_count_exact", "percentiles_exact", "histogram_exact",
                   "frequencies_exact")


def check_root(root: StatisticsStore) -> None:
    """A statistics root that is a file is a mistake to report, not an empty history; an
    unreachable store is one line (``StatisticsStore.check_directory``)."""
    root.check_directory()


def _partition(reader: StatisticsReader, entry: manifest.PartitionEntry) -> answers.Partition:
    """A partition of the version ``reader`` reads, its files' URIs absolute."""
    return answers.Partition(
        partition=entry.values,
        name=entry.name,
        path=entry.path,
        row_count=entry.row_count,
        files={kind: layout.absolute(reader.root, path) for kind, path in entry.files.items()},
    )


class TableColumns:
    """The table's column names, read only when asked (a predicate naming a column without
    statistics), so an estimate normally never opens the table's metadata."""

    def __init__(self, table: StatisticsLookups, snapshot_id: int | None) -> None:
        self.table, self.snapshot_id = table, snapshot_id

    def __contains__(self, name: object) -> bool:
        try:
            schema = self.table.format.schema(self.snapshot_id)
        except LakestatsError:
            return False
        return name in {leaf.name for leaf in leaves_of(schema)}


class StatisticsLookups:
    """The lookups of ``LakestatsTable`` that read one statistics version."""

    if TYPE_CHECKING:  # what the handle provides

        @property
        def store(self) -> StatisticsStore: ...
        @property
        def format(self) -> TableFormat: ...
        def reader(self) -> StatisticsReader: ...
        def _reader_of_version(self, number: int) -> StatisticsReader: ...
        def _version_reader(self, snapshot_id: int | None) -> StatisticsReader: ...
        def _check_path(self) -> None: ...
        def table_statistics(
            self, snapshot_id: int | None = None, columns: list[str] | None = None
        ) -> answers.TableStatistics: ...

    def summary(self) -> answers.TableSummary:
        """The latest statistics version: number, snapshot, rows, partitions, columns."""
        version = self.reader().version
        return answers.TableSummary(
            version=version.version,
            snapshot_id=version.snapshot_id,
            row_count=version.merged_record_count or version.row_count,
            partitions=tuple(e.name for e in version.partitions),
            table_level=bool(version.table_files),
            created_at=version.created_at,
            columns=tuple(answers.ColumnInfo(c["name"], c["type"]) for c in version.columns),
            kind=str(version.kind),
            size_in_bytes=version.merged_record_size,
        )

    def profile(self, snapshot: int | None = None) -> answers.TableProfile:
        """The table at a glance: size, freshness, how many figures are exact, and the
        alerts its statistics raise (``lakestats.alerts``), all without reading data.
        Needs table-level statistics (not ``--partitions-only``)."""
        # the alerts build answers (Alert): loaded when a profile is asked for
        from lakestats.alerts import column_alerts, drift_alerts, staleness_alert

        level = self.table_statistics(snapshot)
        reader = self._reader_of_version(level.version)
        version = reader.version
        alerts = list(staleness_alert(level.staleness))
        parts = version.partitions
        last = parts[-1] if len(parts) > 1 and parts[-1].name else None
        last_rows = {}
        if last is not None:
            last_rows = {r["column"]: r for r in reader.column_statistics(last.name, None)}
        exact = estimated = 0
        tops = reader.most_frequent() if version.table_files else {}
        for row in level.columns:
            for flag in EXACTNESS_FLAGS:
                exact += row.get(flag) is True
                estimated += row.get(flag) is False
            top = None
            if (row.get("distinct_count") or 0) > 1 and not row.get("all_distinct"):
                top = tops.get(row["column"])
            alerts += column_alerts(row, top)
            if last is not None and row["column"] in last_rows and row["column"] not in last.values:
                # a partition key differs between partitions by construction: not drift
                alerts += drift_alerts(row, last_rows[row["column"]], last.name, len(parts))
        return answers.TableProfile(
            version=version.version,
            snapshot_id=version.snapshot_id,
            row_count=level.row_count,
            columns=len(level.columns),
            partitions=len(parts),
            data_bytes=version.merged_record_size or None,
            statistics_bytes=version_bytes(reader.store, version),
            created_at=version.created_at,
            staleness=level.staleness,
            exact_figures=exact,
            estimated_figures=estimated,
            alerts=tuple(alerts),
        )

    def analyze_options(self, version: int | None = None) -> AnalyzeOptions | None:
        """The options the latest statistics version (or ``version``) was analyzed with
        (None: a version that records none, e.g. counts only)."""
        reader = self.reader() if version is None else self._reader_of_version(version)
        return reader.version.analyze_options

    def check_columns(self, names: list[str] | None) -> None:
        """Unknown column names are a ``ColumnNotFoundError`` naming them, with the
        analyzed columns nearest in spelling."""
        reader = self.reader()
        for name in names or ():
            reader.column_index(name)

    def partitions_containing(self, column: str, value: str) -> answers.PartitionsContaining:
        """Partitions holding ``value`` (given as text, parsed with the column's type)."""
        reader = self.reader()
        dtype = parse_type(reader.columns[reader.column_index(column)]["type"])
        holders = reader.partitions_containing(column, parse_value(value, column, dtype))
        return answers.PartitionsContaining(
            column=column,
            value=value,
            version=reader.version.version,
            partitions=tuple(answers.Holder(**h) for h in holders),
        )

    def history(self) -> answers.Versions:
        """Every statistics version, oldest first (damaged ones say why), then the
        derived entries (``analyze --where``)."""
        self._check_path()
        store = self.store
        check_root(store)
        out: list[answers.VersionInfo] = []
        for number in manifest.version_numbers(store):
            try:
                v = manifest.load_version(store, number)
            except CorruptStatisticsError as exc:  # listed, so it can be expired
                out.append(answers.VersionInfo(version=number, damaged=exc.message))
                continue
            except StatisticsNotFoundError:
                continue  # expired since the listing
            out.append(
                answers.VersionInfo(
                    version=v.version,
                    snapshot_id=v.snapshot_id,
                    schema_id=v.schema_id,
                    merged_record_count=v.merged_record_count,
                    merged_record_size=v.merged_record_size,
                    partitions_computed=v.partitions_computed,
                    partitions_reused=v.partitions_reused,
                    created_at=v.created_at,
                    kind=v.kind,
                )
            )
        for entry in cast("list[Row]", derived.entries(store)):
            out.append(
                answers.VersionInfo(
                    version=int(entry["version"]),
                    snapshot_id=entry["snapshot_id"],
                    created_at=entry["created_at"],
                    kind=VersionKind.DERIVED,
                    derived=entry,
                )
            )
        return answers.Versions(tuple(out))

    def partitions(self) -> answers.Partitions:
        """The partitions of the latest version; ``path`` (unambiguous whatever the values
        hold) is what ``--partition`` takes; ``files`` are the statistics files' URIs."""
        reader = self.reader()
        return answers.Partitions(
            reader.version.version,
            tuple(_partition(reader, entry) for entry in reader.version.partitions),
        )

    def statistics(
        self,
        partition: str | dict[str, object] | None = None,
        columns: list[str] | None = None,
        *,
        snapshot: int | None = None,
        version: int | None = None,
    ) -> answers.StatisticsRows:
        """Decoded statistics rows of ``partition`` (default: the table level) in the
        latest version, in statistics version ``version``, or in the version describing
        ``snapshot`` (at table level without the columns changed since;
        ``table_statistics`` adds how stale it is)."""
        if version is not None:
            reader = self._reader_of_version(version)
        elif snapshot is None:
            reader = self.reader()
        elif partition is None:
            found = self.table_statistics(snapshot, columns)
            return answers.StatisticsRows(None, found.version, found.columns)
        else:
            reader = self._version_reader(snapshot)
        entry = None if partition is None else reader.partition(partition)
        rows = tuple(answers.frozen_row(r) for r in reader.column_statistics(entry, columns))
        name = None if entry is None else entry.name
        return answers.StatisticsRows(name, reader.version.version, rows)

    def partition(self, partition: str | dict[str, object]) -> answers.Partition:
        """One partition of the latest version (an unknown one is a
        ``PartitionNotFoundError`` listing some that exist)."""
        reader = self.reader()
        return _partition(reader, reader.partition(partition))

    def partition_statistics(
        self, partition: str | dict[str, object], columns: list[str] | None = None
    ) -> answers.PartitionStatistics:
        """One partition's statistics in the latest version (``show --partition``)."""
        reader = self.reader()
        entry = reader.partition(partition)
        rows = reader.column_statistics(entry.name or None, columns)
        return answers.PartitionStatistics(
            partition=entry.values,
            name=entry.name,
            row_count=entry.row_count,
            version=reader.version.version,
            columns=tuple(answers.frozen_row(r) for r in rows),
        )

    def has_table_statistics(self) -> bool:
        """Whether the latest version has table-level files (not ``--partitions-only``)."""
        return bool(self.reader().version.table_files)

    def frequencies(
        self,
        column: str,
        partition: str | dict[str, object] | None = None,
        top: int | None = None,
        *,
        version: int | None = None,
    ) -> answers.Frequencies:
        """The ``top`` most frequent values of ``column`` (all stored when None), of the
        table level or of ``partition`` (in the latest statistics version, or ``version``),
        with the flags that say how whole the list is."""
        reader = self.reader() if version is None else self._reader_of_version(version)
        entry = reader.partition(partition or None)
        [row] = cast("list[Row]", reader.column_statistics(entry.name or None, [column]))
        pairs = reader.frequencies(entry.name or None, column, top)
        return answers.Frequencies(
            column=column,
            partition=entry.name or None,
            version=reader.version.version,
            row_count=row["row_count"],
            distinct_count=row["distinct_count"],
            all_distinct=row.get("all_distinct"),
            truncated=bool(row.get("frequencies_truncated")),
            omitted=row.get("frequencies_omitted"),
            duplicates_only=bool(row.get("duplicates_only")),
            exact=row.get("frequencies_exact") is not False,
            pairs=tuple((v, f) for v, f in pairs),
        )

    def rank(self, column: str, value: object) -> answers.Rank:
        """Exact rank of a value at table level (needs ``analyze(exact=True)``)."""
        from lakestats.store import ranks  # pyarrow.compute: only for ranks

        found = ranks.rank(self.reader(), column, value)
        return answers.Rank(
            column=column,
            value=value,
            below=found["below"],
            equal=found["equal"],
            above=found["above"],
            total=found["total"],
            percentile=found["percentile"],
        )

    def quantile(self, column: str, p: float) -> answers.Quantile:
        """Exact table-level quantile (nearest rank; needs ``analyze(exact=True)``)."""
        from lakestats.store import ranks  # pyarrow.compute: only for ranks

        return answers.Quantile(column, p, ranks.quantile(self.reader(), column, p))

    def histogram(
        self,
        column: str,
        partition: str | dict[str, object] | None = None,
        start: int = 0,
        stop: int | None = None,
        *,
        version: int | None = None,
    ) -> answers.Histogram:
        """Bins ``[start, stop)`` of ``column``'s histogram (all when ``stop`` is None),
        of the table level or of ``partition`` (in the latest statistics version, or
        ``version``)."""
        if start < 0 or (stop is not None and stop < start):
            raise InvalidArgumentError(
                f"bins {start} to {stop} are not a range: bins are numbered from 0, --start is "
                "the first bin and --stop the bin after the last, so 0 <= start <= stop "
                "(e.g. --start 0 --stop 10 for the first ten)"
            )
        reader = self.reader() if version is None else self._reader_of_version(version)
        entry = reader.partition(partition or None)
        bins = reader.histogram(entry.name or None, column, start, stop)
        [row] = cast("list[Row]", reader.column_statistics(entry.name or None, [column]))
        total = row.get("histogram_bins") or 0
        return answers.Histogram(
            column=column,
            partition=entry.name or None,
            version=reader.version.version,
            histogram_bins=total,
            start=min(start, total),
            stop=min(start + len(bins), total) if bins else min(start, total),
            exact=row.get("histogram_exact") is not False,
            bins=tuple(answers.Bin(b["lower"], b["upper"], b["count"]) for b in bins),
        )
