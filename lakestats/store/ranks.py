"""Table-level exact ranks: range part files plus a small index, read one row group at a time.

``table/<run>/ranks/part-<k>.parquet`` (written by ``compute/exact/job.py``) holds rows
``(column_index, value, count, cumulative)`` sorted by column then value key, where
``cumulative`` counts the column's values up to and including this one *within the
part*; each row group holds one column, so its statistics bound the key and the
cumulative count. ``ranks/index.parquet`` has one row per (part, column): the range's
distinct values, total count, first and last key. A column's offset in a part is the sum
of its totals in the earlier parts, so a lookup reads the index, then one row group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakestats.store.handle import StatisticsStore
from lakestats.store.schemas import RANKS_INDEX_SCHEMA as INDEX_SCHEMA
from lakestats.store.schemas import RANKS_SCHEMA

RANKS_ROW_GROUP = 8192
"""Rows per row group: a lookup decodes one group (~8k keys)."""

INDEX_FILE = "index.parquet"


def write_index(rows: list[dict], uri: str, store: StatisticsStore) -> int:
    table = pa.Table.from_pylist(
        [{k: r[k] for k in INDEX_SCHEMA.names} for r in rows], schema=INDEX_SCHEMA
    )
    table = table.sort_by([("column_index", "ascending"), ("part", "ascending")])
    filesystem, path = store.resolve(uri)
    filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with filesystem.open_output_stream(path) as out:
        pq.write_table(table, out, compression="zstd", store_schema=False)
    return filesystem.get_file_info(path).size


@dataclass(frozen=True)
class Range:
    part: int
    distinct: int
    total: int
    offset: int  # the column's values in earlier parts
    min_key: bytes
    max_key: bytes


class RankIndex:
    """The ranges of every column and how to read one row group of a part."""

    def __init__(
        self, rows: list[dict], store: StatisticsStore, directory: str
    ) -> None:
        self.store, self.directory = store, directory
        self.ranges: dict[int, list[Range]] = {}
        for row in sorted(rows, key=lambda r: (r["column_index"], r["part"])):
            column = self.ranges.setdefault(row["column_index"], [])
            offset = column[-1].offset + column[-1].total if column else 0
            column.append(
                Range(
                    row["part"], row["distinct_count"], row["total"], offset, row["min"], row["max"]
                )
            )

    @classmethod
    def open(cls, store: StatisticsStore, directory: str) -> RankIndex:
        with store.open_input_file(store.path(f"{directory}/{INDEX_FILE}")) as handle:
            rows = pq.ParquetFile(handle).read().to_pylist()
        return cls(rows, store, directory)

    def has(self, column: int) -> bool:
        return column in self.ranges

    def distinct_count(self, column: int) -> int:
        return sum(r.distinct for r in self.ranges.get(column, []))

    def total(self, column: int) -> int:
        return sum(r.total for r in self.ranges.get(column, []))

    def _groups(self, part: int, column: int) -> tuple[pq.ParquetFile, list[tuple[int, tuple]]]:
        relative = f"{self.directory}/part-{part:05d}.parquet"
        handle = pq.ParquetFile(self.store.open_input_file(self.store.path(relative)))
        meta = handle.metadata
        names = RANKS_SCHEMA.names
        groups = []
        for g in range(meta.num_row_groups):
            stats = {
                names[c]: meta.row_group(g).column(c).statistics for c in range(len(names))
            }
            if stats["column_index"].min != column:
                continue
            groups.append(
                (
                    g,
                    (
                        stats["value"].min,
                        stats["value"].max,
                        stats["cumulative"].min,
                        stats["cumulative"].max,
                    ),
                )
            )
        return handle, groups

    def value_at(self, column: int, rank: int) -> bytes | None:
        """The key of the value at 1-based ``rank`` in value order (nearest rank)."""
        for r in self.ranges.get(column, []):
            if r.offset < rank <= r.offset + r.total:
                local = rank - r.offset
                handle, groups = self._groups(r.part, column)
                for g, (_, _, _, high) in groups:
                    if high >= local:  # the first group reaching the rank: one read
                        rows = handle.read_row_group(g, columns=["value", "cumulative"])
                        cumulative = rows.column("cumulative").to_numpy()
                        at = int(np.searchsorted(cumulative, local, side="left"))
                        return rows.column("value")[at].as_py()
        return None

    def rank_of(self, column: int, key: bytes) -> tuple[int, int, int]:
        """``(below, equal, above)``: how many non-null values sort below, equal, above."""
        total = self.total(column)
        below, equal = 0, 0
        for r in self.ranges.get(column, []):
            if key > r.max_key:
                below = r.offset + r.total
                continue
            if key < r.min_key:
                break
            handle, groups = self._groups(r.part, column)
            below = r.offset
            for g, (_low, high, _, _) in groups:
                if key > high:
                    continue
                rows = handle.read_row_group(g, columns=["value", "count", "cumulative"])
                values = rows.column("value")
                at = int(pc.sum(pc.less(values, pa.scalar(key, pa.binary()))).as_py() or 0)
                cumulative = rows.column("cumulative").to_numpy()
                counts = rows.column("count").to_numpy()
                before = int(cumulative[at - 1]) if at else int(cumulative[0] - counts[0])
                below = r.offset + before
                if at < len(values) and values[at].as_py() == key:
                    equal = int(counts[at])
                break
            break
        return below, equal, total - below - equal
