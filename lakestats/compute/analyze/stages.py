"""The per-partition Spark job: the slices over ``spark.range(n, numPartitions=tasks)``
(``mapInArrow``, the ``Job`` shipped in its closure; small slices share a task,
``task_count``), then, for
partitions split into slices, a second equally small stage that merges their staged
states. Only small summaries come back to the driver."""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from lakestats.compute.outcome import TaskOutcome
from lakestats.compute.progress import run_with_progress
from lakestats.compute.session import collect_small, default_parallelism, result_schema
from lakestats.compute.tasks import (
    SUMMARY_FIELDS,
    SUMMARY_SCHEMA,
    Job,
    merge_partition,
    run_slice,
)
from lakestats.errors import LakestatsError
from lakestats.formats.base import TableFormat
from lakestats.spark_errors import spark_call as _spark_call
from lakestats.stats.arrays import record_batch


def _batches(rows: list[dict[str, object]], extra: list[pa.Field] | None = None) -> pa.RecordBatch:
    return record_batch(rows, pa.schema(SUMMARY_FIELDS + (extra or [])))


def _stage_one(
    job: Job, order: list[int], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    extra_fields = getattr(job.hook, "extra_fields", None)
    for batch in batches:
        for position in batch.column(0).to_pylist():
            summary = run_slice(job, order[position])
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


def plan_slices(job: Job, table: TableFormat, plans: list) -> None:
    """The tasks of the per-partition job of ``plans`` (``job.partition_paths``' order):
    their slices, biggest first (so the last wave of tasks is short)."""
    slices, slice_partition = [], []
    for index, plan in enumerate(plans):
        for part in table.slices(plan, job.options.max_slice_bytes):
            slices.append(part)
            slice_partition.append(index)
    sizes = [_bytes(part) for part in slices]
    order = sorted(range(len(slices)), key=lambda i: -sizes[i])
    job.slices = [slices[i] for i in order]
    job.slice_partition = [slice_partition[i] for i in order]


# Many small partitions (thousands of day partitions, or a month of lineitem): a Spark task
# each costs tens of milliseconds of task overhead (scheduling, the closure's
# deserialization, which carries every slice: quadratic in the partition count) against
# milliseconds of work. Slices share a task until a task holds ``max_slice_bytes`` of data,
# with at least TASKS_PER_SLOT tasks per task slot of the cluster (or one per slice, when
# fewer), their bytes balanced (``_in_task_blocks``): lineitem scale 1 by month (84
# partitions) on 2 slots computed its partitions in 2.7-3.0 s with 4 tasks, 5.3 s with 64.
TASKS_PER_SLOT = 2


def task_count(slices: int, total_bytes: int, job: Job, slots: int) -> int:
    """How many Spark tasks run ``slices`` slices of ``total_bytes`` bytes in all on a
    cluster of ``slots`` task slots."""
    if job.hook is not None:  # a sample's hook sets its own task count (or one per slice)
        return min(getattr(job.hook, "tasks", None) or slices, slices)
    by_bytes = -(-total_bytes // max(job.options.max_slice_bytes, 1))
    return max(1, min(slices, max(TASKS_PER_SLOT * max(slots, 1), by_bytes)))


def _bytes(part: object) -> int:
    return sum(f.size_bytes for f in part.files)  # type: ignore[attr-defined]


def _in_task_blocks(sizes: list[int], tasks: int) -> list[int]:
    """Slice indices (``sizes`` biggest first) in the order that gives the contiguous id
    blocks of ``spark.range(n, numPartitions=tasks)`` about equal bytes: each slice,
    biggest first, goes to the block with the fewest bytes that still has room. Position
    ``i`` of the range runs slice ``order[i]``; summaries come back sorted by slice."""
    n = len(sizes)
    order = list(range(n))
    if tasks >= n:
        return order
    bounds = [i * n // tasks for i in range(tasks + 1)]
    room = [bounds[i + 1] - bounds[i] for i in range(tasks)]
    blocks: list[list[int]] = [[] for _ in range(tasks)]
    lightest = [(0, b) for b in range(tasks) if room[b]]
    for i in order:
        load, block = heapq.heappop(lightest)
        blocks[block].append(i)
        room[block] -= 1
        if room[block]:
            heapq.heappush(lightest, (load + sizes[i], block))
    return [i for block in blocks for i in block]


def compute_partitions(
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
        job.store.delete_dir(job.states_dir())  # (the hand-off files wait for publish)
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
    sizes = [_bytes(part) for part in slices]
    tasks = task_count(len(slices), sum(sizes), job, default_parallelism(spark))
    order = _in_task_blocks(sizes, tasks)
    frame = spark.range(0, len(slices), 1, numPartitions=tasks)
    schema = SUMMARY_SCHEMA if hook is None else f"{SUMMARY_SCHEMA}, {hook.extra_schema}"  # type: ignore[attr-defined]
    stage = frame.mapInArrow(functools.partial(_stage_one, job, order), result_schema(schema))
    if hook is None:
        summaries = run_with_progress(
            spark, "analyzing partitions", len(slices), lambda: collect_small(stage), progress
        )
        # the order of one task per slice (what the reduction's merge order follows)
        summaries = sorted(summaries, key=lambda s: s["task_id"])
    else:
        summaries = run_with_progress(
            spark, "analyzing partitions", len(slices),
            lambda: _with_hook(stage, hook, [leaf.name for leaf in job.leaves]), progress,
        )
    raise_errors(summaries)
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
    raise_errors(merged)
    return [s for s in summaries if s["kind"] == TaskOutcome.DONE] + merged


def _with_hook(stage: DataFrame, hook: object, names: list[str]) -> list[dict]:
    """Run the tasks once; the hook aggregates its rows in the same Spark job
    (``SampleHook.aggregate``) and hands back the tasks' summaries."""
    keys = [f.name for f in SUMMARY_FIELDS]
    return hook.aggregate(stage, keys, names)  # type: ignore[attr-defined]


def raise_errors(summaries: list) -> None:
    errors = [s["error"] for s in summaries if s["kind"] == TaskOutcome.ERROR]
    if errors:
        more = f" (and {len(errors) - 1} more partitions failed)" if len(errors) > 1 else ""
        raise LakestatsError(f"{errors[0]}{more}")
