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

Over 400 lines on purpose: every partial lookup shares the footer cache and row-group
selection. Which partition a spec names is ``partition_names``; exact ranks and quantiles
are ``ranks``; a histogram's bin edges are ``stats.histogram.bin_edges``.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lakestats.errors import (
    ColumnNotFoundError,
    CorruptStatisticsError,
    InvalidArgumentError,
    LakestatsError,
    StatisticsNotFoundError,
)
from lakestats.stats import arrays, keys
from lakestats.stats.histogram import bin_edges
from lakestats.stats.kinds import Kind
from lakestats.stats.percentiles import percentile_names
from lakestats.stats.type_codec import Opaque, column_kind, decode_value, parse_type
from lakestats.store import manifest, partition_names
from lakestats.store.frequency_layers import FrequencyLayers, MergedColumn, layers_of
from lakestats.store.handle import StatisticsStore
from lakestats.store.schemas import SKETCH_COLUMNS, STATISTICS_ROW_GROUP

if TYPE_CHECKING:  # both import pyarrow.compute: opened when a lookup needs them
    from lakestats.store.partition_histograms import PartitionHistograms
    from lakestats.store.partition_index import PartitionIndex
    from lakestats.store.partition_rows import PartitionRows

ROW_GROUP_CACHE_BYTES = 16 * 1024 * 1024
"""Decoded statistics row groups a reader keeps (per reader: a service thread's handle)."""

KEY_COLUMNS = ("min", "max", *percentile_names(), "histogram_lower")


def _damaged(uri: str, exc: BaseException) -> CorruptStatisticsError:
    reason = " ".join(str(exc).split())[:200] or type(exc).__name__
    return CorruptStatisticsError(
        f"statistics file {uri} is damaged ({reason}): run `lakestats analyze` again, "
        "which recomputes partitions whose files are missing or changed size",
        path=uri,
    )


def _reading(method: Callable) -> Callable:
    """A lookup whose file turns out to be corrupt past its footer fails in one line
    naming the file, like one whose footer is."""

    @functools.wraps(method)
    def wrapper(self: StatisticsReader, *args: object, **kwargs: object) -> object:
        try:
            return method(self, *args, **kwargs)
        except LakestatsError:
            raise
        except (OSError, pa.ArrowException) as exc:
            raise _damaged(self._last_uri or self.root, exc) from exc

    return wrapper


class StatisticsReader:
    """Lookups against one published statistics version under a statistics root."""

    def __init__(
        self,
        root: StatisticsStore,
        version: int | None = None,
        open_file: Callable[[pafs.FileSystem, str], object] | None = None,
    ) -> None:
        self.store = root
        self.root = self.store.uri
        self._open = open_file or (lambda filesystem, path: filesystem.open_input_file(path))
        self.version = manifest.load_version(self.store, version)
        self._column_index = {c["name"]: i for i, c in enumerate(self.version.columns)}
        # each column's type as the table's format writes it, where the version recorded it
        self._table_types = {
            c["name"]: c["table_type"] for c in self.version.columns if "table_type" in c
        }
        self._files: dict[str, pq.ParquetFile] = {}
        self._last_uri: str | None = None
        # decoded row groups of statistics files, newest last (see ``_row_group``)
        self._groups: OrderedDict[tuple[object, ...], pa.Table] = OrderedDict()
        self._groups_bytes = 0
        self._groups_lock = threading.Lock()

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

    def partition(
        self, spec: str | dict[str, object] | manifest.PartitionEntry | None
    ) -> manifest.PartitionEntry:
        """Find a partition by the name or the path ``partitions`` prints, by ``k=v[,k2=v2]``
        or ``k=v/k2=v2`` (values percent-escaped as in the path where they hold ``,`` or
        ``/``), or by a dict of values (``None`` for null); ``None``: table level, or the
        one partition of an unpartitioned table."""
        parts = self.version.partitions
        if isinstance(spec, manifest.PartitionEntry):
            return spec
        if spec is None or spec == "" or spec == {}:
            if self.version.table_files:
                return self.table_entry()
            if len(parts) == 1:
                return parts[0]
            raise InvalidArgumentError(
                f"the table has {len(parts)} partitions: pass --partition k=v "
                "(see `lakestats partitions`)"
            )
        return partition_names.find(parts, spec)

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

    @_reading
    def partitions_containing(self, column: str, value: object) -> list[dict[str, object]]:
        """Partitions whose rows hold ``value`` in ``column``, with its count in each
        (a lookup in the table-level frequencies' per-partition counts)."""
        index = self.column_index(column)
        entry = self.table_entry()
        handle = self.parquet_file(entry, "frequencies")
        dtype = parse_type(self.version.columns[index]["type"])
        if isinstance(dtype, Opaque):
            raise InvalidArgumentError(f"column {column!r} has no frequencies")
        key = keys.encode_value(value, dtype)
        if layers_of(self.version, index) is not None:  # layered: no holders recorded
            return self._partitions_holding(column, index, key, value)
        metadata = handle.metadata
        position = handle.schema_arrow.get_field_index("column_index")
        for g in range(metadata.num_row_groups):
            stats = metadata.row_group(g).column(position).statistics
            if stats is not None and not (stats.min <= index <= stats.max):
                continue
            table = _rows_of_column(handle.read_row_group(g), index)
            values = table.column("value").to_pylist()
            hits = [table.slice(values.index(key), 1).to_pylist()[0]] if key in values else []
            if hits:
                holders = self._holders(hits[0])
                if holders is not None:
                    return holders
                break  # the table level counts it, but records no holders: ask the partitions
        else:
            row = self.statistics_table(
                None,
                [column],
                fields=["frequencies_exact", "frequencies_truncated", "all_distinct"],
            ).to_pylist()[0]
            complete = row["frequencies_exact"] and not row["frequencies_truncated"]
            if complete and not row["all_distinct"]:  # all distinct: none are stored
                return []  # every value is stored: this one occurs nowhere
        return self._partitions_holding(column, index, key, value)

    def merged_frequencies(self, index: int, fields: list[str]) -> MergedColumn | None:
        """The table-level frequencies of column ``index`` merged over the version's
        frequency layers, or None when its table file holds them (``frequency_layers``)."""
        layers = layers_of(self.version, index)
        return None if layers is None else MergedColumn(self.parquet_at, layers, index, fields)

    def _holders(self, hit: dict[str, object]) -> list[dict[str, object]] | None:
        """The holders the table level recorded for a value (categorical columns only)."""
        parts = self.version.partitions
        if hit["partition_counts"] is not None:
            pairs = [(i, c) for i, c in enumerate(hit["partition_counts"]) if c]
        elif hit["partition_ids"] is not None:
            pairs = list(zip(hit["partition_ids"], hit["partition_id_counts"], strict=True))
        else:
            return None
        return [
            {
                "partition": parts[i].values,
                "name": parts[i].name,
                "path": parts[i].path,
                "frequency": c,
            }
            for i, c in pairs
        ]

    def _partitions_holding(
        self, column: str, index: int, key: bytes, value: object
    ) -> list[dict[str, object]]:
        """``partitions_containing`` from each partition's own files: its stored frequencies
        count the value; a partition whose list is complete and lacks it, or whose
        ``[min, max]`` excludes it, does not hold it. Any other partition is undecidable
        from statistics, and then the answer is an error, never a guess."""
        fields = ["min", "max", "nan_count", "all_distinct", "frequencies_truncated"]
        is_nan = isinstance(value, float) and value != value
        out: list[dict[str, object]] = []
        undecided = []
        for entry in self.version.partitions:
            handle = self.parquet_file(entry, "statistics")
            group, offset = divmod(index, STATISTICS_ROW_GROUP)
            stats = handle.read_row_group(group, columns=fields).slice(offset, 1).to_pylist()[0]
            if is_nan:
                if stats["nan_count"]:
                    holder = {"partition": entry.values, "name": entry.name, "path": entry.path}
                    out.append({**holder, "frequency": stats["nan_count"]})
                continue
            if stats["min"] is None or not stats["min"] <= key <= stats["max"]:
                continue
            count = self._partition_frequency(entry, index, key)
            if count:
                out.append(
                    {"partition": entry.values, "name": entry.name, "path": entry.path,
                     "frequency": count}
                )
            elif stats["all_distinct"] or stats["frequencies_truncated"]:
                undecided.append(entry.name)
        if undecided:
            raise InvalidArgumentError(
                f"whether {value!r} is in column {column!r} is not recorded for "
                f"{len(undecided)} partition(s) (e.g. {undecided[0]}): they keep only their "
                "most frequent values or all their values are distinct; analyze with a larger "
                "--max-frequencies"
            )
        return out

    def _partition_frequency(self, entry: manifest.PartitionEntry, index: int, key: bytes) -> int:
        table = self.frequency_rows(entry, index)
        values = table.column("value").to_pylist()
        return int(table.column("frequency")[values.index(key)].as_py()) if key in values else 0

    def frequency_rows(self, entry: manifest.PartitionEntry, index: int) -> pa.Table:
        """One column's frequency rows in a partition (``store/partition_rows``)."""
        table = self._rows.read(entry, "frequencies", ["value", "frequency", "column_index"])
        return _rows_of_column(table, index)

    def histogram_counts(self, entry: manifest.PartitionEntry, column: str) -> pa.ChunkedArray:
        """One column's histogram counts in a partition or (its file) the table level."""
        if self._is_table(entry):
            return self._row_group(self.parquet_file(entry, "histograms"), None, [column]).column(0)
        return self._rows.read(entry, "histograms", [column]).column(0)

    @functools.cached_property
    def _rows(self) -> PartitionRows:  # imported when needed: it loads pyarrow.compute
        from lakestats.store.partition_rows import PartitionRows

        return PartitionRows(self.store, self.version, self._open)

    def _is_table(self, entry: manifest.PartitionEntry) -> bool:
        """``table_entry``'s: read by row group (an exact table level lists millions)."""
        return entry.path == "table" and entry.files is self.version.table_files

    def partition_index(self) -> PartitionIndex | None:
        """The version's ``partition_index.parquet`` (footer read once), or None when the
        version has none (``store/partition_index.py``)."""
        if not hasattr(self, "_partition_index"):
            from lakestats.store.partition_index import open_index

            self._partition_index = open_index(self.store, self.version, self._open)
        return self._partition_index

    def partition_histograms(self) -> PartitionHistograms | None:
        """The version's partition histograms (directory read once, parts opened when
        needed), or None when the version has none (``store/partition_histograms.py``)."""
        if not hasattr(self, "_partition_histograms"):
            from lakestats.store.partition_histograms import open_histograms

            self._partition_histograms = open_histograms(
                self.store, self.version, self._open
            )
        return self._partition_histograms

    # -- files ----------------------------------------------------------------
    def parquet_file(self, entry: manifest.PartitionEntry, kind: str) -> pq.ParquetFile:
        """A partition's ``kind`` file, opened once per reader (footer cached)."""
        return self.parquet_at(entry.files[kind])

    def parquet_at(self, relative: str) -> pq.ParquetFile:
        """The statistics file at ``relative``, opened once per reader (footer cached)."""
        uri = self.store.path(relative)
        cached = self._files.get(uri)
        if cached is not None:
            return cached
        filesystem, path = self.store.resolve(uri)
        self._last_uri = uri
        try:
            handle = pq.ParquetFile(self._open(filesystem, path), pre_buffer=True)
        except FileNotFoundError as exc:
            raise StatisticsNotFoundError(
                f"statistics file {uri} is missing: the statistics were expired or "
                "deleted; run analyze again"
            ) from exc
        except (OSError, pa.ArrowException) as exc:
            raise _damaged(uri, exc) from exc
        self._files[uri] = handle
        return handle

    # -- lookups --------------------------------------------------------------
    @_reading
    def statistics_table(
        self,
        partition: str | dict | None,
        columns: list[str] | None = None,
        include_sketches: bool = False,
        fields: list[str] | None = None,
    ) -> pa.Table:
        """Raw rows of ``statistics.parquet`` for ``columns`` (all when ``None``)."""
        entry = self.partition(partition)
        handle = self.parquet_file(entry, "statistics")
        names = handle.schema_arrow.names
        wanted = fields or [n for n in names if include_sketches or n not in SKETCH_COLUMNS]
        if columns is None:
            return handle.read(columns=wanted)
        indices = [self.column_index(c) for c in columns]
        groups = sorted({i // STATISTICS_ROW_GROUP for i in indices})
        parts = self._row_groups(handle, groups, wanted)
        table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        starts = {g: n * STATISTICS_ROW_GROUP for n, g in enumerate(groups)}
        rows = [starts[i // STATISTICS_ROW_GROUP] + i % STATISTICS_ROW_GROUP for i in indices]
        return _take(table, rows)

    def _row_groups(
        self, handle: pq.ParquetFile, groups: list[int], fields: list[str]
    ) -> list[pa.Table]:
        """``_row_group`` of each of ``groups``; the ones not cached are read in one call
        (one coalesced read, as a lookup of columns in many row groups made before the
        cache existed), then kept group by group."""
        found: dict[int, pa.Table] = {}
        with self._groups_lock:
            for g in groups:
                table = self._groups.get((handle, g, tuple(fields)))
                if table is not None:
                    self._groups.move_to_end((handle, g, tuple(fields)))
                    found[g] = table
        missing = [g for g in groups if g not in found]
        if len(missing) == 1:
            found[missing[0]] = self._row_group(handle, missing[0], fields)
        elif missing:
            read = handle.read_row_groups(missing, columns=fields)
            offset = 0
            for g in missing:
                rows = handle.metadata.row_group(g).num_rows
                found[g] = self._keep((handle, g, tuple(fields)), read.slice(offset, rows))
                offset += rows
        return [found[g] for g in groups]

    def _keep(self, key: tuple, table: pa.Table) -> pa.Table:
        """``table`` into the row-group cache (unless it is too big to keep)."""
        if table.nbytes > ROW_GROUP_CACHE_BYTES // 4:
            return table
        with self._groups_lock:
            if key not in self._groups:
                self._groups[key] = table
                self._groups_bytes += table.nbytes
                while self._groups_bytes > ROW_GROUP_CACHE_BYTES:
                    _, dropped = self._groups.popitem(last=False)
                    self._groups_bytes -= dropped.nbytes
        return table

    def _row_group(
        self, handle: pq.ParquetFile, group: int | None, fields: list[str]
    ) -> pa.Table:
        """Row group ``group`` (None: the whole file) of a statistics file, decoded once
        while it stays among the last ``ROW_GROUP_CACHE_BYTES`` read: decoding it was two
        thirds of a partition lookup, and a service asks for the same few groups again and
        again (a version's files never change). A group bigger than a quarter of that
        (an exact column's frequencies) is not kept."""
        key = (handle, group, tuple(fields))
        with self._groups_lock:
            found = self._groups.get(key)
            if found is not None:
                self._groups.move_to_end(key)
                return found
        if group is None:
            table = handle.read(columns=fields)
        else:
            table = handle.read_row_group(group, columns=fields)
        return self._keep(key, table)

    def column_statistics(
        self, partition: str | dict | None, columns: list[str] | None = None
    ) -> list[dict[str, object]]:
        """Decoded statistics (Python values) of ``columns`` of one partition, with the
        column's type as the table's format writes it (``table_type``, where the version
        recorded it)."""
        table = self.statistics_table(partition, columns)
        native = self._table_types
        out = []
        for row in table.to_pylist():
            for name in KEY_COLUMNS:
                if name in row:
                    row[name] = decode_value(row[name], row["type"])
            if native:
                row["table_type"] = native.get(row["column"])
            out.append(row)
        return out

    @_reading
    def frequencies(
        self, partition: str | dict | None, column: str, top: int | None = None
    ) -> list[tuple[object, int]]:
        """``(value, frequency)`` pairs by decreasing frequency (all stored, or the top k)."""
        if top is not None and top < 0:
            raise InvalidArgumentError(f"--top must be 0 or more, got {top}")
        index = self.column_index(column)
        entry = self.partition(partition)
        type_text = self.version.columns[index]["type"]
        merged = (
            self.merged_frequencies(index, ["value", "frequency"]) if partition is None else None
        )
        if merged is not None:
            pairs: list[tuple[object, int]] = []
            for table in merged.chunks():
                if top is not None:
                    table = table.slice(0, top - len(pairs))
                pairs += [
                    (decode_value(k, type_text), c)
                    for k, c in zip(
                        table.column("value").to_pylist(),
                        table.column("frequency").to_pylist(),
                        strict=True,
                    )
                ]
                if top is not None and len(pairs) >= top:
                    break
            return pairs
        out: list[tuple[object, int]] = []
        for table in self.frequency_chunks(entry, index):
            if top is not None:  # decode only the rows kept (exact tables list millions)
                table = table.slice(0, top - len(out))
            for key, count in zip(
                table.column("value").to_pylist(),
                table.column("frequency").to_pylist(),
                strict=True,
            ):
                out.append((decode_value(key, type_text), count))
            if top is not None and len(out) >= top:
                break
        return out if top is None else out[:top]

    def frequency_chunks(self, entry: manifest.PartitionEntry, index: int) -> Iterator[pa.Table]:
        """One column's frequency rows in order (the table level's by row group)."""
        if not self._is_table(entry):
            yield self.frequency_rows(entry, index)
            return
        handle = self.parquet_file(entry, "frequencies")
        position = handle.schema_arrow.get_field_index("column_index")
        for g in range(handle.metadata.num_row_groups):
            stats = handle.metadata.row_group(g).column(position).statistics
            if stats is None or (stats.min <= index <= stats.max):
                table = handle.read_row_group(g, columns=["value", "frequency", "column_index"])
                yield _rows_of_column(table, index)

    def most_frequent(self, partition: str | dict | None = None) -> dict[str, tuple[object, int]]:
        """Every column's most frequent stored value and its count, in one pass over the
        frequencies file (rows are by column, then by decreasing count: each column's first
        row), reading values only for those rows: what ``profile`` asks of a wide table."""
        entry = self.partition(partition)
        out: dict[str, tuple[object, int]] = {}
        for owners, read in self._frequency_groups(entry):
            if not len(owners):
                continue
            first = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
            rows = read().take(first)
            for index, key, count in zip(
                owners[first].tolist(),
                rows.column("value").to_pylist(),
                rows.column("frequency").to_pylist(),
                strict=True,
            ):
                column = self.version.columns[index]
                if column["name"] not in out:  # a column split over row groups: the first
                    out[column["name"]] = (decode_value(key, column["type"]), count)
        layers = FrequencyLayers.of(self.version) if partition is None else None
        for index in sorted(layers.columns) if layers is not None else []:
            column = self.version.columns[index]
            merged = MergedColumn(self.parquet_at, layers, index, ["value", "frequency"])
            for table in merged.chunks():
                key, count = table.column("value")[0].as_py(), table.column("frequency")[0]
                out[column["name"]] = (decode_value(key, column["type"]), count.as_py())
                break
        return out

    def _frequency_groups(
        self, entry: manifest.PartitionEntry
    ) -> Iterator[tuple[np.ndarray, Callable[[], pa.Table]]]:
        """(column indices, their values and counts read when asked) of every frequency
        row, the table level's by row group."""
        if not self._is_table(entry):
            table = self._rows.read(entry, "frequencies", ["value", "frequency", "column_index"])
            yield arrays.int_values(table.column("column_index")), lambda: table
            return
        handle = self.parquet_file(entry, "frequencies")
        for g in range(handle.metadata.num_row_groups):
            owners = handle.read_row_group(g, columns=["column_index"]).column(0).to_numpy()
            yield owners, functools.partial(handle.read_row_group, g, ["value", "frequency"])

    @_reading
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
        counts = self.histogram_counts(entry, column)
        counts = counts.slice(start, max(0, stop - start))
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


def _take(table: pa.Table, rows: list[int]) -> pa.Table:
    """``table.take(rows)`` without loading ``pyarrow.compute`` (~0.3 s to import; lookups
    take a few rows): zero-copy slices, runs of consecutive rows as one."""
    pieces = []
    start = 0
    while start < len(rows):
        end = start + 1
        while end < len(rows) and rows[end] == rows[end - 1] + 1:
            end += 1
        pieces.append(table.slice(rows[start], end - start))
        start = end
    if len(pieces) == 1:
        return pieces[0]
    return pa.concat_tables(pieces) if pieces else table.slice(0, 0)


def _rows_of_column(table: pa.Table, index: int) -> pa.Table:
    """The rows of column ``index`` in a frequencies row group: they are consecutive (rows
    are in column order), so a binary search on ``column_index`` finds them."""
    positions = arrays.int_values(table.column("column_index"))
    lo = int(np.searchsorted(positions, index, side="left"))
    hi = int(np.searchsorted(positions, index, side="right"))
    return table.slice(lo, hi - lo)
