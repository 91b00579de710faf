"""``sample create`` and ``sample refresh``: the Spark side of stored samples.

The driver plans the table's partitions, allocates the sample's rows to them (exact
proportional allocation, ``sample.select.allocate``; a count job first when the format's
metadata does not know a partition's rows), and runs one ``mapInArrow`` task per partition
(``sample.job.run_sample_task``), which writes its partition's sample and reserve files.
Then the sample is written as a sibling table of the table's format
(``formats/sample_sibling.py``; after a refresh only the partitions whose sample changed)
and only then is the manifest replaced, so a failed run leaves the previous sample as it was.

Refresh is file-granular: the snapshot's read units (``TableFormat.sample_units``: data
files with the deletes that apply to them) are compared with the ones the manifest
recorded; a partition with new or changed units gets a task that reads only those and
merges them into the stored candidates (rows of changed or removed units leave), a new
partition or one rewritten wholesale is resampled, untouched partitions keep their files,
dropped ones are removed. A row's hash depends only on its unit and position, so the result
is the sample a fresh ``create`` at the sample's rate draws.

Over 400 lines because create and refresh share the publish step (sibling table, manifest,
rollback on failure) and the run's cleanup; each stage already lives in its own module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import json
import uuid
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import SparkSession

from lakestats import fs
from lakestats.answers import SampleResult
from lakestats.compute.progress import Clock
from lakestats.compute.sample.bounds import footer_rows, usable
from lakestats.compute.sample.job import (
    SAMPLE_SUMMARY_SCHEMA,
    SUMMARY_ARROW,
    SampleJob,
    SampleTask,
    run_sample_task,
)
from lakestats.compute.sample.select import allocate, size_for_fraction
from lakestats.compute.session import collect_small, result_schema
from lakestats.errors import InvalidArgumentError, LakestatsError
from lakestats.formats.base import PartitionPlan, SampleUnit, TableFormat
from lakestats.formats.sample_sibling import restored_on_failure, write_sibling
from lakestats.options import SampleOptions
from lakestats.spark_errors import translated
from lakestats.stats.arrays import record_batch
from lakestats.store import cleanup, layout
from lakestats.store import sample as store
from lakestats.store.handle import StatisticsStore


def _tasks(job: SampleJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for task in batch.column(0).to_pylist():
            yield record_batch([run_sample_task(job, task)], SUMMARY_ARROW)


def _run(spark: SparkSession, job: SampleJob) -> list[dict]:
    n = len(job.tasks) or len(job.slices)
    if n == 0:
        return []
    frame = spark.range(0, n, 1, numPartitions=n)
    stage = frame.mapInArrow(functools.partial(_tasks, job), result_schema(SAMPLE_SUMMARY_SCHEMA))
    with translated("sampling failed on Spark"):
        rows = collect_small(stage)
    errors = [r["error"] for r in rows if r["error"]]
    if errors:
        raise LakestatsError(errors[0])
    return sorted(rows, key=lambda r: r["task"])


def _job(
    table: TableFormat,
    snapshot: int | None,
    plans: list[PartitionPlan],
    options: SampleOptions,
    output: tuple[StatisticsStore | None, str] = (None, ""),
    tasks: list[SampleTask] | None = None,
    rate: float | None = None,
) -> SampleJob:
    """The job over ``plans``: sampling ``tasks`` (written under ``output``: the sample
    directory and the run id), or without tasks counting each plan's rows."""
    sample_dir, run_id = output
    names = table.schema(snapshot).names
    return SampleJob(
        reader=table.reader(snapshot),
        slices=[table.slices(p, options.max_slice_bytes) for p in plans] if not tasks else [],
        partition_paths=[layout.partition_dir_of(list(p.key), p.values) for p in plans],
        targets=[] if tasks else [None] * len(plans),
        seed=options.seed,
        sample=sample_dir,
        run_id=run_id,
        count_columns=names[:1],
        table_location=table.location,
        tasks=tasks or [],
        rate=rate,
    )


def _populations(
    spark: SparkSession, table: TableFormat, snapshot: int | None, plans: list[PartitionPlan],
    s3: fs.S3Options | None,
) -> tuple[list[int], list[str], int]:
    """Rows per partition: from the plan where the format knows them, else counted (one
    read of one column of those partitions). Also where each count came from."""
    counts = [p.row_count or 0 for p in plans]
    origin = ["metadata"] * len(plans)
    for i, plan in enumerate(plans):
        if plan.row_count is None and usable(table.format_name, plan):
            counts[i] = footer_rows(plan, s3)  # Parquet footers: no data read
            plans[i] = dataclasses.replace(plan, row_count=counts[i])
    unknown = [i for i, p in enumerate(plans) if p.row_count is None]
    bytes_read = 0
    if unknown:
        job = _job(table, snapshot, [plans[i] for i in unknown], SampleOptions())
        for i, row in zip(unknown, _run(spark, job), strict=True):
            counts[i], origin[i] = row["population"], "read"
            bytes_read += row["bytes_read"]
    return counts, origin, bytes_read


def create(
    table: TableFormat,
    stats_root: StatisticsStore,
    spark: SparkSession,
    options: SampleOptions,
) -> SampleResult:
    """Draw a new sample of the table's current snapshot and replace the stored one; a
    failure removes the files this run wrote."""
    run_id = _run_id()
    try:
        return _create(table, stats_root, spark, options, run_id)
    except BaseException:
        _remove_failed_run(stats_root, run_id, table.identifier)
        raise


def _create(
    table: TableFormat,
    stats_root: StatisticsStore,
    spark: SparkSession,
    options: SampleOptions,
    run_id: str,
) -> SampleResult:
    rows, fraction = options.rows, options.drawn_fraction
    snapshot = table.current_snapshot_id()
    plans = _plans(table, snapshot)
    if sum(p.row_count or 0 for p in plans) == 0 and all(p.row_count is not None for p in plans):
        raise InvalidArgumentError(f"{table.identifier} has no rows: there is nothing to sample")
    # the table's footers, read with the statistics root's options (one object store)
    populations, origin, counted = _populations(spark, table, snapshot, plans, stats_root.s3)
    total = sum(populations)
    if total == 0:
        raise InvalidArgumentError(f"{table.identifier} has no rows: there is nothing to sample")
    if fraction is not None:
        targets = [size_for_fraction(fraction, n) for n in populations]
    else:
        targets = allocate(populations, rows or 0)
    directory = stats_root.child(store.SAMPLE_DIR)
    tasks = [
        SampleTask(
            path=layout.partition_dir_of(list(plan.key), plan.values),
            units=(units := table.sample_units(plan, snapshot)),
            read=[u.key for u in units],
            target=target,
        )
        for plan, target in zip(plans, targets, strict=True)
    ]
    summaries = _run(spark, _job(table, snapshot, plans, options, (directory, run_id), tasks))
    entries = [
        _entry(plan, summary, origin[i]) for i, (plan, summary) in enumerate(
            zip(plans, summaries, strict=True)
        )
    ]
    sampled = sum(e.sample_rows for e in entries)
    manifest = store.SampleManifest(
        table={"format": table.format_name, "identifier": table.identifier,
               "location": table.location},
        snapshot_id=snapshot,
        snapshot_timestamp_ms=_timestamp(table, snapshot),
        seed=options.seed,
        rows=rows,
        fraction=fraction,
        rate=fraction if fraction is not None else sampled / total,
        partitions=entries,
        run_id=run_id,
        created_at=store.now(),
        schema_columns=table.schema(snapshot).names,
    )
    _publish(table, stats_root, manifest, _previous_sibling(stats_root, table))
    return SampleResult(
        snapshot, total, sampled, len(plans), 0, 0,
        counted + sum(s["bytes_read"] for s in summaries),
        files_read=sum(s["files_read"] for s in summaries),
        partitions_resampled=len(plans),
    )


def _previous_sibling(
    stats_root: StatisticsStore, table: TableFormat
) -> dict | None:
    """The sample table a re-created sample replaces (it keeps the table's history)."""
    try:
        found = store.load(stats_root, table.identifier, check_files=False)
        return found.sibling
    except LakestatsError:
        return None


def _publish(
    table: TableFormat,
    stats_root: StatisticsStore,
    manifest: store.SampleManifest,
    previous: dict | None,
    before: store.SampleManifest | None = None,
    clock: Clock | None = None,
) -> None:
    """Write the sibling table (the table's own format), then the manifest (the sample
    changes in that step), then remove the files the manifest no longer names. After a
    refresh (``before``: the sample it started from) only the partitions it updated,
    resampled or removed are rewritten in the sibling; one that changed none leaves the
    sibling as it is."""
    changed = None
    if before is not None and manifest.changes is not None:
        paths = {
            *manifest.changes["partitions_resampled"],
            *manifest.changes["partitions_updated"],
            *manifest.changes["partitions_removed"],
        }
        values = {p.path: p.values for p in (*before.partitions, *manifest.partitions)}
        changed = {path: values[path] for path in sorted(paths)}
    clock = clock or Clock()
    with restored_on_failure(table, stats_root):  # the manifest must fit
        if previous is None or changed is None or changed:
            manifest.sibling = write_sibling(table, stats_root, manifest, previous, changed)
        clock.lap("sample table written")
        store.save(stats_root, manifest)
    store.delete_unreferenced(stats_root, manifest)
    clock.lap("manifest saved, unreferenced files removed")


def refresh(
    table: TableFormat,
    stats_root: StatisticsStore,
    spark: SparkSession,
    sample: store.SampleManifest | None = None,
) -> SampleResult:
    """``_refresh``; a failure removes the files this run wrote."""
    run_id = _run_id()
    try:
        return _refresh(table, stats_root, spark, sample, run_id)
    except BaseException:
        _remove_failed_run(stats_root, run_id, table.identifier)
        raise


def _refresh(
    table: TableFormat,
    stats_root: StatisticsStore,
    spark: SparkSession,
    sample: store.SampleManifest | None,
    run_id: str,
) -> SampleResult:
    """Bring the stored sample (``sample``: its manifest, when the caller loaded it) to the
    table's current snapshot, reading only the units (data files, file groups) that changed
    since the sample's snapshot; a sample whose snapshot was expired is redrawn."""
    clock = Clock()
    old = sample or store.load(stats_root, table.identifier)
    snapshots = {s.snapshot_id for s in table.snapshots()}
    if old.snapshot_id is not None and snapshots and old.snapshot_id not in snapshots:
        drawn = SampleOptions(rows=old.rows, fraction=old.fraction, seed=old.seed)
        result = create(table, stats_root, spark, drawn)
        return dataclasses.replace(
            result,
            resampled_because=f"the sample's snapshot {old.snapshot_id} was expired "
            "from the table; resampled the current snapshot",
        )
    snapshot = table.current_snapshot_id()
    clock.lap("refresh: manifest and snapshots")
    plans = _plans(table, snapshot)
    clock.lap("refresh: plan")
    known = {p.path: p for p in old.partitions}
    paths = [layout.partition_dir_of(list(p.key), p.values) for p in plans]
    log = table.changed_files(old.snapshot_id, snapshot) if old.snapshot_id is not None else None
    log_names = None if log is None else {name.rsplit("/", 1)[-1] for name in log}
    tasks, work = [], []
    for i, plan in enumerate(plans):
        before = known.get(paths[i])
        if log_names is not None and before is not None and before.units and not _touched(
            plan, before, log_names
        ):
            continue  # the change log names none of its files: nothing to read or plan
        task = _refresh_task(paths[i], table.sample_units(plan, snapshot), before)
        if task is not None:
            tasks.append(task)
            work.append(i)
    clock.lap("refresh: change log and read units")
    output = (stats_root.child(store.SAMPLE_DIR), run_id)
    job = _job(table, snapshot, [plans[i] for i in work], SampleOptions(seed=old.seed),
               output, tasks, old.rate)
    summaries = _run(spark, job) if tasks else []
    longest = max((s["seconds"] for s in summaries), default=0.0)
    clock.lap(f"refresh: Spark job ({len(tasks)} tasks, the longest {longest:.3f} s)")
    fresh = {
        paths[i]: _entry(plans[i], summary, "read" if plans[i].row_count is None else "metadata",
                         known.get(paths[i]), task.gone)
        for i, task, summary in zip(work, tasks, summaries, strict=True)
    }
    entries = [fresh.get(path) or known[path] for path in paths]
    removed = sum(1 for path in known if path not in set(paths))
    manifest = store.SampleManifest(
        **{
            **old.__dict__,
            "snapshot_id": snapshot,
            "snapshot_timestamp_ms": _timestamp(table, snapshot),
            "partitions": entries,
            "run_id": run_id,
            "refreshed_at": store.now(),
            "schema_columns": table.schema(snapshot).names,
            "changes": {
                "from_snapshot": old.snapshot_id,
                # files the table's change log lists (None: the file lists were compared)
                "change_log_files": None if log is None else len(log),
                "files_read": sum(s["files_read"] for s in summaries),
                "bytes_read": sum(s["bytes_read"] for s in summaries),
                "partitions_resampled": sorted(
                    paths[i] for i, s in zip(work, summaries, strict=True) if s["resampled"]
                ),
                "partitions_updated": sorted(
                    paths[i] for i, s in zip(work, summaries, strict=True) if not s["resampled"]
                ),
                "partitions_removed": sorted(p for p in known if p not in set(paths)),
            },
        }
    )
    _publish(table, stats_root, manifest, old.sibling, old, clock)
    return SampleResult(
        snapshot,
        manifest.population,
        manifest.sample_rows,
        len(work),
        len(plans) - len(work),
        removed,
        sum(s["bytes_read"] for s in summaries),
        files_read=sum(s["files_read"] for s in summaries),
        partitions_resampled=sum(1 for s in summaries if s["resampled"]),
        state_bytes_read=sum(s["state_bytes_read"] for s in summaries),
    )


def _touched(plan: PartitionPlan, before: store.SamplePartition, names_in_log: set[str]) -> bool:
    """Whether the change log names a file of the partition, now or when it was sampled.
    Files are compared by name (the last path segment; data files' names are unique in
    the formats that have a log), so a clash can only make a partition look touched."""
    names = {name.rsplit("/", 1)[-1] for key in before.units for name in key.split(",")}
    names |= {f.path.rsplit("/", 1)[-1] for f in (*plan.data_files, *plan.delete_files)}
    return bool(names & names_in_log)


def _refresh_task(
    path: str, units: list[SampleUnit], old: store.SamplePartition | None
) -> SampleTask | None:
    """What refresh does with one partition: nothing (no unit changed), a task that reads
    the new or changed units into the stored candidates, or a resample (a new partition,
    one rewritten wholesale, or a sample drawn before units were recorded)."""
    everything = SampleTask(path=path, units=units, read=[u.key for u in units])
    if old is None or not old.units:
        return everything
    now = {u.key: u.fingerprint for u in units}
    gone = frozenset(k for k, (fingerprint, _) in old.units.items() if now.get(k) != fingerprint)
    read = [u.key for u in units if old.units.get(u.key, [None])[0] != u.fingerprint]
    if not gone and not read:
        return None
    if len(gone) == len(old.units):
        return everything  # rewritten wholesale: nothing of the old sample survives
    return SampleTask(
        path=path,
        units=units,
        read=read,
        state=[f for f in (old.file, old.reserve) if f],
        gone=gone,
        threshold=old.threshold,
        known_rows=sum(rows for k, (_, rows) in old.units.items() if k not in gone),
    )


def _entry(
    plan: PartitionPlan,
    summary: dict,
    origin: str,
    old: store.SamplePartition | None = None,
    gone: frozenset[str] = frozenset(),
) -> store.SamplePartition:
    units = json.loads(summary["units"])
    if old is not None and not summary["resampled"]:  # kept units plus the ones read
        current = {**{k: v for k, v in old.units.items() if k not in gone}, **units}
        units = {k: current[k] for k in sorted(current)}
    threshold = summary["threshold"]
    return store.SamplePartition(
        path=layout.partition_dir_of(list(plan.key), plan.values),
        name=layout.partition_name_of(list(plan.key), plan.values),
        values=plan.values,
        population=int(summary["population"]),
        sample_rows=int(summary["sample_rows"]),
        fingerprint=plan.fingerprint(),
        file=summary["file"],
        file_size=int(summary["file_size"] or 0),
        population_from=origin,
        units=units,
        reserve=summary["reserve"],
        reserve_rows=int(summary["reserve_rows"] or 0),
        threshold=None if threshold is None else int(threshold),
    )


def _remove_failed_run(
    stats_root: StatisticsStore, run_id: str, identifier: str
) -> None:
    """The sample files a failed run wrote (``store/cleanup.py``), unless its manifest was
    saved before the failure (then they are the sample's)."""
    with contextlib.suppress(LakestatsError, OSError):
        found = store.load(stats_root, identifier, check_files=False)
        if found.run_id == run_id:
            return
    with contextlib.suppress(LakestatsError, OSError):
        cleanup.remove_run(stats_root, run_id)


def _plans(table: TableFormat, snapshot: int | None) -> list[PartitionPlan]:
    """The table's partitions by path: the manifest lists them, and ``allocate`` breaks
    its ties, in one order whatever order the table listed them in."""
    return sorted(
        table.plan(snapshot), key=lambda p: layout.partition_dir_of(list(p.key), p.values)
    )


def _run_id() -> str:
    return f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


def _timestamp(table: TableFormat, snapshot: int | None) -> int | None:
    if snapshot is None:
        return None
    return next((s.timestamp_ms for s in table.snapshots() if s.snapshot_id == snapshot), None)
