"""``sample create`` and ``sample refresh``: the Spark side of stored samples.

The driver plans the table's partitions, allocates the sample's rows to them (exact
proportional allocation, ``sample_select.allocate``; a count job first when the format's
metadata does not know a partition's rows), and runs one ``mapInArrow`` task per partition
(``sample_job.run_sample_task``), which writes its partition's sample file. Only then is the
manifest replaced, so a failed run leaves the previous sample as it was.

Refresh is partition-granular: partitions whose files changed since the sample's snapshot
(the plan's fingerprints, as incremental analyze decides) and new ones are resampled from
their current rows at the sample's rate; untouched partitions keep their rows; dropped ones
are removed. With a bottom-k sample this is exact: a partition's sample depends only on its
own rows.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import SparkSession

from lakestats import fs
from lakestats.compute.sample_bounds import footer_rows, usable
from lakestats.compute.sample_job import SAMPLE_SUMMARY_SCHEMA, SampleJob, run_sample_task
from lakestats.compute.sample_select import allocate, size_for_fraction
from lakestats.compute.session import collect_small, result_schema
from lakestats.errors import InvalidArgumentError, LakestatsError
from lakestats.formats.base import PartitionPlan, TableFormat
from lakestats.options import SampleOptions
from lakestats.store import layout
from lakestats.store import sample as store


@dataclass(frozen=True)
class SampleResult:
    snapshot_id: int | None
    population: int
    sample_rows: int
    partitions_sampled: int
    partitions_kept: int
    partitions_removed: int
    bytes_read: int
    resampled_because: str | None = None


def _tasks(job: SampleJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    schema = pa.schema(
        [
            ("task", pa.int64()),
            ("population", pa.int64()),
            ("sample_rows", pa.int64()),
            ("file", pa.string()),
            ("file_size", pa.int64()),
            ("bytes_read", pa.int64()),
            ("seconds", pa.float64()),
            ("error", pa.string()),
        ]
    )
    for batch in batches:
        for task in batch.column(0).to_pylist():
            yield pa.RecordBatch.from_pylist([run_sample_task(job, task)], schema=schema)


def _run(spark: SparkSession, job: SampleJob) -> list[dict]:
    n = len(job.slices)
    if n == 0:
        return []
    frame = spark.range(0, n, 1, numPartitions=n)
    stage = frame.mapInArrow(functools.partial(_tasks, job), result_schema(SAMPLE_SUMMARY_SCHEMA))
    try:
        rows = collect_small(stage)
    except Exception as exc:  # noqa: BLE001 - Spark wraps executor errors; keep one line
        from lakestats.compute.analyze import _last_line

        raise LakestatsError(f"sampling failed on Spark: {_last_line(exc)}") from exc
    errors = [r["error"] for r in rows if r["error"]]
    if errors:
        raise LakestatsError(errors[0])
    return sorted(rows, key=lambda r: r["task"])


def _job(
    table: TableFormat,
    snapshot: int | None,
    plans: list[PartitionPlan],
    targets: list[int | None],
    options: SampleOptions,
    sample_dir: str,
    run_id: str,
    s3: fs.S3Options | None,
) -> SampleJob:
    names = table.schema(snapshot).names
    return SampleJob(
        reader=table.reader(snapshot),
        slices=[table.slices(p, options.max_slice_bytes) for p in plans],
        partition_paths=[layout.partition_dir_of(list(p.key), p.values) for p in plans],
        targets=targets,
        seed=options.seed,
        sample_dir=sample_dir,
        run_id=run_id,
        s3=s3,
        count_columns=names[:1],
        table_location=table.location,
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
        job = _job(table, snapshot, [plans[i] for i in unknown], [None] * len(unknown),
                   SampleOptions(), "", "", s3)
        for i, row in zip(unknown, _run(spark, job), strict=True):
            counts[i], origin[i] = row["population"], "read"
            bytes_read += row["bytes_read"]
    return counts, origin, bytes_read


def create(
    table: TableFormat,
    stats_root: str,
    spark: SparkSession,
    options: SampleOptions,
    s3: fs.S3Options | None = None,
) -> SampleResult:
    """Draw a new sample of the table's current snapshot and replace the stored one."""
    rows, fraction = options.rows, options.drawn_fraction
    snapshot = table.current_snapshot_id()
    plans = table.plan(snapshot)
    if sum(p.row_count or 0 for p in plans) == 0 and all(p.row_count is not None for p in plans):
        raise InvalidArgumentError(f"{table.identifier} has no rows: there is nothing to sample")
    populations, origin, counted = _populations(spark, table, snapshot, plans, s3)
    total = sum(populations)
    if total == 0:
        raise InvalidArgumentError(f"{table.identifier} has no rows: there is nothing to sample")
    if fraction is not None:
        targets = [size_for_fraction(fraction, n) for n in populations]
    else:
        targets = allocate(populations, rows or 0)
    run_id = _run_id()
    directory = store.sample_dir(stats_root)
    job = _job(table, snapshot, plans, list(targets), options, directory, run_id, s3)
    summaries = _run(spark, job)
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
    store.save(stats_root, manifest, s3)
    store.delete_unreferenced(stats_root, manifest, s3)
    return SampleResult(
        snapshot, total, sampled, len(plans), 0, 0,
        counted + sum(s["bytes_read"] for s in summaries),
    )


def refresh(
    table: TableFormat,
    stats_root: str,
    spark: SparkSession,
    s3: fs.S3Options | None = None,
) -> SampleResult:
    """Bring the stored sample to the table's current snapshot, resampling only the
    partitions whose files changed; a sample whose snapshot was expired is redrawn."""
    old = store.load(stats_root, table.identifier, s3)
    snapshots = {s.snapshot_id for s in table.snapshots()}
    if old.snapshot_id is not None and snapshots and old.snapshot_id not in snapshots:
        drawn = SampleOptions(rows=old.rows, fraction=old.fraction, seed=old.seed)
        result = create(table, stats_root, spark, drawn, s3)
        return SampleResult(
            **{**result.__dict__,
               "resampled_because": f"the sample's snapshot {old.snapshot_id} was expired "
               "from the table; resampled the current snapshot"}
        )
    snapshot = table.current_snapshot_id()
    plans = table.plan(snapshot)
    known = {p.path: p for p in old.partitions}
    paths = [layout.partition_dir_of(list(p.key), p.values) for p in plans]
    changed = [
        i for i, plan in enumerate(plans)
        if paths[i] not in known or known[paths[i]].fingerprint != plan.fingerprint()
    ]
    populations, origin, counted = _populations(
        spark, table, snapshot, [plans[i] for i in changed], s3
    )  # (a copy of the list: _populations fills in row counts it reads from footers)
    targets = [size_for_fraction(old.rate, n) for n in populations]
    run_id = _run_id()
    job = _job(table, snapshot, [plans[i] for i in changed], list(targets),
               SampleOptions(seed=old.seed), store.sample_dir(stats_root), run_id, s3)
    summaries = _run(spark, job)
    fresh = {
        paths[i]: _entry(plans[i], summary, origin[j])
        for j, (i, summary) in enumerate(zip(changed, summaries, strict=True))
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
        }
    )
    store.save(stats_root, manifest, s3)
    store.delete_unreferenced(stats_root, manifest, s3)
    return SampleResult(
        snapshot,
        manifest.population,
        manifest.sample_rows,
        len(changed),
        len(plans) - len(changed),
        removed,
        counted + sum(s["bytes_read"] for s in summaries),
    )


def _entry(plan: PartitionPlan, summary: dict, origin: str) -> store.SamplePartition:
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
    )


def _run_id() -> str:
    return f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


def _timestamp(table: TableFormat, snapshot: int | None) -> int | None:
    if snapshot is None:
        return None
    return next((s.timestamp_ms for s in table.snapshots() if s.snapshot_id == snapshot), None)
