"""The table-level reduction on Spark: partition files in, table files out, no data scan.

Partitions fall into groups by a hash of their path (``GroupCache``: ~sqrt(n) groups, at
most ``MAX_GROUPS``). Each group's intermediate results are cached next to the table files,
keyed by exactly their inputs, so an incremental analyze recomputes only the groups whose
partitions changed. Stages (each Spark task handles some groups):

1. scalars: every partition's ``statistics.parquet`` folded into one ``ScalarState`` per
   column per group, merged per column (``groupBy(column).applyInArrow``), collected (small);
2. histograms: for columns whose frequencies are incomplete, every partition histogram is
   re-binned onto the table grid and summed per column;
3. frequencies: every partition's ``frequencies.parquet`` rows, combined and pruned per
   group, exactly aggregated by Spark (``groupBy(column, value)``: sum, and the
   per-partition counts), then finalized per column: exact distinct count, percentiles and
   histogram when complete, top values with bounds otherwise;
4. one task writes the three table-level files.

A small reduction (``LOCAL_CELLS``: partitions x columns) runs the same steps inside one
Spark task instead, with Arrow aggregations for Spark's ``groupBy``: five stages and their
shuffles cost seconds of fixed overhead, which is what an incremental analyze would
otherwise spend most of its time on.
"""

from __future__ import annotations

import functools
import json
import pickle
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakestats import fs
from lakestats.compute.group_cache import GroupCache
from lakestats.compute.progress import Clock
from lakestats.compute.reduce_steps import (
    FREQUENCY_GROUP_SCHEMA,
    FREQUENCY_ROW_ARROW,
    FREQUENCY_ROW_SCHEMA,
    STATE_SCHEMA,
    ReduceJob,
    finalize_column,
    merge_states,
    sum_histograms,
    write_table_files,
)
from lakestats.stats.table_merge import (
    Grid,
    ScalarState,
)
from lakestats.store import layout
from lakestats.store.manifest import PartitionEntry


def _grouped(function: Callable[[pa.Table], pa.Table]) -> Callable[[pa.Table], pa.Table]:
    """A plain, type-hinted function for ``applyInArrow`` (it infers its kind from hints)."""

    def apply(table: pa.Table) -> pa.Table:
        return function(table)

    apply.__annotations__ = {"table": pa.Table, "return": pa.Table}
    return apply


def reduce_table(
    spark: SparkSession,
    root: str,
    s3: fs.S3Options | None,
    partitions: list[PartitionEntry],
    columns: list[dict[str, str]],
    bins: int,
    max_frequencies: int,
    run_id: str,
    statistics: list | None = None,
    cache: dict[str, str] | None = None,
) -> tuple[dict[str, str], int, dict[str, str]]:
    """Write the table-level files of ``partitions``; returns their paths, the bytes
    written and the group cache (key -> file) the next incremental reduction can reuse;
    ``cache`` is the previous version's."""
    job = ReduceJob(
        root,
        s3,
        partitions,
        columns,
        bins,
        max_frequencies,
        list(statistics or []),
        dict(cache or {}),
    )
    if len(partitions) * len(columns) <= LOCAL_CELLS:
        return _reduce_in_one_task(spark, job, run_id)
    parallelism = max(2, spark.sparkContext.defaultParallelism)
    groups = GroupCache(job, f"table/{run_id}/groups")
    count = len(groups.members)
    frame = spark.range(0, count, 1, numPartitions=max(1, min(count, 2 * parallelism)))

    clock = Clock()
    state_rows = (
        frame.mapInArrow(functools.partial(_cached_states, groups), STATE_SCHEMA)
        .groupBy("column_index")
        .applyInArrow(_grouped(functools.partial(merge_states, job)), STATE_SCHEMA)
        .collect()
    )
    states = {row["column_index"]: pickle.loads(row["state"]) for row in state_rows}
    clock.lap("scalars")
    grids = {}
    for index, state in states.items():
        grid = state.grid(job.dtype(index), bins)
        if grid is not None:
            grids[index] = grid
    incomplete = {i: g for i, g in grids.items() if not states[i].frequencies_complete}
    rebinned: dict[int, np.ndarray] = {}
    if incomplete:
        rows = (
            frame.mapInArrow(
                functools.partial(_cached_histograms, groups, incomplete), STATE_SCHEMA
            )
            .groupBy("column_index")
            .applyInArrow(_grouped(sum_histograms), STATE_SCHEMA)
            .collect()
        )
        rebinned = {r["column_index"]: np.frombuffer(r["state"], dtype=np.float64) for r in rows}
        clock.lap("histograms")

    incomplete_columns = np.array(
        [not states[i].frequencies_complete for i in range(len(columns))], dtype=bool
    )
    grouped = _grouped_frequencies(frame, groups, incomplete_columns)
    finalized = grouped.groupBy("column_index").applyInArrow(
        _grouped(functools.partial(finalize_column, job, states, grids)),
        FREQUENCY_GROUP_SCHEMA,
    )
    files = layout.table_files(run_id)
    written = (
        finalized.repartition(1)
        .mapInArrow(
            functools.partial(write_table_files, job, states, grids, rebinned, files),
            "bytes_written long",
        )
        .collect()
    )
    clock.lap("frequencies and write")
    used = groups.expected(incomplete, incomplete_columns)
    return files, sum(r["bytes_written"] for r in written), used


def _cached_states(
    groups: GroupCache, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Stage 1 of the staged reduction: this task's groups' scalar states, merged."""
    for batch in batches:
        merged: dict[int, ScalarState] = {}
        for group in batch.column(0).to_pylist():
            groups.merge_states(merged, groups.states(groups.members[group]))
        if merged:
            yield pa.RecordBatch.from_pydict(
                {
                    "column_index": pa.array(list(merged), pa.int32()),
                    "state": pa.array(
                        [pickle.dumps(s, protocol=5) for s in merged.values()], pa.binary()
                    ),
                }
            )


def _cached_histograms(
    groups: GroupCache, grids: dict[int, Grid], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Stage 2: this task's groups' re-binned histograms, summed per column."""
    for batch in batches:
        sums: dict[int, np.ndarray] = {}
        for group in batch.column(0).to_pylist():
            for i, counts in groups.histograms(groups.members[group], grids).items():
                sums[i] = sums[i] + counts if i in sums else counts
        if sums:
            yield pa.RecordBatch.from_pydict(
                {
                    "column_index": pa.array(list(sums), pa.int32()),
                    "state": pa.array(
                        [np.asarray(c).tobytes() for c in sums.values()], pa.binary()
                    ),
                }
            )


def _cached_frequency_rows(
    groups: GroupCache, incomplete: np.ndarray, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Stage 3: this task's groups' pruned frequency rows, holders at version positions."""
    for batch in batches:
        for group in batch.column(0).to_pylist():
            yield from groups.frequency_rows(groups.members[group], incomplete).to_batches()


def _grouped_frequencies(frame: DataFrame, groups: GroupCache, incomplete: np.ndarray) -> DataFrame:
    rows = frame.mapInArrow(
        functools.partial(_cached_frequency_rows, groups, incomplete), FREQUENCY_ROW_SCHEMA
    )
    return rows.groupBy("column_index", "value").agg(
        F.sum("count").alias("total"),
        F.sum("bound").alias("bound_present"),
        F.flatten(F.collect_list(F.coalesce("holder_list", F.array().cast("array<long>")))).alias(
            "holders"
        ),
    )


LOCAL_CELLS = 20_000
"""Up to this many partition x column cells, one task reduces (see the module docstring)."""


def _reduce_in_one_task(
    spark: SparkSession, job: ReduceJob, run_id: str
) -> tuple[dict[str, str], int, dict[str, str]]:
    files = layout.table_files(run_id)
    rows = (
        spark.range(0, 1, 1, numPartitions=1)
        .mapInArrow(
            functools.partial(_reduce_locally, job, files, f"table/{run_id}/groups"),
            "bytes_written long, cache string",
        )
        .collect()
    )
    cache = {k: v for r in rows for k, v in json.loads(r["cache"]).items()}
    return files, sum(r["bytes_written"] for r in rows), cache


def _reduce_locally(
    job: ReduceJob, files: dict[str, str], cache_dir: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Every stage of ``reduce_table`` in this task.

    Partitions fall into about sqrt(n) groups by a hash of their path; each group's merged
    scalar states and pruned frequency rows are cached next to the table files, keyed by
    the group's partition files. An incremental analyze that changed one partition
    recomputes one group and reads the others' caches (``GroupCache``).
    """
    for _ in batches:
        pass
    groups = GroupCache(job, cache_dir)
    states: dict[int, ScalarState] = {}
    for members in groups.members:
        groups.merge_states(states, groups.states(members))
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
    incomplete_columns = np.array(
        [not states[i].frequencies_complete for i in range(len(job.columns))], dtype=bool
    )
    grouped = _aggregate_frequency_rows(
        [groups.frequency_rows(members, incomplete_columns) for members in groups.members]
    )
    index = grouped.column("column_index").to_numpy(zero_copy_only=False)
    order = np.argsort(index, kind="stable")
    grouped, index = grouped.take(pa.array(order)), index[order]
    bounds = np.flatnonzero(np.diff(index)) + 1
    finalized = [
        finalize_column(job, states, grids, grouped.slice(start, stop - start))
        for start, stop in zip([0, *bounds.tolist()], [*bounds.tolist(), len(index)], strict=True)
        if stop > start
    ]
    payloads = [t.to_batches()[0] for t in finalized]
    for batch in write_table_files(job, states, grids, rebinned, files, iter(payloads)):
        yield pa.RecordBatch.from_pydict(
            {
                "bytes_written": batch.column(0),
                "cache": pa.array([json.dumps(groups.written)]),
            }
        )


def _aggregate_frequency_rows(tables: list[pa.Table]) -> pa.Table:
    """What ``_grouped_frequencies`` computes with Spark's ``groupBy``, in Arrow: per
    (column, value) the summed count and bound and the concatenated holder lists."""
    rows = pa.concat_tables([t.cast(FREQUENCY_ROW_ARROW) for t in tables])
    keys = ["column_index", "value"]
    totals = rows.group_by(keys).aggregate([("count", "sum"), ("bound", "sum")])
    lists = rows.column("holder_list").combine_chunks()
    parents = pc.list_parent_indices(lists)
    holders = (
        pa.table(
            {
                "column_index": rows.column("column_index").take(parents),
                "value": rows.column("value").take(parents),
                "holder": pc.list_flatten(lists),
            }
        )
        .group_by(keys)
        .aggregate([("holder", "list")])
    )
    # Arrow joins carry no list columns: join a row number of ``holders`` instead
    rows_of = pa.array(np.arange(holders.num_rows, dtype=np.int64))
    numbered = holders.select(keys).append_column("_row", rows_of)
    joined = totals.join(numbered, keys, join_type="left outer")
    holder_lists = holders.column("holder_list").combine_chunks().take(joined.column("_row"))
    empty = pa.array([[]] * joined.num_rows, pa.list_(pa.int64()))
    return pa.table(
        {
            "column_index": joined.column("column_index"),
            "value": joined.column("value"),
            "total": joined.column("count_sum"),
            "bound_present": joined.column("bound_sum"),
            "holders": pc.if_else(pc.is_null(holder_lists), empty, holder_lists),
        }
    )
