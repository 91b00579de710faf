"""The table-level partition index: every partition's scalar statistics in one file.

``partition_index.parquet`` (schema ``schemas.PARTITION_INDEX_SCHEMA``) holds one row per
partition x column: row, null, NaN and distinct counts, min and max keys, whether the
partition's frequencies are complete, all-distinct, and the percentile keys. It is sorted
by column, then partition, with whole columns per row group and row-group statistics on
``column_index`` only, so "these columns for every partition" reads the footer and the
row groups of those columns, never one file per partition.

Write side (used by the table-level reduction): ``index_part`` turns a group of partitions'
``statistics.parquet`` rows into a part (positions inside the group), ``assemble`` maps the
parts to the version's partition ids and names, ``write_index`` writes the file.

Read side: ``PartitionIndex`` reads row groups by column; ``partition_summaries`` is what
callers use (the stats query, the selectivity estimator): it reads the index when the
version lists one and falls back to the partition files (versions written before the index
existed, or without a table-level reduction).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lakestats.stats.arrays import integer_array, string_array, unique
from lakestats.stats.percentiles import percentile_names
from lakestats.store import manifest, schemas
from lakestats.store.handle import StatisticsStore
from lakestats.threads import prefetch

SCALAR_FIELDS = [
    "row_count",
    "null_count",
    "nan_count",
    "distinct_count",
    "min",
    "max",
    "frequencies_complete",
    "all_distinct",
]
"""Counts, bounds and flags per partition x column (what pruning and estimates read)."""
SUMMARY_FIELDS = [*SCALAR_FIELDS, *percentile_names(), "mean"]
"""The per partition x column statistics the index holds (besides ids and names)."""

SOURCE_FIELDS = [
    "row_count",
    "null_count",
    "nan_count",
    "distinct_count",
    "min",
    "max",
    "frequencies_truncated",
    "all_distinct",
    *percentile_names(),
    "mean",
]
"""What ``index_part`` reads from a partition's ``statistics.parquet``."""

PART_SCHEMA = pa.schema(
    [
        pa.field("member", pa.int32()),  # position inside the group
        pa.field("column_index", pa.int32()),
        *[schemas.PARTITION_INDEX_SCHEMA.field(name) for name in SUMMARY_FIELDS],
    ]
)
PARTITIONS_KEY = b"lakestats.partitions"
"""File metadata: how many partitions the index was written for (checked against the
version, so an index that does not describe the version's partitions is never used)."""


# -- write side ---------------------------------------------------------------------------
def index_part(tables: Sequence[pa.Table]) -> pa.Table:
    """One group's part: ``tables`` are its partitions' ``statistics.parquet`` rows
    (``SOURCE_FIELDS``, one row per version column, in version order)."""
    if not tables:
        return PART_SCHEMA.empty_table()
    rows = pa.concat_tables([t.select(SOURCE_FIELDS).cast(_source_schema()) for t in tables])
    sizes = np.array([t.num_rows for t in tables], dtype=np.int64)
    member = np.repeat(np.arange(len(tables), dtype=np.int32), sizes)
    column = np.concatenate([np.arange(n, dtype=np.int32) for n in sizes])
    truncated = rows.column("frequencies_truncated")
    complete = pc.and_kleene(
        pc.is_valid(rows.column("distinct_count")), pc.invert(truncated.fill_null(True))
    )
    arrays = {
        "member": pa.array(member),
        "column_index": pa.array(column),
        **{name: rows.column(name) for name in SUMMARY_FIELDS if name in rows.column_names},
        "frequencies_complete": complete,
    }
    return pa.table({name: arrays[name] for name in PART_SCHEMA.names}).cast(PART_SCHEMA)


def _source_schema() -> pa.Schema:
    return pa.schema([schemas.STATISTICS_SCHEMA.field(name) for name in SOURCE_FIELDS])


def assemble(
    parts: Sequence[tuple[Sequence[int], pa.Table]],
    partitions: Sequence[manifest.PartitionEntry],
    columns: Sequence[dict[str, str]],
) -> pa.Table:
    """The index rows of a version: each part's members mapped to the version's partition
    positions, names and values added, sorted by column then partition."""
    ids, tables = [], []
    for members, table in parts:
        if table.num_rows:
            local = table.column("member").to_numpy(zero_copy_only=False)
            ids.append(np.asarray(members, dtype=np.int32)[local])
            tables.append(table)
    if not tables:
        return schemas.PARTITION_INDEX_SCHEMA.empty_table()
    rows = pa.concat_tables(tables)
    partition_id = np.concatenate(ids)
    column_index = rows.column("column_index").to_numpy(zero_copy_only=False)
    order = np.lexsort((partition_id, column_index))
    rows = rows.take(pa.array(order))
    partition_id, column_index = partition_id[order], column_index[order]
    names = pa.array([p.name for p in partitions], pa.string())
    values = pa.array([json.dumps(p.values, sort_keys=True) for p in partitions], pa.string())
    column_names = pa.array([c["name"] for c in columns], pa.string())
    taken = pa.array(partition_id)
    column_taken = pa.array(column_index)
    # names as dictionaries over the version's lists (no 1M-string copies; Parquet stores
    # them dictionary-encoded anyway and reads them back as plain strings)
    arrays = {
        "partition_id": taken,
        "partition_name": pa.DictionaryArray.from_arrays(taken, names),
        "partition_values": pa.DictionaryArray.from_arrays(taken, values),
        "column_index": column_taken,
        "column": pa.DictionaryArray.from_arrays(column_taken, column_names),
        **{name: rows.column(name) for name in SUMMARY_FIELDS},
    }
    fields = [
        field.with_type(arrays[field.name].type) if field.name in _NAMES else field
        for field in schemas.PARTITION_INDEX_SCHEMA
    ]
    return pa.table(arrays).cast(pa.schema(fields))


_NAMES = ("partition_name", "partition_values", "column")


def group_rows(partitions: int) -> int:
    """Rows per row group: whole columns (see ``schemas.PARTITION_INDEX_GROUP_ROWS``)."""
    if partitions <= 0:
        return schemas.PARTITION_INDEX_GROUP_ROWS
    return max(1, schemas.PARTITION_INDEX_GROUP_ROWS // partitions) * partitions


def write_index(table: pa.Table, uri: str, store: StatisticsStore, partitions: int) -> int:
    """Write the index; returns the bytes written."""
    from lakestats.store.writer import write_parquet

    metadata = {PARTITIONS_KEY: str(partitions).encode()}
    return write_parquet(
        table.replace_schema_metadata(metadata),
        uri,
        store,
        row_group_size=group_rows(partitions),
        write_statistics=["column_index"],
        use_dictionary=["partition_name", "partition_values", "column"],
    )


# -- read side ----------------------------------------------------------------------------
class PartitionIndex:
    """An open ``partition_index.parquet``: reads the row groups of the columns asked for."""

    def __init__(self, handle: pq.ParquetFile) -> None:
        self.handle = handle
        metadata = handle.metadata
        position = handle.schema_arrow.get_field_index("column_index")
        self.ranges = []
        for g in range(metadata.num_row_groups):
            stats = metadata.row_group(g).column(position).statistics
            has = stats is not None and stats.has_min_max
            self.ranges.append((stats.min, stats.max) if has else (None, None))
        stored = (metadata.metadata or {}).get(PARTITIONS_KEY)
        self.partitions = int(stored) if stored is not None else None

    def row_groups(self, column_indices: Sequence[int]) -> list[int]:
        """The row groups that hold any of ``column_indices`` (from the footer)."""
        wanted = unique(np.asarray(column_indices, dtype=np.int64))
        out = []
        for g, (low, high) in enumerate(self.ranges):
            if low is None or np.any((wanted >= low) & (wanted <= high)):
                out.append(g)
        return out

    def read(self, column_indices: Sequence[int], fields: Sequence[str]) -> pa.Table:
        """``partition_id``, ``column_index`` and ``fields`` of the rows of those columns."""
        groups = self.row_groups(column_indices)
        names = ["partition_id", "column_index", *[f for f in fields if f not in _IDS]]
        stored = set(self.handle.schema_arrow.names)
        table = self.handle.read_row_groups(
            groups, columns=[n for n in names if n in stored], use_threads=False
        )
        for name in names:  # a field an older index does not have (``mean``): nulls
            if name not in stored:
                kind = schemas.PARTITION_INDEX_SCHEMA.field(name).type
                table = table.append_column(name, pa.nulls(table.num_rows, kind))
        table = table.select(names)
        if any(self.ranges[g][0] != self.ranges[g][1] for g in groups):  # several columns
            wanted = integer_array(list(column_indices), pa.int32())  # no pandas probe
            keep = pc.is_in(table.column("column_index"), wanted)
            table = table.filter(keep)
        return table


_IDS = ("partition_id", "column_index")


def open_index(
    store: StatisticsStore,
    version: manifest.Version,
    open_file: Callable[[pafs.FileSystem, str], object] | None = None,
) -> PartitionIndex | None:
    """The version's index, or None when it has none or it does not describe the version."""
    return open_partition_file(
        store, version, getattr(version, "partition_index", None), PartitionIndex, open_file
    )


Opened = TypeVar("Opened")


def open_partition_file(
    store: StatisticsStore,
    version: manifest.Version,
    relative: str | None,
    wrap: Callable[[pq.ParquetFile], Opened],
    open_file: Callable[[pafs.FileSystem, str], object] | None = None,
) -> Opened | None:
    """A table-level file with a row per partition (``relative`` to ``store``) opened and
    wrapped, or None when the version lists none, it is gone (expired or deleted: the
    partition files still answer) or it was written for another number of partitions."""
    if not relative:
        return None
    filesystem, path = store.resolve(store.path(relative))
    try:
        source = open_file(filesystem, path) if open_file else filesystem.open_input_file(path)
        opened = wrap(pq.ParquetFile(source, pre_buffer=True))
    except FileNotFoundError:
        return None
    partitions = getattr(opened, "partitions", None)
    if partitions is not None and partitions != len(version.partitions):
        return None
    return opened


class VersionFiles(Protocol):
    """What the read side reads a version through (``reader.StatisticsReader``)."""

    version: manifest.Version

    @property
    def columns(self) -> list[dict[str, str]]: ...

    def column_index(self, name: str) -> int: ...

    def parquet_file(self, entry: manifest.PartitionEntry, kind: str) -> pq.ParquetFile: ...

    def partition_index(self) -> PartitionIndex | None: ...


def from_partition_files(
    reader: VersionFiles, column_indices: Sequence[int], fields: Sequence[str]
) -> pa.Table:
    """What ``PartitionIndex.read`` returns, from every partition's ``statistics.parquet``
    (one open per partition: versions without an index)."""
    entries = reader.version.partitions
    wanted = list(column_indices)

    def one(position: int) -> pa.Table:
        entry = entries[position]
        handle = reader.parquet_file(entry, "statistics")
        rows = handle.read(columns=SOURCE_FIELDS, use_threads=False)
        part = index_part([rows])
        part = part.take(pa.array(wanted, pa.int64()))
        return part.set_column(
            0, "partition_id", pa.array(np.full(part.num_rows, position, np.int32))
        )

    if not entries:
        return _empty(fields)
    tables = list(prefetch(one, range(len(entries))))
    rows = pa.concat_tables(tables)
    order = np.lexsort(
        (
            rows.column("partition_id").to_numpy(zero_copy_only=False),
            _rank(rows.column("column_index").to_numpy(zero_copy_only=False), wanted),
        )
    )
    rows = rows.take(pa.array(order))
    return rows.select(["partition_id", "column_index", *[f for f in fields if f not in _IDS]])


def _rank(column_index: np.ndarray, wanted: list[int]) -> np.ndarray:
    return np.searchsorted(unique(wanted), column_index)


def _empty(fields: Sequence[str]) -> pa.Table:
    schema = schemas.PARTITION_INDEX_SCHEMA
    names = ["partition_id", "column_index", *[f for f in fields if f not in _IDS]]
    return pa.schema([schema.field(n) for n in names]).empty_table()


def partition_summaries(
    reader: VersionFiles,
    columns: Sequence[str],
    fields: Sequence[str] | None = None,
    use_index: bool = True,
) -> pa.Table:
    """Per partition x column statistics of ``columns`` (``fields``, default
    ``SUMMARY_FIELDS``), one row each: ``partition_id`` (into
    ``reader.version.partitions``: name, values, files), ``column_index``, ``column``, then
    the fields; sorted by column index, then partition id.

    Reads the version's partition index (the row groups of those columns) when it has one,
    else every partition's ``statistics.parquet``. Unknown columns raise
    ``ColumnNotFoundError``."""
    fields = list(fields or SUMMARY_FIELDS)
    unknown = [f for f in fields if f not in SUMMARY_FIELDS]
    if unknown:
        raise ValueError(f"not in the partition index: {unknown}")
    indices = sorted({reader.column_index(c) for c in columns})
    index = reader.partition_index() if use_index else None
    if not indices:
        rows = _empty(fields)
    elif index is not None:
        rows = index.read(indices, fields)
    else:
        rows = from_partition_files(reader, indices, fields)
    names = string_array([c["name"] for c in reader.columns])
    named = names.take(rows.column("column_index"))
    return rows.add_column(2, "column", named)
