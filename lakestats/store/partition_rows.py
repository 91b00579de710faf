"""A partition's frequency and histogram rows, wherever its version keeps them: the one
way every reader gets them (lookups, estimates' fallbacks, the reduction, the exact step,
the Iceberg Puffin file).

From format 6 the table level's partition histogram parts (``partition_histograms``)
are their only home: a partition entry lists its ``statistics`` file (and ``values``,
``groups``) but no ``frequencies.parquet`` or ``histograms.parquet``, whose rows the parts
held a second copy of. An entry that does list such a file is read from it: versions of
format 5 and before, an unpartitioned table's one partition (its files are the table
level's), and a run's own hand-off files (Arrow IPC) before its version is published.

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
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lakestats.errors import CorruptStatisticsError
from lakestats.stats.arrays import binary_values, column_array, int64_array, int_values, numbers
from lakestats.stats.type_codec import parse_type
from lakestats.store import layout, manifest, schemas
from lakestats.store.handle import StatisticsStore
from lakestats.store.part_keys import int_keys, key_width

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
        self._where: dict[str, tuple[int, int]] | None = None  # path -> (part, member)
        self._paths: list[str] = []
        self._decoded: OrderedDict[int, tuple[pa.Table, np.ndarray]] = OrderedDict()

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
            table = self._file(relative, columns)
            if kind == FREQUENCIES and "column_index" not in table.schema.names and (
                columns is None or "column_index" in columns
            ):  # files written before the column existed
                table = self._file(relative, None)
                names = {c["name"]: i for i, c in enumerate(self._columns())}
                at = [names[n] for n in table.column("column").to_pylist()]
                table = table.append_column("column_index", column_array(at, pa.int32()))
        else:
            part, rows = self._member_rows(entry)
            table = (_frequencies if kind == FREQUENCIES else _histograms)(
                part, rows, self._columns()
            )
        if columns is None:
            return table
        names = set(table.schema.names)
        return table.select([c for c in columns if c in names])

    def _columns(self) -> list[dict[str, str]]:
        assert self.version is not None
        return self.version.columns

    def _file(self, relative: str, columns: list[str] | None) -> pa.Table:
        if relative.endswith(layout.HANDOFF_SUFFIX):  # a running analyze's hand-off rows
            data = self.store.read_bytes(self.store.path(relative))  # one request
            table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
            if columns is not None:
                names = set(table.schema.names)
                table = table.select([c for c in columns if c in names])
            return table
        filesystem, path = self.store.resolve(self.store.path(relative))
        opener = self._open_file or (lambda f, p: f.open_input_file(p))
        parquet = pq.ParquetFile(opener(filesystem, path), pre_buffer=True)
        if columns is not None:
            names = set(parquet.schema_arrow.names)
            columns = [c for c in columns if c in names]
        return parquet.read(columns=columns, use_threads=False)

    def _member_rows(self, entry: manifest.PartitionEntry) -> tuple[pa.Table, np.ndarray]:
        """One partition's part (read whole once, kept a while) and its rows there."""
        where = self._directory().get(entry.path)
        if where is None:
            raise _missing(entry)
        part, member = where
        with self._lock:
            found = self._decoded.get(part)
            if found is not None:
                self._decoded.move_to_end(part)
        if found is None:
            try:
                table = self._file(self._paths[part], None)
            except FileNotFoundError as exc:
                raise _missing(entry) from exc
            found = (table, int_values(table.column("member")))
            with self._lock:
                self._decoded[part] = found
                while len(self._decoded) > KEPT_PARTS:
                    self._decoded.popitem(last=False)
        table, members = found
        return table, np.flatnonzero(members == member)

    def _directory(self) -> dict[str, tuple[int, int]]:
        """Each partition's part and position there (empty: no directory, or it is gone)."""
        with self._lock:
            if self._where is not None:
                return self._where
        where: dict[str, tuple[int, int]] = {}
        version = self.version
        relative = getattr(version, "partition_histogram_parts", None) if version else None
        if version is not None and relative:
            try:
                directory = self._file(relative, ["part", "partition_ids"])
            except FileNotFoundError:
                directory = None
            if directory is not None:
                self._paths = directory.column("part").to_pylist()
                entries = version.partitions
                for k, ids in enumerate(directory.column("partition_ids").to_pylist()):
                    for member, pid in enumerate(ids):
                        if 0 <= pid < len(entries):
                            where[entries[pid].path] = (k, member)
        with self._lock:
            self._where = where
        return where


def _missing(entry: manifest.PartitionEntry) -> MissingPartitionRowsError:
    return MissingPartitionRowsError(
        f"the frequency and histogram rows of partition {entry.name or entry.path!r} are "
        "missing (their part of the table level was deleted); re-analyze those partitions: "
        "`lakestats analyze` on the table recomputes them"
    )


def _frequencies(part: pa.Table, rows: np.ndarray, columns: list[dict[str, str]]) -> pa.Table:
    """A member's part rows (in column order) as its ``frequencies.parquet`` rows: by
    column, then decreasing frequency, ties by value (the part holds them by value)."""
    names, keys, counts = [], [], []
    for row in rows.tolist():
        listed = part.column("frequency_counts")[row]
        counted = numbers(listed.values, 0, np.int64) if listed.is_valid else np.zeros(0)
        if not len(counted):
            continue
        index = part.column("column_index")[row].as_py()
        order = np.lexsort((np.arange(len(counted)), -counted))
        ints = part.column("frequency_ints")[row]
        if ints.is_valid:
            width = key_width(parse_type(columns[index]["type"]))
            data = int_keys(numbers(ints.values, 0, np.int64)[order], width).tobytes()
            keys += [data[i : i + width] for i in range(0, len(data), width)]
        else:
            values = binary_values(part.column("frequency_values")[row].values)
            keys += [values[i] for i in order.tolist()]
        names += [(columns[index]["name"], index)] * len(counted)
        counts.append(counted[order])
    if not names:
        return pa.Table.from_batches([], schema=FREQUENCY_ROWS_SCHEMA)
    return pa.Table.from_arrays(
        [
            column_array([n for n, _ in names], pa.string()),
            column_array(keys, pa.binary()),
            int64_array(np.concatenate(counts)),
            column_array([i for _, i in names], pa.int32()),
        ],
        schema=FREQUENCY_ROWS_SCHEMA,
    )


def _histograms(part: pa.Table, rows: np.ndarray, columns: list[dict[str, str]]) -> pa.Table:
    """A member's part rows as its ``histograms.parquet``: ``bin`` and one column per
    column with a histogram, in table order (nulls past a column's bins)."""
    held = []
    for row in rows.tolist():
        counts = part.column("histogram_counts")[row]
        if counts.is_valid:
            index = part.column("column_index")[row].as_py()
            held.append((columns[index]["name"], numbers(counts.values, 0, np.int64)))
    length = max([len(c) for _, c in held], default=0)
    arrays = [column_array(list(range(length)), pa.int32())]
    for _, counted in held:
        arrays.append(column_array([*counted.tolist(), *[None] * (length - len(counted))],
                                   pa.int64()))
    schema = schemas.histograms_schema([name for name, _ in held])
    return pa.Table.from_arrays(arrays, schema=schema)
