"""Partial lookups of published statistics, without Spark or a JVM.

Each lookup reads only what it needs from the object store:

* statistics of some columns: the row groups holding those rows (1,024 columns per
  group), without the sketch columns unless asked;
* top-k frequencies of a column: the first row group whose ``column_index`` range
  (from the footer's statistics) contains the column;
* a range of histogram bins: one column chunk of ``histograms.parquet`` plus the
  column's bin edges from its ``statistics.parquet`` row.

Footers are cached per file, so repeated lookups on one ``StatisticsReader`` read
only column data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pyarrow.types as pat

from lakestats import fs
from lakestats.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    PartitionNotFoundError,
    StatisticsNotFoundError,
)
from lakestats.stats import keys
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.percentiles import percentile_names
from lakestats.store import layout, manifest
from lakestats.store.schemas import SKETCH_COLUMNS, STATISTICS_ROW_GROUP

KEY_COLUMNS = ("min", "max", *percentile_names(), "histogram_lower")


@lru_cache(maxsize=64)
def parse_type(text: str) -> pa.DataType:
    """Rebuild an Arrow type from its ``str()`` (the ``type`` column)."""
    import re

    simple = {
        "int8": pa.int8(),
        "int16": pa.int16(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "uint8": pa.uint8(),
        "uint16": pa.uint16(),
        "uint32": pa.uint32(),
        "uint64": pa.uint64(),
        "halffloat": pa.float16(),
        "float": pa.float32(),
        "double": pa.float64(),
        "bool": pa.bool_(),
        "string": pa.string(),
        "large_string": pa.large_string(),
        "binary": pa.binary(),
        "large_binary": pa.large_binary(),
        "date32[day]": pa.date32(),
        "date64[ms]": pa.date64(),
        "null": pa.null(),
        "string_view": pa.string_view(),
        "binary_view": pa.binary_view(),
    }
    if text in simple:
        return simple[text]
    if m := re.fullmatch(r"decimal(32|64|128|256)\((\d+), (-?\d+)\)", text):
        factory = {
            "32": pa.decimal32,
            "64": pa.decimal64,
            "128": pa.decimal128,
            "256": pa.decimal256,
        }[m.group(1)]
        return factory(int(m.group(2)), int(m.group(3)))
    if m := re.fullmatch(r"timestamp\[(\w+)(?:, tz=(.+))?\]", text):
        return pa.timestamp(m.group(1), tz=m.group(2))
    if m := re.fullmatch(r"time(32|64)\[(\w+)\]", text):
        return (pa.time32 if m.group(1) == "32" else pa.time64)(m.group(2))
    if m := re.fullmatch(r"duration\[(\w+)\]", text):
        return pa.duration(m.group(1))
    if m := re.fullmatch(r"fixed_size_binary\[(\d+)\]", text):
        return pa.binary(int(m.group(1)))
    if m := re.fullmatch(r"dictionary<values=(.+), indices=.*", text):
        return parse_type(m.group(1).rsplit(",", 1)[0] if "ordered" in text else m.group(1))
    return pa.null() if text == "null" else _Opaque(text)


class _Opaque:
    """A nested or exotic type: statistics keep counts and lengths only."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def column_kind(type_text: str) -> Kind:
    return kind_of(parse_type(type_text))


def decode_value(key: bytes | None, type_text: str) -> object:
    dtype = parse_type(type_text)
    if key is None or isinstance(dtype, _Opaque):
        return None
    return keys.decode(key, dtype)


class StatisticsReader:
    """Lookups against one published statistics version under a statistics root."""

    def __init__(
        self,
        root: str,
        version: int | None = None,
        s3: fs.S3Options | None = None,
        open_file: Callable[[pafs.FileSystem, str], object] | None = None,
    ) -> None:
        self.root = fs.normalize(root)
        self.s3 = s3
        self._open = open_file or (lambda filesystem, path: filesystem.open_input_file(path))
        self.version = manifest.load_version(self.root, version, s3)
        self._column_index = {c["name"]: i for i, c in enumerate(self.version.columns)}
        self._files: dict[str, pq.ParquetFile] = {}

    # -- naming ---------------------------------------------------------------
    @property
    def columns(self) -> list[dict[str, str]]:
        return self.version.columns

    def column_index(self, name: str) -> int:
        if name not in self._column_index:
            names = ", ".join(list(self._column_index)[:20])
            raise ColumnNotFoundError(
                f"column {name!r} has no statistics; analyzed columns are: {names}"
            )
        return self._column_index[name]

    def partition(self, spec: str | dict[str, object] | None) -> manifest.PartitionEntry:
        """Find a partition by ``k=v[,k2=v2]`` (or a dict); ``None`` if unpartitioned."""
        parts = self.version.partitions
        if spec is None or spec == "" or spec == {}:
            if self.version.table_files:
                return self.table_entry()
            if len(parts) == 1:
                return parts[0]
            raise InvalidArgumentError(
                f"the table has {len(parts)} partitions: pass --partition k=v "
                "(see `lakestats partitions`)"
            )
        wanted = (
            _parse_partition(spec)
            if isinstance(spec, str)
            else {k: str(v) for k, v in spec.items()}
        )
        for entry in parts:
            have = dict(_parse_partition(entry.name)) if entry.name else {}
            if have == wanted or {k: str(v) for k, v in entry.values.items()} == wanted:
                return entry
        examples = ", ".join(p.name for p in parts[:3])
        raise PartitionNotFoundError(
            f"no partition {spec!r} in the statistics; partitions look like: {examples}"
        )

    def table_entry(self) -> manifest.PartitionEntry:
        """The table-level files, addressed like a partition (``partition=None``)."""
        if not self.version.table_files:
            raise StatisticsNotFoundError(
                f"statistics version {self.version.version} has no table-level files; "
                "run `lakestats analyze` again"
            )
        return manifest.PartitionEntry(
            path="table",
            name="",
            values={},
            row_count=self.version.merged_record_count,
            size_bytes=self.version.merged_record_size,
            files=self.version.table_files,
        )

    def partitions_containing(self, column: str, value: object) -> list[dict[str, object]]:
        """Partitions whose rows hold ``value`` in ``column``, with its count in each
        (a lookup in the table-level frequencies' per-partition counts)."""
        index = self.column_index(column)
        entry = self.table_entry()
        handle = self._file(entry, "frequencies")
        dtype = parse_type(self.version.columns[index]["type"])
        if isinstance(dtype, _Opaque):
            raise InvalidArgumentError(f"column {column!r} has no frequencies")
        key = keys.encode(pa.array([value], dtype))[0].as_py()
        metadata = handle.metadata
        position = handle.schema_arrow.get_field_index("column_index")
        for g in range(metadata.num_row_groups):
            stats = metadata.row_group(g).column(position).statistics
            if stats is not None and not (stats.min <= index <= stats.max):
                continue
            table = handle.read_row_group(g)
            mask = pc.and_(
                pc.equal(table.column("column_index"), index),
                pc.equal(table.column("value"), pa.scalar(key, pa.binary())),
            )
            hits = table.filter(mask).to_pylist()
            if hits:
                return self._holders(hits[0])
        row = self.statistics_table(
            None, [column], fields=["frequencies_exact", "frequencies_truncated"]
        ).to_pylist()[0]
        if row["frequencies_exact"] and not row["frequencies_truncated"]:
            return []  # every value is stored: this one occurs nowhere
        raise InvalidArgumentError(
            f"column {column!r} keeps only its most frequent values at table level (or all "
            f"its values are distinct), so which partitions hold {value!r} is not recorded"
        )

    def _holders(self, hit: dict[str, object]) -> list[dict[str, object]]:
        parts = self.version.partitions
        if hit["partition_counts"] is not None:
            pairs = [(i, c) for i, c in enumerate(hit["partition_counts"]) if c]
        else:
            pairs = list(zip(hit["partition_ids"], hit["partition_id_counts"], strict=True))
        return [
            {"partition": parts[i].values, "name": parts[i].name, "frequency": c} for i, c in pairs
        ]

    def partition_index(self):  # noqa: ANN201 - PartitionIndex | None
        """The version's ``partition_index.parquet`` (footer read once), or None when the
        version has none (``store/partition_index.py``)."""
        if not hasattr(self, "_partition_index"):
            from lakestats.store.partition_index import open_index

            self._partition_index = open_index(self.root, self.version, self.s3, self._open)
        return self._partition_index

    # -- files ----------------------------------------------------------------
    def _file(self, entry: manifest.PartitionEntry, kind: str) -> pq.ParquetFile:
        uri = layout.absolute(self.root, entry.files[kind])
        cached = self._files.get(uri)
        if cached is not None:
            return cached
        filesystem, path = fs.resolve(uri, self.s3)
        try:
            handle = pq.ParquetFile(self._open(filesystem, path), pre_buffer=True)
        except FileNotFoundError as exc:
            raise StatisticsNotFoundError(
                f"statistics file {uri} is missing: the statistics were expired or "
                "deleted; run analyze again"
            ) from exc
        self._files[uri] = handle
        return handle

    # -- lookups --------------------------------------------------------------
    def statistics_table(
        self,
        partition: str | dict | None,
        columns: list[str] | None = None,
        include_sketches: bool = False,
        fields: list[str] | None = None,
    ) -> pa.Table:
        """Raw rows of ``statistics.parquet`` for ``columns`` (all when ``None``)."""
        entry = self.partition(partition)
        handle = self._file(entry, "statistics")
        names = handle.schema_arrow.names
        wanted = fields or [n for n in names if include_sketches or n not in SKETCH_COLUMNS]
        if columns is None:
            return handle.read(columns=wanted)
        indices = [self.column_index(c) for c in columns]
        groups = sorted({i // STATISTICS_ROW_GROUP for i in indices})
        table = handle.read_row_groups(groups, columns=wanted)
        starts = {g: n * STATISTICS_ROW_GROUP for n, g in enumerate(groups)}
        rows = [starts[i // STATISTICS_ROW_GROUP] + i % STATISTICS_ROW_GROUP for i in indices]
        return table.take(pa.array(rows, pa.int64()))

    def column_statistics(
        self, partition: str | dict | None, columns: list[str] | None = None
    ) -> list[dict[str, object]]:
        """Decoded statistics (Python values) of ``columns`` of one partition."""
        table = self.statistics_table(partition, columns)
        out = []
        for row in table.to_pylist():
            for name in KEY_COLUMNS:
                if name in row:
                    row[name] = decode_value(row[name], row["type"])
            out.append(row)
        return out

    def frequencies(
        self, partition: str | dict | None, column: str, top: int | None = None
    ) -> list[tuple[object, int]]:
        """``(value, frequency)`` pairs by decreasing frequency (all stored, or the top k)."""
        if top is not None and top < 0:
            raise InvalidArgumentError(f"--top must be 0 or more, got {top}")
        index = self.column_index(column)
        entry = self.partition(partition)
        handle = self._file(entry, "frequencies")
        metadata = handle.metadata
        position = handle.schema_arrow.get_field_index("column_index")
        groups = []
        for g in range(metadata.num_row_groups):
            stats = metadata.row_group(g).column(position).statistics
            if stats is None or (stats.min <= index <= stats.max):
                groups.append(g)
        type_text = self.version.columns[index]["type"]
        out: list[tuple[object, int]] = []
        for g in groups:
            table = handle.read_row_group(g, columns=["value", "frequency", "column_index"])
            table = table.filter(pc.equal(table.column("column_index"), index))
            for key, count in zip(
                table.column("value").to_pylist(),
                table.column("frequency").to_pylist(),
                strict=True,
            ):
                out.append((decode_value(key, type_text), count))
            if top is not None and len(out) >= top:
                break
        return out if top is None else out[:top]

    def _ranks(self, column: str) -> tuple[int, object]:
        """The column's index and the exact rank index of the version (``analyze --exact``)."""
        from lakestats.store.ranks import RankIndex

        index = self.column_index(column)
        relative = (self.version.table_files or {}).get("ranks")
        if relative is None:
            raise InvalidArgumentError(
                "this statistics version has no exact ranks; run analyze --exact first"
            )
        ranks = RankIndex.open(self.root, relative.rsplit("/", 1)[0], self.s3)
        if not ranks.has(index) and ranks.total(index) == 0:
            raise InvalidArgumentError(f"column {column!r} has no exact ranks (no values)")
        return index, ranks

    def rank(self, column: str, value: object) -> dict[str, object]:
        """Exact rank of ``value`` among the column's non-null values: rows below, equal,
        above, and its percentile (share of values below or equal)."""
        index, ranks = self._ranks(column)
        dtype = parse_type(self.version.columns[index]["type"])
        if isinstance(value, str) and not pat.is_string(dtype) and not pat.is_large_string(dtype):
            value = keys.parse_literal(value, dtype)
        key = keys.encode(pa.array([value], dtype))[0].as_py()
        below, equal, above = ranks.rank_of(index, key)
        total = below + equal + above
        return {
            "below": below,
            "equal": equal,
            "above": above,
            "total": total,
            "percentile": (below + equal) / total if total else None,
        }

    def quantile(self, column: str, p: float) -> object:
        """The exact ``p`` quantile (nearest rank, as DuckDB's ``quantile_disc``)."""
        if not 0.0 <= p <= 1.0:
            raise InvalidArgumentError(f"--p must be between 0 and 1, got {p}")
        index, ranks = self._ranks(column)
        total = ranks.total(index)
        rank = max(1, math.ceil(Fraction(repr(p)) * total))
        key = ranks.value_at(index, rank)
        return decode_value(key, self.version.columns[index]["type"])

    def histogram(
        self, partition: str | dict | None, column: str, start: int = 0, stop: int | None = None
    ) -> list[dict[str, object]]:
        """Bins ``[start, stop)`` of a column's histogram: lower, upper and count."""
        if start < 0 or (stop is not None and stop < start):
            raise InvalidArgumentError(f"bad bin range {start}:{stop}")
        row = self.statistics_table(
            partition,
            [column],
            fields=["type", "max", "histogram_lower", "histogram_width", "histogram_bins"],
        ).to_pylist()[0]
        if row["histogram_bins"] is None:
            kind = column_kind(row["type"])
            if kind in (Kind.INTEGER, Kind.FLOATING, Kind.DECIMAL, Kind.TEMPORAL):
                return []  # every value null (or NaN): an empty histogram
            raise InvalidArgumentError(
                f"column {column!r} ({row['type']}) has no histogram: only numeric, decimal, "
                "date and timestamp columns do"
            )
        bins = row["histogram_bins"]
        stop = bins if stop is None else min(stop, bins)
        entry = self.partition(partition)
        handle = self._file(entry, "histograms")
        counts = handle.read(columns=[column]).column(0).slice(start, max(0, stop - start))
        edges = bin_edges(
            row["type"],
            row["histogram_lower"],
            row["histogram_width"],
            bins,
            row["max"],
            start,
            stop,
        )
        return [
            {"lower": lo, "upper": hi, "count": c}
            for (lo, hi), c in zip(edges, counts.to_pylist(), strict=True)
        ]


def bin_edges(
    type_text: str, lower_key: bytes, width: float, bins: int, max_key: bytes, start: int, stop: int
) -> list[tuple[object, object]]:
    """Recompute bin edges exactly as the writer did (see ``lakestats.stats.histogram``):
    bin ``i`` is ``[lower + i * width, lower + (i + 1) * width)``; the last is ``[.., max]``."""
    dtype = parse_type(type_text)
    kind = kind_of(dtype)
    if kind == Kind.FLOATING:
        lo = keys.decode(lower_key, dtype)
        top = keys.decode(max_key, dtype)
        out = []
        for i in range(start, stop):
            upper = top if (i == bins - 1 or width == 0.0) else lo + (i + 1) * width
            out.append((lo + i * width, upper))
        return out
    step = int(width)
    if kind == Kind.DECIMAL:
        lo_unscaled = keys.unscaled_of(keys.decode(lower_key, dtype), dtype.scale)
        end = keys.unscaled_of(keys.decode(max_key, dtype), dtype.scale)
        return [
            (
                keys.decimal_from_unscaled(lo_unscaled + i * step, dtype.scale),
                keys.decimal_from_unscaled(_upper(lo_unscaled, step, i, bins, end), dtype.scale),
            )
            for i in range(start, stop)
        ]
    if kind == Kind.INTEGER:
        lo_int = int(keys.decode(lower_key, dtype))
        end = int(keys.decode(max_key, dtype))
        return [(lo_int + i * step, _upper(lo_int, step, i, bins, end)) for i in range(start, stop)]
    lo_int = int.from_bytes(lower_key, "big") - (1 << 63)
    if kind == Kind.TEMPORAL:
        end = int.from_bytes(max_key, "big") - (1 << 63)
        return [
            (
                keys.from_integer(lo_int + i * step, dtype),
                keys.from_integer(_upper(lo_int, step, i, bins, end), dtype),
            )
            for i in range(start, stop)
        ]
    return []


def _upper(lower: int, step: int, i: int, bins: int, end: int) -> int:
    """Bin ``i``'s upper edge: ``lower + (i + 1) * step``, except that the last bin (closed,
    as a float histogram's) ends at max, not at its nominal end past it."""
    return end if i == bins - 1 else lower + (i + 1) * step


def _parse_partition(spec: str) -> dict[str, str]:
    out = {}
    for part in spec.split(","):
        if "=" not in part:
            raise InvalidArgumentError(f"bad partition {spec!r}: write it as k=v or k=v,k2=v2")
        name, _, value = part.partition("=")
        out[name.strip()] = value.strip()
    return out


__all__ = ["StatisticsReader", "bin_edges", "decode_value", "parse_type"]
