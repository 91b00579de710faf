"""The facade users call: open a table, analyze it, look its statistics up.

    import lakestats.api as ls

    table = ls.open_table("warehouse/lineitem")          # or "db.lineitem" (catalog)
    table.analyze(bins=1000)                              # Spark job
    table.partitions()                                    # [{partition, row_count, files}]
    table.statistics("year=1995", columns=["l_tax"])      # decoded statistics rows
    table.frequencies("l_shipmode", "year=1995", top=3)   # [(value, frequency), ...]
    table.histogram("l_quantity", "year=1995", 0, 10)     # [{lower, upper, count}, ...]
    table.stats(["l_tax", "l_discount"])                  # table + every partition, batched

Lookups never start Spark; only ``analyze`` does.

Over 400 lines because it is the whole facade (every CLI command and HTTP route enters
here); each method only checks its request and calls the layer below that answers it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lakestats import fs
from lakestats.errors import (
    ColumnNotFoundError,
    CorruptStatisticsError,
    InvalidArgumentError,
    LakestatsError,
    StatisticsNotFoundError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from lakestats.formats import TableFormat, looks_like_path
from lakestats.formats import open_table as open_format
from lakestats.fs import S3Options  # noqa: F401 - public: a table's object store settings
from lakestats.lazy import LazyModule
from lakestats.options import AnalyzeOptions
from lakestats.stats.keys import to_json  # noqa: F401 - the CLI's and service's JSON form of a value
from lakestats.store import layout, manifest, ranks
from lakestats.store.cleanup import as_it_was
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import FileKind, VersionKind  # noqa: F401 - public names
from lakestats.store.reader import StatisticsReader
from lakestats.versions import (  # noqa: F401 - public names of the facade
    check_snapshot,
    parse_as_of,
    snapshot_as_of,
    staleness,
    version_for_snapshot,
)

# the flags that say whether a column's figures are exact (True) or estimated (False)
EXACTNESS_FLAGS = ("distinct_count_exact", "percentiles_exact", "histogram_exact",
                   "frequencies_exact")

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from lakestats import answers
    from lakestats.compute.analyze import RowSubset
    from lakestats.query.resident import Resident
else:  # the answers' dataclasses compile on first use: a lookup builds none of them
    answers = LazyModule("lakestats.answers")


@dataclass
class LakestatsTable:
    """A table and its statistics root."""

    name: str
    stats_root_override: str | None = None
    catalog: str | None = None
    warehouse: str | None = None
    s3: fs.S3Options | None = None
    _format: TableFormat | None = field(default=None, repr=False)
    _reader: StatisticsReader | None = field(default=None, repr=False)
    _residents: dict[int, Resident] = field(default_factory=dict, repr=False, compare=False)
    # (statistics version, target snapshot) -> how stale: planning the table and walking
    # its schema costs milliseconds, and the service asks for every table-level lookup
    _staleness: dict[tuple[int, int | None], answers.Staleness] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def format(self) -> TableFormat:
        if self._format is None:
            self._format = open_format(
                self.name, catalog=self.catalog, warehouse=self.warehouse, s3=self.s3
            )
        return self._format

    @property
    def stats_root(self) -> str:
        if self.stats_root_override:
            return fs.normalize(self.stats_root_override)
        if looks_like_path(self.name) and not self.name.endswith(".metadata.json"):
            return fs.join(fs.normalize(self.name), layout.STATS_DIR_NAME)
        return fs.join(self.format.location, layout.STATS_DIR_NAME)

    @property
    def store(self) -> StatisticsStore:
        """The statistics root and the options its files are read and written with."""
        return StatisticsStore(self.stats_root, self.s3)

    # -- computing ----------------------------------------------------------
    def analyze(
        self,
        options: AnalyzeOptions | None = None,
        *,
        spark: SparkSession | None = None,  # a classic or a Connect SparkSession
        **overrides: object,
    ) -> answers.AnalyzeResult:
        """Compute and publish statistics for every partition (a Spark job), then reduce
        them to table level (unless ``table_level`` is False: partition files only).

        ``options`` (``lakestats.options.AnalyzeOptions``, default: every default) with
        ``overrides`` by field name: ``table.analyze(bins=200, exact=True)``. ``where``:
        the statistics of the rows the predicate keeps instead, over only the partitions
        that can match, stored as a derived entry (``lakestats.store.derived``) keyed by the
        normalized predicate and the snapshot; the table's own statistics are left as they
        are. ``from_sample``: estimate them from the stored sample (``sample.create``)
        instead, publishing a version of kind ``sampled`` for the sample's snapshot."""
        # everything that can be wrong with the request fails here, before a JVM starts
        options = AnalyzeOptions.build(options, overrides)
        from lakestats.compute.analyze import analyze, select_columns

        self.forget_table_state()  # re-read the table: it may have changed since it was opened
        table = self.format
        check_snapshot(table, options.snapshot_id)
        select_columns(table.schema(options.snapshot_id), options.columns)
        root = self.store
        self.check_root_placement()
        if options.from_sample:
            from lakestats.store.sample import load

            load(root, self.name)  # no sample: one line, before Spark starts
        with as_it_was(root):  # a failure leaves no directory it created
            root.probe_writable()
            from lakestats.compute.analyze.unchanged import without_spark

            done = without_spark(table, root, options)  # nothing changed: no Spark
            if done is not None:
                self._forget_reader()
                return done
            subset = None
            if options.where is not None:
                root, subset = self._derived_job(options.where, options.snapshot_id)
            if spark is None:
                from lakestats.compute.session import get_spark

                spark = get_spark()
            if options.from_sample:
                from lakestats.compute.sample.analyze import analyze_from_sample

                self._forget_reader()
                return analyze_from_sample(table, root, options, spark)
            try:
                result = analyze(table, root, options, spark, subset=subset)
            except LakestatsError as exc:  # workers without lakestats (Spark Connect)?
                from lakestats.compute.connect_workers import explain_failure

                explained = explain_failure(spark, exc)
                if explained is exc:
                    raise
                raise explained from exc
        self._forget_reader()
        return result

    def check_root_placement(self) -> None:
        """Refuse, before anything is written, a statistics root the table's own reader
        would take for table files (``TableFormat.statistics_root_refusal``)."""
        refusal = self.format.statistics_root_refusal(self.store.uri)
        if refusal is not None:
            raise UnsupportedFeatureError(refusal)

    def _derived_job(
        self, where: str, snapshot_id: int | None
    ) -> tuple[StatisticsStore, RowSubset]:
        """The store, row filter and partition pruning of ``analyze --where``."""
        from lakestats.compute.analyze import RowSubset
        from lakestats.query import predicates
        from lakestats.query.partition_filter import partitions_that_can_match
        from lakestats.stats.leaves import leaves_of
        from lakestats.store import derived

        table = self.format
        types = {leaf.name: leaf.type for leaf in leaves_of(table.schema(snapshot_id))}
        pred = predicates.parse(where, types)
        normalized = predicates.normalize(pred)
        snapshot = snapshot_id if snapshot_id is not None else table.current_snapshot_id()
        keep = None
        try:  # prune with the current statistics when they describe this snapshot
            reader = StatisticsReader(self.store)
            if reader.version.snapshot_id == snapshot and reader.version.partitions:
                entries = reader.version.partitions
                matched = {entries[i].name for i in partitions_that_can_match(where, reader)}
                known = {e.name: e.fingerprint for e in entries}

                def keep(name: str, fingerprint: str) -> bool:
                    # statistics of other data (changed since, or new) cannot prune it
                    return name in matched or known.get(name) != fingerprint

        except (StatisticsNotFoundError, ColumnNotFoundError):
            keep = None  # never analyzed, or a column without statistics: every partition
        root = derived.write_predicate(self.store, normalized)
        extra: dict[str, object] = {"derived_predicate": normalized, "derived_text": where}
        return root, RowSubset(row_filter=pred, keep_partition=keep, extra=extra)

    def derived_reader(
        self, where: str, snapshot_id: int | None = None
    ) -> StatisticsReader | None:
        """The derived statistics of ``where`` at the snapshot of the table's statistics
        version (``analyze --where``), or None when that predicate was not analyzed."""
        from lakestats.query import estimate_source, predicates
        from lakestats.store import derived

        reader = self._version_reader(snapshot_id)
        pred = predicates.parse(
            where, estimate_source.column_types(reader), _TableColumns(self, snapshot_id)
        )
        normalized = predicates.normalize(pred)
        return derived.find(self.store, normalized, reader.version.snapshot_id)

    def derived_columns(self, where: str, snapshot_id: int | None = None) -> list[str] | None:
        """The columns ``analyze --where`` computed for ``where``, or None when that
        predicate was not analyzed."""
        found = self.derived_reader(where, snapshot_id)
        return None if found is None else [c["name"] for c in found.columns]

    def _version_reader(self, snapshot_id: int | None) -> StatisticsReader:
        if snapshot_id is None:
            return self.reader()
        version = version_for_snapshot(self.store, self.format, snapshot_id)
        return StatisticsReader(self.store, version.version)

    @property
    def sample(self):  # noqa: ANN201 - lakestats.sample_ops.SampleOperations
        """The stored sample's operations: ``create``, ``refresh``, ``show``."""
        from lakestats.sample_ops import SampleOperations

        return SampleOperations(self)

    # -- looking up ---------------------------------------------------------
    def forget_table_state(self) -> None:
        """Re-read the table (snapshots, schema) on next use and keep the open statistics
        files: a long-running service's refresh when no newer statistics version exists
        but the table may have a new snapshot (``stale`` must see it)."""
        self._format = None
        self._staleness.clear()

    def _forget_reader(self) -> None:
        """Re-read the statistics on next use (after this handle wrote some): the open
        version and the resident estimators (``estimate``) with it."""
        self._reader = None
        self._residents.clear()
        self._staleness.clear()

    def reader(self) -> StatisticsReader:
        if self._reader is None:
            self._check_path()
            self._reader = StatisticsReader(self.store)
        return self._reader

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
        from lakestats.alerts import column_alerts, drift_alerts, staleness_alert
        from lakestats.store.verify import version_bytes

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

    def _reader_of_version(self, number: int) -> StatisticsReader:
        reader = self.reader()
        if reader.version.version == number:
            return reader
        return StatisticsReader(self.store, number)

    def check_columns(self, names: list[str] | None) -> None:
        """Unknown column names are a ``ColumnNotFoundError`` naming them, with the
        analyzed columns nearest in spelling."""
        reader = self.reader()
        for name in names or ():
            reader.column_index(name)

    def latest_version(self) -> int:
        """The number of the newest published statistics version (0: never analyzed);
        one listing, for a long-running reader to notice a new ``analyze``."""
        return manifest.latest_version_number(self.store)

    def table_statistics(
        self, snapshot_id: int | None = None, columns: list[str] | None = None
    ) -> answers.TableStatistics:
        """Table-level statistics for a snapshot (default: current), marked stale when they
        were computed for an earlier snapshot; columns changed since are left out."""
        version = version_for_snapshot(self.store, self.format, snapshot_id)
        reader = self.reader()  # its open files, when it reads that version
        if reader.version.version != version.version:
            reader = StatisticsReader(self.store, version.version)
        info = self._staleness_of(version, snapshot_id)
        keep = [c["name"] for c in version.columns if c["name"] not in info.columns_not_inherited]
        for name in columns or ():
            if name in info.columns_not_inherited:
                raise ColumnNotFoundError(
                    f"column {name!r} changed since snapshot {info.statistics_snapshot_id} "
                    "its statistics describe; analyze the table again"
                )
            if name not in keep:
                raise ColumnNotFoundError(
                    f"column {name!r} has no statistics; analyzed columns are: "
                    f"{', '.join(keep[:20])}{' …' if len(keep) > 20 else ''}"
                )
        wanted = list(columns or keep)
        rows = reader.column_statistics(None, wanted)
        sampled = version.kind == VersionKind.SAMPLED
        return answers.TableStatistics(
            staleness=info,
            version=version.version,
            row_count=version.merged_record_count,
            columns=tuple(answers.frozen_row(r) for r in rows),
            kind=VersionKind.SAMPLED if sampled else None,
            sample=version.extra.get("sample") if sampled else None,
            damaged_versions_skipped=tuple(version.skipped_versions or ()),
        )

    def _staleness_of(
        self, version: manifest.Version, snapshot_id: int | None
    ) -> answers.Staleness:
        """``staleness``, once per statistics version and target snapshot while this handle
        holds the table's state (``forget_table_state`` re-reads both)."""
        table = self.format
        target = snapshot_id if snapshot_id is not None else table.current_snapshot_id()
        key = (version.version, target)
        found = self._staleness.get(key)
        if found is None:
            found = self._staleness[key] = staleness(table, version, target)
        return found

    def partitions_containing(self, column: str, value: str) -> answers.PartitionsContaining:
        """Partitions holding ``value`` (given as text, parsed with the column's type)."""
        from lakestats.stats.literals import parse_value
        from lakestats.stats.type_codec import parse_type

        reader = self.reader()
        dtype = parse_type(reader.columns[reader.column_index(column)]["type"])
        holders = reader.partitions_containing(column, parse_value(value, column, dtype))
        return answers.PartitionsContaining(
            column=column,
            value=value,
            version=reader.version.version,
            partitions=tuple(answers.Holder(**h) for h in holders),
        )

    def _check_path(self) -> None:
        """A lookup of a table path that does not exist is an error, not empty statistics."""
        if looks_like_path(self.name) and not fs.exists(fs.normalize(self.name), self.s3):
            raise TableNotFoundError(f"no table at {self.name}: the path does not exist")

    def stats(
        self,
        columns: list[str],
        *,
        where: str | None = None,
        by_partition: bool = True,
        snapshot_id: int | None = None,
    ) -> answers.BatchStatistics:
        """Statistics of ``columns`` for the table and for every partition ``where`` can
        match, in one call: the per-partition part comes from the version's partition
        index (the row groups of those columns), never from one file per partition
        (``partitions`` only with ``by_partition``). Per partition and column: null, NaN
        and distinct counts, min, max, the frequency flags and the percentiles."""
        from lakestats.query.column_stats import column_stats

        reader = self._version_reader(snapshot_id)
        if where:
            found = self.derived_reader(where, snapshot_id)
            if found is not None:  # analyzed with --where: a lookup
                result = column_stats(found, columns, by_partition=by_partition)
                predicate = found.version.extra.get("derived_predicate")
                return _batch(result, derived_predicate=str(predicate))
        return _batch(
            column_stats(
                reader,
                columns,
                where=where,
                by_partition=by_partition,
                unanalyzed=_TableColumns(self, snapshot_id),
            )
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
        from lakestats.store import derived

        for entry in derived.entries(store):
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
            tuple(
                answers.Partition(
                    partition=entry.values,
                    name=entry.name,
                    path=entry.path,
                    row_count=entry.row_count,
                    files={
                        kind: layout.absolute(reader.root, path)
                        for kind, path in entry.files.items()
                    },
                )
                for entry in reader.version.partitions
            ),
        )

    def estimate(
        self,
        where: str,
        snapshot_id: int | None = None,
        table_level: bool = False,
        source: str = "index",
    ) -> answers.Estimate:
        """Rows ``where`` keeps, estimated per partition from the statistics and summed,
        with sound bounds (see README "Selectivity estimates"); ``table_level`` uses the
        table-level files as one partition instead. ``source``: ``"index"`` (the version's
        partition index, falling back to the files without one) or ``"files"`` (every
        partition's files). Never starts Spark.

        The handle is a resident estimator (``lakestats.query.resident``): what an
        estimate read (index rows, frequencies, histograms, table-level rows) stays in
        memory for the statistics version, the predicate is parsed once per text, and the
        answer is kept per normalized predicate, so repeated estimates answer from memory."""
        resident = self._resident(snapshot_id)
        return self._estimate_with(resident, where, snapshot_id, table_level, source)

    def estimate_many(
        self,
        wheres: Sequence[str],
        snapshot_id: int | None = None,
        table_level: bool = False,
        source: str = "index",
    ) -> answers.EstimateBatch:
        """``estimate`` of each of ``wheres`` against one statistics version (a planner's
        many selectivities in one call): the answers in order, each the one ``estimate``
        gives. An empty list or a bad predicate is an error naming it."""
        if isinstance(wheres, str) or not isinstance(wheres, Sequence):
            raise InvalidArgumentError("wheres: a list of predicates, e.g. ['a = 1', 'b > 2']")
        if not wheres:
            raise InvalidArgumentError("wheres: the list of predicates is empty")
        from lakestats.threads import collection_paused

        resident = self._resident(snapshot_id)
        for i, where in enumerate(wheres):
            if not isinstance(where, str):
                raise InvalidArgumentError(f"wheres[{i}]: a predicate is a string, not {where!r}")
        with collection_paused():  # no collection of the whole process inside one batch
            parsed = []
            for where in wheres:  # a bad one is reported below, in its turn
                with contextlib.suppress(LakestatsError):
                    parsed.append(resident.parse(where, _TableColumns(self, snapshot_id)))
            with contextlib.suppress(LakestatsError):  # likewise
                resident.prepare(parsed, table_level, source)  # new terms' scalars at once
            estimates = []
            for i, where in enumerate(wheres):
                try:
                    estimates.append(
                        self._estimate_with(resident, where, snapshot_id, table_level, source)
                    )
                except LakestatsError as exc:
                    raise type(exc)(f"predicate {i + 1} of {len(wheres)}: {exc}") from exc
        return answers.EstimateBatch(
            estimates=tuple(estimates), version=resident.version, snapshot_id=resident.snapshot_id
        )

    def _resident(self, snapshot_id: int | None) -> Resident:
        """The resident estimator of the version ``snapshot_id`` reads (default: the
        latest this handle reads), made on first use (see ``estimate``)."""
        from lakestats.query.resident import Resident

        reader = self._version_reader(snapshot_id)
        number = reader.version.version
        found = self._residents.get(number)
        if found is None:
            if len(self._residents) >= 2:  # the latest and one other
                self._residents.pop(next(iter(self._residents)))
            found = self._residents[number] = Resident(reader)
        return found

    def _estimate_with(
        self,
        resident: Resident,
        where: str,
        snapshot_id: int | None,
        table_level: bool,
        source: str,
    ) -> answers.Estimate:
        from lakestats.store import derived

        pred = resident.parse(where, _TableColumns(self, snapshot_id))
        normalized = resident.normalized(pred)
        def find() -> object:
            listed = resident.derived_keys(lambda: derived.keys(self.store))
            if derived.key_of(normalized) not in listed:
                return None
            return derived.find(self.store, normalized, resident.snapshot_id)

        found = resident.derived(normalized, find)
        if found is not None:  # analyzed with --where: the exact count
            return answers.Estimate.of(
                _derived_estimate(resident.reader, found), resident.version,
                resident.snapshot_id,
            )
        return resident.answer(
            (normalized, bool(table_level), source),
            lambda: answers.Estimate.of(
                resident.estimate(pred, table_level, source), resident.version,
                resident.snapshot_id,
            ),
        )

    def statistics(
        self,
        partition: str | dict | None = None,
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

    def partition(self, partition: str | dict) -> answers.Partition:
        """One partition of the latest version (an unknown one is a
        ``PartitionNotFoundError`` listing some that exist)."""
        reader = self.reader()
        entry = reader.partition(partition)
        return answers.Partition(
            partition=entry.values,
            name=entry.name,
            path=entry.path,
            row_count=entry.row_count,
            files={k: layout.absolute(reader.root, p) for k, p in entry.files.items()},
        )

    def partition_statistics(
        self, partition: str | dict, columns: list[str] | None = None
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
        partition: str | dict | None = None,
        top: int | None = None,
        *,
        version: int | None = None,
    ) -> answers.Frequencies:
        """The ``top`` most frequent values of ``column`` (all stored when None), of the
        table level or of ``partition`` (in the latest statistics version, or ``version``),
        with the flags that say how whole the list is."""
        reader = self.reader() if version is None else self._reader_of_version(version)
        entry = reader.partition(partition or None)
        [row] = reader.column_statistics(entry.name or None, [column])
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
        return answers.Quantile(column, p, ranks.quantile(self.reader(), column, p))

    def histogram(
        self,
        column: str,
        partition: str | dict | None = None,
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
        [row] = reader.column_statistics(entry.name or None, [column])
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


    # -- maintaining ----------------------------------------------------------
    def expire(
        self, retain_last: int = 1, *, orphan_age_minutes: int = 60, dry_run: bool = False
    ) -> answers.ExpireReport:
        """Remove the versions of snapshots the table no longer has (always keeping the
        ``retain_last`` newest), files no kept version references (older than
        ``orphan_age_minutes``) and derived entries of removed snapshots. Returns
        an ``ExpireReport``."""
        from lakestats.store import derived
        from lakestats.store.expire import apply_expiry, plan_expiry

        if retain_last < 1:
            raise InvalidArgumentError(
                "--retain-last must be at least 1 (the latest version stays)"
            )
        root = self.store
        check_root(root)
        snapshots = self.format.snapshots()
        live = {s.snapshot_id for s in snapshots} if snapshots else None
        plan = plan_expiry(root, live, retain_last, orphan_age_seconds=orphan_age_minutes * 60)
        if not dry_run:
            apply_expiry(root, plan)
            if plan.puffin_files and self.format.format_name == "iceberg":
                from lakestats.interop.puffin import remove

                for snapshot_id, path in plan.puffin_files:
                    remove(self.format, snapshot_id, path, self.s3)
        kept = {manifest.load_version(root, n).snapshot_id for n in plan.versions_kept}
        removed = derived.expire(root, kept, dry_run=dry_run)
        self._forget_reader()
        return answers.ExpireReport(
            dry_run=dry_run,
            versions_removed=tuple(plan.versions_removed),
            versions_kept=tuple(plan.versions_kept),
            files_removed=len(plan.files_removed),
            derived_removed=tuple(removed),
        )

    def export_paimon(self, version: int | None = None) -> dict[str, object]:
        """A statistics version (default: the latest) as Paimon's statistics JSON."""
        from lakestats.interop.paimon import paimon_statistics

        return paimon_statistics(self.store, version)


def _derived_estimate(reader: StatisticsReader, found: StatisticsReader) -> dict[str, object]:
    """``estimate``'s answer from derived statistics: exact row counts per partition."""
    total = sum(e.row_count for e in reader.version.partitions)
    rows_of = {e.name: e.row_count for e in reader.version.partitions}
    kept = sum(e.row_count for e in found.version.partitions)
    predicate = found.version.extra.get("derived_predicate")
    method = "derived statistics (analyze --where)"
    return {
        "predicate": predicate,
        "row_count": float(kept),
        "lower": kept,
        "upper": kept,
        "exact": True,
        "selectivity": kept / total if total else 0.0,
        "table_rows": total,
        "partitions": [
            {
                "partition": e.values,
                "name": e.name,
                "partition_rows": rows_of.get(e.name, e.row_count),
                "row_count": float(e.row_count),
                "lower": e.row_count,
                "upper": e.row_count,
                "exact": True,
                "method": method,
            }
            for e in found.version.partitions
            if e.row_count
        ],
        "detail": [
            {
                "predicate": predicate,
                "row_count": float(kept),
                "lower": kept,
                "upper": kept,
                "exact": True,
                "selectivity": kept / total if total else 0.0,
            }
        ],
        "derived": True,
        "derived_version": found.version.version,
        "version": reader.version.version,
        "snapshot_id": reader.version.snapshot_id,
    }


def _batch(
    result: dict[str, object], derived_predicate: str | None = None
) -> answers.BatchStatistics:
    table = result["table"]
    parts = result.get("partitions")
    return answers.BatchStatistics(
        row_count=table["row_count"],
        version=table["version"],
        snapshot_id=table["snapshot_id"],
        partitions_total=table["partitions"],
        partitions_matched=table["partitions_matched"],
        columns=tuple(answers.frozen_row(c) for c in table["columns"]),
        partitions=None
        if parts is None
        else tuple(
            answers.PartitionColumns(
                partition=p["partition"],
                name=p["name"],
                row_count=p["row_count"],
                columns=tuple(answers.frozen_row(c) for c in p["columns"]),
            )
            for p in parts
        ),
        derived_predicate=derived_predicate,
    )


class _TableColumns:
    """The table's column names, read only when asked (a predicate naming a column without
    statistics), so an estimate normally never opens the table's metadata."""

    def __init__(self, table: LakestatsTable, snapshot_id: int | None) -> None:
        self.table, self.snapshot_id = table, snapshot_id

    def __contains__(self, name: object) -> bool:
        from lakestats.stats.leaves import leaves_of

        try:
            schema = self.table.format.schema(self.snapshot_id)
        except LakestatsError:
            return False
        return name in {leaf.name for leaf in leaves_of(schema)}


def arrow_type(type_text: str) -> pa.DataType | str:
    """The Arrow type a statistics row's ``type`` names (a nested type stays its text)."""
    from lakestats.stats.type_codec import parse_type

    return parse_type(type_text)


def check_root(root: StatisticsStore) -> None:
    """A statistics root that is a file is a mistake to report, not an empty history; an
    unreachable store is one line (``StatisticsStore.check_directory``)."""
    root.check_directory()


def default_warehouse() -> str:
    """The embedded Iceberg catalog's warehouse (``$LAKESTATS_WAREHOUSE``, ./warehouse)."""
    from lakestats.formats.iceberg import default_warehouse as embedded

    return embedded()


def load_catalog(warehouse: str | None = None, catalog: str | None = None):  # noqa: ANN201
    """A pyiceberg catalog: ``catalog`` by name, else the embedded SQLite one."""
    from lakestats.formats.iceberg import load_catalog as load

    return load(catalog, warehouse=warehouse)


def open_table(
    table: str,
    stats_root: str | None = None,
    catalog: str | None = None,
    warehouse: str | None = None,
    s3: fs.S3Options | None = None,
) -> LakestatsTable:
    """A handle on ``table`` (catalog identifier or path); nothing is read yet."""
    return LakestatsTable(table, stats_root, catalog, warehouse, s3)


def sql(
    statement: str,
    *,
    catalog: str | None = None,
    warehouse: str | None = None,
    stats_root: str | None = None,
) -> answers.SqlResult:
    """Run ``ANALYZE TABLE t COMPUTE STATISTICS [NOSCAN | FOR COLUMNS a, b | FOR ALL
    COLUMNS]`` (``lakestats.compute.sql``): ``FOR`` analyzes those columns (Spark); without
    it, a counts-only version from metadata."""
    from lakestats.compute.sql import count_only, parse

    parsed = parse(statement)
    table = open_table(parsed.table, stats_root=stats_root, catalog=catalog, warehouse=warehouse)
    if not parsed.scan:
        return answers.SqlResult(**count_only(table.format, table.store, parsed.table))
    result = table.analyze(columns=parsed.columns)
    return answers.SqlResult(
        kind=VersionKind.FULL,
        version=result.version,
        snapshot_id=result.snapshot_id,
        message=f"analyzed {parsed.table}: statistics version {result.version}",
    )
