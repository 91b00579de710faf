"""Writing the partition histograms (their format and read side: ``partition_histograms``):
a group's partition files as a part's rows (``histograms_part``), a part's Parquet bytes
(``write_part``), a version's directory of parts (``write_directory``)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.stats.key_ints import decimal_keys_as_ints, keys_as_ints
from lakestats.stats.kinds import Kind
from lakestats.stats.type_codec import parse_type
from lakestats.store import schemas
from lakestats.store.handle import StatisticsStore
from lakestats.store.part_keys import key_width
from lakestats.store.partition_histograms import (
    DECIMAL_INTS,
    HELD_KEY,
    HELD_KINDS,
    INT32_MAX,
    SOURCE_FIELDS,
    held_columns,
    part_schema,
)


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
    lengths = pc.binary_length(value).to_numpy(zero_copy_only=False)
    all_eight = bool((lengths == 8).all())
    if all_eight:
        # 8-byte keys (almost every column): their byte order is keys_as_ints' order
        as_int = keys_as_ints(value)
        order = _key_value_order(key, as_int)
        as_int = as_int[order]
    else:  # the keys a row may hold as ints: widths and decimal ranges
        order, fits, as_int = _mixed_order(key, value, lengths, np.repeat(widths, count)[key])
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


def _mixed_order(
    key: np.ndarray, value: pa.Array, lengths: np.ndarray, widths: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (key, value) order of rows whose values are not all 8 bytes long, and
    ``_int_keys`` of every row. The rows of 8-byte columns (``widths``: each row's
    ``key_width``; most rows) are sorted as ints (``_key_value_order``), only the others'
    by their bytes (a sort of binary keys costs several times more), and the two merged by
    key: a key (one column of one member) has rows of one kind only."""
    eight = np.flatnonzero(widths == 8)
    if (lengths[eight] != 8).any():  # a key of another width in an 8-byte column
        order = pc.sort_indices(
            pa.table({"key": key, "value": value}),
            sort_keys=[("key", "ascending"), ("value", "ascending")],
        ).to_numpy()
        return order, *_int_keys(value, widths)
    other = np.flatnonzero(widths != 8)
    fits = np.zeros(len(value), bool)
    ints = np.zeros(len(value), np.int64)
    eight_ints = keys_as_ints(value.take(pa.array(eight)))
    fits[eight], ints[eight] = True, eight_ints
    other_values = value.take(pa.array(other))
    fits[other], ints[other] = _int_keys(other_values, widths[other])
    other_order = pc.sort_indices(
        pa.table({"key": key[other], "value": other_values}),
        sort_keys=[("key", "ascending"), ("value", "ascending")],
    ).to_numpy()
    runs = np.concatenate([eight[_key_value_order(key[eight], eight_ints)], other[other_order]])
    keys = key[runs]
    small = len(keys) and int(keys.max()) < 2**15
    return runs[np.argsort(keys.astype(np.int16) if small else keys, kind="stable")], fits, ints


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
    """``np.lexsort((value, key))`` (``key`` >= 0), faster: where key, value - min(value)
    and the row number fit in an int64 together, one sort of them packed (no indirect
    sort, no gather: a third of the time of an argsort; the row number in the low bits
    orders ties as lexsort does); else (key, value) packed where the values' range leaves
    room for the key, and argsorted (a quarter less time than lexsort on the bench's integer
    columns); else the values sorted, then a stable sort by key (a radix sort where keys fit
    16 bits). Equal (key, value) pairs (none in frequency files: a value is listed once per
    column) fall back to lexsort in the last two, whose tie order they may not keep."""
    if len(key):
        low = int(value.min())
        span = int(value.max()) - low
        key_bits = int(key.max()).bit_length()
        row_bits = (len(key) - 1).bit_length()
        if key_bits + span.bit_length() + row_bits <= 63:
            pair = (key.astype(np.int64) << span.bit_length()) | (value - np.int64(low))
            packed = (pair << row_bits) | np.arange(len(key), dtype=np.int64)
            return np.sort(packed) & ((1 << row_bits) - 1)
        room = 63 - key_bits
        if span < 2**room:  # value - low fits below the key's bits
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
(``bench/size.py``)."""
COUNTS_ZSTD_LEVEL = 1
"""zstd level of the counts (BYTE_STREAM_SPLIT): their byte streams are mostly zeros and
small values, which level 1 codes both faster and smaller than level 3 (the histogram
counts of 1,000 partitions x 100 columns: 0.42 s and 13.0 MB against 0.52 s and 14.8 MB;
lineitem by month: about the same bytes)."""
_COUNTS = ("frequency_counts.list.element", "histogram_counts.list.element")
_LEVELS = {
    **{
        name: schemas.HISTOGRAMS_ZSTD_LEVEL
        for name in [f"{f.name}.list.element" if pa.types.is_list(f.type) else f.name
                     for f in schemas.PARTITION_HISTOGRAMS_SCHEMA]
    },
    "frequency_values.list.element": VALUES_ZSTD_LEVEL,
    **dict.fromkeys(_COUNTS, COUNTS_ZSTD_LEVEL),
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
