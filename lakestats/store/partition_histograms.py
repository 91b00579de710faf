"""The table-level partition histograms: every partition's histograms and frequency rows of
its ordered columns, for per-partition estimates without a file per partition.

Stored as one **part** per group of partitions (the reduction's groups,
``compute/reduce/cache.py``) plus a small **directory** per version:

* a part (schema ``schemas.PARTITION_HISTOGRAMS_SCHEMA``) holds one row per member
  partition x column of a held kind (integer, floating, decimal, temporal, and since
  format 3 string, binary and boolean: ``HELD_KINDS``): the
  partition's frequency rows of that column (sorted by value) with the
  ``statistics.parquet`` fields that say how to read them, and its histogram (lower key,
  width, counts). ``member`` is the partition's position in its group, so a part depends
  only on its members' files and is shared, unchanged, by every version whose group has
  the same members: an incremental reduction writes only the changed groups' parts.
  Sorted by column, then member; row groups hold at most
  ``schemas.PARTITION_HISTOGRAMS_GROUP_ROWS`` members of one column (or several whole
  columns of a small group) with row-group statistics on ``column_index`` and ``member``.
  Counts are int32 unless some count of the part does not fit (then int64). Keys are
  stored as int64 where a column's keys allow (``key_width``: 8-byte keys; since format
  4, decimal keys whose values fit in an int64), else binary.
* the directory (``schemas.PARTITION_HISTOGRAM_PARTS_SCHEMA``, listed in the version as
  ``partition_histogram_parts``) has one row per part: its path and the version's
  partition ids of its members, in member order.

Categorical columns are held too (directories written before them say nothing and
hold ordered columns only: ``PartitionHistograms.holds``): the table-level
``frequencies.parquet`` records which partitions hold a value only when the table level
knows every value (``frequencies_exact``), and never a partition's top values, so an
equality or LIKE prefix on a string column would otherwise open every partition's files.

Write side (the reduction's ``partition histograms`` stage, ``histogram_parts.py``):
``histograms_part`` turns a group's partition files into a part's rows, ``write_part``
encodes a part, ``write_directory`` lists the parts. Read side (here): ``open_histograms``
(None when the version has no directory: versions written before it, which estimate from
the partition files) and ``PartitionHistograms.read`` (a column's rows for some
partitions: per part holding any of them, one read of that column's row groups, parts on
two threads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lakestats.stats.arrays import binary_array, integer_array, numbers, unique
from lakestats.stats.key_ints import decimal_keys_as_ints, keys_as_ints
from lakestats.stats.kinds import ORDERED_NUMERIC, Kind, kind_of
from lakestats.stats.type_codec import parse_type
from lakestats.store import manifest, schemas
from lakestats.store.handle import StatisticsStore
from lakestats.threads import leaf_map

HELD_KINDS = frozenset(ORDERED_NUMERIC) | {Kind.STRING, Kind.BINARY, Kind.BOOLEAN}
"""The kinds of column the parts hold (what this code writes)."""
HELD_KINDS_BEFORE = frozenset(ORDERED_NUMERIC)
"""The kinds the parts of a directory without ``HELD_KEY`` hold (written before the
categorical columns were)."""
HELD_KEY = b"lakestats.held_kinds"
"""Directory metadata: the kinds its parts hold, comma-separated."""
DECIMAL_INTS = "decimal:int64"
"""Listed in ``HELD_KEY`` instead of ``decimal`` since part format 4: the parts hold
decimal columns, their keys of int64 values as ints. Code that reads only binary decimal
keys from the parts (format 3) does not find ``decimal`` there, so it reads decimal
columns from their partitions' files instead of misreading the ints."""

SOURCE_FIELDS = [
    "frequencies_count",
    "frequencies_truncated",
    "frequencies_min",
    "histogram_lower",
    "histogram_width",
    "histogram_bins",
]
"""What ``histograms_part`` reads from a partition's ``statistics.parquet``."""

INT32_MAX = 2**31 - 1
COUNT_LISTS = ("frequency_counts", "histogram_counts")
def key_ints(keys: Sequence[bytes], width: int) -> np.ndarray:
    """The ints of those ``keys`` a part of a column of ``width`` (``key_width``) may hold
    as ints (keys of another width or out of the int64 range are in no int list)."""
    keys = [k for k in keys if len(k) == width]
    if not keys or not width:
        return np.zeros(0, np.int64)
    if width == 8:
        return keys_as_ints(binary_array(keys))
    ints, fits = decimal_keys_as_ints(binary_array(keys), width)
    return ints[fits]


def held_columns(columns: Sequence[dict[str, str]]) -> list[int]:
    """Positions of the version columns the parts hold rows for."""
    return [i for i, c in enumerate(columns) if kind_of(parse_type(c["type"])) in HELD_KINDS]


def part_schema(wide: bool = False) -> pa.Schema:
    """A part's schema; ``wide``: int64 counts (some count does not fit in int32)."""
    if not wide:
        return schemas.PARTITION_HISTOGRAMS_SCHEMA
    schema = schemas.PARTITION_HISTOGRAMS_SCHEMA
    for name in COUNT_LISTS:
        i = schema.get_field_index(name)
        schema = schema.set(i, pa.field(name, pa.list_(pa.int64())))
    return schema


# -- read side ----------------------------------------------------------------------------
class _Part:
    """An open part: its row groups' column and member ranges, read from the footer as
    asked (a part of a 100-column table has hundreds of row groups; a read needs the few
    of one column, found by bisection: ``column_index`` never decreases from one row group
    to the next). ``lock``: one read of the
    handle at a time (a pre-buffered ``ParquetFile`` is not safe for concurrent reads: two
    estimates of one resident table read the same part from the estimator's threads, and
    pyarrow's read-range cache then fails with "did not find matching cache entry")."""

    def __init__(self, handle: pq.ParquetFile) -> None:
        self.handle = handle
        self.lock = threading.Lock()
        self._metadata = handle.metadata
        names = handle.schema_arrow.names
        self._positions = (names.index("column_index"), names.index("member"))
        self._ranges: dict[int, tuple] = {}

    def _range(self, g: int) -> tuple:
        """Row group ``g``'s ((column low, high), (member low, high)); None: no statistics."""
        found = self._ranges.get(g)
        if found is None:
            group = self._metadata.row_group(g)
            pair = []
            for position in self._positions:
                stats = group.column(position).statistics
                has = stats is not None and stats.has_min_max
                pair.append((stats.min, stats.max) if has else (None, None))
            found = self._ranges[g] = tuple(pair)
        return found

    def row_groups(self, column_index: int, members: np.ndarray) -> list[int]:
        """The row groups holding rows of ``column_index`` for any of the (sorted) members."""
        count = self._metadata.num_row_groups
        # the first row group whose highest column is not below column_index
        low, high, sorted_ = 0, count, True
        while low < high:
            middle = (low + high) // 2
            c_high = self._range(middle)[0][1]
            if c_high is None:  # no statistics: every row group is a candidate
                low, sorted_ = 0, False
                break
            if c_high < column_index:
                low = middle + 1
            else:
                high = middle
        out = []
        for g in range(low, count):
            (c_low, c_high), (m_low, m_high) = self._range(g)
            if sorted_ and c_low is not None and c_low > column_index:
                break  # sorted by column: no later row group holds it
            if c_low is not None and not c_low <= column_index <= c_high:
                continue
            if m_low is not None:
                i = np.searchsorted(members, m_low)
                if i >= len(members) or members[i] > m_high:
                    continue
            out.append(g)
        return out


class PartitionHistograms:
    """A version's partition histograms: its directory, and its parts opened on first need
    (their footers read once)."""

    def __init__(
        self, store: StatisticsStore, directory: pa.Table, partitions: int,
        open_file: Callable[[pafs.FileSystem, str], object],
    ) -> None:
        self.store, self._open_file = store, open_file
        self.paths = directory.column("part").to_pylist()
        ids = directory.column("partition_ids")
        flat = numbers(pc.list_flatten(ids), 0, np.int64)
        offsets = np.concatenate(
            [[0], np.cumsum(numbers(pc.list_value_length(ids), 0, np.int64))]
        ).astype(np.int64)
        self.members = [flat[offsets[k] : offsets[k + 1]] for k in range(len(self.paths))]
        # per version partition id: its part and its position there (-1: in no part)
        self.part_of = np.full(partitions, -1, np.int64)
        self.member_of = np.full(partitions, -1, np.int64)
        for k, members in enumerate(self.members):
            inside = members[(members >= 0) & (members < partitions)]
            self.part_of[inside] = k
            self.member_of[inside] = np.flatnonzero((members >= 0) & (members < partitions))
        self._parts: dict[int, _Part | None] = {}
        self._lock = threading.Lock()
        held = (directory.schema.metadata or {}).get(HELD_KEY)
        kinds = set(held.decode().split(",")) if held is not None else set(HELD_KINDS_BEFORE)
        if DECIMAL_INTS in kinds:
            kinds.add(Kind.DECIMAL)
        self.kinds = frozenset(kinds)

    def holds(self, kind: Kind) -> bool:
        """Whether the parts hold rows for columns of ``kind`` (else their partitions'
        files answer)."""
        return kind in self.kinds

    def _part(self, k: int) -> _Part | None:
        with self._lock:
            if k in self._parts:
                return self._parts[k]
        # opened outside the lock: the reading threads open their parts side by side
        uri = self.store.path(self.paths[k])
        filesystem, path = self.store.resolve(uri)
        try:
            source = self._open_file(filesystem, path)
            # pre-buffering coalesces a remote store's reads; on a local disk it only
            # costs (a tenth of a cold estimate's CPU on 10,000 partitions)
            remote = not isinstance(filesystem, pafs.LocalFileSystem)
            opened: _Part | None = _Part(pq.ParquetFile(source, pre_buffer=remote))
        except FileNotFoundError:
            opened = None  # gone: its partitions read their own files
        with self._lock:
            return self._parts.setdefault(k, opened)

    def read(self, column_index: int, partition_ids: Sequence[int], fields: Sequence[str],
             whole_groups: bool = False) -> pa.Table:
        """``partition_id`` and ``fields`` of the rows of one column for those partitions
        (partitions without a row are absent; counts int32, or int64 when some part
        holds int64 counts); ``whole_groups``: also the column's other rows in the row
        groups read (decoded anyway), so a later need of those partitions reads nothing."""
        ids = unique(np.asarray(partition_ids, dtype=np.int64))
        ids = ids[(ids >= 0) & (ids < len(self.part_of))]
        names = ["member", "column_index", *[f for f in fields if f not in _IDS]]
        wanted = [int(k) for k in unique(self.part_of[ids]) if k >= 0]

        def one(k: int) -> pa.Table | None:
            part = self._part(k)
            if part is None:
                return None
            members = np.sort(self.member_of[ids[self.part_of[ids] == k]])
            groups = part.row_groups(column_index, members)
            if not groups:
                return None
            with part.lock:
                table = part.handle.read_row_groups(groups, columns=names, use_threads=False)
            keep = pc.equal(table.column("column_index"),
                            integer_array([column_index], table.column("column_index").type)[0])
            if whole_groups:  # every member the version reads from this part
                ids_k = self.members[k]
                valid = (ids_k >= 0) & (ids_k < len(self.part_of))
                mine = np.zeros(len(ids_k), dtype=bool)
                mine[valid] = self.part_of[ids_k[valid]] == k
                members = np.flatnonzero(mine)
            keep = pc.and_(keep, pc.is_in(table.column("member"),
                                          integer_array(members, pa.int32())))
            table = table.filter(keep)
            local = numbers(table.column("member"), 0, np.int64)
            partition_id = integer_array(self.members[k][local], pa.int32())
            return table.drop_columns(["member"]).add_column(0, "partition_id", partition_id)

        # parts decode on two threads (Parquet releases the GIL), also when the read
        # comes from an estimate's survivor on the shared pool
        tables = [t for t in leaf_map(one, wanted) if t is not None]
        if not tables:
            empty = part_schema().empty_table().drop_columns(["member"])
            empty = empty.add_column(0, "partition_id", integer_array([], pa.int32()))
            return empty.select(["partition_id", *names[1:]])
        if any(t.schema != tables[0].schema for t in tables):
            tables = [_wide(t) for t in tables]  # some part has int64 counts
        return pa.concat_tables(tables)


def _wide(table: pa.Table) -> pa.Table:
    """Counts as int64 lists, whatever the part stored."""
    for name in COUNT_LISTS:
        if name in table.column_names:
            i = table.column_names.index(name)
            table = table.set_column(i, name, table.column(name).cast(pa.list_(pa.int64())))
    return table


_IDS = ("partition_id", "column_index", "member")


def part_paths(store: StatisticsStore, relative: str) -> list[str]:
    """The parts a directory lists (relative to the root); [] when it is gone or damaged
    (its parts are group cache entries the version lists too)."""
    try:
        data = store.read_bytes(store.path(relative))
        handle = pq.ParquetFile(pa.BufferReader(data))
    except (FileNotFoundError, pa.ArrowInvalid):
        return []
    return handle.read(columns=["part"], use_threads=False).column("part").to_pylist()


def open_histograms(
    store: StatisticsStore,
    version: manifest.Version,
    open_file: Callable[[pafs.FileSystem, str], object] | None = None,
) -> PartitionHistograms | None:
    """The version's partition histograms, or None when it lists none or its directory is
    gone (its partitions' own files answer)."""
    relative = getattr(version, "partition_histogram_parts", None)
    if not relative:
        return None
    opener = open_file or (lambda filesystem, path: filesystem.open_input_file(path))
    filesystem, path = store.resolve(store.path(relative))
    try:
        directory = pq.ParquetFile(opener(filesystem, path)).read(use_threads=False)
    except FileNotFoundError:
        return None
    return PartitionHistograms(store, directory, len(version.partitions), opener)
