"""The table handle: a table, its statistics root and what this process holds open of it.

``LakestatsTable`` computes (``analyze``, ``sample``), estimates, reads table-level
statistics with how stale they are (``lakestats.versions``) and maintains the root
(``expire``); the plain lookups of one statistics version are ``StatisticsLookups``
(``lakestats.lookups``). ``lakestats.api`` re-exports it: import it from there. Lookups
never start Spark; only ``analyze`` and ``sample`` do, importing it when they run.

Over 400 lines because it is the handle's whole state and every step that changes it:
computing, estimating (with its resident estimators) and maintaining.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from lakestats import fs
from lakestats.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    LakestatsError,
    StatisticsNotFoundError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from lakestats.formats import TableFormat, looks_like_path
from lakestats.formats import open_table as open_format
from lakestats.lazy import LazyModule
from lakestats.lookups import StatisticsLookups, check_root
from lakestats.lookups import TableColumns as _TableColumns
from lakestats.options import AnalyzeOptions
from lakestats.store import layout, manifest
from lakestats.store.cleanup import as_it_was
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import VersionKind
from lakestats.store.reader import StatisticsReader
from lakestats.versions import check_snapshot, staleness, version_for_snapshot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakestats import answers
    from lakestats.compute.analyze import RowSubset
    from lakestats.formats.iceberg import IcebergTableFormat
    from lakestats.query.resident import Resident
    from lakestats.sample_ops import SampleOperations
else:  # the answers' dataclasses compile on first use: a lookup builds none of them
    answers = LazyModule("lakestats.answers")


@dataclass
class LakestatsTable(StatisticsLookups):
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
        instead, publishing a version of kind ``sampled`` for the sample's snapshot.
        ``column_groups`` not given: those the settings file declares for this table
        (``[column_groups]``, ``lakestats.config``)."""
        # everything that can be wrong with the request fails here, before a JVM starts
        options = AnalyzeOptions.build(options, overrides)
        if not options.column_groups:  # the settings file's groups of this table
            from lakestats.config import settings

            declared = settings().column_groups_of(self.name, self.format.identifier)
            if declared:
                options = AnalyzeOptions.build(options, {"column_groups": declared})
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
            from lakestats.compute.connect_workers import check_workers, explain_failure

            check_workers(spark)  # a Connect server's workers lack lakestats: one line
            if options.from_sample:
                from lakestats.compute.sample.analyze import analyze_from_sample

                self._forget_reader()
                return analyze_from_sample(table, root, options, spark)
            try:
                result = analyze(table, root, options, spark, subset=subset)
            except LakestatsError as exc:  # workers without lakestats (Spark Connect)?
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
        # the analyze job's modules and the predicate reader (sqlglot): only when asked
        from lakestats.compute.analyze import RowSubset
        from lakestats.query import predicate
        from lakestats.query.partition_filter import partitions_that_can_match
        from lakestats.stats.leaves import leaves_of
        from lakestats.store import derived

        table = self.format
        types = {leaf.name: leaf.type for leaf in leaves_of(table.schema(snapshot_id))}
        pred = predicate.parse(where, types)
        normalized = predicate.normalize(pred)
        snapshot = snapshot_id if snapshot_id is not None else table.current_snapshot_id()
        keep: Callable[[str, str], bool] | None = None
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
        from lakestats.query import predicate, sources  # sqlglot: only when asked
        from lakestats.store import derived

        reader = self._version_reader(snapshot_id)
        pred = predicate.parse(
            where, sources.column_types(reader), _TableColumns(self, snapshot_id)
        )
        normalized = predicate.normalize(pred)
        return derived.find(self.store, normalized, reader.version.snapshot_id)

    def derived_columns(self, where: str, snapshot_id: int | None = None) -> list[str] | None:
        """The columns ``analyze --where`` computed for ``where``, or None when that
        predicate was not analyzed."""
        found = self.derived_reader(where, snapshot_id)
        return None if found is None else [c["name"] for c in found.columns]

    def compared_columns(self, where: str, snapshot_id: int | None = None) -> list[str]:
        """The columns ``where`` compares with a value (every condition but ``IS [NOT]
        NULL``), sorted: what an estimate of it reveals about their values (the service
        withholds those of sensitive columns). A bad predicate raises as ``estimate``."""
        from lakestats.query import predicate  # sqlglot: only when asked

        pred = self._resident(snapshot_id).parse(where, _TableColumns(self, snapshot_id))

        def compared(node: predicate.Predicate) -> set[str]:
            if isinstance(node, predicate.And | predicate.Or):
                return {c for child in node.children for c in compared(child)}
            if isinstance(node, predicate.Not):
                return compared(node.child)
            return set() if isinstance(node, predicate.IsNull) else {node.column}

        return sorted(compared(pred))

    def _version_reader(self, snapshot_id: int | None) -> StatisticsReader:
        """The reader of the version ``snapshot_id`` reads: the handle's own when its version
        describes that snapshot (a planner asks about the current snapshot again and again;
        no manifest is read), else the one ``version_for_snapshot`` finds."""
        reader = self.reader()
        if snapshot_id is None or reader.version.snapshot_id == snapshot_id:
            return reader
        version = version_for_snapshot(self.store, self.format, snapshot_id)
        return self._reader_of_version(version.version)

    @property
    def sample(self) -> SampleOperations:
        """The stored sample's operations: ``create``, ``refresh``, ``show``."""
        from lakestats.sample_ops import SampleOperations  # Spark's steps: only when asked

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

    def _reader_of_version(self, number: int) -> StatisticsReader:
        reader = self.reader()
        if reader.version.version == number:
            return reader
        return StatisticsReader(self.store, number)

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
            sample=cast("Mapping[str, object] | None", version.extra.get("sample"))
            if sampled
            else None,
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
        from lakestats.query.column_stats import column_stats  # pyarrow.compute: a stats lookup

        reader = self._version_reader(snapshot_id)
        if where:
            found = self.derived_reader(where, snapshot_id)
            if found is not None:  # analyzed with --where: a lookup
                result = column_stats(found, columns, by_partition=by_partition)
                predicate = found.version.extra.get("derived_predicate")
                return answers.BatchStatistics.of(result, derived_predicate=str(predicate))
        return answers.BatchStatistics.of(
            column_stats(
                reader,
                columns,
                where=where,
                by_partition=by_partition,
                unanalyzed=_TableColumns(self, snapshot_id),
            )
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

    def group_distinct(
        self, columns: Sequence[str], snapshot_id: int | None = None
    ) -> answers.GroupDistinct:
        """Distinct value combinations of ``columns`` (``estimate --group-by``), with sound
        bounds: from a column group that holds them (``analyze --column-groups``; exact
        when its combinations were all listed), else bounded by each column's own distinct
        count. Never starts Spark."""
        from lakestats.query import column_groups

        if isinstance(columns, str):
            columns = [c.strip() for c in columns.split(",") if c.strip()]
        resident = self._resident(snapshot_id)
        reader = resident.reader
        groups = resident.groups()
        names = list(dict.fromkeys(columns))
        if not any(set(names) <= set(g.columns) for g in groups):
            column_groups.check_columns(names, [c["name"] for c in reader.version.columns])

        def single(wanted: list[str]) -> list[tuple[int, int, bool]]:
            known = {c["name"] for c in reader.version.columns}
            rows = {
                r["column"]: r
                for r in reader.column_statistics(None, [n for n in wanted if n in known])
            }
            out = []
            for n in wanted:
                row: dict[str, Any] = rows.get(n, {})
                count = int(row.get("distinct_count") or 0)
                exact = bool(row.get("distinct_count_exact")) or (count == 0 and n in rows)
                low = int(row.get("distinct_count_lower") or count)
                nulls = bool(row.get("null_count"))  # a null is a value of a combination
                high = int(row.get("distinct_count_upper") or count) + nulls
                out.append((max(low, 1), max(high, low, 1), exact))
            return out

        return column_groups.distinct(
            names, groups, single, reader.version.row_count, resident.version,
            resident.snapshot_id,
        )

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

        def find() -> StatisticsReader | None:
            listed = resident.derived_keys(lambda: derived.keys(self.store))
            if derived.key_of(normalized) not in listed:
                return None
            return derived.find(self.store, normalized, resident.snapshot_id)

        found = resident.derived(normalized, find)
        if isinstance(found, StatisticsReader):  # analyzed with --where: the exact count
            return resident.derived_answer(found)
        return resident.answer(
            (normalized, bool(table_level), source),
            lambda: resident.estimate(pred, table_level, source),
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
                    remove(cast("IcebergTableFormat", self.format), snapshot_id, path, self.s3)
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
        counted = cast("dict[str, Any]", count_only(table.format, table.store, parsed.table))
        return answers.SqlResult(**counted)
    result = table.analyze(columns=parsed.columns)
    return answers.SqlResult(
        kind=VersionKind.FULL,
        version=result.version,
        snapshot_id=result.snapshot_id,
        message=f"analyzed {parsed.table}: statistics version {result.version}",
    )
