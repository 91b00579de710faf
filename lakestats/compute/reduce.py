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

import dataclasses
import functools
import hashlib
import json
import math
import pickle
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakestats import fs
from lakestats.stats.accumulator import ColumnResult
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.table_merge import (
    HOLDER_SHIFT,
    FrequencyResult,
    Grid,
    ScalarState,
    finalize_frequencies,
    fold_statistics,
    rebin,
    table_histogram,
)
from lakestats.store import layout, schemas, writer
from lakestats.store.manifest import PartitionEntry
from lakestats.store.reader import parse_type

STATE_SCHEMA = "column_index int, state binary"
SCALAR_FIELDS = [
    "row_count",
    "null_count",
    "nan_count",
    "distinct_count",
    "all_distinct",
    "min",
    "max",
    "sum",
    "mean",
    "variance",
    "min_length",
    "avg_length",
    "max_length",
    "true_count",
    "frequencies_count",
    "frequencies_min",
    "histogram_lower",
    "histogram_width",
    "histogram_bins",
    "hll_sketch",
    "kll_sketch",
]
FREQUENCY_ROW_SCHEMA = (
    "column_index int, value binary, count long, bound long, holder_list array<long>"
)
CATEGORICAL = (Kind.STRING, Kind.BOOLEAN, Kind.BINARY)
"""Columns whose table-level frequencies say which partitions hold each value."""
FREQUENCY_GROUP_SCHEMA = "column_index int, payload binary"


@dataclass
class ReduceJob:
    root: str
    s3: fs.S3Options | None
    partitions: list[PartitionEntry]
    columns: list[dict[str, str]]
    bins: int
    max_frequencies: int
    statistics: list = field(default_factory=list)  # user-defined SummaryStatistic
    cache: dict[str, str] = field(default_factory=dict)  # group cache key -> relative path

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
        """Every partition of this (sub-)job: the stage functions fold one group each."""
        return list(range(len(self.partitions)))

    def read(self, entry: PartitionEntry, kind: str, columns: list[str] | None = None) -> pa.Table:
        filesystem, path = fs.resolve(layout.absolute(self.root, entry.files[kind]), self.s3)
        with filesystem.open_input_file(path) as handle:
            return pq.ParquetFile(handle, pre_buffer=True).read(columns=columns, use_threads=False)

    def dtype(self, index: int) -> pa.DataType:
        return parse_type(self.columns[index]["type"])


def _states(
    job: ReduceJob,
    batches: Iterator[pa.RecordBatch],
    histogram_rows: dict[int, pa.Table] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Fold the groups' statistics files into one ``ScalarState`` per column; with
    ``histogram_rows``, also keep each partition's histogram fields (stage 2 needs them)."""
    names = [c["name"] for c in job.columns]
    texts = [c["type"] for c in job.columns]
    types = [job.dtype(i) for i in range(len(job.columns))]
    wanted = [*SCALAR_FIELDS, *(s.name for s in job.statistics)]
    for batch in batches:
        for group in batch.column(0).to_pylist():
            members = job.group(group)
            if not members:
                continue
            states: list[ScalarState] = []
            for start in range(0, len(members), FOLD_BATCH):
                tables = [
                    job.read(job.partitions[p], "statistics", wanted)
                    for p in members[start : start + FOLD_BATCH]
                ]
                folded = fold_statistics(tables, names, texts, types)
                if histogram_rows is not None:
                    for p, table in zip(members[start : start + FOLD_BATCH], tables, strict=True):
                        histogram_rows[p] = table.select(HISTOGRAM_FIELDS)
                if job.statistics:
                    for table in tables:
                        for state, row in zip(folded, table.to_pylist(), strict=True):
                            job.fold_custom(state, row)
                if not states:
                    states = folded
                else:
                    for mine, theirs in zip(states, folded, strict=True):
                        mine.merge(theirs)
                        if job.statistics:
                            job.fold_custom(mine, theirs.custom)
            yield pa.RecordBatch.from_pydict(
                {
                    "column_index": pa.array(range(len(states)), pa.int32()),
                    "state": pa.array([pickle.dumps(s, protocol=5) for s in states], pa.binary()),
                }
            )


FOLD_BATCH = 500
"""Partitions folded column-wise at once (bounds the memory of one task)."""


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


HISTOGRAM_FIELDS = ["max", "histogram_lower", "histogram_width", "histogram_bins"]


def _histograms(
    job: ReduceJob,
    grids: dict[int, Grid],
    batches: Iterator[pa.RecordBatch],
    histogram_rows: dict[int, pa.Table] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Re-bin the groups' partition histograms onto ``grids``; ``histogram_rows`` (from
    ``_states``) saves reading every ``statistics.parquet`` again."""
    for batch in batches:
        for group in batch.column(0).to_pylist():
            sums = {i: np.zeros(g.bins) for i, g in grids.items()}
            for p in job.group(group):
                entry = job.partitions[p]
                rows = (
                    histogram_rows[p]
                    if histogram_rows is not None and p in histogram_rows
                    else job.read(entry, "statistics", HISTOGRAM_FIELDS)
                ).to_pylist()
                names = [job.columns[i]["name"] for i in grids]
                wanted = [n for i, n in zip(grids, names, strict=True) if rows[i]["histogram_bins"]]
                counts = job.read(entry, "histograms", wanted)
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


def _frequency_rows(
    job: ReduceJob, incomplete: np.ndarray, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Every partition's frequency rows, combined per (column, value) inside the task.

    Totals and bounds are summed as partitions are read; for categorical columns each
    value also keeps its holders (partition index and count, packed in one int64)."""
    meta = ["distinct_count", "frequencies_count", "frequencies_min", "all_distinct"]
    categorical = (
        np.array(
            [kind_of(job.dtype(i)) in CATEGORICAL for i in range(len(job.columns))], dtype=bool
        )
        & ~incomplete
    )  # "which partitions hold v" is recorded only where it is exact
    for batch in batches:
        for group in batch.column(0).to_pylist():
            combined: pa.Table | None = None
            pending: list[pa.Table] = []
            holders: list[pa.Table] = []
            slack = np.zeros(len(job.columns), dtype=np.int64)
            for p in job.group(group):
                entry = job.partitions[p]
                frequencies = job.read(entry, "frequencies", ["column_index", "value", "frequency"])
                rows = job.read(entry, "statistics", meta).to_pylist()
                bounds = np.zeros(len(rows), dtype=np.int64)
                for i, row in enumerate(rows):
                    distinct = row["distinct_count"]
                    if distinct is not None and (row["frequencies_count"] or 0) < distinct:
                        bounds[i] = 1 if row["all_distinct"] else (row["frequencies_min"] or 0)
                # before skipping a partition that listed nothing: its unlisted values
                # (all distinct) still bound every value's count from above
                slack += bounds
                if frequencies.num_rows == 0:
                    continue
                index = frequencies.column("column_index").to_numpy(zero_copy_only=False)
                counts = frequencies.column("frequency").to_numpy(zero_copy_only=False)
                pending.append(
                    pa.table(
                        {
                            "column_index": frequencies.column("column_index"),
                            "value": frequencies.column("value"),
                            "count": frequencies.column("frequency"),
                            "bound": pa.array(bounds[index]),
                        }
                    )
                )
                keep = categorical[index]
                if keep.any():
                    packed = (np.int64(p) << HOLDER_SHIFT) | counts[keep].astype(np.int64)
                    holders.append(
                        pa.table(
                            {
                                "column_index": pa.array(index[keep]),
                                "value": frequencies.column("value").filter(pa.array(keep)),
                                "holder": pa.array(packed),
                            }
                        )
                    )
                if sum(t.num_rows for t in pending) > COMBINE_ROWS:
                    combined = _combine([combined, *pending] if combined else pending)
                    pending = []
            if pending:
                combined = _combine([combined, *pending] if combined else pending)
            if combined is None:
                combined = pa.table(
                    {
                        "column_index": pa.array([], pa.int32()),
                        "value": pa.array([], pa.binary()),
                        "count": pa.array([], pa.int64()),
                        "bound": pa.array([], pa.int64()),
                    }
                )
            combined = _prune(combined, incomplete, slack, 2 * job.max_frequencies)
            # holder lists travel as separate rows (count 0); Spark's groupBy joins them
            yield from combined.append_column(
                "holder_list", pa.nulls(combined.num_rows, pa.list_(pa.int64()))
            ).to_batches()
            if holders:
                lists = (
                    pa.concat_tables(holders)
                    .group_by(["column_index", "value"])
                    .aggregate([("holder", "list")])
                )
                zeros = pa.array(np.zeros(lists.num_rows, dtype=np.int64))
                yield from pa.table(
                    {
                        "column_index": lists.column("column_index"),
                        "value": lists.column("value"),
                        "count": zeros,
                        "bound": zeros,
                        "holder_list": lists.column("holder_list"),
                    }
                ).to_batches()


COMBINE_ROWS = 2_000_000


def _prune(combined: pa.Table, incomplete: np.ndarray, slack: np.ndarray, keep: int) -> pa.Table:
    """Keep a task's ``keep`` most frequent candidates of each incomplete column.

    Bounds stay sound: for a value this task did not keep, its count here is at most
    ``V`` (the largest upper bound among the values dropped, or the task's slack for
    values no partition listed). Kept rows carry ``bound = slack - bound_present - V`` and
    one row with a null value carries ``V``, so that after Spark sums them per value the
    upper bound is ``total + sum(bound) + sum(V)`` (see ``finalize_frequencies``).
    """
    index = combined.column("column_index").to_numpy(zero_copy_only=False).astype(np.int64)
    counts = combined.column("count").to_numpy(zero_copy_only=False).astype(np.int64)
    present = combined.column("bound").to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.lexsort((-counts, index))  # by column, then decreasing count
    sorted_index = index[order]
    starts = np.searchsorted(sorted_index, sorted_index, side="left")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - starts
    target = incomplete[index]
    dropped = target & (rank >= keep)
    upper = counts + slack[index] - present
    ceiling = slack.astype(np.int64).copy()
    if dropped.any():
        np.maximum.at(ceiling, index[dropped], upper[dropped])
    bound = np.where(target, slack[index] - present - ceiling[index], present)
    kept = pa.array(~dropped)
    table = combined.set_column(3, "bound", pa.array(bound)).filter(kept)
    columns = np.nonzero(incomplete)[0]
    markers = pa.table(
        {
            "column_index": pa.array(columns.astype(np.int32)),
            "value": pa.nulls(len(columns), pa.binary()),
            "count": pa.array(np.zeros(len(columns), dtype=np.int64)),
            "bound": pa.array(ceiling[columns]),
        }
    )
    return pa.concat_tables([table.cast(markers.schema), markers])


def _combine(tables: list[pa.Table]) -> pa.Table:
    grouped = (
        pa.concat_tables(tables)
        .group_by(["column_index", "value"])
        .aggregate([("count", "sum"), ("bound", "sum")])
    )
    return grouped.rename_columns(["column_index", "value", "count", "bound"]).select(
        ["column_index", "value", "count", "bound"]
    )


def _finalize_column(
    job: ReduceJob, states: dict[int, ScalarState], grids: dict[int, Grid], table: pa.Table
) -> pa.Table:
    index = int(table.column("column_index")[0].as_py())
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
        .applyInArrow(_grouped(functools.partial(_merge_states, job)), STATE_SCHEMA)
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
            .applyInArrow(_grouped(_sum_histograms), STATE_SCHEMA)
            .collect()
        )
        rebinned = {r["column_index"]: np.frombuffer(r["state"], dtype=np.float64) for r in rows}
        clock.lap("histograms")

    incomplete_columns = np.array(
        [not states[i].frequencies_complete for i in range(len(columns))], dtype=bool
    )
    grouped = _grouped_frequencies(frame, groups, incomplete_columns)
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


class Clock:
    """Stage timings on stderr when ``LAKESTATS_TIMINGS`` is set (for benchmarks)."""

    def __init__(self) -> None:
        import os
        import time

        self._enabled = bool(os.environ.get("LAKESTATS_TIMINGS"))
        self._time = time.perf_counter
        self._last = self._time()

    def lap(self, label: str) -> None:
        now = self._time()
        if self._enabled:
            import sys

            print(f"[lakestats] {label}: {now - self._last:.2f} s", file=sys.stderr)
        self._last = now


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
    grouped = _group_frequency_rows(
        [groups.frequency_rows(members, incomplete_columns) for members in groups.members]
    )
    index = grouped.column("column_index").to_numpy(zero_copy_only=False)
    order = np.argsort(index, kind="stable")
    grouped, index = grouped.take(pa.array(order)), index[order]
    bounds = np.flatnonzero(np.diff(index)) + 1
    finalized = [
        _finalize_column(job, states, grids, grouped.slice(start, stop - start))
        for start, stop in zip([0, *bounds.tolist()], [*bounds.tolist(), len(index)], strict=True)
        if stop > start
    ]
    payloads = [t.to_batches()[0] for t in finalized]
    for batch in _write(job, states, grids, rebinned, files, iter(payloads)):
        yield pa.RecordBatch.from_pydict(
            {
                "bytes_written": batch.column(0),
                "cache": pa.array([json.dumps(groups.written)]),
            }
        )


_ONE = [pa.RecordBatch.from_pydict({"id": pa.array([0], pa.int64())})]
"""The single group a sub-job of one group's partitions folds."""

FREQUENCY_ROW_ARROW = pa.schema(
    [
        ("column_index", pa.int32()),
        ("value", pa.binary()),
        ("count", pa.int64()),
        ("bound", pa.int64()),
        ("holder_list", pa.list_(pa.int64())),
    ]
)


CACHE_FORMAT = 2
"""Part of every cache key: bump it when cached states, histograms or frequency rows change
meaning (``ScalarState`` fields, pruning, holder packing), so older caches are not reused."""

MAX_GROUPS = 32
"""At most this many cached groups: every group adds its pruned frequency candidates (up to
2 x max_frequencies per incomplete column) to the final merge, so more, smaller groups make
a changed partition cheaper to recompute but every reduction dearer to merge."""


class GroupCache:
    """Groups of partitions and their cached intermediate results.

    A group's scalar states depend only on its partitions' statistics files; its re-binned
    histograms also on the table grids; its frequency rows also on which columns are
    incomplete table-wide (pruning and holders). Cache keys
    hash exactly those inputs, so a cached result is used only where recomputing it would
    give the same bytes. Holders are cached with positions inside the group and mapped to
    the version's partition positions on load. User-defined statistics disable the cache
    (their merge functions may have changed).
    """

    def __init__(self, job: ReduceJob, cache_dir: str) -> None:
        self.job = job
        self.cache_dir = cache_dir
        self.enabled = not job.statistics
        self.written: dict[str, str] = {}
        count = len(job.partitions)
        buckets = 1 << max(0, round(math.log2(math.sqrt(count)))) if count else 1
        buckets = min(buckets, MAX_GROUPS)
        members: list[list[int]] = [[] for _ in range(buckets)]
        for i, entry in enumerate(job.partitions):
            members[zlib.crc32(entry.path.encode()) % buckets].append(i)
        self.members = [m for m in members if m]

    def _key(self, kind: str, members: list[int], extra: object = None) -> str:
        entries = [[self.job.partitions[i].path, self.job.partitions[i].files] for i in members]
        columns = [[c["name"], c["type"]] for c in self.job.columns]
        text = json.dumps([CACHE_FORMAT, kind, entries, columns, self.job.max_frequencies, extra])
        return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}"

    def _states_key(self, members: list[int]) -> str:
        return self._key("states", members)

    def _histograms_key(self, members: list[int], grids: dict[int, Grid]) -> str:
        return self._key("histograms", members, [[i, repr(g)] for i, g in sorted(grids.items())])

    def _frequencies_key(self, members: list[int], incomplete: np.ndarray) -> str:
        return self._key("frequencies", members, incomplete.tolist())

    def expected(self, grids: dict[int, Grid], incomplete: np.ndarray) -> dict[str, str]:
        """On the driver: the cache entries a reduction with these inputs used or wrote
        (a reused entry keeps its old file; a new one is under this run's directory)."""
        if not self.enabled:
            return {}
        keys = []
        for members in self.members:
            keys += [self._states_key(members), self._frequencies_key(members, incomplete)]
            if grids:
                keys.append(self._histograms_key(members, grids))
        return {k: self.job.cache.get(k, f"{self.cache_dir}/{k}") for k in keys}

    def merge_states(self, into: dict[int, ScalarState], more: dict[int, ScalarState]) -> None:
        for index, state in more.items():
            if index not in into:
                into[index] = state
            else:
                into[index].merge(state)
                self.job.fold_custom(into[index], state.custom)

    def _sub_job(self, members: list[int]) -> ReduceJob:
        return dataclasses.replace(self.job, partitions=[self.job.partitions[i] for i in members])

    def _load(self, key: str, this_run: bool = False) -> bytes | None:
        """A cached entry from the previous version (or, with ``this_run``, one an earlier
        stage of this reduction wrote); None when there is none."""
        if not self.enabled:
            return None
        candidates = [self.job.cache.get(key)] + ([f"{self.cache_dir}/{key}"] if this_run else [])
        for relative in filter(None, candidates):
            try:
                data = fs.read_bytes(layout.absolute(self.job.root, relative), self.job.s3)
            except (OSError, FileNotFoundError):
                continue  # expired or never finished: recompute
            self.written[key] = relative
            return data
        return None

    def _save(self, key: str, data: bytes) -> None:
        if not self.enabled:
            return
        relative = f"{self.cache_dir}/{key}"
        fs.write_bytes_atomic(layout.absolute(self.job.root, relative), data, self.job.s3)
        self.written[key] = relative

    def states(self, members: list[int]) -> dict[int, ScalarState]:
        key = self._states_key(members)
        data = self._load(key)
        if data is None:
            rows: dict[int, pa.Table] = {}
            batch = next(_states(self._sub_job(members), iter(_ONE), rows))
            states = dict(
                zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True)
            )
            data = pickle.dumps({"states": states, "histogram_rows": rows}, protocol=5)
            self._save(key, data)
        return {i: pickle.loads(b) for i, b in pickle.loads(data)["states"].items()}

    def histograms(self, members: list[int], grids: dict[int, Grid]) -> dict[int, np.ndarray]:
        """The group's partition histograms re-binned onto the table grids and summed."""
        key = self._histograms_key(members, grids)
        data = self._load(key)
        if data is None:
            cached = self._load(self._states_key(members), this_run=True)
            rows = pickle.loads(cached)["histogram_rows"] if cached else None
            batch = next(_histograms(self._sub_job(members), grids, iter(_ONE), rows))
            data = pickle.dumps(
                dict(zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True)),
                protocol=5,
            )
            self._save(key, data)
        return {i: np.frombuffer(b, dtype=np.float64) for i, b in pickle.loads(data).items()}

    def frequency_rows(self, members: list[int], incomplete: np.ndarray) -> pa.Table:
        key = self._frequencies_key(members, incomplete)
        data = self._load(key)
        if data is None:
            batches = list(_frequency_rows(self._sub_job(members), incomplete, iter(_ONE)))
            table = pa.Table.from_batches(
                [b.cast(FREQUENCY_ROW_ARROW) for b in batches], schema=FREQUENCY_ROW_ARROW
            )
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink, compression="zstd")
            self._save(key, sink.getvalue().to_pybytes())
        else:
            table = pq.read_table(pa.BufferReader(data))
        return _holders_to_version(table, members)


def _holders_to_version(table: pa.Table, members: list[int]) -> pa.Table:
    """Holder lists packed with positions inside a group, repacked with the version's."""
    lists = table.column("holder_list").combine_chunks()
    if lists.null_count == len(lists):
        return table
    offsets = lists.offsets.to_numpy() - lists.offsets[0].as_py()
    packed = pc.list_flatten(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    low = packed & ((np.int64(1) << HOLDER_SHIFT) - 1)
    position = np.asarray(members, dtype=np.int64)[packed >> HOLDER_SHIFT]
    repacked = pa.ListArray.from_arrays(
        pa.array(offsets.astype(np.int32)),
        pa.array((position << HOLDER_SHIFT) | low),
        mask=lists.is_null(),
    )
    return table.set_column(table.schema.get_field_index("holder_list"), "holder_list", repacked)


def _group_frequency_rows(tables: list[pa.Table]) -> pa.Table:
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
