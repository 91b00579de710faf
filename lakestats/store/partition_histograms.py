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

Write side (the reduction's ``partition histograms`` stage): ``histograms_part`` turns a
group's partition files into a part's rows, ``write_part`` encodes a part,
``write_directory`` lists the parts. Read side: ``open_histograms`` (None when the version
has no directory: versions written before it, which estimate from the partition files) and
``PartitionHistograms.read`` (a column's rows for some partitions: per part holding any of
them, one read of that column's row groups, parts on two threads).

Over 400 lines because the write and read sides of one file format stay together (the
layout they share is the contract).
"""

from __future__ import annotations

import itertools
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
EIGHT_BYTE_KINDS = (Kind.INTEGER, Kind.FLOATING, Kind.TEMPORAL)
"""Kinds whose keys are 8 bytes: their frequency values are stored as ``frequency_ints``
(int64 decodes ~8x faster than binary keys; the estimator reads them by the million)."""
_SIGN = np.uint64(1 << 63)


def ints_as_keys(ints: np.ndarray, width: int = 8) -> list[bytes]:
    """``keys_as_ints`` (``width`` 8) or ``decimal_keys_as_ints`` (16, 32) undone: the
    keys, as bytes."""
    data = int_keys(ints, width).tobytes()
    return [data[i : i + width] for i in range(0, len(data), width)]


def int_keys(ints: np.ndarray, width: int = 8) -> np.ndarray:
    """``ints_as_keys`` as one NumPy ``S{width}`` array (compared as ``memcmp``)."""
    ints = np.asarray(ints, np.int64)
    low = ints.view(np.uint64)
    if width == 8:
        return (low ^ _SIGN).astype(">u8").view("S8")
    # a decimal key of an int64 value v: 2**(8 * width - 1) + v, big-endian
    words = np.empty((len(ints), width // 8), ">u8")
    negative = ints < 0
    words[:, 0] = np.where(negative, _SIGN - np.uint64(1), _SIGN)
    words[:, 1:-1] = np.where(negative, np.uint64(2**64 - 1), np.uint64(0))[:, None]
    words[:, -1] = low
    return words.view(f"S{width}").ravel()


def key_width(dtype: pa.DataType) -> int:
    """The width of the column's keys the parts may store as ints: 8 (integer, floating,
    temporal), 16 or 32 (decimals: those whose values fit in an int64), else 0."""
    kind = kind_of(dtype)
    if kind in EIGHT_BYTE_KINDS:
        return 8
    if kind == Kind.DECIMAL:
        return 32 if dtype.bit_width == 256 else 16  # decimal32/64 keys are 16 bytes wide
    return 0


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


# -- write side ---------------------------------------------------------------------------
def histograms_part(
    columns: Sequence[dict[str, str]],
    statistics: Sequence[pa.Table],
    histograms: Sequence[pa.Table],
    frequencies: Sequence[pa.Table],
) -> pa.Table:
    """One group's part rows, sorted by column then member: per member (in order), its
    ``statistics.parquet`` rows (``SOURCE_FIELDS``, one per version column), its
    ``histograms.parquet`` and its ``frequencies.parquet`` (``column``, ``value``,
    ``frequency``, and ``column_index`` when the file has it).

    Built for the whole group at once (one sort of every member's frequency rows, the
    histogram counts gathered in NumPy): row ``j * members + m`` is held column ``j`` of
    member ``m``."""
    held = held_columns(columns)
    if not statistics or not held:
        return part_schema().empty_table()
    names = [columns[i]["name"] for i in held]
    widths = np.array([key_width(parse_type(columns[i]["type"])) for i in held], np.int64)
    eight = widths == 8
    count, width = len(statistics), len(held)
    cells = count * width
    # the rows in (column, member) order: member m's held column j is row m * width + j
    # of the members' statistics rows concatenated
    stats = pa.concat_tables(
        [s.select(SOURCE_FIELDS).take(pa.array(held, pa.int64())) for s in statistics],
        promote_options="permissive",
    )
    order = (np.arange(count)[None, :] * width + np.arange(width)[:, None]).ravel()
    stats = stats.take(pa.array(order))
    # frequency rows of the held columns keyed by their row, sorted by row then value
    keyed = []
    for m, table in enumerate(frequencies):
        if "column_index" in table.column_names:
            position = pc.index_in(table.column("column_index"),
                                   value_set=pa.array(held, pa.int32()))
        else:  # files written before the column existed
            position = pc.index_in(table.column("column"), value_set=pa.array(names))
        position = position.to_numpy(zero_copy_only=False) if len(table) else np.zeros(0)
        valid = ~np.isnan(position.astype(np.float64))
        keys = position[valid].astype(np.int64) * count + m
        keyed.append(pa.table({
            "key": pa.array(keys, pa.int64()),
            "value": table.column("value").filter(pa.array(valid)),
            "frequency": table.column("frequency").filter(pa.array(valid)).cast(pa.int64()),
        }))
    rows = pa.concat_tables(keyed, promote_options="permissive")
    value = rows.column("value").combine_chunks()
    frequency = rows.column("frequency").to_numpy()
    key = rows.column("key").to_numpy()
    eight_wide = pc.equal(pc.binary_length(value), 8).to_numpy(zero_copy_only=False)
    if eight_wide.all():
        # 8-byte keys (almost every column): their byte order is keys_as_ints' order
        as_int = keys_as_ints(value)
        order = _key_value_order(key, as_int)
        as_int = as_int[order]
    else:
        order = pc.sort_indices(
            pa.table({"key": key, "value": value}),
            sort_keys=[("key", "ascending"), ("value", "ascending")],
        ).to_numpy()
    all_eight = bool(eight_wide.all())
    if not all_eight:  # the keys a row may hold as ints: widths and decimal ranges
        fits, as_int = _int_keys(value, np.repeat(widths, count)[key])
        fits, as_int = fits[order], as_int[order]
    key, frequency = key[order], frequency[order]
    sizes = np.bincount(key, minlength=cells)
    # 8-byte keys and decimal keys of int64 values as ints (a row with any other key, of
    # another width or a larger decimal, keeps the column binary), the others as binary;
    # each row has one of the two lists, the other null
    as_ints = np.repeat(eight if all_eight else widths > 0, count)
    if not all_eight:
        as_ints &= np.bincount(key, weights=(~fits) * 1.0, minlength=cells) == 0
    in_ints = as_ints[key]
    if all_eight and in_ints.all():  # (almost every part: every column's keys as ints)
        binary, ints_flat = value.slice(0, 0), as_int
    else:
        binary = value.take(pa.array(order[~in_ints]))
        ints_flat = as_int[in_ints]
    values = _lists(sizes * ~as_ints, binary, ~as_ints)
    ints = _lists(sizes * as_ints, pa.array(ints_flat, pa.int64()), as_ints)
    # histograms: the first histogram_bins counts of the column (nulls as 0); a column
    # with bins but no column in the file (lower set) keeps a null list: read from the file
    lowers = stats.column("histogram_lower").is_valid().to_numpy(zero_copy_only=False)
    bins = stats.column("histogram_bins").to_pylist()
    lengths, valid = np.zeros(cells, np.int64), np.zeros(cells, bool)
    chunks: list[pa.Array] = []  # in row order: by column, then member
    # each member's columns by name, looked up once (2,325 rows for 31 members x 75)
    by_name = [dict(zip(table.column_names, table.columns, strict=True)) for table in histograms]
    for j, name in enumerate(names):
        for m, columns_of in enumerate(by_name):
            r = j * count + m
            column = columns_of.get(name)
            if bins[r] is None or not lowers[r] or column is None:
                continue
            if bins[r] < len(column):
                column = column.slice(0, bins[r])
            chunks.extend(column.chunks)
            lengths[r], valid[r] = len(column), True
    flat = pa.chunked_array(chunks, pa.int64()).combine_chunks() if chunks else None
    flat = (
        np.zeros(0, np.int64) if flat is None
        else (pc.fill_null(flat, 0) if flat.null_count else flat).to_numpy()
    )
    wide = max(_top(frequency), _top(flat)) > INT32_MAX
    count_type = np.int64 if wide else np.int32
    schema = part_schema(wide)
    arrays = {
        "member": pa.array(np.tile(np.arange(count, dtype=np.int32), width)),
        "column_index": pa.array(np.repeat(np.asarray(held, np.int32), count)),
        "frequencies_count": stats.column("frequencies_count"),
        "frequencies_truncated": stats.column("frequencies_truncated"),
        "frequencies_min": stats.column("frequencies_min"),
        "frequency_values": values,
        "frequency_ints": ints,
        "frequency_counts": _lists(sizes, pa.array(frequency.astype(count_type))),
        "histogram_lower": stats.column("histogram_lower"),
        "histogram_width": stats.column("histogram_width"),
        "histogram_counts": pa.ListArray.from_arrays(
            pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)),
            pa.array(flat.astype(count_type)),
            mask=pa.array(~valid),
        ),
    }
    return pa.table(
        [arrays[f.name].cast(f.type) for f in schema], schema=schema
    )


def _int_keys(value: pa.Array, widths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per key, whether its row's column (``widths``: its ``key_width``, per key) may hold
    it as an int, and that int (0 where not)."""
    lengths = pc.binary_length(value).to_numpy(zero_copy_only=False)
    fits = np.zeros(len(value), bool)
    ints = np.zeros(len(value), np.int64)
    for width in np.unique(widths[widths > 0]).tolist():
        at = np.flatnonzero((widths == width) & (lengths == width))
        if not len(at):
            continue
        keys = value.take(pa.array(at))
        if width == 8:
            ints[at], fits[at] = keys_as_ints(keys), True
        else:
            ints[at], fits[at] = decimal_keys_as_ints(keys, width)
    return fits, ints


def _key_value_order(key: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``np.lexsort((value, key))`` (``key`` >= 0), faster: one sort of (key, value)
    packed in an int64 where the values' range leaves room for the key (a quarter less
    time on the bench's integer columns), else the values sorted, then a stable sort by
    key (a radix sort where keys fit 16 bits). Equal (key, value) pairs (none in frequency
    files: a value is listed once per column) fall back to lexsort, whose tie order this
    may not keep."""
    if len(key):
        low = int(value.min())
        room = 63 - int(key.max()).bit_length()
        if int(value.max()) - low < 2**room:  # value - low fits below the key's bits
            packed = (key.astype(np.int64) << room) | (value - np.int64(low))
            order = np.argsort(packed)
            if not (np.diff(packed[order]) == 0).any():
                return order  # unique pairs: the one sorted order
            return np.lexsort((value, key))
    order = np.argsort(value)
    keys = key[order]
    small = len(keys) and int(keys.max()) < 2**15
    order = order[np.argsort(keys.astype(np.int16) if small else keys, kind="stable")]
    ordered_key, ordered_value = key[order], value[order]
    if ((np.diff(ordered_key) == 0) & (np.diff(ordered_value) == 0)).any():
        return np.lexsort((value, key))
    return order


def _top(values: np.ndarray) -> int:
    return int(values.max()) if len(values) else 0


def _lists(sizes: np.ndarray, values: pa.Array, valid: np.ndarray | None = None) -> pa.Array:
    """A list array of ``values`` cut into ``sizes`` (null where not ``valid``)."""
    offsets = pa.array(np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32))
    mask = None if valid is None else pa.array(~valid)
    return pa.ListArray.from_arrays(offsets, values, mask=mask)


def write_part(rows: pa.Table, partitions: int) -> bytes:
    """A part's rows (``histograms_part``) as Parquet bytes (written whole by the caller,
    atomically: a cached part is reused by later versions). A row group holds whole
    columns, as many as ``GROUP_ROWS // partitions`` (the table's partitions: reading one
    column of every part then decodes about ``GROUP_ROWS`` rows, however the table is
    grouped) while their lists stay under ``GROUP_BYTES``, at most ``GROUP_ROWS`` rows; a
    longer column is split."""
    from lakestats.store.writer import parquet_buffer  # writing only: keeps sketches out

    per_group = max(1, schemas.PARTITION_HISTOGRAMS_GROUP_ROWS // max(1, partitions))
    elements = np.zeros(rows.num_rows, np.int64)
    for name in ("frequency_values", "frequency_ints", "frequency_counts", "histogram_counts"):
        if name in rows.column_names:
            lengths = pc.list_value_length(rows.column(name)).fill_null(0)
            elements += lengths.to_numpy(zero_copy_only=False).astype(np.int64)
    weight = np.concatenate([[0], np.cumsum(elements * 8)])  # bytes of rows [0, i)
    with parquet_buffer(
        rows.schema,
        compression_level=_LEVELS,
        write_statistics=["column_index", "member"],
        use_dictionary=False,
        column_encoding={
            # sorted keys share prefixes: a third of plain + zstd (bench/size.py)
            "frequency_values.list.element": "DELTA_BYTE_ARRAY",
            "frequency_ints.list.element": "DELTA_BINARY_PACKED",
            # counts are small and unordered: their low bytes in a stream of their own,
            # which zstd codes by frequency (a fifth smaller than DELTA_BINARY_PACKED)
            "frequency_counts.list.element": "BYTE_STREAM_SPLIT",
            "histogram_counts.list.element": "BYTE_STREAM_SPLIT",
            "frequencies_count": "DELTA_BINARY_PACKED",
            "frequencies_min": "DELTA_BINARY_PACKED",
        },
    ) as (parquet, out):
        sizes = _row_groups(rows.column("column_index").to_numpy(), weight, per_group)
        if len(set(sizes[:-1])) <= 1 and sizes[-1] <= sizes[0]:
            # equal row groups (one per column when the table has GROUP_ROWS partitions
            # or more): one call writes the same row groups as one call per group
            parquet.write_table(rows, row_group_size=max(1, sizes[0]))
        else:
            begin = 0
            for size in sizes:
                parquet.write_table(rows.slice(begin, size), row_group_size=max(1, size))
                begin += size
    return out.getvalue().to_pybytes()


VALUES_ZSTD_LEVEL = 9
"""zstd level of the binary frequency values (string keys, mostly): a sixth smaller than
level 3 on lineitem's ``l_comment``, for about the CPU the counts' BYTE_STREAM_SPLIT saves
(``bench/size.py``); the other columns stay at ``HISTOGRAMS_ZSTD_LEVEL`` (higher levels
barely shrink them)."""
_LEVELS = {
    "frequency_values.list.element": VALUES_ZSTD_LEVEL,
    **{
        name: schemas.HISTOGRAMS_ZSTD_LEVEL
        for name in [f"{f.name}.list.element" if pa.types.is_list(f.type) else f.name
                     for f in schemas.PARTITION_HISTOGRAMS_SCHEMA]
        if name != "frequency_values.list.element"
    },
}


def _row_groups(column: np.ndarray, weight: np.ndarray, per_group: int) -> list[int]:
    """``write_part``'s row groups, as row counts in order (one empty group for no rows):
    whole columns, at most ``per_group`` and ``GROUP_ROWS`` rows while their list elements
    weigh at most ``GROUP_BYTES``; a longer column split into ``GROUP_ROWS`` rows each."""
    limit = schemas.PARTITION_HISTOGRAMS_GROUP_ROWS
    budget = schemas.PARTITION_HISTOGRAMS_GROUP_BYTES
    starts = [*map(int, np.flatnonzero(np.diff(column, prepend=-1))), len(column)]
    sizes = []
    pending = 0  # rows from begin: whole columns not yet in a row group
    packed = 0  # how many
    begin = 0
    for start, stop in itertools.pairwise(starts):
        heavy = weight[stop] - weight[begin] > budget
        if pending and (pending + stop - start > limit or packed == per_group or heavy):
            sizes.append(pending)
            begin, pending, packed = start, 0, 0
        if stop - start > limit:  # a long column: its own row groups
            sizes += [min(limit, stop - s) for s in range(start, stop, limit)]
            begin = stop
            continue
        pending, packed = pending + stop - start, packed + 1
    if pending or not len(column):
        sizes.append(pending)
    return sizes


def write_directory(
    parts: Sequence[tuple[Sequence[int], str]], uri: str, store: StatisticsStore
) -> int:
    """The version's directory: per part (``members``: the version's partition ids of its
    members, in member order; its path relative to the root). Returns the bytes written."""
    from lakestats.store.writer import parquet_output  # writing only: keeps sketches out

    table = pa.table(
        {
            "part": pa.array([path for _, path in parts], pa.string()),
            "partition_ids": pa.array(
                [np.asarray(m, np.int32) for m, _ in parts], pa.list_(pa.int32())
            ),
        },
        schema=schemas.PARTITION_HISTOGRAM_PARTS_SCHEMA,
    )
    with parquet_output(uri, store, table.schema, compression_level=schemas.HISTOGRAMS_ZSTD_LEVEL,
                        column_encoding={"partition_ids.list.element": "DELTA_BINARY_PACKED"},
                        use_dictionary=False) as parquet:
        parquet.write_table(table)
        kinds = [DECIMAL_INTS if k == Kind.DECIMAL else str(k) for k in HELD_KINDS]
        parquet.add_key_value_metadata({HELD_KEY: ",".join(sorted(kinds)).encode()})
    return store.file_info(uri).size


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
