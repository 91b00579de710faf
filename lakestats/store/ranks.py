"""Table-level exact ranks: range part files plus a small index, read one row group at a time.

``table/<run>/ranks/part-<k>.parquet`` (written by ``compute/exact/job.py``) holds rows
``(column_index, value, count, cumulative)`` sorted by column then value key, where
``cumulative`` counts the column's values up to and including this one *within the
part*; each row group holds one column, so its statistics bound the key and the
cumulative count. ``ranks/index.parquet`` has one row per (part, column): the range's
distinct values, total count, first and last key. A column's offset in a part is the sum
of its totals in the earlier parts, so a lookup reads the index, then one row group.

**Layers**: an incremental ``analyze --exact`` does not rewrite the ranks.
It writes a *delta* layer in the same layout whose counts are the signed changes (added
partitions' values +, removed ones' -) and whose index rows hold the change of the
range's distinct count and total. ``LayeredRanks`` merges the base and its deltas at read
time: counts, ranks and distinct counts add up; ``value_at`` searches the base's row
groups by their footer statistics plus the deltas' ranks, then merges one base row group
with the deltas' rows of the same key interval. A later analyze compacts the layers into
a new base when they grow (``compute/exact/job.py``). ``rank``, ``quantile``: the lookups.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pyarrow.types as pat

from lakestats.errors import InvalidArgumentError
from lakestats.stats import keys, literals
from lakestats.stats.key_sums import merged
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.type_codec import decode_value, parse_type
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import Version
from lakestats.store.schemas import RANKS_INDEX_SCHEMA as INDEX_SCHEMA
from lakestats.store.schemas import RANKS_SCHEMA

RANKS_ROW_GROUP = 8192
"""Rows per row group: a lookup decodes one group (~8k keys)."""

INDEX_FILE = "index.parquet"

_CACHED_GROUPS = 64
"""Decoded row groups a ``RankIndex`` keeps: a layered search revisits the same few."""


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
        self._parts: dict[int, tuple[pq.ParquetFile, list[tuple[int, int, tuple]]]] = {}
        self._decoded: OrderedDict[tuple[int, int], pa.Table] = OrderedDict()
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

    def _part(self, part: int) -> tuple[pq.ParquetFile, list[tuple[int, int, tuple]]]:
        """The part's open file and ``(group, column, (min key, max key, min cumulative, max
        cumulative))`` of each row group, from its footer (opened once)."""
        if part not in self._parts:
            relative = f"{self.directory}/part-{part:05d}.parquet"
            handle = pq.ParquetFile(self.store.open_input_file(self.store.path(relative)))
            meta = handle.metadata
            names = RANKS_SCHEMA.names
            groups = []
            for g in range(meta.num_row_groups):
                stats = {
                    names[c]: meta.row_group(g).column(c).statistics for c in range(len(names))
                }
                groups.append(
                    (
                        g,
                        stats["column_index"].min,
                        (
                            stats["value"].min,
                            stats["value"].max,
                            stats["cumulative"].min,
                            stats["cumulative"].max,
                        ),
                    )
                )
            self._parts[part] = (handle, groups)
        return self._parts[part]

    def _groups(self, part: int, column: int) -> tuple[pq.ParquetFile, list[tuple[int, tuple]]]:
        handle, groups = self._part(part)
        return handle, [(g, bounds) for g, owner, bounds in groups if owner == column]

    def _read_group(self, part: int, g: int) -> pa.Table:
        """Row group ``g`` of ``part`` (value, count, cumulative), decoded once."""
        key = (part, g)
        if key in self._decoded:
            self._decoded.move_to_end(key)
            return self._decoded[key]
        handle, _ = self._part(part)
        rows = handle.read_row_group(g, columns=["value", "count", "cumulative"])
        self._decoded[key] = rows
        if len(self._decoded) > _CACHED_GROUPS:
            self._decoded.popitem(last=False)
        return rows

    def group_ends(self, column: int) -> list[tuple[bytes, int]]:
        """``(last key, values up to and including it)`` of each of the column's row groups
        in key order, from the footers alone (a base layer: every count positive)."""
        ends = []
        for r in self.ranges.get(column, []):
            _, groups = self._groups(r.part, column)
            ends += [(bounds[1], r.offset + bounds[3]) for _, bounds in groups]
        return ends

    def rows_between(
        self, column: int, low: bytes | None, high: bytes | None
    ) -> tuple[pa.Array, np.ndarray]:
        """``(keys, counts)`` of the column's rows with ``low < key <= high`` (None:
        unbounded), in key order."""
        keys, counts = [], []
        for r in self.ranges.get(column, []):
            if (low is not None and r.max_key <= low) or (high is not None and r.min_key > high):
                continue
            _, groups = self._groups(r.part, column)
            for g, (first, last, _, _) in groups:
                if (low is not None and last <= low) or (high is not None and first > high):
                    continue
                rows = self._read_group(r.part, g)
                values = rows.column("value")
                mask = None
                if low is not None:
                    mask = pc.greater(values, pa.scalar(low, pa.binary()))
                if high is not None:
                    upper = pc.less_equal(values, pa.scalar(high, pa.binary()))
                    mask = upper if mask is None else pc.and_(mask, upper)
                if mask is not None:
                    rows = rows.filter(mask)
                keys.append(rows.column("value").combine_chunks())
                counts.append(rows.column("count").to_numpy())
        if not keys:
            return pa.array([], pa.binary()), np.zeros(0, dtype=np.int64)
        return pa.concat_arrays(keys), np.concatenate(counts)

    def value_at(self, column: int, rank: int) -> bytes | None:
        """The key of the value at 1-based ``rank`` in value order (nearest rank)."""
        for r in self.ranges.get(column, []):
            if r.offset < rank <= r.offset + r.total:
                local = rank - r.offset
                _, groups = self._groups(r.part, column)
                for g, (_, _, _, high) in groups:
                    if high >= local:  # the first group reaching the rank: one read
                        rows = self._read_group(r.part, g)
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
            _, groups = self._groups(r.part, column)
            below = r.offset
            for g, (_low, high, _, _) in groups:
                if key > high:
                    continue
                rows = self._read_group(r.part, g)
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


class LayeredRanks:
    """A base ``RankIndex`` and the delta layers written on top of it, merged at read
    time (the same questions as ``RankIndex``, answered over the sum of the layers)."""

    def __init__(self, layers: list[RankIndex]) -> None:
        self.layers = layers
        self.base, self.deltas = layers[0], layers[1:]

    def has(self, column: int) -> bool:
        return any(layer.has(column) for layer in self.layers)

    def distinct_count(self, column: int) -> int:
        return sum(layer.distinct_count(column) for layer in self.layers)

    def total(self, column: int) -> int:
        return sum(layer.total(column) for layer in self.layers)

    def rank_of(self, column: int, key: bytes) -> tuple[int, int, int]:
        """``(below, equal, above)`` summed over the layers."""
        below = equal = 0
        for layer in self.layers:
            b, e, _ = layer.rank_of(column, key)
            below, equal = below + b, equal + e
        return below, equal, self.total(column) - below - equal

    def _delta_at_most(self, column: int, key: bytes) -> int:
        """The deltas' net count of values ``<= key``."""
        return sum(sum(d.rank_of(column, key)[:2]) for d in self.deltas)

    def value_at(self, column: int, rank: int) -> bytes | None:
        """The key at 1-based ``rank`` of the merged values. The values ``<= k`` grow with
        ``k``, so a binary search over the base's row groups (their last key and running
        count from the footers, plus the deltas' count up to that key) finds the group
        whose key interval holds the rank; that group and the deltas' rows of the same
        interval, merged, give the key."""
        if not self.deltas:
            return self.base.value_at(column, rank)
        ends = self.base.group_ends(column)
        lo, hi = 0, len(ends)
        while lo < hi:
            mid = (lo + hi) // 2
            key, running = ends[mid]
            if running + self._delta_at_most(column, key) >= rank:
                hi = mid
            else:
                lo = mid + 1
        low = ends[lo - 1][0] if lo > 0 else None
        high = ends[lo][0] if lo < len(ends) else None
        before = ends[lo - 1][1] + self._delta_at_most(column, low) if low is not None else 0
        parts = [layer.rows_between(column, low, high) for layer in self.layers]
        keys, counts = merged(
            pa.concat_arrays([k for k, _ in parts]), np.concatenate([c for _, c in parts])
        )
        running = before + np.cumsum(counts)
        at = int(np.searchsorted(running, rank, side="left"))
        return keys[at].as_py() if at < len(keys) else None


def layer_indexes(table_files: dict[str, str], exact: dict[str, object]) -> list[str]:
    """The index files of a version's rank layers, base first (``exact`` is the version's
    ``extra["exact"]``; a version from before layers has the base alone)."""
    layers = list(exact.get("layers") or [])
    return layers or [table_files["ranks"]]


def open_layers(store: StatisticsStore, indexes: list[str]) -> LayeredRanks:
    """The layers whose index files are ``indexes`` (relative to ``store``), base first."""
    return LayeredRanks(
        [RankIndex.open(store, relative.rsplit("/", 1)[0]) for relative in indexes]
    )


class VersionColumns(Protocol):
    """A version's reader (``reader.StatisticsReader``): its store, version, column lookup."""

    store: StatisticsStore
    version: Version

    def column_index(self, name: str) -> int: ...


def _version_ranks(
    reader: VersionColumns, column: str
) -> tuple[int, LayeredRanks, pa.DataType]:
    """The column's index, the version's exact ranks and the column's type."""
    index, version = reader.column_index(column), reader.version
    table_files = version.table_files or {}
    if table_files.get("ranks") is None:
        raise InvalidArgumentError(
            "this statistics version has no exact ranks; run analyze --exact first"
        )
    exact = version.extra.get("exact") or {}
    ranks = open_layers(reader.store, layer_indexes(table_files, exact))
    if not ranks.has(index) and ranks.total(index) == 0:
        raise InvalidArgumentError(f"column {column!r} has no exact ranks (no values)")
    return index, ranks, parse_type(version.columns[index]["type"])


def rank(reader: VersionColumns, column: str, value: object) -> dict[str, object]:
    """Exact rank of ``value`` among the column's non-null, non-NaN values: rows below,
    equal, above, and its percentile (share of values below or equal)."""
    index, ranks, dtype = _version_ranks(reader, column)
    if isinstance(value, str) and not pat.is_string(dtype) and not pat.is_large_string(dtype):
        value = literals.parse_value(value, column, dtype)
    if isinstance(value, float) and math.isnan(value):
        raise InvalidArgumentError(
            f"NaN has no rank: ranks, quantiles, percentiles and histograms of {column!r} "
            "leave NaN out (show's nan_count counts them); pass a number, inf or -inf"
        )
    key = keys.encode(pa.array([value], dtype))[0].as_py()
    below, equal, above = ranks.rank_of(index, key)
    above -= _nan_count(index, ranks, dtype)
    total = below + equal + above
    return {
        "below": below,
        "equal": equal,
        "above": above,
        "total": total,
        "percentile": (below + equal) / total if total else None,
    }


def _nan_count(index: int, ranks: LayeredRanks, dtype: pa.DataType) -> int:
    """NaN values of a float column: they sort last in key order, and order statistics
    leave them out (docs/limits.md, "NaN")."""
    if kind_of(dtype) != Kind.FLOATING:
        return 0
    nan_key = keys.encode(pa.array([math.nan], pa.float64()))[0].as_py()
    return ranks.rank_of(index, nan_key)[1]


def quantile(reader: VersionColumns, column: str, p: float) -> object:
    """The exact ``p`` quantile of the non-null, non-NaN values (nearest rank, as
    DuckDB's ``quantile_disc`` over them)."""
    if not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"--p must be between 0 and 1, got {p}")
    index, ranks, dtype = _version_ranks(reader, column)
    total = ranks.total(index) - _nan_count(index, ranks, dtype)
    if total <= 0:
        return None  # every value null or NaN
    at = max(1, math.ceil(Fraction(repr(p)) * total))
    return decode_value(ranks.value_at(index, at), reader.version.columns[index]["type"])
