"""The partition index as the estimator's ``PartitionSource`` (``query.source``).

``partitions_of(reader, columns)`` takes the scalars of every partition (row, null, NaN
and distinct counts, min and max keys, complete / all-distinct flags) from ONE read of
``partition_index.parquet`` (the row groups of ``columns`` only) and hands them to the
estimator as vectors, with the per-partition counts of values the table level records for
categorical columns (``point_counts``, one read of the table-level ``frequencies.parquet``).
Its ``IndexPartition``s are made when asked for; their frequencies and histograms are
loaded only when an estimate needs them: for ordered columns from the version's partition
histograms (``held``: one read per column of the partitions the estimator said it will
look at, ``expect``), else from the partition's files (``sources.ReaderPartition``), both
built with the same functions (``sources.frequencies_of`` / ``histogram_of``), so the
numbers are the files'. Versions without an index fall back to ``sources.partitions_of``.

Over 400 lines because the index's vectors, its lazily made partitions and the per-column
reads they share are one cache with one lock; the held rows are apart (``held``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.query import sources
from lakestats.query.held import LISTED_ROWS, _Held
from lakestats.stats.arrays import (
    binary_array,
    int64_array,
    int_values,
    integer_array,
    numbers,
)
from lakestats.stats.column_summary import NAN_KEY, ColumnSummary, Frequencies, Histogram
from lakestats.stats.kinds import kind_of
from lakestats.stats.selectivity_vector import Vectors
from lakestats.stats.type_codec import parse_type
from lakestats.store import manifest
from lakestats.store.part_keys import key_width
from lakestats.store.partition_histograms import HELD_KINDS
from lakestats.store.partition_index import SCALAR_FIELDS, partition_summaries
from lakestats.store.reader import StatisticsReader

FIELDS = SCALAR_FIELDS
"""What the estimator reads from the index."""
KEPT_ROWS = 100_000
"""Table-level frequency rows of one column kept in memory for point counts (more are
read again for each new set of keys)."""


class _Columns:
    """The index rows of one column (Arrow, one slot per partition id)."""

    def __init__(self, dtype: pa.DataType, rows: pa.Table, partitions: int) -> None:
        self.dtype = dtype
        self.partitions = partitions
        ids = numbers(rows.column("partition_id"))
        self.slot = np.full(partitions, -1, dtype=np.int64)
        self.slot[ids] = np.arange(len(ids))
        self.rows = rows.combine_chunks()
        self._vectors: Vectors | None = None
        self._lists: dict[str, list] | None = None

    def row(self, j: int) -> dict:
        if self.rows.num_rows > LISTED_ROWS:  # a few of many asked: an Arrow scalar each
            return {f: self.rows.column(f)[j].as_py() for f in FIELDS}
        if self._lists is None:  # every partition's asked soon: as Python lists, once
            self._lists = {f: self.rows.column(f).to_pylist() for f in FIELDS}
        return {f: self._lists[f][j] for f in FIELDS}

    @property
    def complete(self) -> bool:
        """The index has a row for every partition (else the files answer some)."""
        return bool(np.all(self.slot >= 0))

    def vectors(self) -> Vectors:
        """The scalars by partition position (the caller checked ``complete``)."""
        if self._vectors is None:
            take = int64_array(self.slot)
            rows = self.rows.take(take) if not _identity(self.slot) else self.rows

            def ints(name: str) -> np.ndarray:
                return numbers(rows.column(name), 0, np.int64)

            distinct = rows.column("distinct_count").combine_chunks().cast(pa.float64())
            self._vectors = Vectors(
                self.dtype,
                ints("row_count"),
                ints("null_count"),
                ints("nan_count"),
                numbers(distinct, np.nan, np.float64),
                rows.column("min").combine_chunks(),
                rows.column("max").combine_chunks(),
            )
        return self._vectors

    def flag(self, name: str) -> np.ndarray:
        """A boolean field by partition position (null: False)."""
        return numbers(self.rows.column(name), False, bool)[self.slot]


def _identity(slot: np.ndarray) -> bool:
    return bool(np.array_equal(slot, np.arange(len(slot))))


class IndexPartition:
    """One partition of a version, answered from the partition index (and, for
    histograms and frequencies, from the partition histograms when the version has
    it)."""

    def __init__(
        self,
        reader: StatisticsReader,
        position: int,
        entry: manifest.PartitionEntry,
        columns: dict[str, _Columns],
        held: Callable[[str], _Held | None] = lambda column: None,
    ) -> None:
        self.reader = reader
        self.position = position
        self.entry = entry
        self.name = entry.name
        self.values = dict(entry.values)
        self.row_count = int(entry.row_count)
        self._columns = columns
        self._held = held
        self._files: sources.ReaderPartition | None = None
        self._summaries: dict[str, ColumnSummary] = {}

    def _file_partition(self) -> sources.ReaderPartition:
        if self._files is None:
            self._files = sources.ReaderPartition(
                self.reader, self.entry, list(self._columns)
            )
        else:  # a resident estimator may have added columns since
            self._files.add_columns(list(self._columns))
        return self._files

    def summary(self, column: str) -> ColumnSummary:
        if column not in self._summaries:
            self._summaries[column] = self._summary(column)
        return self._summaries[column]

    def _summary(self, column: str) -> ColumnSummary:
        data = self._columns[column]
        j = int(data.slot[self.position])
        if j < 0:  # the index lacks this partition's row: the files answer
            return self._file_partition().summary(column)
        row = data.row(j)
        return ColumnSummary(
            dtype=data.dtype,
            row_count=int(row["row_count"]),
            null_count=int(row["null_count"]),
            nan_count=int(row["nan_count"] or 0),
            distinct_count=row["distinct_count"],
            min_key=row["min"],
            max_key=row["max"],
            frequencies_source=lambda: self._frequencies(column, row),
            histogram_source=lambda: self._histogram(column),
        )

    def _frequencies(self, column: str, row: dict) -> Frequencies | None:
        # the same answers as ReaderPartition._frequencies (the same function), without a
        # file where the index or partition_histograms.parquet decides them
        if row["all_distinct"]:
            return Frequencies((), np.zeros(0, dtype=np.int64), False, 1)
        if row["frequencies_complete"] and (row["distinct_count"] or 0) == 0:
            return Frequencies((), np.zeros(0, dtype=np.int64), True, None)
        held = self._held(column)
        found = held.frequencies.row(self.position) if held is not None else None
        if found is None:
            return self._file_partition().summary(column).frequencies
        return sources.frequencies_of({**row, **found.fields}, found.frequency_rows)

    def frequency_arrays(self, column: str) -> Frequencies | None:
        """``summary(column).frequencies`` with its keys as one NumPy ``S{width}`` array
        (``HeldRow.frequency_arrays``), where the partition histograms hold them and
        something is listed; else None (ask ``summary``)."""
        data = self._columns[column]
        j = int(data.slot[self.position])
        if j < 0:
            return None
        row = data.row(j)
        if row["all_distinct"] or (
            row["frequencies_complete"] and (row["distinct_count"] or 0) == 0
        ):
            return None
        held = self._held(column)
        found = held.frequencies.row(self.position) if held is not None else None
        if found is None:
            return None
        arrays = found.frequency_arrays()
        if arrays is None or arrays[0] is None:
            return None
        return sources.frequencies_of(
            {**row, **found.fields}, lambda: arrays, keep_keys=True
        )

    def _histogram(self, column: str) -> Histogram | None:
        held = self._held(column)
        found = held.histograms.row(self.position) if held is not None else None
        if found is None:
            return self._file_partition().summary(column).histogram
        has = found.is_valid("histogram_counts")
        if found.fields["histogram_lower"] is not None and not has:
            return self._file_partition().summary(column).histogram  # not in the file
        fields = {**found.fields, "histogram_bins": 0 if has else None}
        dtype = self._columns[column].dtype
        return sources.histogram_of(fields, dtype, True, found.histogram_counts)


class IndexPartitions(Sequence):
    """Every partition of a version (made when asked for), with the columns' scalars as
    vectors for the estimator (``query.estimate``)."""

    def __init__(self, reader: StatisticsReader, columns: dict[str, _Columns]) -> None:
        self.reader = reader
        self.entries = reader.version.partitions
        self._columns = columns
        self._made: dict[int, IndexPartition] = {}
        self._point_counts: dict[tuple, np.ndarray | None] = {}
        self._held: dict[str, _Held | None] = {}
        self._held_lock = threading.Lock()
        self._row_counts: np.ndarray | None = None
        self._visited: dict[str, np.ndarray] = {}
        self.cache: dict[str, object] = {}  # the estimator's, for this version
        self._heads: dict[int, tuple] = {}  # a matching partition's first fields
        self._table_rows: dict[str, list[pa.Table]] = {}  # _table_frequency_rows, kept
        self._table_flags: dict[str, dict] = {}  # the table level's frequency flags

    def add_columns(self, columns: Sequence[str]) -> None:
        """Answer ``columns`` too: the index rows of those not yet read, one read (a
        resident estimator keeps one ``IndexPartitions`` per statistics version and adds
        each predicate's columns; the partitions made so far see them)."""
        missing = [c for c in dict.fromkeys(columns) if c not in self._columns]
        if missing:
            self._columns.update(column_data(self.reader, missing))

    def columns(self) -> list[str]:
        return list(self._columns)

    def visited_mask(self, columns: Sequence[str], positions: np.ndarray) -> np.ndarray:
        """Per position, whether its statistics of ``columns`` were read in full before
        (``mark_visited``): they are in memory."""
        out = np.ones(len(positions), dtype=bool)
        for column in columns:
            seen = self._visited.get(column)
            if seen is None:
                return np.zeros(len(positions), dtype=bool)
            out &= seen[positions]
        return out

    def mark_visited(self, columns: Sequence[str], positions: np.ndarray) -> None:
        for column in columns:
            seen = self._visited.setdefault(column, np.zeros(len(self.entries), dtype=bool))
            seen[positions] = True

    def held(self, column: str) -> _Held | None:
        """The column's rows of the partition histograms (None when the version
        has no such file or it does not hold the column's kind)."""
        with self._held_lock:
            if column not in self._held:
                self._held[column] = self._open_held(column)
            return self._held[column]

    def _open_held(self, column: str) -> _Held | None:
        data = self._columns.get(column)
        if data is None or kind_of(data.dtype) not in HELD_KINDS:
            return None
        source = self.reader.partition_histograms()
        if source is None or not source.holds(kind_of(data.dtype)):
            return None  # an older directory: not its kind
        return _Held(source, self.reader.column_index(column), len(self.entries),
                     key_width(data.dtype))

    def expect(self, columns: Sequence[str], positions: np.ndarray) -> None:
        """The estimate will look only at the partitions at ``positions``: the first need
        of a column's histograms or frequencies reads theirs (one read per column)."""
        for column in dict.fromkeys(columns):
            held = self.held(column)
            if held is not None and len(positions):
                held.expect(np.asarray(positions, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int) -> IndexPartition:  # type: ignore[override]
        if i < 0:
            i += len(self.entries)
        if i not in self._made:
            self._made[i] = IndexPartition(
                self.reader, i, self.entries[i], self._columns, self.held
            )
        return self._made[i]

    def __iter__(self) -> Iterator[IndexPartition]:
        return (self[i] for i in range(len(self.entries)))

    def head(self, i: int) -> tuple[dict[str, object], str, int]:
        found = self._heads.get(i)
        if found is None:
            part = self[i]
            found = self._heads[i] = (part.values, part.name, part.row_count)
        return found

    def row_counts(self) -> np.ndarray:
        if self._row_counts is None:
            self._row_counts = np.array([e.row_count for e in self.entries], np.int64)
            self._row_counts.setflags(write=False)
        return self._row_counts

    def vectors(self, column: str) -> Vectors | None:
        """The column's scalars per partition, or None when the index misses some."""
        data = self._columns.get(column)
        return data.vectors() if data is not None and data.complete else None

    def point_counts(self, column: str, point_keys: Sequence[bytes]) -> np.ndarray | None:
        """Per partition, how many rows hold one of ``point_keys``, where that count is
        what the partition's complete frequencies say (-1 elsewhere): for ordered columns
        from the partition histograms (the expected partitions' frequency rows, one
        read, counted with Arrow), else from the table-level frequencies' per-partition
        counts (categorical columns), read once; None when neither records them."""
        held = self.held(column)
        # the held path counts the expected partitions: a resident estimator's expected
        # set grows, so its counts are re-read when it did
        key = (column, tuple(point_keys), held.generation if held is not None else -1)
        if key not in self._point_counts:
            self._point_counts[key] = self._read_point_counts(column, list(point_keys))
        return self._point_counts[key]

    def _table_frequency_rows(self, column: str) -> list[pa.Table] | None:
        """The table-level frequency rows of ``column`` (value and per-partition counts),
        per row group read; kept for the version when they are few (``KEPT_ROWS``), so
        later keys are counted without reading again. None without per-partition counts."""
        found = self._table_rows.get(column)
        if found is not None:
            return found
        index = self.reader.column_index(column)
        handle = self.reader.parquet_file(self.reader.table_entry(), "frequencies")
        names = handle.schema_arrow.names
        if "partition_counts" not in names or "column_index" not in names:
            return None
        position = names.index("column_index")
        fields = ["value", "column_index", "partition_counts", "partition_ids",
                  "partition_id_counts"]
        merged = self.reader.merged_frequencies(index, fields)
        out = [] if merged is None else list(merged.chunks())
        for g in range(handle.metadata.num_row_groups if merged is None else 0):
            stats = handle.metadata.row_group(g).column(position).statistics
            if stats is not None and stats.has_min_max and not stats.min <= index <= stats.max:
                continue
            t = handle.read_row_group(g, columns=fields)
            at = integer_array([index], t.column("column_index").type)[0]  # no pandas probe
            out.append(t.filter(pc.equal(t.column("column_index"), at)))
        if sum(t.num_rows for t in out) <= KEPT_ROWS:
            self._table_rows[column] = out
        return out

    def _read_point_counts(self, column: str, point_keys: list[bytes]) -> np.ndarray | None:
        data = self._columns.get(column)
        if data is None or not data.complete or NAN_KEY in point_keys:
            return None
        held = self.held(column)
        if held is not None:  # an ordered column: its partitions' frequency rows, one read
            expected = held.expected
            positions = np.flatnonzero(expected) if expected.any() else np.arange(len(expected))
            counts = held.point_counts(point_keys, positions)
            complete = data.flag("frequencies_complete") & ~data.flag("all_distinct")
            return np.where(complete & (counts >= 0), counts, -1)
        if not self.reader.version.table_files:
            return None
        table_row = self._table_flags.get(column)
        if table_row is None:  # a version never changes: read once
            table_row = self._table_flags[column] = self.reader.statistics_table(
                None, [column],
                fields=["frequencies_exact", "frequencies_truncated", "all_distinct"],
            ).to_pylist()[0]
        if not table_row.get("frequencies_exact") or table_row.get("all_distinct"):
            return None
        wanted = binary_array(point_keys)
        rows = self._table_frequency_rows(column)
        if rows is None:
            return None
        hits = []
        for t in rows:
            hits.extend(t.filter(pc.is_in(t.column("value"), wanted)).to_pylist())
        total = np.zeros(len(self.entries), dtype=np.int64)
        for hit in hits:
            if hit["partition_counts"] is not None:
                counts = np.asarray(hit["partition_counts"], dtype=np.int64)
                total[: len(counts)] += counts
            elif hit["partition_ids"] is not None:
                np.add.at(total, np.asarray(hit["partition_ids"], dtype=np.int64),
                          np.asarray(hit["partition_id_counts"], dtype=np.int64))
            else:
                return None  # listed without its partitions
        if len({h["value"] for h in hits}) < len(set(point_keys)) and table_row.get(
            "frequencies_truncated"
        ):
            return None  # a key the truncated table level does not list: unknown
        # the counts the partition path would read: complete, not all-distinct frequencies
        complete = data.flag("frequencies_complete") & ~data.flag("all_distinct")
        return np.where(complete, total, -1)


def partitions_of(
    reader: StatisticsReader, columns: Sequence[str]
) -> IndexPartitions | sources.ListSource:
    """Every partition of the reader's version, from its index when it has one."""
    columns = list(dict.fromkeys(columns))
    if reader.partition_index() is None:
        return sources.partitions_of(reader, columns)
    return IndexPartitions(reader, column_data(reader, columns))


def column_data(reader: StatisticsReader, columns: Sequence[str]) -> dict[str, _Columns]:
    """The index rows of ``columns`` (the version has an index), one read."""
    columns = list(dict.fromkeys(columns))
    rows = partition_summaries(reader, columns, FIELDS)
    entries = reader.version.partitions
    column_index = int_values(rows.column("column_index"))  # no pandas probe
    data: dict[str, _Columns] = {}
    for name in columns:
        index = reader.column_index(name)
        start, stop = np.searchsorted(column_index, [index, index + 1])
        chunk = rows.slice(int(start), int(stop - start))
        dtype = parse_type(reader.columns[index]["type"])
        data[name] = _Columns(dtype, chunk, len(entries))
    return data


__all__ = ["FIELDS", "IndexPartition", "IndexPartitions", "partitions_of"]
