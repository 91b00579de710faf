"""The table-level partition histograms: every partition's histograms and frequency rows of
its ordered columns in one file, for per-partition estimates without a file per partition.

``partition_histograms.parquet`` (schema ``schemas.PARTITION_HISTOGRAMS_SCHEMA``) holds one
row per partition x ordered column (integer, floating, decimal, temporal: ``HELD_KINDS``):
the partition's frequency rows of that column (sorted by value) with the
``statistics.parquet`` fields that say how to read them, and its histogram (lower key,
width, counts). Categorical columns are left out: the table-level ``frequencies.parquet``
already records, per value, which partitions hold it and how often (``partition_counts``).
Sorted by column, then partition; row groups hold at most
``schemas.PARTITION_HISTOGRAMS_GROUP_ROWS`` partitions of one column, and carry row-group
statistics on ``column_index`` and ``partition_id`` only, so "these columns for these
partitions" reads the footer and only the row groups holding them.

Write side (the reduction's ``partition histograms`` stage): ``histograms_part`` turns a
group of partitions' files into a part (positions inside the group), ``write_histograms``
maps the parts to the version's partition ids and writes the file, one column at a time.

Read side: ``open_histograms`` (None when the version has no such file: versions written
before it, which estimate from the partition files) and ``PartitionHistograms.read``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.stats.kinds import ORDERED_NUMERIC, kind_of
from lakestats.stats.type_codec import parse_type
from lakestats.store import manifest, schemas
from lakestats.store.partition_index import open_partition_file
from lakestats.store.writer import parquet_output

HELD_KINDS = ORDERED_NUMERIC
"""The kinds of column the file holds."""

SOURCE_FIELDS = [
    "frequencies_count",
    "frequencies_truncated",
    "frequencies_min",
    "histogram_lower",
    "histogram_width",
    "histogram_bins",
]
"""What ``histograms_part`` reads from a partition's ``statistics.parquet``."""

PART_SCHEMA = pa.schema(
    [
        pa.field("member", pa.int32()),  # position inside the group
        *[f for f in schemas.PARTITION_HISTOGRAMS_SCHEMA if f.name != "partition_id"],
    ]
)
PARTITIONS_KEY = b"lakestats.partitions"
"""File metadata: how many partitions the file was written for (checked against the
version, as the partition index's)."""


def held_columns(columns: Sequence[dict[str, str]]) -> list[int]:
    """Positions of the version columns the file holds rows for."""
    return [i for i, c in enumerate(columns) if kind_of(parse_type(c["type"])) in HELD_KINDS]


# -- write side ---------------------------------------------------------------------------
def histograms_part(
    columns: Sequence[dict[str, str]],
    statistics: Sequence[pa.Table],
    histograms: Sequence[pa.Table],
    frequencies: Sequence[pa.Table],
) -> pa.Table:
    """One group's part: per member (in order), its ``statistics.parquet`` rows
    (``SOURCE_FIELDS``, one per version column), its ``histograms.parquet`` and its
    ``frequencies.parquet`` (``column``, ``value``, ``frequency``)."""
    held = held_columns(columns)
    if not statistics or not held:
        return PART_SCHEMA.empty_table()
    parts = [
        _member_part(m, held, columns, s, h, f)
        for m, (s, h, f) in enumerate(zip(statistics, histograms, frequencies, strict=True))
    ]
    return pa.concat_tables(parts)


def _member_part(
    member: int,
    held: list[int],
    columns: Sequence[dict[str, str]],
    statistics: pa.Table,
    histograms: pa.Table,
    frequencies: pa.Table,
) -> pa.Table:
    stats = statistics.take(pa.array(held, pa.int64()))
    names = pa.array([columns[i]["name"] for i in held], pa.string())
    # frequency rows of the held columns, by column (held order) then increasing value
    position = pc.index_in(frequencies.column("column"), value_set=names)
    rows = pa.table(
        {"pos": position, "value": frequencies.column("value"),
         "frequency": frequencies.column("frequency")}
    ).filter(pc.is_valid(position))
    rows = rows.sort_by([("pos", "ascending"), ("value", "ascending")])
    sizes = np.bincount(rows.column("pos").to_numpy(zero_copy_only=False), minlength=len(held))
    offsets = pa.array(np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32))
    values = pa.ListArray.from_arrays(offsets, rows.column("value").combine_chunks())
    counts = pa.ListArray.from_arrays(
        offsets, rows.column("frequency").combine_chunks().cast(pa.int64())
    )
    # histograms: the first histogram_bins counts of the column (nulls as 0)
    lowers = stats.column("histogram_lower").to_pylist()
    bins = stats.column("histogram_bins").to_pylist()
    present = set(histograms.column_names)
    lists: list[pa.Array | None] = []
    for j, i in enumerate(held):
        name = columns[i]["name"]
        if bins[j] is None or lowers[j] is None or name not in present:
            lists.append(None)  # no histogram (or, when lower is set, read from the file)
            continue
        column = histograms.column(name).slice(0, bins[j]).combine_chunks()
        lists.append(column.fill_null(0).cast(pa.int64()))
    histogram_counts = pa.array(
        [None if a is None else a.to_numpy(zero_copy_only=False) for a in lists],
        pa.list_(pa.int64()),
    )
    arrays = {
        "member": pa.array(np.full(len(held), member, np.int32)),
        "column_index": pa.array(held, pa.int32()),
        "frequencies_count": stats.column("frequencies_count"),
        "frequencies_truncated": stats.column("frequencies_truncated"),
        "frequencies_min": stats.column("frequencies_min"),
        "frequency_values": values,
        "frequency_counts": counts,
        "histogram_lower": stats.column("histogram_lower"),
        "histogram_width": stats.column("histogram_width"),
        "histogram_counts": histogram_counts,
    }
    return pa.table(arrays).cast(PART_SCHEMA)


def write_histograms(
    parts: Sequence[tuple[Sequence[int], pa.Table]],
    uri: str,
    s3: fs.S3Options | None,
    partitions: int,
) -> int:
    """Write the file from every group's part (``members``: the version's positions of the
    part's members), one column at a time: rows sorted by column, then partition id, with
    no copy of all the parts at once (a wide table's histograms can be gigabytes). Returns
    the bytes written."""
    prepared = []
    for members, table in parts:
        if table.num_rows:
            local = table.column("member").to_numpy(zero_copy_only=False)
            ids = np.asarray(members, dtype=np.int32)[local]
            column = table.column("column_index").to_numpy(zero_copy_only=False)
            prepared.append((table.drop_columns(["member"]), ids, column))
    held = np.unique(np.concatenate([c for _, _, c in prepared])) if prepared else []
    schema = schemas.PARTITION_HISTOGRAMS_SCHEMA.with_metadata(
        {PARTITIONS_KEY: str(partitions).encode()}
    )
    limit = schemas.PARTITION_HISTOGRAMS_GROUP_ROWS
    with parquet_output(
        uri,
        s3,
        schema,
        compression_level=schemas.HISTOGRAMS_ZSTD_LEVEL,
        write_statistics=["column_index", "partition_id"],
        use_dictionary=False,
        column_encoding={
            # sorted keys share prefixes: a third of plain + zstd (bench/size.py)
            "frequency_values.list.element": "DELTA_BYTE_ARRAY",
            "frequency_counts.list.element": "DELTA_BINARY_PACKED",
            "histogram_counts.list.element": "DELTA_BINARY_PACKED",
            "frequencies_count": "DELTA_BINARY_PACKED",
            "frequencies_min": "DELTA_BINARY_PACKED",
        },
    ) as parquet:
        pending: list[pa.Table] = []  # whole columns of a narrow table, not yet written

        def flush() -> None:
            if pending:
                rows = pa.concat_tables(pending)
                parquet.write_table(rows, row_group_size=max(1, rows.num_rows))
                pending.clear()

        for index in held:
            rows = _column_rows(prepared, int(index))
            if partitions < limit:  # several whole columns per row group
                if pending and sum(t.num_rows for t in pending) + rows.num_rows > limit:
                    flush()
                pending.append(rows)
                continue
            for start in range(0, rows.num_rows, limit):
                piece = rows.slice(start, limit)
                parquet.write_table(piece, row_group_size=piece.num_rows)
        flush()
    return fs.file_info(uri, s3).size


def _column_rows(prepared: list[tuple[pa.Table, np.ndarray, np.ndarray]], index: int) -> pa.Table:
    """One column's rows from every part, by partition id, with ``partition_id``."""
    pieces, ids = [], []
    for table, partition_id, column in prepared:
        at = np.flatnonzero(column == index)
        if len(at):
            pieces.append(table.take(pa.array(at)))
            ids.append(partition_id[at])
    rows = pa.concat_tables(pieces)
    partition_id = np.concatenate(ids)
    order = np.argsort(partition_id, kind="stable")
    rows = rows.take(pa.array(order)).add_column(0, "partition_id", pa.array(partition_id[order]))
    return rows.cast(schemas.PARTITION_HISTOGRAMS_SCHEMA)


# -- read side ----------------------------------------------------------------------------
class PartitionHistograms:
    """An open ``partition_histograms.parquet``: reads the row groups of a column holding
    the partitions asked for."""

    def __init__(self, handle: pq.ParquetFile) -> None:
        self.handle = handle
        metadata = handle.metadata
        names = handle.schema_arrow.names
        self.ranges = []
        for g in range(metadata.num_row_groups):
            group = metadata.row_group(g)
            pair = []
            for name in ("column_index", "partition_id"):
                stats = group.column(names.index(name)).statistics
                has = stats is not None and stats.has_min_max
                pair.append((stats.min, stats.max) if has else (None, None))
            self.ranges.append(tuple(pair))
        stored = (metadata.metadata or {}).get(PARTITIONS_KEY)
        self.partitions = int(stored) if stored is not None else None

    def row_groups(self, column_index: int, partition_ids: np.ndarray) -> list[int]:
        """The row groups holding rows of ``column_index`` for any of the (sorted) ids."""
        out = []
        for g, ((c_low, c_high), (p_low, p_high)) in enumerate(self.ranges):
            if c_low is not None and not c_low <= column_index <= c_high:
                continue
            if p_low is not None:
                i = np.searchsorted(partition_ids, p_low)
                if i >= len(partition_ids) or partition_ids[i] > p_high:
                    continue
            out.append(g)
        return out

    def read(self, column_index: int, partition_ids: Sequence[int], fields: Sequence[str]
             ) -> pa.Table:
        """``partition_id`` and ``fields`` of the rows of one column for those partitions
        (sorted by partition id; partitions without a row are absent)."""
        ids = np.unique(np.asarray(partition_ids, dtype=np.int64))
        groups = self.row_groups(column_index, ids)
        names = ["partition_id", "column_index", *[f for f in fields if f not in _IDS]]
        table = self.handle.read_row_groups(groups, columns=names, use_threads=False)
        keep = pc.and_(
            pc.equal(table.column("column_index"), column_index),
            pc.is_in(table.column("partition_id"), pa.array(ids, pa.int32())),
        )
        return table.filter(keep)


_IDS = ("partition_id", "column_index")


def open_histograms(
    root: str,
    version: manifest.Version,
    s3: fs.S3Options | None = None,
    open_file: Callable[[pafs.FileSystem, str], object] | None = None,
) -> PartitionHistograms | None:
    """The version's file, or None when it has none or it does not describe the version."""
    relative = getattr(version, "partition_histograms", None)
    return open_partition_file(root, version, relative, PartitionHistograms, s3, open_file)
