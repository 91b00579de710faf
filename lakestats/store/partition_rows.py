"""A partition's frequency and histogram rows, wherever its version keeps them: the one
way every reader gets them (lookups, estimates' fallbacks, the reduction, the exact step,
Puffin, samples).

From format 6 the table level's partition histogram parts (``partition_histograms``)
are their only home: a partition entry lists its ``statistics`` file (and ``values``,
``groups``) but no ``frequencies.parquet`` or ``histograms.parquet``, whose rows the parts
held a second copy of. An entry that does list such a file is read from it: versions of
format 5 and before, an unpartitioned table's one partition (its files are the table
level's), and a run's own hand-off files before its version is published.

The rows come back as the file had them: frequencies ``column, value, frequency,
column_index`` by column in table order, then decreasing frequency, ties by value (top-k
is a prefix); histograms ``bin`` and one count column per column with a histogram.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lakestats.errors import CorruptStatisticsError
from lakestats.stats.arrays import numbers
from lakestats.stats.type_codec import parse_type
from lakestats.store import manifest, schemas
from lakestats.store.handle import StatisticsStore
from lakestats.store.partition_histograms import (
    PartitionHistograms,
    int_keys,
    key_width,
    open_histograms,
)

FREQUENCIES = "frequencies"
HISTOGRAMS = "histograms"
ROW_KINDS = (FREQUENCIES, HISTOGRAMS)
"""The file kinds whose rows the parts hold from format 6."""

PARTS_FORMAT = 6
"""The first format whose partition entries leave these rows to the parts."""

FREQUENCY_ROWS_SCHEMA = schemas.FREQUENCIES_SCHEMA.append(
    pa.field("column_index", pa.int32(), nullable=False)
)

KEPT_PARTS = 4
"""Decoded parts kept per reader: a reduction reads a group's members one after another,
and a lookup often asks several kinds of the same partition."""


class MissingPartitionRowsError(CorruptStatisticsError):
    """A partition's frequency and histogram rows are gone (its part was deleted)."""


def rows_in_parts(version: manifest.Version) -> bool:
    """Whether ``version``'s partition entries leave their rows to the parts."""
    return version.format_version >= PARTS_FORMAT


def rows_dropped(files: dict[str, object]) -> dict[str, object]:
    """An entry's ``files`` (or ``file_sizes``) without the kinds the parts hold."""
    return {k: v for k, v in files.items() if k not in ROW_KINDS}


class PartitionRows:
    """The rows of ``version``'s partitions (and of entries a new run reuses from it).

    Picklable (a reduction task receives one): the opened parts are not pickled."""

    def __init__(
        self,
        store: StatisticsStore,
        version: manifest.Version | None,
        open_file: Callable[[pafs.FileSystem, str], object] | None = None,
    ) -> None:
        self.store, self.version, self._open_file = store, version, open_file
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._histograms: PartitionHistograms | None = None
        self._ids: dict[str, int] | None = None
        self._decoded: OrderedDict[int, pa.Table] = OrderedDict()

    def __getstate__(self) -> dict[str, object]:
        return {"store": self.store, "version": self.version, "_open_file": None}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._reset()

    def read(
        self, entry: manifest.PartitionEntry, kind: str, columns: list[str] | None = None
    ) -> pa.Table:
        """The partition's ``kind`` rows (``frequencies`` or ``histograms``), some
        ``columns`` of them (absent ones left out)."""
        relative = entry.files.get(kind)
        if relative is not None:
            table = _read_file(self.store, relative, columns, self._open_file)
            if kind == FREQUENCIES and "column_index" not in table.schema.names and (
                columns is None or "column_index" in columns
            ):  # files written before the column existed
                table = _read_file(self.store, relative, None, self._open_file)
                table = table.append_column("column_index", self._indices(table))
        else:
            rows = self._member_rows(entry)
            table = _frequencies(rows, self._columns()) if kind == FREQUENCIES else (
                _histograms(rows, self._columns())
            )
        if columns is None:
            return table
        names = set(table.schema.names)
        return table.select([c for c in columns if c in names])

    def _indices(self, table: pa.Table) -> pa.Array:
        names = [c["name"] for c in self._columns()]
        return pc.index_in(table.column("column"), value_set=pa.array(names)).cast(pa.int32())

    def _columns(self) -> list[dict[str, str]]:
        assert self.version is not None
        return self.version.columns

    def _member_rows(self, entry: manifest.PartitionEntry) -> pa.Table:
        """The part rows of one partition (its part read whole once, kept a while)."""
        histograms, ids = self._opened()
        pid = ids.get(entry.path, -1)
        part = int(histograms.part_of[pid]) if histograms is not None and pid >= 0 else -1
        if histograms is None or part < 0:
            raise _missing(entry)
        with self._lock:
            table = self._decoded.get(part)
            if table is not None:
                self._decoded.move_to_end(part)
        if table is None:
            try:
                table = _read_file(self.store, histograms.paths[part], None, self._open_file)
            except (FileNotFoundError, CorruptStatisticsError) as exc:
                raise _missing(entry) from exc
            with self._lock:
                self._decoded[part] = table
                while len(self._decoded) > KEPT_PARTS:
                    self._decoded.popitem(last=False)
        member = int(histograms.member_of[pid])
        return table.filter(pc.equal(table.column("member"), pa.scalar(member, pa.int32())))

    def _opened(self) -> tuple[PartitionHistograms | None, dict[str, int]]:
        with self._lock:
            if self._ids is not None:
                return self._histograms, self._ids
        version = self.version
        found = open_histograms(self.store, version, self._open_file) if version else None
        ids = {e.path: i for i, e in enumerate(version.partitions)} if version else {}
        with self._lock:
            self._histograms, self._ids = found, ids
        return found, ids


def _missing(entry: manifest.PartitionEntry) -> MissingPartitionRowsError:
    return MissingPartitionRowsError(
        f"the frequency and histogram rows of partition {entry.name or entry.path!r} are "
        "missing (their part of the table level was deleted); re-analyze that partition: "
        f"lakestats analyze <table> --partition {entry.path!r} --full"
    )


def _read_file(
    store: StatisticsStore,
    relative: str,
    columns: list[str] | None,
    open_file: Callable[[pafs.FileSystem, str], object] | None,
) -> pa.Table:
    filesystem, path = store.resolve(store.path(relative))
    source = (open_file or (lambda f, p: f.open_input_file(p)))(filesystem, path)
    parquet = pq.ParquetFile(source, pre_buffer=True)
    if columns is not None:
        names = set(parquet.schema_arrow.names)
        columns = [c for c in columns if c in names]
    return parquet.read(columns=columns, use_threads=False)


def _frequencies(rows: pa.Table, columns: list[dict[str, str]]) -> pa.Table:
    """A member's part rows as its ``frequencies.parquet`` rows, in the file's order."""
    indices, values, counts = [], [], []
    for row in range(rows.num_rows):
        index = rows.column("column_index")[row].as_py()
        listed = rows.column("frequency_counts")[row]
        counted = numbers(listed.values, 0, np.int64) if listed.is_valid else np.zeros(0)
        if not len(counted):
            continue
        ints = rows.column("frequency_ints")[row]
        if ints.is_valid:
            width = key_width(parse_type(columns[index]["type"]))
            data = int_keys(numbers(ints.values, 0, np.int64), width).tobytes()
            keys: pa.Array = pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(width), len(counted), [None, pa.py_buffer(data)]
            ).cast(pa.binary())
        else:
            keys = rows.column("frequency_values")[row].values.cast(pa.binary())
        # by decreasing frequency, ties by value (the part holds them by value)
        order = np.lexsort((np.arange(len(counted)), -counted))
        indices.append(np.full(len(counted), index, np.int32))
        values.append(keys.take(pa.array(order)))
        counts.append(counted[order])
    if not indices:
        return FREQUENCY_ROWS_SCHEMA.empty_table()
    index = np.concatenate(indices)
    by_column = np.argsort(index, kind="stable")
    names = pa.array([c["name"] for c in columns], pa.string())
    index = index[by_column]
    return pa.table(
        {
            "column": names.take(pa.array(index)),
            "value": pa.concat_arrays(values).take(pa.array(by_column)),
            "frequency": pa.array(np.concatenate(counts)[by_column], pa.int64()),
            "column_index": pa.array(index, pa.int32()),
        },
        schema=FREQUENCY_ROWS_SCHEMA,
    )


def _histograms(rows: pa.Table, columns: list[dict[str, str]]) -> pa.Table:
    """A member's part rows as its ``histograms.parquet``: ``bin`` and one column per
    column with a histogram, in table order (nulls past a column's bins)."""
    counts = rows.column("histogram_counts")
    held = sorted(
        (rows.column("column_index")[r].as_py(), numbers(counts[r].values, 0, np.int64))
        for r in range(rows.num_rows)
        if counts[r].is_valid
    )
    length = max([len(c) for _, c in held], default=0)
    names = [columns[i]["name"] for i, _ in held]
    arrays = [pa.array(np.arange(length, dtype=np.int32))]
    for _, column in held:
        padded = np.zeros(length, np.int64)
        padded[: len(column)] = column
        mask = np.arange(length) >= len(column)
        arrays.append(pa.array(padded, mask=mask))
    return pa.Table.from_arrays(arrays, schema=schemas.histograms_schema(names))
