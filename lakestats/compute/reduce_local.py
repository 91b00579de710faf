"""The table-level reduction of a small table, inside one Spark task.

Up to ``LOCAL_CELLS`` partition x column cells, the steps of ``compute/reduce.py`` run in
one task with Arrow aggregations in place of Spark's ``groupBy``: five Spark stages and
their shuffles cost seconds of fixed overhead, which is what an incremental analyze would
otherwise spend most of its time on. Partitions fall into about sqrt(n) groups whose
intermediate results are cached (``GroupCache``); an incremental analyze that changed one
partition recomputes one group and reads the others' caches. Columns are merged and
finalized on ``THREADS`` threads (Arrow releases the GIL).
"""

from __future__ import annotations

import contextlib
import functools
import json
import pickle
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from lakestats import fs
from lakestats.compute.group_cache import (
    GroupCache,
    is_rows,
    read_rows,
    write_partition_index,
)
from lakestats.compute.progress import Clock
from lakestats.compute.reduce_steps import (
    FREQUENCY_ROW_ARROW,
    ReduceJob,
    column_frequencies,
    split_by_column,
    write_tables,
)
from lakestats.compute.session import collect_small, result_schema
from lakestats.compute.tasks import SUMMARY_SCHEMA, Job, run_slice
from lakestats.errors import LakestatsError
from lakestats.stats.table_merge import FrequencyResult, ScalarState
from lakestats.store import layout
from lakestats.threads import parallel, thread_map

LOCAL_CELLS = 20_000
"""Up to this many partition x column cells, one task reduces (see the module docstring)."""

RESULT_SCHEMA = "bytes_written long, cache string"


def fits_one_task(partitions: int, columns: int) -> bool:
    return partitions * columns <= LOCAL_CELLS


def reduce_in_one_task(
    spark: SparkSession, job: ReduceJob, run_id: str
) -> tuple[dict[str, str], int, dict[str, str]]:
    """Run ``reduce_locally`` in one Spark task; the files, bytes written and group cache."""
    files = layout.table_files(run_id)
    rows = collect_small(
        spark.range(0, 1, 1, numPartitions=1).mapInArrow(
            functools.partial(_reduce_task, job, files, run_id), result_schema(RESULT_SCHEMA)
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
    schema = result_schema(f"{SUMMARY_SCHEMA}, table_bytes long, cache string")
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
    with ThreadPoolExecutor(1) as pool:  # reads overlap the slice's (GIL-bound) statistics
        ahead = pool.submit(preload, reduce_job, computing)
        with parallel():  # the task has the executor: its three files are written at once
            summary: dict[str, object] = run_slice(job, 0)
        # a head start only: whatever it could not read, the reduction reads (and reports)
        with contextlib.suppress(Exception):
            ahead.result()
    written, cache = 0, {}
    if summary["kind"] == "done":
        with parallel():
            written, cache = reduce_locally(reduce_job, files, job.run_id)
    yield pa.RecordBatch.from_pylist(
        [{**summary, "table_bytes": written, "cache": json.dumps(cache)}]
    )


def _reduce_task(
    job: ReduceJob, files: dict[str, str], run_id: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    for _ in batches:
        pass
    with parallel():
        written, cache = reduce_locally(job, files, run_id)
    yield pa.RecordBatch.from_pydict(
        {"bytes_written": pa.array([written], pa.int64()), "cache": pa.array([json.dumps(cache)])}
    )


def preload(job: ReduceJob, computing: set[str]) -> None:
    """Read what the reduction needs that the partitions being computed cannot change: the
    previous version's group cache entries (frequency rows decoded, states unpickled), and the other
    partitions' files in the groups those partitions fall into (the groups to recompute).
    Unreadable files are left to the reduction, which reports or recomputes them as usual."""
    groups = GroupCache(job, "")
    unreadable = (OSError, LakestatsError, pa.ArrowException)
    for key, relative in job.cache.items():
        with contextlib.suppress(*unreadable):
            data = fs.read_bytes(layout.absolute(job.root, relative), job.s3)
            if is_rows(data):  # frequency rows: decoded here too
                job.tables[relative] = read_rows(data)
            else:
                job.blobs[relative] = data
        if key.startswith("states-") and relative in job.blobs and not job.statistics:
            with contextlib.suppress(Exception):  # unpickled here too; else the reduction does
                entry = pickle.loads(job.blobs[relative])
                states = {i: pickle.loads(b) for i, b in entry["states"].items()}
                job.ready_states[key] = {"states": states, "rows": entry["histogram_rows"]}
                del job.blobs[relative]  # the reduction uses the unpickled entry
    for members in groups.members:
        entries = [job.partitions[i] for i in members]
        if not any(e.path in computing for e in entries):
            continue
        for entry in entries:
            if entry.path in computing:
                continue
            for kind in ("statistics", "frequencies", "histograms"):
                with contextlib.suppress(*unreadable):
                    job.tables[entry.files[kind]] = job.read_file(entry.files[kind])


def reduce_locally(job: ReduceJob, files: dict[str, str], run_id: str) -> tuple[int, dict]:
    """Every stage of the reduction here; the bytes written and the group cache used."""
    groups = GroupCache(job, f"table/{run_id}/groups", background_writes=True)
    try:
        return _reduce(groups, files, layout.partition_index_file(run_id))
    finally:
        groups.close()  # no-op after ``flush``; drops queued writes when the reduction failed


def _reduce(
    groups: GroupCache, files: dict[str, str], index_file: str | None = None
) -> tuple[int, dict]:
    job = groups.job
    clock = Clock()
    states: dict[int, ScalarState] = {}
    for members in groups.members:
        groups.merge_states(states, groups.states(members))
    clock.lap("reduce: scalar states")
    grids = {}
    for index, state in states.items():
        grid = state.grid(job.dtype(index), job.bins)
        if grid is not None:
            grids[index] = grid
    incomplete = {i: g for i, g in grids.items() if not states[i].frequencies_complete}
    rebinned: dict[int, np.ndarray] = {}
    for members in groups.members if incomplete else ():
        for i, counts in groups.histograms(members, incomplete).items():
            rebinned[i] = rebinned[i] + counts if i in rebinned else counts
    clock.lap("reduce: histograms")
    incomplete_columns = np.array(
        [not states[i].frequencies_complete for i in range(len(job.columns))], dtype=bool
    )
    rows = pa.concat_tables(
        [
            groups.frequency_rows(members, incomplete_columns).cast(FREQUENCY_ROW_ARROW)
            for members in groups.members
        ]
    )

    def finalize(column: pa.Table) -> tuple[int, FrequencyResult]:
        return column_frequencies(job, states, grids, aggregate_column(column))

    clock.lap("reduce: frequency rows")
    frequencies = dict(thread_map(finalize, split_by_column(rows), weight=len))
    clock.lap("reduce: frequencies merged and finalized")
    written = write_tables(job, states, grids, rebinned, files, frequencies)
    if index_file is not None:
        clock.lap("reduce: table files written")
        written += write_partition_index(groups, index_file)
    used = groups.flush()
    clock.lap("reduce: table files written")
    return written, used


def aggregate_column(rows: pa.Table) -> pa.Table:
    """What ``reduce._grouped_frequencies`` computes with Spark's ``groupBy`` for one column,
    in Arrow: per value the summed count and bound and the concatenated holder lists."""
    column_index = rows.column("column_index")[0].as_py()
    totals = rows.group_by(["value"], use_threads=False).aggregate(
        [("count", "sum"), ("bound", "sum")]
    )
    n = totals.num_rows
    lists = rows.column("holder_list").combine_chunks()
    if lists.null_count == len(lists):  # no holders (not categorical, or not exact)
        holders: pa.Array = pa.ListArray.from_arrays(
            pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], pa.int64())
        )
    else:
        holders = _holders_of(rows, lists, totals.column("value"))
    return pa.table(
        {
            "column_index": pa.array(np.full(n, column_index, dtype=np.int32)),
            "value": totals.column("value"),
            "total": totals.column("count_sum"),
            "bound_present": totals.column("bound_sum"),
            "holders": holders,
        }
    )


def _holders_of(rows: pa.Table, lists: pa.ListArray, values: pa.ChunkedArray) -> pa.Array:
    """Each value's holder lists concatenated, aligned with ``values`` (empty if none)."""
    parents = pc.list_parent_indices(lists)
    holders = (
        pa.table({"value": rows.column("value").take(parents), "holder": pc.list_flatten(lists)})
        .group_by(["value"], use_threads=False)
        .aggregate([("holder", "list")])
    )
    # Arrow joins carry no list columns: join a row number of ``holders`` instead
    numbered = pa.table(
        {
            "value": holders.column("value"),
            "_row": pa.array(np.arange(holders.num_rows, dtype=np.int64)),
        }
    )
    position = pa.table(
        {"value": values, "_at": pa.array(np.arange(len(values), dtype=np.int64))}
    ).join(numbered, ["value"], join_type="left outer")
    at = position.column("_at").to_numpy(zero_copy_only=False)
    row = position.column("_row").take(pa.array(np.argsort(at, kind="stable")))
    taken = holders.column("holder_list").combine_chunks().take(row)
    empty = pa.array([[]] * len(values), pa.list_(pa.int64()))
    return pc.if_else(pc.is_null(taken), empty, taken)
