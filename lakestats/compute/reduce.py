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

A small reduction (``reduce_local.LOCAL_CELLS``: partitions x columns) runs the same steps
inside one Spark task instead (``compute/reduce_local.py``).
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakestats.compute.group_cache import GroupCache, write_partition_index
from lakestats.compute.progress import Clock
from lakestats.compute.reduce_local import fits_one_task, reduce_in_one_task
from lakestats.compute.reduce_steps import (
    FREQUENCY_GROUP_SCHEMA,
    FREQUENCY_ROW_SCHEMA,
    STATE_SCHEMA,
    ReduceJob,
    finalize_column,
    merge_states,
    sum_histograms,
    write_table_files,
)
from lakestats.compute.session import default_parallelism, result_schema
from lakestats.stats.table_merge import (
    Grid,
    ScalarState,
)
from lakestats.store import layout


def _grouped(function: Callable[[pa.Table], pa.Table]) -> Callable[[pa.Table], pa.Table]:
    """A plain, type-hinted function for ``applyInArrow`` (it infers its kind from hints)."""

    def apply(table: pa.Table) -> pa.Table:
        return function(table)

    apply.__annotations__ = {"table": pa.Table, "return": pa.Table}
    return apply


def reduce_table(
    spark: SparkSession, job: ReduceJob, run_id: str
) -> tuple[dict[str, str], int, dict[str, str]]:
    """Write the table-level files of ``job.partitions``; returns their paths, the bytes
    written and the group cache (key -> file) the next incremental reduction can reuse;
    ``job.cache`` is the previous version's."""
    if fits_one_task(len(job.partitions), len(job.columns)):
        return reduce_in_one_task(spark, job, run_id)
    bins = job.bins
    parallelism = max(2, default_parallelism(spark))
    groups = GroupCache(job, f"table/{run_id}/groups")
    count = len(groups.members)
    frame = spark.range(0, count, 1, numPartitions=max(1, min(count, 2 * parallelism)))

    clock = Clock()
    state_rows = (
        frame.mapInArrow(
            functools.partial(_cached_states, groups, groups.enabled), result_schema(STATE_SCHEMA)
        )
        .groupBy("column_index")
        .applyInArrow(_grouped(functools.partial(merge_states, job)), result_schema(STATE_SCHEMA))
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
                functools.partial(_cached_histograms, groups, incomplete),
                result_schema(STATE_SCHEMA),
            )
            .groupBy("column_index")
            .applyInArrow(_grouped(sum_histograms), result_schema(STATE_SCHEMA))
            .collect()
        )
        rebinned = {r["column_index"]: np.frombuffer(r["state"], dtype=np.float64) for r in rows}
        clock.lap("histograms")

    incomplete_columns = np.array(
        [not states[i].frequencies_complete for i in range(len(job.columns))], dtype=bool
    )
    grouped = _grouped_frequencies(frame, groups, incomplete_columns)
    finalized = grouped.groupBy("column_index").applyInArrow(
        _grouped(functools.partial(finalize_column, job, states, grids)),
        result_schema(FREQUENCY_GROUP_SCHEMA),
    )
    files = layout.table_files(run_id)
    written = (
        finalized.repartition(1)
        .mapInArrow(
            functools.partial(
                _write_table_and_index,
                groups,
                (job, states, grids, rebinned, files),
                layout.partition_index_file(run_id),
            ),
            result_schema("bytes_written long"),
        )
        .collect()
    )
    clock.lap("frequencies and write")
    used = groups.expected(incomplete, incomplete_columns)
    used.update(groups.expected_index())
    return files, sum(r["bytes_written"] for r in written), used


def _cached_states(
    groups: GroupCache, index_parts: bool, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Stage 1 of the staged reduction: this task's groups' scalar states, merged; with
    ``index_parts``, each group's partition index part is cached too (for the last stage)."""
    for batch in batches:
        merged: dict[int, ScalarState] = {}
        for group in batch.column(0).to_pylist():
            groups.merge_states(merged, groups.states(groups.members[group]))
            if index_parts:
                groups.ensure_index_part(groups.members[group])
        if merged:
            yield pa.RecordBatch.from_pydict(
                {
                    "column_index": pa.array(list(merged), pa.int32()),
                    "state": pa.array(
                        [pickle.dumps(s, protocol=5) for s in merged.values()], pa.binary()
                    ),
                }
            )


def _write_table_and_index(
    groups: GroupCache, arguments: tuple, index_file: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The last stage: the three table files (``write_table_files``), then the partition
    index from the parts stage 1 cached."""
    written = 0
    for batch in write_table_files(*arguments, batches):
        written += batch.column(0)[0].as_py()
    written += write_partition_index(groups, index_file)
    yield pa.RecordBatch.from_pydict({"bytes_written": pa.array([written], pa.int64())})


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
        functools.partial(_cached_frequency_rows, groups, incomplete),
        result_schema(FREQUENCY_ROW_SCHEMA),
    )
    return rows.groupBy("column_index", "value").agg(
        F.sum("count").alias("total"),
        F.sum("bound").alias("bound_present"),
        F.flatten(F.collect_list(F.coalesce("holder_list", F.array().cast("array<long>")))).alias(
            "holders"
        ),
    )
