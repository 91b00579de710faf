"""The analyze job: one Spark task per partition (or per slice of a large one).

The driver plans partitions and slices, ships one ``Job`` to the executors inside a
``mapInArrow`` over ``spark.range(n, numPartitions=n)`` (one id per task), and collects
only small summaries. Executors read their slice, compute statistics and write files
themselves. Partitions split into slices get a second, equally small stage that merges
the slices' staged states. Only when every partition succeeded does the driver publish
the version manifest.

Over 400 lines on purpose: the driver of one job: plan, run, merge slices, publish; its
parts share the job's state.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from lakestats import fs
from lakestats.answers import AnalyzeResult
from lakestats.compute.exact.job import exact_table
from lakestats.compute.outcome import TaskOutcome
from lakestats.compute.progress import Clock, run_with_progress
from lakestats.compute.puffin import theta_types
from lakestats.compute.reduce import ReduceJob, compute_and_reduce, fits_one_task, reduce_table
from lakestats.compute.session import collect_small, result_schema
from lakestats.compute.tasks import SUMMARY_SCHEMA, Job, merge_partition, run_slice
from lakestats.errors import (
    ColumnNotFoundError,
    ConflictError,
    CorruptStatisticsError,
    LakestatsError,
    StatisticsNotFoundError,
)
from lakestats.formats.base import TableFormat
from lakestats.options import AnalyzeOptions
from lakestats.spark_errors import spark_call as _spark_call
from lakestats.stats.leaves import Leaf, leaves_of
from lakestats.stats.registry import registered_statistics
from lakestats.store import cleanup, layout, manifest, verify
from lakestats.store.handle import StatisticsStore
from lakestats.threads import prefetch


@dataclass(frozen=True)
class RowSubset:
    """``analyze --where`` (``lakestats.store.derived``): ``row_filter`` (a
    ``lakestats.query.predicates`` tree) keeps only the rows where it is TRUE, inside each
    task; ``keep_partition`` (partition name, plan fingerprint) skips partitions that cannot
    match; ``extra`` goes into the version."""

    row_filter: object
    keep_partition: Callable[[str, str], bool] | None = None
    extra: dict[str, object] = field(default_factory=dict)


SUMMARY_FIELDS = [
    pa.field("task_id", pa.int64()),
    pa.field("partition", pa.int64()),
    pa.field("kind", pa.string()),
    pa.field("row_count", pa.int64()),
    pa.field("bytes_written", pa.int64()),
    pa.field("seconds", pa.float64()),
    pa.field("error", pa.string()),
]


def _batches(rows: list[dict[str, object]], extra: list[pa.Field] | None = None) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=pa.schema(SUMMARY_FIELDS + (extra or [])))


def _stage_one(job: Job, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    extra_fields = getattr(job.hook, "extra_fields", None)
    for batch in batches:
        for task_id in batch.column(0).to_pylist():
            summary = run_slice(job, task_id)
            extra = summary.pop("extra", None)
            yield _batches([summary], extra_fields)
            if extra is not None and extra.num_rows:  # the hook's rows: summary columns null
                nulls = [pa.nulls(extra.num_rows, f.type) for f in SUMMARY_FIELDS]
                table = pa.Table.from_arrays(
                    nulls + list(extra.columns), schema=pa.schema(SUMMARY_FIELDS + extra_fields)
                )
                yield from table.to_batches()


def _stage_two(
    job: Job, counts: dict[int, int], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for partition in batch.column(0).to_pylist():
            yield _batches([merge_partition(job, partition, counts[partition])])


def select_columns(schema: pa.Schema, columns: tuple[str, ...] | None) -> tuple[list, list | None]:
    leaves = leaves_of(schema)
    if not columns:
        return leaves, None
    wanted = []
    for name in columns:
        matches = [leaf for leaf in leaves if leaf.name == name or leaf.path[0] == name]
        if not matches:
            raise ColumnNotFoundError(
                f"column {name!r} is not in the table; its columns are: "
                f"{', '.join(schema.names[:20])}{' …' if len(schema.names) > 20 else ''}"
            )
        wanted.extend(m for m in matches if m not in wanted)
    ordered = [leaf for leaf in leaves if leaf in wanted]
    top = [n for n in schema.names if any(leaf.path[0] == n for leaf in ordered)]
    return ordered, top


def column_records(
    table: TableFormat, snapshot: int | None, leaves: list[Leaf]
) -> list[dict[str, object]]:
    """The version's record of each analyzed leaf: name, the table's type and, where the
    format has them, its field id: the identity ``staleness`` compares with the table."""
    ids = table.field_ids(snapshot)
    native = table.native_types(snapshot)
    return [
        {
            "name": leaf.name,
            "type": str(leaf.type),
            **({"field_id": ids[leaf.name]} if leaf.name in ids else {}),
            **({"table_type": native[leaf.name]} if leaf.name in native else {}),
        }
        for leaf in leaves
    ]


def analyze(
    table: TableFormat,
    stats_root: StatisticsStore,
    options: AnalyzeOptions,
    spark: SparkSession,
    *,
    incremental: bool = True,
    subset: RowSubset | None = None,
    hook: object | None = None,
) -> AnalyzeResult:
    """``_analyze`` as one run: a failure removes the files the run wrote (the root is
    left as it was, ``store/cleanup.py``)."""
    # executors use the driver's settings, not their env; a job's requests get longer
    store = StatisticsStore(
        stats_root.uri, (stats_root.s3 or fs.S3Options.from_env()).with_limits(analyze=True)
    )
    run = _Run(f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}", incremental,
               subset, hook)
    try:
        return _analyze(table, store, options, spark, run)
    except BaseException:
        _remove_failed_run(store, run.run_id)
        raise


@dataclass(frozen=True)
class _Run:
    run_id: str
    incremental: bool
    subset: RowSubset | None
    hook: object | None


def _remove_failed_run(root: StatisticsStore, run_id: str) -> None:
    """What a failed run wrote, unless its version was published before the failure
    (then those files are the version's)."""
    with contextlib.suppress(LakestatsError):
        if manifest.load_version(root, None).run_id == run_id:
            return
    with contextlib.suppress(LakestatsError, OSError):
        cleanup.remove_run(root, run_id)


def _analyze(
    table: TableFormat,
    stats_root: StatisticsStore,
    options: AnalyzeOptions,
    spark: SparkSession,
    run: _Run,
) -> AnalyzeResult:
    """Analyze the partitions that changed since the last version, reduce, publish.

    ``options`` were validated when built; ``options.where`` and ``options.from_sample``
    are the facade's to turn into ``subset`` (derived statistics) or a sample's table.
    ``subset``: only some rows of some partitions (``RowSubset``). ``hook``: more work for
    each partition task on the rows it read (``compute/sample/tasks.SampleHook``; each
    partition is then one task)."""
    run_id, incremental, subset, hook = run.run_id, run.incremental, run.subset, run.hook
    snapshot_id, progress, table_level = options.snapshot_id, options.progress, options.table_level
    row_filter = subset.row_filter if subset is not None else None
    keep_partition = subset.keep_partition if subset is not None else None
    extra = subset.extra if subset is not None else None
    snapshot = snapshot_id if snapshot_id is not None else table.current_snapshot_id()
    schema = table.schema(snapshot)
    leaves, read_columns = select_columns(schema, options.columns)
    columns = column_records(table, snapshot, leaves)
    option_record = options.record()
    clock = Clock()
    plans = table.plan(snapshot)
    if keep_partition is not None:
        plans = [
            plan
            for plan in plans
            if keep_partition(
                layout.partition_name_of(list(plan.key), plan.values), plan.fingerprint()
            )
        ]
    if row_filter is not None and read_columns is not None:
        from lakestats.query.predicates import columns_of

        top = {name.split(".")[0] for name in columns_of(row_filter)}  # type: ignore[arg-type]
        read_columns = [*read_columns, *sorted(n for n in top if n not in read_columns)]
    paths = [layout.partition_dir_of(list(plan.key), plan.values) for plan in plans]
    thetas = _theta_sketches(table, options, subset)
    reusable, damaged, reduce_cache = (
        _reusable_entries(stats_root, columns, options, thetas)
        if incremental
        else ({}, set(), {})
    )
    statistics = registered_statistics()
    if statistics:
        reusable, reduce_cache = {}, {}  # user-defined statistics may have changed
    entries: list[manifest.PartitionEntry | None] = []
    todo: list[int] = []
    repaired = 0
    for i, plan in enumerate(plans):
        old = reusable.get((paths[i], plan.fingerprint()))
        entries.append(old)
        if old is None:
            todo.append(i)
            repaired += (paths[i], plan.fingerprint()) in damaged
    clock.lap(f"planned {len(plans)} partitions, {len(todo)} to compute")
    job = Job(
        reader=table.reader(snapshot),
        read_columns=read_columns,
        leaves=leaves,
        options=options,
        statistics=statistics,
        store=stats_root,
        run_id=run_id,
        slices=[],
        partition_paths=[paths[i] for i in todo],
        row_filter=row_filter,
        hook=hook,
        theta_types=theta_types(table, snapshot) if thetas else None,
    )
    _plan_slices(job, table, [plans[i] for i in todo])
    for i in todo:
        entries[i] = manifest.PartitionEntry(
            path=paths[i],
            name=layout.partition_name_of(list(plans[i].key), plans[i].values),
            values=plans[i].values,
            row_count=0,  # known once computed, below
            size_bytes=plans[i].size_bytes,
            files={
                **layout.partition_files(paths[i], run_id),
                **({"values": layout.values_file(paths[i], run_id)} if options.exact else {}),
            },
            fingerprint=plans[i].fingerprint(),
            run_id=run_id,
        )
    final = [e for e in entries if e is not None]
    table_files = None
    partition_index = None  # written by the table-level reduction, next to its files
    partition_histogram_parts = None  # so is this
    previous_cache, reduce_cache = reduce_cache, {}
    unpartitioned = len(final) == 1 and not plans[0].key  # the table is its one partition
    reduce_job = ReduceJob(
        stats_root,
        final,
        columns,
        options.bins,
        options.max_frequencies,
        statistics,
        previous_cache,
    )
    if (
        table_level
        and not unpartitioned
        and len(job.slices) == 1
        and hook is None
        and fits_one_task(len(final), len(columns))
    ):
        summary, table_files, written, reduce_cache = _spark_call(
            "analyze failed on Spark",
            lambda: run_with_progress(
                spark,
                "analyzing 1 partition and reducing to table level",
                1,
                lambda: compute_and_reduce(spark, job, reduce_job, run_id),
                progress,
            ),
        )
        _raise_errors([summary])
        rows = {summary["partition"]: summary["row_count"]}
        partition_index = layout.partition_index_file(run_id)
        partition_histogram_parts = layout.partition_histogram_parts_file(run_id)
        written += summary["bytes_written"] or 0
        clock.lap("partition computed and table level reduced")
    else:
        rows, written = _compute_partitions(spark, job, progress)
        clock.lap("partitions computed")
        if unpartitioned:
            table_files = dict(final[0].files)
        elif final and table_level:
            table_files, table_bytes, reduce_cache = _spark_call(
                "table-level reduction failed",
                lambda: run_with_progress(
                    spark,
                    "reducing to table level",
                    1,
                    lambda: reduce_table(spark, reduce_job, run_id),
                    progress,
                ),
            )
            partition_index = layout.partition_index_file(run_id)
            partition_histogram_parts = layout.partition_histogram_parts_file(run_id)
            written += table_bytes
        elif table_level:
            table_files, table_bytes = _write_empty_table(
                stats_root, leaves, options, statistics, run_id
            )
            written += table_bytes
        clock.lap("table level reduced")
    exact_report: dict[str, object] = {}
    if options.exact and table_level and final and not unpartitioned:
        table_files, exact_bytes, exact_report = _spark_call(
            "exact table-level step failed",
            lambda: exact_table(
                spark,
                reduce_job,
                table_files,
                run_id,
                previous=_previous_exact(stats_root) if len(todo) < len(plans) else None,
            ),
        )
        written += exact_bytes
        clock.lap("table level made exact")
    new_files = [path for i in todo for path in (entries[i].files.values())]  # type: ignore[union-attr]
    table_level_files = [*(table_files or {}).values(), *reduce_cache.values()]
    sizes = verify.sizes_of(stats_root, new_files + table_level_files)
    for local, i in enumerate(todo):
        entry = entries[i]
        assert entry is not None
        entry.row_count = rows.get(local, 0)
        entry.file_sizes = {k: sizes[r] for k, r in entry.files.items() if r in sizes}
    timestamps = {s.snapshot_id: s.timestamp_ms for s in table.snapshots()}
    version = manifest.Version(
        version=0,
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        table=manifest.TableRef(table.format_name, table.identifier, table.location),
        snapshot_id=snapshot,
        schema_id=table.schema_id(snapshot),
        options=option_record,
        columns=columns,
        partitions=final,
        run_id=run_id,
        partitions_computed=len(todo),
        partitions_reused=len(plans) - len(todo),
        table_files=table_files,
        partition_index=partition_index,
        partition_histogram_parts=partition_histogram_parts,
        merged_record_count=sum(e.row_count for e in final),
        merged_record_size=sum(e.size_bytes for e in final),
        snapshot_timestamp_ms=timestamps.get(snapshot) if snapshot is not None else None,
        extra={
            "custom_statistics": [s.name for s in statistics],
            **({"reduce_cache": reduce_cache} if reduce_cache else {}),
            "file_sizes": {r: sizes[r] for r in table_level_files if r in sizes},
            **({"partitions_repaired": repaired} if repaired else {}),
            **(extra or {}),
            **({"exact": exact_report} if exact_report else {}),
            **({THETA_MARK: True} if thetas else {}),
        },
    )
    if _with_puffin(table, options, subset) and table_files and final:
        version.extra["puffin"] = publish_puffin(table, stats_root, version)
        clock.lap("Puffin statistics committed to the Iceberg table")
    number = publish_version(stats_root, version)
    clock.lap(f"version {number} published")
    return AnalyzeResult(
        number,
        snapshot,
        len(todo),
        len(plans) - len(todo),
        version.row_count,
        written,
        stats_root.uri,
        repaired,
    )


def _theta_sketches(
    table: TableFormat, options: AnalyzeOptions, subset: RowSubset | None
) -> bool:
    """Whether partitions store theta sketches for an Iceberg Puffin file (the whole
    table's partitions, not a ``--where`` subset's; with --partitions-only too, so a later
    table-level analyze reuses them)."""
    return options.puffin and table.format_name == "iceberg" and subset is None


def _with_puffin(table: TableFormat, options: AnalyzeOptions, subset: RowSubset | None) -> bool:
    """Whether this analyze publishes an Iceberg Puffin file (table level only)."""
    return _theta_sketches(table, options, subset) and options.table_level


def publish_puffin(
    table: TableFormat, root: StatisticsStore, version: manifest.Version
) -> dict[str, object]:
    """The version's Puffin file written and committed (``compute/puffin.py``); what the
    version records of it."""
    from lakestats.compute import puffin

    record = puffin.publish(
        table, root.uri, version, root.s3, lambda f, items: prefetch(f, list(items))
    )
    return record.to_json()


def _write_empty_table(
    root: StatisticsStore,
    leaves: list,
    options: AnalyzeOptions,
    statistics: list,
    run_id: str,
) -> tuple[dict[str, str], int]:
    """Table-level files of a table without data files (every column: zero rows), so an
    empty table reads like any other instead of failing lookups."""
    from lakestats.stats.accumulator import ColumnAccumulator
    from lakestats.store import writer

    results = [
        ColumnAccumulator(leaf, list(statistics)).finalize(options.bins, options.max_frequencies)
        for leaf in leaves
    ]
    files = layout.table_files(run_id)
    uris = {k: root.path(v) for k, v in files.items()}
    custom = [(s.name, s.result_type) for s in statistics]
    return files, writer.write_partition(results, custom, options.bins, uris, root)


THETA_MARK = "theta_sketches"
"""``Version.extra`` key: its partitions store theta sketches (``compute/puffin.py``)."""


def _reusable_entries(
    root: StatisticsStore,
    columns: list[dict[str, str]],
    options: AnalyzeOptions,
    thetas: bool = False,
) -> tuple[dict[tuple[str, str], manifest.PartitionEntry], set[tuple[str, str]], dict[str, str]]:
    """Partition entries of the latest readable version that are still valid for this
    analyze and whose files are intact (``store/verify.py``), the keys of those whose files
    are missing or damaged (recomputed, reported as repaired), and the table-level
    reduction cache entries still present (``compute/reduce/cache.GroupCache``)."""
    try:
        previous = manifest.load_version(root, None)
    except (StatisticsNotFoundError, CorruptStatisticsError):
        return {}, set(), {}  # nothing (readable) to reuse: compute everything
    earlier = previous.analyze_options
    same = earlier is not None and (
        earlier.partition_stats_key() == options.partition_stats_key()
    )  # fields that do not change a partition's files (the slice size) may differ
    if previous.kind != "full" or previous.columns != columns or not same:
        return {}, set(), {}
    if thetas != bool(previous.extra.get(THETA_MARK)):  # with or without theta sketches
        return {}, set(), {}
    sizes = verify.stored_sizes(root)
    entries, damaged = {}, set()
    for entry in previous.partitions:
        if verify.intact(entry.files, entry.file_sizes, sizes):
            if not entry.file_sizes:  # a version from before sizes were recorded
                entry.file_sizes = {k: sizes[r] for k, r in entry.files.items()}
            entries[(entry.path, entry.fingerprint)] = entry
        else:
            damaged.add((entry.path, entry.fingerprint))
    recorded = dict(previous.extra.get("file_sizes", {}))
    cache = {
        key: relative
        for key, relative in dict(previous.extra.get("reduce_cache", {})).items()
        if verify.intact({key: relative}, recorded, sizes, parquet=False)
    }
    return entries, damaged, cache


def _previous_exact(root: StatisticsStore) -> manifest.Version | None:
    """The latest version when it has exact ranks an incremental exact step can update."""
    previous = manifest.load_version(root, None)
    return previous if (previous.table_files or {}).get("ranks") else None


def publish_version(root: StatisticsStore, version: manifest.Version) -> int:
    """Publish; when another analyze won the race, publish after it unless it published
    statistics of the same snapshot (then stop with a clear conflict)."""

    def same_snapshot(winner: manifest.Version) -> None:
        if winner.snapshot_id == version.snapshot_id and winner.run_id != version.run_id:
            raise ConflictError(
                f"another analyze published statistics version {winner.version} for the "
                "same snapshot while this one ran; its result stands (nothing to do)"
            )

    return manifest.publish(root, version, on_conflict=same_snapshot)


def _plan_slices(job: Job, table: TableFormat, plans: list) -> None:
    """The tasks of the per-partition job of ``plans`` (``job.partition_paths``' order):
    their slices, biggest first (so the last wave of tasks is short)."""
    slices, slice_partition = [], []
    for index, plan in enumerate(plans):
        for part in table.slices(plan, job.options.max_slice_bytes):
            slices.append(part)
            slice_partition.append(index)
    order = sorted(range(len(slices)), key=lambda i: -sum(f.size_bytes for f in slices[i].files))
    job.slices = [slices[i] for i in order]
    job.slice_partition = [slice_partition[i] for i in order]


def _compute_partitions(
    spark: SparkSession, job: Job, progress: bool
) -> tuple[dict[int, int], int]:
    """Run the per-partition Spark job; row counts by plan index and bytes written."""
    if not job.slices:
        return {}, 0
    try:
        summaries = _spark_call(
            "analyze failed on Spark", lambda: _partition_stages(spark, job, progress)
        )
    finally:
        job.store.delete_dir(layout.staging_dir(job.store.uri, job.run_id))
    rows: dict[int, int] = {}
    written = 0
    for summary in summaries:
        if summary["kind"] == TaskOutcome.DONE:
            rows[summary["partition"]] = summary["row_count"]
        written += summary["bytes_written"] or 0
    return rows, written


def _partition_stages(spark: SparkSession, job: Job, progress: bool) -> list:
    """Stage one (every slice), then stage two (merging the slices of split partitions)."""
    slices = job.slices
    hook = job.hook
    tasks = min(getattr(hook, "tasks", None) or len(slices), len(slices))  # slices per task
    frame = spark.range(0, len(slices), 1, numPartitions=tasks)
    schema = SUMMARY_SCHEMA if hook is None else f"{SUMMARY_SCHEMA}, {hook.extra_schema}"  # type: ignore[attr-defined]
    stage = frame.mapInArrow(functools.partial(_stage_one, job), result_schema(schema))
    if hook is None:
        summaries = run_with_progress(
            spark, "analyzing partitions", len(slices), lambda: collect_small(stage), progress
        )
    else:
        summaries = run_with_progress(
            spark, "analyzing partitions", len(slices),
            lambda: _with_hook(stage, hook, [leaf.name for leaf in job.leaves]), progress,
        )
    _raise_errors(summaries)
    counts: dict[int, int] = {}
    for part, partition in zip(slices, job.slice_partition, strict=True):
        counts[partition] = part.count
    multi = sorted(p for p, c in counts.items() if c > 1)
    if not multi:
        return summaries
    frame = spark.createDataFrame([(p,) for p in multi], "partition long").repartition(len(multi))
    stage = frame.mapInArrow(
        functools.partial(_stage_two, job, counts), result_schema(SUMMARY_SCHEMA)
    )
    merged = run_with_progress(
        spark, "merging slices", len(multi), lambda: collect_small(stage), progress
    )
    _raise_errors(merged)
    return [s for s in summaries if s["kind"] == TaskOutcome.DONE] + merged


def _with_hook(stage: DataFrame, hook: object, names: list[str]) -> list[dict]:
    """Run the tasks once; the hook aggregates its rows in the same Spark job
    (``SampleHook.aggregate``) and hands back the tasks' summaries."""
    keys = [f.name for f in SUMMARY_FIELDS]
    return hook.aggregate(stage, keys, names)  # type: ignore[attr-defined]


def _raise_errors(summaries: list) -> None:
    errors = [s["error"] for s in summaries if s["kind"] == TaskOutcome.ERROR]
    if errors:
        more = f" (and {len(errors) - 1} more partitions failed)" if len(errors) > 1 else ""
        raise LakestatsError(f"{errors[0]}{more}")

