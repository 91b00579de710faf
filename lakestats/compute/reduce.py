"""The table-level reduction on Spark: partition files in, table files out, no data scan.

Stages (each over groups of partitions, so 10,000 partitions cost a handful of tasks):

1. scalars: every partition's ``statistics.parquet`` folded into one ``ScalarState`` per
   column per task, merged per column (``groupBy(column).applyInArrow``), collected (small);
2. histograms: for columns whose frequencies are incomplete, every partition histogram is
   re-binned onto the table grid and summed per column;
3. frequencies: every partition's ``frequencies.parquet`` rows, exactly aggregated by Spark
   (``groupBy(column, value)``: sum, and the per-partition counts), then finalized per
   column: exact distinct count, percentiles and histogram when complete, top values
   with bounds otherwise;
4. one task writes the three table-level files.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakestats import fs
from lakestats.stats.accumulator import ColumnResult
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.table_merge import (
    FrequencyResult,
    Grid,
    ScalarState,
    finalize_frequencies,
    rebin,
    table_histogram,
)
from lakestats.store import layout, schemas, writer
from lakestats.store.manifest import PartitionEntry
from lakestats.store.reader import parse_type

STATE_SCHEMA = "column_index int, state binary"
FREQUENCY_ROW_SCHEMA = "column_index int, value binary, partition_index int, count long, bound long"
FREQUENCY_GROUP_SCHEMA = "column_index int, payload binary"


@dataclass
class ReduceJob:
    root: str
    s3: fs.S3Options | None
    partitions: list[PartitionEntry]
    columns: list[dict[str, str]]
    bins: int
    max_frequencies: int
    groups: int
    statistics: list = field(default_factory=list)  # user-defined SummaryStatistic

    def fold_custom(self, state: ScalarState, row: dict[str, object]) -> None:
        """Merge user-defined statistics with their merge functions (null without one)."""
        for statistic in self.statistics:
            value = row.get(statistic.name)
            if statistic.name not in state.custom:
                state.custom[statistic.name] = value
            elif statistic.merge is None or value is None or state.custom[statistic.name] is None:
                state.custom[statistic.name] = None
            else:
                state.custom[statistic.name] = statistic.merge(state.custom[statistic.name], value)

    def group(self, index: int) -> list[int]:
        return list(range(index, len(self.partitions), self.groups))

    def read(self, entry: PartitionEntry, kind: str, columns: list[str] | None = None) -> pa.Table:
        filesystem, path = fs.resolve(layout.absolute(self.root, entry.files[kind]), self.s3)
        with filesystem.open_input_file(path) as handle:
            return pq.read_table(handle, columns=columns)

    def dtype(self, index: int) -> pa.DataType:
        return parse_type(self.columns[index]["type"])


def _states(job: ReduceJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for group in batch.column(0).to_pylist():
            states = [ScalarState(c["name"], c["type"]) for c in job.columns]
            types = [job.dtype(i) for i in range(len(job.columns))]
            for p in job.group(group):
                rows = job.read(job.partitions[p], "statistics").to_pylist()
                for state, row, dtype in zip(states, rows, types, strict=True):
                    state.add(row, dtype)
                    job.fold_custom(state, row)
            yield pa.RecordBatch.from_pydict(
                {
                    "column_index": pa.array(range(len(states)), pa.int32()),
                    "state": pa.array([pickle.dumps(s, protocol=5) for s in states], pa.binary()),
                }
            )


def _merge_states(job: ReduceJob, table: pa.Table) -> pa.Table:
    states = [pickle.loads(b) for b in table.column("state").to_pylist()]
    merged = states[0]
    for other in states[1:]:
        merged.merge(other)
        job.fold_custom(merged, other.custom)
    return pa.table(
        {
            "column_index": table.column("column_index").slice(0, 1),
            "state": pa.array([pickle.dumps(merged, protocol=5)], pa.binary()),
        }
    )


def _histograms(
    job: ReduceJob, grids: dict[int, Grid], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    fields = ["max", "histogram_lower", "histogram_width", "histogram_bins"]
    for batch in batches:
        for group in batch.column(0).to_pylist():
            sums = {i: np.zeros(g.bins) for i, g in grids.items()}
            for p in job.group(group):
                entry = job.partitions[p]
                rows = job.read(entry, "statistics", fields).to_pylist()
                names = [job.columns[i]["name"] for i in grids]
                counts = job.read(entry, "histograms", None)
                present = set(counts.column_names)
                for i, name in zip(grids, names, strict=True):
                    row = rows[i]
                    if not row["histogram_bins"] or name not in present:
                        continue
                    values = counts.column(name).to_numpy(zero_copy_only=False)
                    sums[i] += rebin(row, np.nan_to_num(values), grids[i], job.dtype(i))
            yield pa.RecordBatch.from_pydict(
                {
                    "column_index": pa.array(list(sums), pa.int32()),
                    "state": pa.array([s.tobytes() for s in sums.values()], pa.binary()),
                }
            )


def _sum_histograms(table: pa.Table) -> pa.Table:
    total = sum(np.frombuffer(b, dtype=np.float64) for b in table.column("state").to_pylist())
    return pa.table(
        {
            "column_index": table.column("column_index").slice(0, 1),
            "state": pa.array([np.asarray(total).tobytes()], pa.binary()),
        }
    )


def _frequency_rows(job: ReduceJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    meta = [
        "distinct_count",
        "frequencies_count",
        "frequencies_min",
        "all_distinct",
        "row_count",
        "null_count",
    ]
    for batch in batches:
        for group in batch.column(0).to_pylist():
            for p in job.group(group):
                entry = job.partitions[p]
                frequencies = job.read(entry, "frequencies", ["column_index", "value", "frequency"])
                if frequencies.num_rows == 0:
                    continue
                rows = job.read(entry, "statistics", meta).to_pylist()
                bounds = np.zeros(len(rows), dtype=np.int64)
                for i, row in enumerate(rows):
                    distinct = row["distinct_count"]
                    if distinct is not None and (row["frequencies_count"] or 0) < distinct:
                        bounds[i] = 1 if row["all_distinct"] else (row["frequencies_min"] or 0)
                index = frequencies.column("column_index").to_numpy(zero_copy_only=False)
                yield pa.RecordBatch.from_pydict(
                    {
                        "column_index": frequencies.column("column_index").combine_chunks(),
                        "value": frequencies.column("value").combine_chunks(),
                        "partition_index": pa.array(np.full(len(index), p, dtype=np.int32)),
                        "count": frequencies.column("frequency").combine_chunks(),
                        "bound": pa.array(bounds[index]),
                    }
                )


def _finalize_column(
    job: ReduceJob, states: dict[int, ScalarState], grids: dict[int, Grid], table: pa.Table
) -> pa.Table:
    index = int(table.column("column_index")[0].as_py())
    holders = table.column("holders").combine_chunks()
    offsets, flat = holders.offsets, holders.flatten()
    table = (
        table.drop_columns(["holders"])
        .append_column(
            "partition_ids", pa.ListArray.from_arrays(offsets, flat.field("partition_index"))
        )
        .append_column(
            "partition_id_counts", pa.ListArray.from_arrays(offsets, flat.field("count"))
        )
    )
    result = finalize_frequencies(
        index,
        job.columns[index]["name"],
        job.dtype(index),
        table,
        states[index],
        len(job.partitions),
        job.max_frequencies,
        grids.get(index),
    )
    return pa.table(
        {
            "column_index": pa.array([index], pa.int32()),
            "payload": pa.array([pickle.dumps(result, protocol=5)], pa.binary()),
        }
    )


def _write(
    job: ReduceJob,
    states: dict[int, ScalarState],
    grids: dict[int, Grid],
    rebinned: dict[int, np.ndarray],
    files: dict[str, str],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    frequencies: dict[int, FrequencyResult] = {}
    for batch in batches:
        for index, payload in zip(
            batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True
        ):
            frequencies[index] = pickle.loads(payload)
    results: list[ColumnResult] = []
    frequency_tables = []
    for index in range(len(job.columns)):
        dtype = job.dtype(index)
        state = states[index]
        row = state.row(dtype)
        row["column_path"] = None
        row.update(state.custom)
        merged = frequencies.get(index)
        if merged is not None:
            row.update(merged.row)
            if merged.table.num_rows:
                frequency_tables.append(merged.table)
        elif kind_of(dtype) not in (Kind.NESTED, Kind.NULL, Kind.OTHER):
            _no_frequencies(row, state)
        fields, counts = table_histogram(
            state,
            grids.get(index),
            rebinned.get(index),
            merged.histogram if merged else None,
            dtype,
        )
        row.update(fields)
        results.append(ColumnResult(row, histogram=counts))
    uris = {k: layout.absolute(job.root, v) for k, v in files.items()}
    custom = [(s.name, s.result_type) for s in job.statistics]
    written = writer.write_partition(
        results, custom, job.bins, uris, job.s3, frequencies=_concat(frequency_tables)
    )
    yield pa.RecordBatch.from_pydict({"bytes_written": pa.array([written], pa.int64())})


def _no_frequencies(row: dict[str, object], state: ScalarState) -> None:
    """A column no partition stored frequency rows for (all values null or all distinct)."""
    non_null = state.row_count - state.null_count
    row["frequencies_count"] = 0
    row["frequencies_truncated"] = False
    row["frequencies_exact"] = state.frequencies_complete
    if state.frequencies_complete:
        row.update(
            distinct_count=0,
            distinct_count_lower=0,
            distinct_count_upper=0,
            distinct_count_exact=True,
            all_distinct=False,
        )
    elif non_null and row.get("distinct_count_upper") == non_null:
        row["all_distinct"] = True


def _concat(tables: list[pa.Table]) -> pa.Table:
    if not tables:
        return schemas.TABLE_FREQUENCIES_SCHEMA.empty_table()
    return pa.concat_tables([t.cast(schemas.TABLE_FREQUENCIES_SCHEMA) for t in tables])


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
) -> tuple[dict[str, str], int]:
    """Write the table-level files of ``partitions``; returns their paths and bytes written."""
    parallelism = max(2, spark.sparkContext.defaultParallelism)
    groups = max(1, min(len(partitions), 2 * parallelism))
    job = ReduceJob(
        root, s3, partitions, columns, bins, max_frequencies, groups, list(statistics or [])
    )
    frame = spark.range(0, groups, 1, numPartitions=groups)

    state_rows = (
        frame.mapInArrow(functools.partial(_states, job), STATE_SCHEMA)
        .groupBy("column_index")
        .applyInArrow(_grouped(functools.partial(_merge_states, job)), STATE_SCHEMA)
        .collect()
    )
    states = {row["column_index"]: pickle.loads(row["state"]) for row in state_rows}
    grids = {}
    for index, state in states.items():
        grid = state.grid(job.dtype(index), bins)
        if grid is not None:
            grids[index] = grid
    incomplete = {i: g for i, g in grids.items() if not states[i].frequencies_complete}
    rebinned: dict[int, np.ndarray] = {}
    if incomplete:
        rows = (
            frame.mapInArrow(functools.partial(_histograms, job, incomplete), STATE_SCHEMA)
            .groupBy("column_index")
            .applyInArrow(_grouped(_sum_histograms), STATE_SCHEMA)
            .collect()
        )
        rebinned = {r["column_index"]: np.frombuffer(r["state"], dtype=np.float64) for r in rows}

    grouped = _grouped_frequencies(frame, job)
    finalized = grouped.groupBy("column_index").applyInArrow(
        _grouped(functools.partial(_finalize_column, job, states, grids)),
        FREQUENCY_GROUP_SCHEMA,
    )
    files = layout.table_files(run_id)
    written = (
        finalized.repartition(1)
        .mapInArrow(
            functools.partial(_write, job, states, grids, rebinned, files), "bytes_written long"
        )
        .collect()
    )
    return files, sum(r["bytes_written"] for r in written)


def _grouped_frequencies(frame: DataFrame, job: ReduceJob) -> DataFrame:
    rows = frame.mapInArrow(functools.partial(_frequency_rows, job), FREQUENCY_ROW_SCHEMA)
    return rows.groupBy("column_index", "value").agg(
        F.sum("count").alias("total"),
        F.sum("bound").alias("bound_present"),
        F.collect_list(F.struct("partition_index", "count")).alias("holders"),
    )
