"""What the exact step merges: key-sorted sources, their row-group outlines, and key-range reads.

A ``Source`` is one partition's contribution (its staged ``values.parquet`` for the columns
its frequencies do not list fully, its ``frequencies.parquet`` rows for the others) or one
rank part of the previous exact version (incremental), with a sign (-1: a removed
partition's counts to subtract). ``outline`` runs on the executors and describes each
source from its footers alone: one row per (source, column, row group) with the group's
first and last key and its rows, so the driver can cut every column's key space into
ranges (``ranges.py``) without reading a value. ``read_piece`` reads, for one column and
one key range ``[low, high)``, only the row groups of each source that overlap it and keeps
the rows inside exactly (``merge.py`` merges them).

Complete-listed partition columns are read from ``frequencies.parquet`` (ordered by
decreasing count, not by key): their outline row covers the column's keys in that file
(computed from its few rows) with ``group`` -1, and a range task filters them by key.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakestats.errors import LakestatsError
from lakestats.stats.arrays import (
    binary_array,
    binary_scalar,
    bool_array,
    int64_scalar,
    int_values,
    record_batch,
)
from lakestats.stats.value_counts import needs_staging
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry
from lakestats.store.partition_rows import PartitionRows

OUTLINE_FIELDS = [
    ("source", pa.int32()),
    ("column_index", pa.int32()),
    ("listed", pa.bool_()),  # read from the partition's frequencies file
    ("row_group", pa.int32()),  # row group of the key-sorted file; -1 for listed rows
    ("min", pa.binary()),  # first key (null: unknown, the group may hold any key)
    ("max", pa.binary()),  # last key (null: unknown)
    ("num_rows", pa.int64()),
]
OUTLINE_ARROW = pa.schema(OUTLINE_FIELDS)
OUTLINE_SCHEMA = (
    "source int, column_index int, listed boolean, row_group int, min binary, max binary, "
    "num_rows long"
)
ROWS_ARROW = pa.schema([("value", pa.binary()), ("count", pa.int64())])


@dataclass(frozen=True)
class Source:
    """One key-sorted file and how its counts enter the sums."""

    path: str  # a partition's staged values.parquet, or a previous version's rank part
    sign: int = 1
    statistics: str | None = None  # the partition's statistics.parquet (None: a rank part)
    # the partition and where its frequency rows are (``store/partition_rows``)
    entry: PartitionEntry | None = None
    rows: PartitionRows | None = None
    name: str = ""  # the partition, for messages


@dataclass(frozen=True)
class Read:
    """One source's row groups (or listed rows) of one column."""

    source: int
    listed: bool
    groups: tuple[int, ...]


class Footers:
    """Parsed Parquet footers kept by a worker process across tasks, least recently used
    first out beyond ``max_bytes`` of their serialized size (parsed, a footer takes about
    ten times that in memory): every range task opens every source overlapping its range,
    and a staged file of lineitem sf10 (299 row groups, a 70 KB footer) opens in 0.32 ms
    parsing its footer, 0.008 ms given it parsed (2.7 s of CPU over the 8,400 opens of that
    table's exact step). Keyed by URI and size: the sources are written once under a run's
    own directory and never rewritten."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._kept: OrderedDict[tuple[str, int], pq.FileMetaData] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.parsed = 0  # footers parsed (not found kept)

    def opened(self, uri: str, handle: pa.NativeFile) -> pq.ParquetFile:
        """``handle`` (the file at ``uri``) as a ``ParquetFile``, its footer parsed once."""
        key = (uri, handle.size())
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
        if kept is not None:
            return pq.ParquetFile(handle, metadata=kept)
        parquet = pq.ParquetFile(handle)
        size = parquet.metadata.serialized_size
        with self._lock:
            self.parsed += 1
            if key not in self._kept and size <= self.max_bytes:
                self._kept[key] = parquet.metadata
                self._bytes += size
                while self._bytes > self.max_bytes:
                    _, dropped = self._kept.popitem(last=False)
                    self._bytes -= dropped.serialized_size
        return parquet

    def __len__(self) -> int:
        return len(self._kept)


FOOTERS = Footers(8 * 1024 * 1024)
"""A worker's kept footers: 8 MiB serialized (about 85 MB parsed) holds lineitem sf10's 84
staged sources (5.9 MB) with room for a previous version's rank parts."""


class Files:
    """Parquet files opened once (their footers parsed once) and closed together."""

    def __init__(self, store: StatisticsStore) -> None:
        self.store = store
        self._open: dict[str, tuple[pa.NativeFile, pq.ParquetFile]] = {}
        self._listed: dict[int, pa.Table] = {}

    def listed(self, number: int, source: Source) -> pa.Table:
        """``column_index``, ``value``, ``frequency`` of a partition's frequency rows, read
        once (``store/partition_rows``: its hand-off file, or its version's part)."""
        if number not in self._listed:
            assert source.rows is not None and source.entry is not None
            self._listed[number] = source.rows.read(
                source.entry, "frequencies", ["column_index", "value", "frequency"]
            )
        return self._listed[number]

    def __call__(self, relative: str) -> pq.ParquetFile:
        if relative not in self._open:
            uri = self.store.path(relative)
            filesystem, path = self.store.resolve(uri)
            handle = filesystem.open_input_file(path)
            self._open[relative] = (handle, FOOTERS.opened(uri, handle))
        return self._open[relative][1]

    def __enter__(self) -> Files:
        return self

    def __exit__(self, *_: object) -> None:
        for handle, _parquet in self._open.values():
            handle.close()
        self._open.clear()
        self._listed.clear()


def _group_bounds(meta: pq.FileMetaData, g: int) -> tuple[int | None, int | None, object, object]:
    """``(first column, last column, min key, max key)`` of row group ``g`` (None: unknown)."""
    group = meta.row_group(g)
    names = [group.column(c).path_in_schema for c in range(group.num_columns)]
    index = group.column(names.index("column_index")).statistics
    value = group.column(names.index("value")).statistics
    first = last = None
    if index is not None and index.has_min_max:
        first, last = index.min, index.max
    low = high = None
    if value is not None and value.has_min_max and first is not None and first == last:
        low, high = value.min, value.max  # key bounds mean something for one column only
    return first, last, low, high


def _sorted_rows(files: Files, number: int, source: Source, wanted: frozenset[int]) -> list[dict]:
    handle = files(source.path)
    meta = handle.metadata
    rows = []
    for g in range(meta.num_row_groups):
        first, last, low, high = _group_bounds(meta, g)
        columns = sorted(wanted) if first is None else [c for c in wanted if first <= c <= last]
        for c in columns:
            rows.append(
                {
                    "source": number,
                    "column_index": c,
                    "listed": False,
                    "row_group": g,
                    "min": low,
                    "max": high,
                    "num_rows": meta.row_group(g).num_rows,
                }
            )
    return rows


def _listed_rows(files: Files, number: int, source: Source, listed: set[int]) -> list[dict]:
    table = files.listed(number, source)
    index = int_values(table.column("column_index"))
    rows = []
    for c in sorted(listed):
        keys = table.column("value").filter(bool_array(index == c))
        if len(keys):
            bounds = pc.min_max(keys)
            rows.append(
                {
                    "source": number,
                    "column_index": c,
                    "listed": True,
                    "row_group": -1,
                    "min": bounds["min"].as_py(),
                    "max": bounds["max"].as_py(),
                    "num_rows": len(keys),
                }
            )
    return rows


STATISTICS_FIELDS = ["row_count", "null_count", "distinct_count", "frequencies_count"]


def _outline_rows(files: Files, number: int, source: Source, wanted: frozenset[int]) -> list[dict]:
    if source.statistics is None:  # a previous rank part: key-sorted, every column
        return _sorted_rows(files, number, source, wanted)
    stats = files(source.statistics).read(columns=STATISTICS_FIELDS, use_threads=False)
    staged, listed = set(), set()
    for c, row in enumerate(stats.to_pylist()):
        if c in wanted and row["distinct_count"]:
            (staged if needs_staging(row) else listed).add(c)
    rows: list[dict] = []
    if staged:
        if not source.path:
            raise LakestatsError(
                f"partition {source.name!r} has no staged value counts; "
                "run analyze --exact on the whole table once"
            )
        rows = _sorted_rows(files, number, source, frozenset(staged))
    if listed:
        rows += _listed_rows(files, number, source, listed)
    return rows


def outline(
    store: StatisticsStore,
    sources: list[Source],
    wanted: frozenset[int],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """The outline rows of the sources numbered in ``batches`` (footers, plus the listed
    columns' keys of a partition's frequencies file)."""
    for batch in batches:
        for number in batch.column(0).to_pylist():
            with Files(store) as files:
                rows = _outline_rows(files, number, sources[number], wanted)
            if rows:
                yield record_batch(rows, OUTLINE_ARROW)


def _first_at_least(values: pa.ChunkedArray, key: bytes) -> int:
    """Position of the first value ``>= key`` in key-sorted ``values`` (bisection: a few
    scalar reads instead of a comparison per row)."""
    return bisect.bisect_left(range(len(values)), key, key=lambda i: values[i].as_py())


def _rows_in(
    table: pa.Table, column: int, low: bytes | None, high: bytes | None, key_sorted: bool
) -> pa.Table:
    """The rows of ``column`` with ``low <= key < high``: a zero-copy slice of a source in
    (column, key) order (staged values, rank parts), a filter of a listed one."""
    if key_sorted:
        index = int_values(table.column("column_index"))
        if np.all(index[1:] >= index[:-1]):
            a, b = (int(x) for x in np.searchsorted(index, [column, column + 1]))
            values = table.column("value").slice(a, b - a)
            start = 0 if low is None else _first_at_least(values, low)
            stop = len(values) if high is None else _first_at_least(values, high)
            return table.slice(a + start, max(0, stop - start))
    mask = pc.equal(table.column("column_index"), int64_scalar(column))
    if low is not None:
        mask = pc.and_(mask, pc.greater_equal(table.column("value"), binary_scalar(low)))
    if high is not None:
        mask = pc.and_(mask, pc.less(table.column("value"), binary_scalar(high)))
    return table.filter(mask)


def read_piece(
    sources: list[Source],
    column: int,
    low: bytes | None,
    high: bytes | None,
    reads: tuple[Read, ...],
    files: Files,
    changes_only: bool = False,
) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Every source's ``(key, signed count)`` rows of ``column`` with ``low <= key < high``
    (unbounded where None), concatenated (not merged): the changed partitions' rows first,
    then the rows of a previous version's rank layers, each layer's in key order; and
    which rows come from those layers. ``files`` keeps the files (and their parsed footers)
    open across the pieces of one task. With ``changes_only`` (a delta layer) the layers'
    rows are read only when a changed partition has rows in the range: a key that grows
    with time changes in few ranges, and the others are not read at all."""
    chunks: list[pa.Array] = []
    counts, lower = [], []
    reads = tuple(sorted(reads, key=lambda r: sources[r.source].statistics is None))
    for read in reads:
        if changes_only and not chunks and sources[read.source].statistics is None:
            break  # no change in this range: nothing of the layers is needed
        source = sources[read.source]
        if read.listed:
            table = files.listed(read.source, source).rename_columns(
                ["column_index", "value", "count"]
            )
        else:
            table = files(source.path).read_row_groups(
                sorted(read.groups), columns=["column_index", "value", "count"],
                use_threads=False,
            )
        table = _rows_in(table, column, low, high, key_sorted=not read.listed)
        if table.num_rows == 0:
            continue
        chunks.extend(
            chunk if chunk.type == pa.binary() else chunk.cast(pa.binary())
            for chunk in table.column("value").chunks
        )
        count = int_values(table.column("count")).astype(np.int64, copy=False)
        counts.append(count * source.sign if source.sign != 1 else count)
        lower.append(np.full(len(count), source.statistics is None))
    if not chunks:
        return binary_array([]), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    return pa.concat_arrays(chunks), np.concatenate(counts), np.concatenate(lower)
