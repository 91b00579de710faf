"""The analyze driver: plan the partitions that changed since the last version, run
the per-partition job (``stages``), reduce to table level (``compute/reduce``), make
it exact (``compute/exact``), publish (``publish``)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

from pyspark.sql import SparkSession

from lakestats import fs
from lakestats.answers import AnalyzeResult
from lakestats.compute.analyze.columns import (
    RowSubset,
    auto_leaves,
    column_records,
    group_leaves,
    select_columns,
)
from lakestats.compute.analyze.publish import publish, remove_failed_run, write_empty_table
from lakestats.compute.analyze.reuse import (
    THETA_MARK,
    previous_exact,
    reusable_entries,
    theta_sketches,
    with_puffin,
)
from lakestats.compute.analyze.stages import compute_partitions, plan_slices, raise_errors
from lakestats.compute.exact.job import exact_table, own_table_files
from lakestats.compute.progress import Clock, run_with_progress
from lakestats.compute.reduce import (
    ReduceJob,
    compute_and_reduce,
    fits_one_task,
    reduce_table,
    write_parts_only,
)
from lakestats.compute.reduce.groups import reduce_groups
from lakestats.compute.tasks import Job
from lakestats.formats.base import TableFormat
from lakestats.interop.puffin import theta_types
from lakestats.options import AnalyzeOptions
from lakestats.spark_errors import spark_call as _spark_call
from lakestats.stats.registry import registered_statistics
from lakestats.store import layout, manifest, verify
from lakestats.store.handle import StatisticsStore
from lakestats.store.partition_rows import rows_dropped


def analyze(
    table: TableFormat,
    stats_root: StatisticsStore,
    options: AnalyzeOptions,
    spark: SparkSession,
    *,
    incremental: bool = True,
    subset: RowSubset | None = None,
    hook: object | None = None,
    kept: bool = True,
) -> AnalyzeResult:
    """``_analyze`` as one run: a failure removes the files the run wrote (the root is
    left as it was, ``store/cleanup.py``). ``kept``: False for a version nothing builds on
    or looks up by partition (``ReduceJob.kept``)."""
    # executors use the driver's settings, not their env; a job's requests get longer
    store = StatisticsStore(
        stats_root.uri, (stats_root.s3 or fs.S3Options.from_env()).with_limits(analyze=True)
    )
    run = _Run(f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}", incremental,
               subset, hook, kept)
    try:
        return _analyze(table, store, options, spark, run)
    except BaseException:
        remove_failed_run(store, run.run_id)
        raise


def _lookup_files(run: _Run) -> tuple[str | None, str | None]:
    """The partition index and partition histogram parts a reduction wrote (none when the
    version is not kept)."""
    if not run.kept:
        return None, None
    return (layout.partition_index_file(run.run_id),
            layout.partition_histogram_parts_file(run.run_id))


@dataclass(frozen=True)
class _Run:
    run_id: str
    incremental: bool
    subset: RowSubset | None
    hook: object | None
    kept: bool


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
    groups = group_leaves(schema, options.declared_groups)
    if groups and read_columns is not None:  # a group's columns are read too
        tops = {leaf.path[0] for _, found in groups for leaf in found}
        read_columns = [*read_columns, *sorted(n for n in tops if n not in read_columns)]
    columns = column_records(table, snapshot, leaves)
    option_record = options.record()
    clock = Clock()
    plans = table.plan(snapshot)
    auto = auto_leaves(leaves, plans) if options.auto_groups else None
    if keep_partition is not None:
        plans = [
            plan
            for plan in plans
            if keep_partition(
                layout.partition_name_of(list(plan.key), plan.values), plan.fingerprint()
            )
        ]
    if row_filter is not None and read_columns is not None:
        from lakestats.query.predicate import columns_of

        top = {name.split(".")[0] for name in columns_of(row_filter)}  # type: ignore[arg-type]
        read_columns = [*read_columns, *sorted(n for n in top if n not in read_columns)]
    paths = [layout.partition_dir_of(list(plan.key), plan.values) for plan in plans]
    thetas = theta_sketches(table, options, subset)
    reusable, damaged, reduce_cache, earlier = (
        reusable_entries(stats_root, columns, options, thetas)
        if incremental
        else ({}, set(), {}, None)
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
        groups=groups,
        auto_leaves=auto,
        handoff=not (len(plans) == 1 and not plans[0].key),
        every_sketch=not run.kept,
    )
    plan_slices(job, table, [plans[i] for i in todo])
    for local, i in enumerate(todo):
        entries[i] = manifest.PartitionEntry(
            path=paths[i],
            name=layout.partition_name_of(list(plans[i].key), plans[i].values),
            values=plans[i].values,
            row_count=0,  # known once computed, below
            size_bytes=plans[i].size_bytes,
            files={
                **job.files(local),
                **({"values": layout.values_file(paths[i], run_id)} if options.exact else {}),
                **({"groups": layout.groups_file(paths[i], run_id)} if job.has_groups else {}),
            },
            fingerprint=plans[i].fingerprint(),
            run_id=run_id,
        )
    # by path: the version's partitions (and the reduction's positions) in one order
    # whatever order the table listed them in
    final = sorted((e for e in entries if e is not None), key=lambda e: e.path)
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
        options.reduce_cache_from,
        earlier if reusable else None,
        kept=run.kept,
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
        raise_errors([summary])
        rows = {summary["partition"]: summary["row_count"]}
        partition_index, partition_histogram_parts = _lookup_files(run)
        written += summary["bytes_written"] or 0
        clock.lap("partition computed and table level reduced")
    else:
        rows, written = compute_partitions(spark, job, progress)
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
            partition_index, partition_histogram_parts = _lookup_files(run)
            written += table_bytes
        elif table_level:
            table_files, table_bytes = write_empty_table(
                stats_root, leaves, options, statistics, run_id
            )
            written += table_bytes
        if final and not unpartitioned and partition_histogram_parts is None and run.kept:
            # no table level asked: the parts are still the rows' one home
            partition_histogram_parts, parts_bytes, reduce_cache = write_parts_only(
                reduce_job, run_id
            )
            written += parts_bytes
        clock.lap("table level reduced")
    if job.has_groups and table_files is not None and final and not unpartitioned:
        table_files, group_bytes = reduce_groups(
            stats_root, final, run_id, options.max_frequencies, table_files,
            declared=[",".join(names) for names, _ in groups],
        )
        written += group_bytes
        clock.lap("column groups reduced")
    exact_report: dict[str, object] = {}
    if options.exact and table_level and final:  # one partition too: its ranks
        exact_files = (  # the step rewrites them: not the partition's own
            own_table_files(stats_root, table_files, run_id) if unpartitioned else table_files
        )
        table_files, exact_bytes, exact_report = _spark_call(
            "exact table-level step failed",
            lambda: exact_table(
                spark,
                reduce_job,
                exact_files,
                run_id,
                previous=previous_exact(stats_root) if len(todo) < len(plans) else None,
                clock=clock,
            ),
        )
        written += exact_bytes
        if unpartitioned and todo and "values" in final[0].files:
            # its staged counts (this run's) served this step only: a new version of the
            # table recomputes its one partition, so no later step subtracts them
            stats_root.delete_file(stats_root.path(final[0].files.pop("values")))
        clock.lap("exact: histograms and statistics patched")
    new_files = [path for i in todo for path in (entries[i].files.values())]  # type: ignore[union-attr]
    table_level_files = [*(table_files or {}).values(), *reduce_cache.values()]
    sizes = verify.sizes_of(stats_root, new_files + table_level_files)
    for local, i in enumerate(todo):
        entry = entries[i]
        assert entry is not None
        entry.row_count = rows.get(local, 0)
        entry.file_sizes = {k: sizes[r] for k, r in entry.files.items() if r in sizes}
    if partition_histogram_parts is not None or not run.kept:
        # their rows are in the parts now (reused entries' too); a version not kept has
        # none past its run (the hand-off files go when it is published)
        for entry in final:
            entry.files = rows_dropped(entry.files)
            entry.file_sizes = rows_dropped(entry.file_sizes)
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
    puffin = with_puffin(table, options, subset) and bool(table_files and final)
    engines = options.table_level and subset is None and hook is None  # the table's own
    number = publish(table, stats_root, version, puffin_file=puffin, engine_files=engines)
    stats_root.delete_dir(layout.staging_dir(stats_root.uri, run_id))  # the hand-off files
    clock.lap(f"version {number} published, with what engines read of it")
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
