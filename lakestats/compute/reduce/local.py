"""The reduction inside one Spark task: the declared stages run in-process.

Contract: up to ``LOCAL_CELLS`` partition x column cells, ``STAGES`` (``stages.py``) run in
one task with Arrow aggregations in place of Spark's ``groupBy``: five Spark stages and
their shuffles cost seconds of fixed overhead, which is what an incremental analyze would
otherwise spend most of its time on. Partitions fall into about sqrt(n) groups whose
intermediate results are cached (``cache.GroupCache``); an incremental analyze that
changed one partition recomputes one group and reads the others' caches. Columns are
finalized on ``THREADS`` threads (Arrow releases the GIL). ``compute_and_reduce`` computes
the one changed partition in the same task, reading ahead meanwhile (``cache.preload``).
``write_parts_only`` writes only the partition histogram parts (no table level asked).
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
from pyspark.sql import SparkSession

from lakestats.compute.outcome import TaskOutcome
from lakestats.compute.progress import Clock
from lakestats.compute.reduce import wire
from lakestats.compute.reduce.cache import GroupCache, preload
from lakestats.compute.reduce.combine import aggregate_column, split_by_column
from lakestats.compute.reduce.finalize import write_partition_histograms
from lakestats.compute.reduce.fold import ReadAhead
from lakestats.compute.reduce.job import ReduceJob
from lakestats.compute.reduce.stages import STAGES, PerColumn, PerValue, Reduction
from lakestats.compute.session import collect_small, result_schema
from lakestats.compute.tasks import Job, run_slice
from lakestats.stats.arrays import ddl_schema, int64_array, record_batch, string_array
from lakestats.store import layout
from lakestats.threads import parallel, thread_map

LOCAL_CELLS = 20_000
"""Up to this many partition x column cells, one task reduces (see the module docstring)."""


def fits_one_task(partitions: int, columns: int) -> bool:
    return partitions * columns <= LOCAL_CELLS


def reduce_in_one_task(
    spark: SparkSession, job: ReduceJob, run_id: str
) -> tuple[dict[str, str], int, dict[str, str]]:
    """Run ``reduce_locally`` in one Spark task; the files, bytes written and group cache."""
    files = layout.table_files(run_id)
    rows = collect_small(
        spark.range(0, 1, 1, numPartitions=1).mapInArrow(
            functools.partial(_reduce_task, job, files, run_id),
            result_schema(wire.ONE_TASK_SCHEMA),
        )
    )
    return files, sum(r["bytes_written"] for r in rows), read_cache(rows)


def read_cache(rows: list) -> dict[str, str]:
    return {k: v for r in rows if r["cache"] for k, v in json.loads(r["cache"]).items()}


def compute_and_reduce(
    spark: SparkSession, job: Job, reduce_job: ReduceJob, run_id: str
) -> tuple[dict[str, object], dict[str, str], int, dict[str, str]]:
    """The one slice of ``job`` and then the reduction, in one Spark task.

    The common incremental analyze (one partition changed, say today's) would otherwise run
    two Spark jobs, each with ~0.1 s of fixed cost, for ~0.4 s of work. Returns the slice's
    summary, the table files, the bytes written by the reduction and its group cache; when
    the slice fails, its summary says why and nothing is reduced."""
    files = layout.table_files(run_id)
    schema = result_schema(wire.computed_and_reduced_schema())
    rows = collect_small(
        spark.range(0, 1, 1, numPartitions=1).mapInArrow(
            functools.partial(_compute_and_reduce_task, job, reduce_job, files), schema
        )
    )
    row = rows[0]
    table_bytes = row.pop("table_bytes") or 0
    cache = read_cache([row])
    row.pop("cache")
    return row, files, table_bytes, cache


def _compute_and_reduce_task(
    job: Job, reduce_job: ReduceJob, files: dict[str, str], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    for _ in batches:
        pass
    computing = {job.partition_paths[p] for p in job.slice_partition}
    ahead = ReadAhead(reduce_job)
    with ThreadPoolExecutor(1) as pool:  # reads overlap the slice's (GIL-bound) statistics
        reading = pool.submit(preload, ahead, computing)
        with parallel():  # the task has the executor: its three files are written at once
            summary: dict[str, object] = run_slice(job, 0)
        # a head start only: whatever it could not read, the reduction reads (and reports)
        with contextlib.suppress(Exception):
            reading.result()
    written, cache = 0, {}
    if summary["kind"] == TaskOutcome.DONE:
        with parallel():
            written, cache = reduce_locally(reduce_job, files, job.run_id, ahead)
    yield record_batch(
        [{**summary, "table_bytes": written, "cache": json.dumps(cache)}],
        ddl_schema(wire.computed_and_reduced_schema()),
    )


def _reduce_task(
    job: ReduceJob, files: dict[str, str], run_id: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    for _ in batches:
        pass
    with parallel():
        written, cache = reduce_locally(job, files, run_id)
    yield pa.RecordBatch.from_arrays(
        [int64_array([written]), string_array([json.dumps(cache)])],
        names=["bytes_written", "cache"],
    )


def reduce_locally(
    job: ReduceJob, files: dict[str, str], run_id: str, ahead: ReadAhead | None = None
) -> tuple[int, dict[str, str]]:
    """Every stage of the reduction here; the bytes written and the group cache used."""
    groups = GroupCache(
        job, f"table/{run_id}/groups", ahead or ReadAhead(job), background_writes=True
    )
    try:
        reduction = Reduction(
            job,
            groups,
            files,
            layout.partition_index_file(run_id),
            layout.partition_histogram_parts_file(run_id),
        )
        written = run_stages(reduction)
        return written, groups.flush()
    finally:
        groups.close()  # no-op after ``flush``; drops queued writes when the reduction failed


def write_parts_only(job: ReduceJob, run_id: str) -> tuple[str, int, dict[str, str]]:
    """A version without a table-level reduction (``analyze --partitions-only``) still
    publishes its partitions' frequency and histogram rows, whose one home is the parts:
    every group's part (the previous version's where the group is unchanged) and their
    directory, written here; its path, the bytes written and the group cache entries."""
    groups = GroupCache(job, f"table/{run_id}/groups", ReadAhead(job), background_writes=True)
    try:
        relative = layout.partition_histogram_parts_file(run_id)
        with parallel():
            written = write_partition_histograms(groups, relative)
        return relative, written, groups.flush()
    finally:
        groups.close()


def run_stages(reduction: Reduction) -> int:
    """``STAGES`` in this process, in order; the bytes the ``Write`` stages wrote."""
    clock = Clock()
    written = 0
    members = reduction.groups.members
    for stage in STAGES:
        if isinstance(stage, PerColumn):
            if not stage.wanted(reduction):
                continue
            merged: dict[int, object] = {}
            for group in members:
                for index, value in stage.group(reduction, group).items():
                    merged[index] = (
                        stage.merge(reduction.job, merged[index], value)
                        if index in merged
                        else value
                    )
            stage.finish(reduction, merged)
        elif isinstance(stage, PerValue):
            rows = pa.concat_tables(
                [stage.group(reduction, group).cast(wire.FREQUENCY_ROW_ARROW) for group in members]
            )

            def finalize(column: pa.Table, stage: PerValue = stage) -> tuple[int, object]:
                return stage.finalize(reduction, aggregate_column(column))

            stage.finish(reduction, dict(thread_map(finalize, split_by_column(rows), weight=len)))
        elif stage.wanted(reduction.job):
            written += stage.write(reduction)
        clock.lap(f"reduce: {stage.name}")
    return written
