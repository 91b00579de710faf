"""What one group of partitions contributes to the table-level files, and the final steps.

Each ``group_*`` function reads a group's partition files (``statistics``, ``histograms``,
``frequencies``) and returns its partial result: merged ``ScalarState``s, histograms
re-binned onto the table grid, frequency rows combined and pruned with sound bounds.
``finalize_column`` and ``write_table_files`` turn the merged results into the three
table-level files. ``compute/reduce.py`` runs them on Spark; ``compute/group_cache.py``
caches them per group.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.stats.accumulator import ColumnResult
from lakestats.stats.derived_sketches import FREQUENCY_COLUMNS, restore_sketches
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
from lakestats.stats.top_values import top_set
from lakestats.store import layout, schemas, writer
from lakestats.store.manifest import PartitionEntry
from lakestats.store.reader import parse_type
from lakestats.threads import prefetch, thread_map

T = TypeVar("T")

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
    # files read ahead in the task (``reduce_local.preload``), by path relative to the root:
    # whole partition files and group cache entries
    tables: dict[str, pa.Table] = field(default_factory=dict, repr=False)
    blobs: dict[str, bytes] = field(default_factory=dict, repr=False)
    # group states cache entries read ahead, unpickled once (by cache key)
    ready_states: dict[str, dict] = field(default_factory=dict, repr=False)

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
        whole = self.tables.get(entry.files[kind])
        if whole is not None:  # absent columns are left out, as a Parquet read does
            if columns is None:
                return whole
            return whole.select([c for c in columns if c in whole.schema.names])
        return self.read_file(entry.files[kind], columns)

    def read_file(self, relative: str, columns: list[str] | None = None) -> pa.Table:
        filesystem, path = fs.resolve(layout.absolute(self.root, relative), self.s3)
        with filesystem.open_input_file(path) as handle:
            return pq.ParquetFile(handle, pre_buffer=True).read(columns=columns, use_threads=False)

    def dtype(self, index: int) -> pa.DataType:
        return parse_type(self.columns[index]["type"])


def group_states(
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
                tables = list(
                    prefetch(
                        lambda p: restore_sketches(
                            job.read(job.partitions[p], "statistics", wanted),
                            lambda: job.read(job.partitions[p], "frequencies", FREQUENCY_COLUMNS),
                            types,
                        ),
                        members[start : start + FOLD_BATCH],
                    )
                )
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


def merge_states(job: ReduceJob, table: pa.Table) -> pa.Table:
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


def group_histograms(
    job: ReduceJob,
    grids: dict[int, Grid],
    batches: Iterator[pa.RecordBatch],
    histogram_rows: dict[int, pa.Table] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Re-bin the groups' partition histograms onto ``grids``; ``histogram_rows`` (from
    ``group_states``) saves reading every ``statistics.parquet`` again."""
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


def sum_histograms(table: pa.Table) -> pa.Table:
    total = sum(np.frombuffer(b, dtype=np.float64) for b in table.column("state").to_pylist())
    return pa.table(
        {
            "column_index": table.column("column_index").slice(0, 1),
            "state": pa.array([np.asarray(total).tobytes()], pa.binary()),
        }
    )


def group_frequency_rows(
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
            members = job.group(group)

            def read(p: int) -> tuple[pa.Table, list[dict]]:
                entry = job.partitions[p]
                return (
                    job.read(entry, "frequencies", ["column_index", "value", "frequency"]),
                    job.read(entry, "statistics", meta).to_pylist(),
                )

            for p, (frequencies, rows) in zip(members, prefetch(read, members), strict=True):
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
            combined = _prune(combined, incomplete, slack, group_keep(job.max_frequencies))
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

KEEP_FACTOR = 1.5
"""A group keeps ``KEEP_FACTOR x max_frequencies`` candidates of each incomplete column
(Elasticsearch's default ``shard_size`` is the same 1.5 x). Measured on Zipf tables
(``bench/keep_factor.py``): 1.5 x bounds the top values as tightly as 2 x (widths within
1 %), 1 x loosens them by 20-25 %; every candidate kept costs the final merge a row."""


def group_keep(max_frequencies: int) -> int:
    return int(KEEP_FACTOR * max_frequencies)


def _prune(combined: pa.Table, incomplete: np.ndarray, slack: np.ndarray, keep: int) -> pa.Table:
    """Keep a group's ``keep`` most frequent candidates of each incomplete column.

    Bounds stay sound: for a value this group did not keep, its count here is at most
    ``V`` (the largest upper bound among the values dropped, or the group's slack for
    values no partition listed). Kept rows carry ``bound = slack - bound_present - V`` and
    one row with a null value carries ``V``, so that after the rows are summed per value
    the upper bound is ``total + sum(bound) + sum(V)`` (see ``finalize_frequencies``).
    ``combined`` has one row per (column, value). Candidates rank by count, ties by value
    (as the stored frequencies do), so which are kept does not depend on row order: a group
    combined in any order, or incrementally, keeps the same rows.
    """
    ceiling = slack.astype(np.int64).copy()  # batches hold disjoint columns

    def prune_batch(batch: tuple[pa.Table, bool]) -> pa.Table:
        rows, one_column = batch
        index = rows.column("column_index").to_numpy(zero_copy_only=False).astype(np.int64)
        counts = rows.column("count").to_numpy(zero_copy_only=False).astype(np.int64)
        present = rows.column("bound").to_numpy(zero_copy_only=False).astype(np.int64)
        target = incomplete[index]
        over = incomplete & (np.bincount(index, minlength=len(incomplete)) > keep)
        at = np.flatnonzero(over[index])  # rows of the columns with more than ``keep``
        dropped = np.zeros(len(index), dtype=bool)
        if len(at):
            subset = rows if len(at) == len(index) else rows.take(pa.array(at))
            dropped[at] = ~_kept_rows(subset, index[at], counts[at], keep, one_column)
            upper = counts + slack[index] - present
            np.maximum.at(ceiling, index[dropped], upper[dropped])
        bound = np.where(target, slack[index] - present - ceiling[index], present)
        return rows.set_column(3, "bound", pa.array(bound)).filter(pa.array(~dropped))

    pruned = thread_map(prune_batch, column_batches(combined), weight=lambda b: len(b[0]))
    columns = np.nonzero(incomplete)[0]
    markers = pa.table(
        {
            "column_index": pa.array(columns.astype(np.int32)),
            "value": pa.nulls(len(columns), pa.binary()),
            "count": pa.array(np.zeros(len(columns), dtype=np.int64)),
            "bound": pa.array(ceiling[columns]),
        }
    )
    return pa.concat_tables([t.cast(markers.schema) for t in pruned] + [markers])


def _kept_rows(
    rows: pa.Table, index: np.ndarray, counts: np.ndarray, keep: int, one_column: bool
) -> np.ndarray:
    """Whether each row is among the ``keep`` first of its column by (count desc, value)."""
    kept = np.zeros(len(index), dtype=bool)
    if one_column:  # the k-th count found in O(n); values compared only among its ties
        kept[top_set(counts, rows.column("value"), keep)] = True
        return kept
    order = pc.sort_indices(
        rows,
        sort_keys=[("column_index", "ascending"), ("count", "descending"), ("value", "ascending")],
    ).to_numpy(zero_copy_only=False)
    sorted_index = index[order]
    rank = np.arange(len(order)) - np.searchsorted(sorted_index, sorted_index)
    kept[order] = rank < keep
    return kept


def _combine(tables: list[pa.Table]) -> pa.Table:
    """Rows summed per (column, value)."""

    def combine_batch(batch: tuple[pa.Table, bool]) -> pa.Table:
        rows, one_column = batch
        keys = ["value"] if one_column else ["column_index", "value"]
        grouped = rows.group_by(keys, use_threads=False).aggregate(
            [("count", "sum"), ("bound", "sum")]
        )
        index = (
            pa.array(np.full(grouped.num_rows, rows.column("column_index")[0].as_py(), np.int32))
            if one_column
            else grouped.column("column_index")
        )
        return pa.table(
            {
                "column_index": index,
                "value": grouped.column("value"),
                "count": grouped.column("count_sum"),
                "bound": grouped.column("bound_sum"),
            }
        )

    batches = column_batches(pa.concat_tables([t.cast(COMBINED_ARROW) for t in tables]))
    return pa.concat_tables(thread_map(combine_batch, batches, weight=lambda b: len(b[0])))


HEAVY_ROWS = 20_000
"""A column with this many rows is aggregated on its own (one hash table per column is
cheaper than one keyed on both); the others together (one aggregation, not one each)."""


def column_batches(rows: pa.Table) -> list[tuple[pa.Table, bool]]:
    """``rows`` in batches of disjoint columns, each with whether it holds one column."""
    parts = split_by_column(rows)
    heavy = [(p, True) for p in parts if p.num_rows >= HEAVY_ROWS]
    light = [p for p in parts if p.num_rows < HEAVY_ROWS]
    if len(light) == 1:
        heavy.append((light[0], True))
    elif light:
        heavy.append((pa.concat_tables(light), False))
    return heavy


COMBINED_ARROW = pa.schema(
    [
        ("column_index", pa.int32()),
        ("value", pa.binary()),
        ("count", pa.int64()),
        ("bound", pa.int64()),
    ]
)


def split_by_column(rows: pa.Table) -> list[pa.Table]:
    """One table per column index, in ascending column order, without copying: each run of
    rows with one column index is a slice, and a column's slices are its chunks."""
    index = rows.column("column_index").to_numpy(zero_copy_only=False)
    cuts = np.flatnonzero(np.diff(index)) + 1
    runs: dict[int, list[pa.Table]] = {}
    for start, stop in zip([0, *cuts.tolist()], [*cuts.tolist(), len(index)], strict=True):
        if stop > start:
            runs.setdefault(int(index[start]), []).append(rows.slice(start, stop - start))
    return [pa.concat_tables(runs[c]) for c in sorted(runs)]


def finalize_column(
    job: ReduceJob, states: dict[int, ScalarState], grids: dict[int, Grid], table: pa.Table
) -> pa.Table:
    """``column_frequencies`` pickled, for Spark to carry to ``write_table_files``."""
    index, result = column_frequencies(job, states, grids, table)
    return pa.table(
        {
            "column_index": pa.array([index], pa.int32()),
            "payload": pa.array([pickle.dumps(result, protocol=5)], pa.binary()),
        }
    )


def column_frequencies(
    job: ReduceJob, states: dict[int, ScalarState], grids: dict[int, Grid], table: pa.Table
) -> tuple[int, FrequencyResult]:
    """One column's aggregated frequency rows finalized (its index and result)."""
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
    return index, result


def write_table_files(
    job: ReduceJob,
    states: dict[int, ScalarState],
    grids: dict[int, Grid],
    rebinned: dict[int, np.ndarray],
    files: dict[str, str],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """The last stage on Spark: the pickled ``finalize_column`` results, then the files."""
    frequencies: dict[int, FrequencyResult] = {}
    for batch in batches:
        for index, payload in zip(
            batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True
        ):
            frequencies[index] = pickle.loads(payload)
    written = write_tables(job, states, grids, rebinned, files, frequencies)
    yield pa.RecordBatch.from_pydict({"bytes_written": pa.array([written], pa.int64())})


def write_tables(
    job: ReduceJob,
    states: dict[int, ScalarState],
    grids: dict[int, Grid],
    rebinned: dict[int, np.ndarray],
    files: dict[str, str],
    frequencies: dict[int, FrequencyResult],
) -> int:
    """The three table-level files; the bytes written."""
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
    return writer.write_partition(
        results, custom, job.bins, uris, job.s3, frequencies=_concat(frequency_tables)
    )


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


FREQUENCY_ROW_ARROW = pa.schema(
    [
        ("column_index", pa.int32()),
        ("value", pa.binary()),
        ("count", pa.int64()),
        ("bound", pa.int64()),
        ("holder_list", pa.list_(pa.int64())),
    ]
)
