"""What one group of partitions contributes to the table level: plain functions of its members.

Contract: each ``fold_*`` reads the partition files of a group (``members``: positions in
``job.partitions``) and returns the group's partial result: ``fold_states`` one merged
``ScalarState`` per column (and each partition's histogram fields, which
``fold_histograms`` needs again), ``fold_histograms`` the partition histograms re-binned onto
the table grids and summed (the frequency rows: ``frequency_rows.py``). ``merge_state``
merges two partial states of one column. Every fold reads through a ``ReadAhead``.
Positions inside the group key what ``cache.py`` stores, so a cached group is valid in any
version that has the same members.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import datasketches as ds
import numpy as np
import pyarrow as pa

from lakestats.compute.reduce.job import ReduceJob
from lakestats.stats.derived_sketches import (
    FREQUENCY_COLUMNS,
    listed_all,
    missing_sketches,
    rebuilt_sketches,
    restore_sketches,
)
from lakestats.stats.kinds import Kind
from lakestats.stats.quantile_sketch import QuantileSketch
from lakestats.stats.rebin import Grid, rebin, rebin_numbers, storage_numbers
from lakestats.stats.scalar_state import ScalarState
from lakestats.stats.table_fold import fold_statistics
from lakestats.store.manifest import PartitionEntry
from lakestats.store.partition_rows import ROW_KINDS
from lakestats.threads import prefetch

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
"""The ``statistics.parquet`` fields the scalar states are folded from."""
SKETCHES = ["hll_sketch", "kll_sketch"]
HISTOGRAM_FIELDS = ["max", "histogram_lower", "histogram_width", "histogram_bins"]
CATEGORICAL = (Kind.STRING, Kind.BOOLEAN, Kind.BINARY)
"""Columns whose table-level frequencies say which partitions hold each value."""
FOLD_BATCH = 500
"""Partitions folded column-wise at once (bounds the memory of one task)."""
COMBINE_ROWS = 2_000_000
"""A group's frequency rows are combined whenever this many are pending (bounds memory)."""


@dataclass
class GroupStates:
    """A group's scalar states (by column) and each partition's histogram fields (by
    position inside the group), which re-binning reads instead of the files again."""

    states: dict[int, ScalarState]
    histogram_rows: dict[int, pa.Table]


@dataclass
class ReadAhead:
    """What a task read before its fold needed it (by path under the root; states by cache
    key; ``cache.preload``): ``read`` answers from there, else from the store, alike."""

    job: ReduceJob
    tables: dict[str, pa.Table] = field(default_factory=dict, repr=False)
    blobs: dict[str, bytes] = field(default_factory=dict, repr=False)
    ready_states: dict[str, GroupStates] = field(default_factory=dict, repr=False)

    def read(self, entry: PartitionEntry, kind: str, columns: list[str] | None = None) -> pa.Table:
        """A partition's ``kind`` rows (some ``columns``), read ahead or read now."""
        whole = self.tables.get(ahead_key(entry, kind))
        if whole is not None:  # absent columns are left out, as a Parquet read does
            if columns is None:
                return whole
            names = set(whole.schema.names)  # once, not a list per column
            return whole.select([c for c in columns if c in names])
        return read_kind(self.job, entry, kind, columns)


def ahead_key(entry: PartitionEntry, kind: str) -> str:
    """What ``ReadAhead.tables`` keeps a partition's ``kind`` under: its file, or (rows the
    previous version's parts hold) its path and the kind."""
    return entry.files.get(kind) or f"{kind}:{entry.path}"


def read_kind(
    job: ReduceJob, entry: PartitionEntry, kind: str, columns: list[str] | None = None
) -> pa.Table:
    """A partition's ``statistics`` file or its frequency or histogram rows, now."""
    if kind in ROW_KINDS:
        return job.read_rows(entry, kind, columns)
    return job.read_file(entry.files[kind], columns)


def fold_custom(statistics: list, state: ScalarState, values: dict[str, object]) -> None:
    """Merge user-defined statistics with their merge functions (null without one)."""
    for statistic in statistics:
        value = values.get(statistic.name)
        if statistic.name not in state.custom:
            state.custom[statistic.name] = value
        elif statistic.merge is None or value is None or state.custom[statistic.name] is None:
            state.custom[statistic.name] = None
        else:
            state.custom[statistic.name] = statistic.merge(state.custom[statistic.name], value)


def merge_state(job: ReduceJob, into: ScalarState, other: ScalarState) -> ScalarState:
    """``other`` folded into ``into`` (which is returned), user-defined statistics too."""
    into.merge(other)
    fold_custom(job.statistics, into, other.custom)
    return into


def fold_states(job: ReduceJob, files: ReadAhead, members: list[int]) -> GroupStates:
    """The group's statistics files folded into one ``ScalarState`` per column.

    Sketches that format 3 leaves out (complete frequencies determine them) are rebuilt
    only for the columns some partition of the group did not list fully: elsewhere the
    state is exact without them and marked ``sketches_deferred``
    (``fold_deferred_sketches`` rebuilds them if the table level turns out to need them)."""
    names = [c["name"] for c in job.columns]
    texts = [c["type"] for c in job.columns]
    types = [job.dtype(i) for i in range(len(job.columns))]
    wanted = [*SCALAR_FIELDS, *(s.name for s in job.statistics)]
    states: list[ScalarState] = []
    rows: dict[int, pa.Table] = {}
    deferred: dict[int, list[int]] = {}  # column -> partitions whose sketches wait

    def read(p: int) -> pa.Table:
        return files.read(job.partitions[p], "statistics", wanted)

    for start in range(0, len(members), FOLD_BATCH):
        batch = members[start : start + FOLD_BATCH]
        raw = list(prefetch(read, batch))
        incomplete = set(
            np.flatnonzero(~np.logical_and.reduce([listed_all(t) for t in raw])).tolist()
        )
        for p, table in zip(batch, raw, strict=True):
            for c in missing_sketches(table, types):
                if c not in incomplete:
                    deferred.setdefault(c, []).append(p)
        restore = functools.partial(_restore, job, files, types, incomplete)
        tables = list(prefetch(restore, list(zip(batch, raw, strict=True))))
        folded = fold_statistics(tables, names, texts, types)
        for position, table in enumerate(tables, start):
            rows[position] = table.select(HISTOGRAM_FIELDS)
        if job.statistics:
            for table in tables:
                for state, row in zip(folded, table.to_pylist(), strict=True):
                    fold_custom(job.statistics, state, row)
        if not states:
            states = folded
        else:
            for mine, theirs in zip(states, folded, strict=True):
                mine.merge(theirs)
                if job.statistics:
                    fold_custom(job.statistics, mine, theirs.custom)
    # a column complete in one batch but not in another: its waiting sketches are needed
    late = {c: ps for c, ps in deferred.items() if not states[c].frequencies_complete}
    _merge_rebuilt(job, files, late, {c: states[c] for c in late}, types)
    for c in deferred.keys() - late.keys():
        states[c].sketches_deferred = True
    return GroupStates(dict(enumerate(states)), rows)


def _restore(
    job: ReduceJob,
    files: ReadAhead,
    types: list[pa.DataType],
    columns: set[int],
    pair: tuple[int, pa.Table],
) -> pa.Table:
    """One partition's statistics with the sketches of ``columns`` that format 3 drops
    (its frequencies determine them) rebuilt."""
    partition, table = pair
    return restore_sketches(
        table,
        lambda: files.read(job.partitions[partition], "frequencies", FREQUENCY_COLUMNS),
        types,
        columns,
    )


def fold_deferred_sketches(
    job: ReduceJob, files: ReadAhead, members: list[int], columns: list[int]
) -> dict[int, ScalarState]:
    """The sketches ``fold_states`` deferred in this group for ``columns`` (which the table
    level needs: some other group did not list all their values), rebuilt from the
    frequency rows: per column a state holding only the union of the rebuilt sketches,
    to merge into the table state (the sketches the files stored are in it already)."""
    types = [job.dtype(i) for i in range(len(job.columns))]
    fields = ["row_count", "null_count", "distinct_count", "frequencies_count", *SKETCHES]
    tables = list(prefetch(lambda p: files.read(job.partitions[p], "statistics", fields), members))
    complete = np.logical_and.reduce([listed_all(t) for t in tables])
    # an incomplete group rebuilt its sketches in ``fold_states`` already
    wanted = {c for c in columns if complete[c]}
    waiting: dict[int, list[int]] = {}
    for p, table in zip(members, tables, strict=True):
        for c in missing_sketches(table, types):
            if c in wanted:
                waiting.setdefault(c, []).append(p)
    out = {c: ScalarState(job.columns[c]["name"], job.columns[c]["type"]) for c in waiting}
    _merge_rebuilt(job, files, waiting, out, types)
    return out


def _merge_rebuilt(
    job: ReduceJob,
    files: ReadAhead,
    waiting: dict[int, list[int]],
    states: dict[int, ScalarState],
    types: list[pa.DataType],
) -> None:
    """Rebuild the ``waiting`` partitions' sketches (column -> partitions) from their
    frequency rows, in partition order, into ``states``' sketch unions."""
    by_partition: dict[int, list[int]] = {}
    for c, partitions in waiting.items():
        for p in partitions:
            by_partition.setdefault(p, []).append(c)
    order = sorted(by_partition)

    def rebuild(p: int) -> dict[int, tuple[bytes | None, bytes | None]]:
        frequencies = files.read(job.partitions[p], "frequencies", FREQUENCY_COLUMNS)
        return rebuilt_sketches(frequencies, types, sorted(by_partition[p]))

    for sketches in prefetch(rebuild, order):
        for c, (hll, kll) in sketches.items():
            if hll is not None:
                states[c].hll_union().update(ds.hll_sketch.deserialize(hll))
            if kll is not None:
                states[c].kll_union().merge(QuantileSketch.deserialize(kll))


def fold_histograms(
    job: ReduceJob,
    files: ReadAhead,
    members: list[int],
    grids: dict[int, Grid],
    histogram_rows: dict[int, pa.Table] | None,
    part: pa.Table | None = None,
) -> dict[int, np.ndarray]:
    """The group's partition histograms re-binned onto ``grids`` and summed per column;
    ``histogram_rows`` (from ``fold_states``) saves reading ``statistics.parquet`` again,
    ``part`` (the group's partition histograms rows of the grids' columns: ``member``,
    ``column_index``, ``histogram_counts``) reading every member's ``histograms.parquet``.
    Either way each column's members are added in member order (the same sums)."""
    sums = {i: np.zeros(g.bins) for i, g in grids.items()}
    names = [job.columns[i]["name"] for i in grids]
    fields: dict[int, list[dict]] = {}

    def rows_of(position: int) -> list[dict]:
        if position not in fields:
            fields[position] = (
                histogram_rows[position]
                if histogram_rows is not None and position in histogram_rows
                else files.read(job.partitions[members[position]], "statistics",
                                HISTOGRAM_FIELDS)
            ).to_pylist()
        return fields[position]

    if part is not None:
        return _fold_part(job, files, members, grids, histogram_rows, part, sums)
    for position, partition in enumerate(members):
        entry = job.partitions[partition]
        rows = rows_of(position)
        wanted = [n for i, n in zip(grids, names, strict=True) if rows[i]["histogram_bins"]]
        counts = files.read(entry, "histograms", wanted)
        present = set(counts.column_names)
        for i, name in zip(grids, names, strict=True):
            row = rows[i]
            if not row["histogram_bins"] or name not in present:
                continue
            values = counts.column(name).to_numpy(zero_copy_only=False)
            sums[i] += rebin(row, np.nan_to_num(values), grids[i], job.dtype(i))
    return sums


def _fold_part(
    job: ReduceJob,
    files: ReadAhead,
    members: list[int],
    grids: dict[int, Grid],
    histogram_rows: dict[int, pa.Table] | None,
    part: pa.Table,
    sums: dict[int, np.ndarray],
) -> dict[int, np.ndarray]:
    """``fold_histograms`` from the group's part: each member's histogram fields decoded
    per column at once (``storage_numbers``), then re-binned member by member."""
    ncols = len(job.columns)

    def table_of(position: int) -> pa.Table:
        if histogram_rows is not None and position in histogram_rows:
            return histogram_rows[position]
        return files.read(job.partitions[members[position]], "statistics", HISTOGRAM_FIELDS)

    stacked = pa.concat_tables([table_of(p) for p in range(len(members))])
    lists = part.column("histogram_counts").combine_chunks()
    offsets = lists.offsets.to_numpy()
    values = lists.values.to_numpy(zero_copy_only=False).astype(np.float64)
    valid = lists.is_valid().to_numpy(zero_copy_only=False)
    column = part.column("column_index").to_numpy()
    member = part.column("member").to_numpy()
    order = np.lexsort((member, column))
    for i, grid in grids.items():
        dtype = job.dtype(i)
        rows = pa.array(np.arange(i, len(stacked), ncols))
        fields = stacked.take(rows)
        bins = fields.column("histogram_bins").to_pylist()
        widths = fields.column("histogram_width").to_pylist()
        lowers = storage_numbers(fields.column("histogram_lower"), dtype)
        tops = storage_numbers(fields.column("max"), dtype)
        for k in order[column[order] == i]:
            position = int(member[k])
            if not valid[k] or not bins[position]:
                continue
            counts = values[offsets[k] : offsets[k + 1]]
            sums[i] += rebin_numbers(
                float(lowers[position]), widths[position], bins[position], tops[position],
                counts, grid,
            )
    return sums
