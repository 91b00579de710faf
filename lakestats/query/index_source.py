"""Partition statistics for the estimator from the version's partition index.

``partitions_of(reader, columns)`` returns one ``IndexPartition`` (a
``lakestats.query.predicates.PartitionStatistics``) per partition of the version, with the
scalars of every partition (row, null, NaN and distinct counts, min and max keys,
complete / all-distinct flags) taken from ONE read of ``partition_index.parquet``: the
row groups of ``columns`` only. Frequencies and histograms are not in the index: they are
loaded lazily, only when an estimate asks for them (a range inside [min, max] without
complete frequencies, an equality on a value the scalars cannot decide): for ordered
columns from the version's partition histograms (``store/partition_histograms``: per part
holding any of them, one read per column of the partitions the estimator said it will look
at, ``expect``),
else per partition and column through the file provider (``estimate_source.ReaderPartition``).
Both build them with the same functions (``estimate_source.frequencies_of`` /
``histogram_of``), so the numbers are the file provider's. Partitions min/max, null counts
or all-distinct flags settle never open a file.

The answer is an ``IndexPartitions`` sequence: its partitions are made only when asked
for, and it also hands the estimator each column's scalars as vectors (``vectors``), so
``predicates.estimate`` prunes every partition with NumPy/Arrow in one pass per conjunct
and visits only the survivors one by one (``lakestats.stats.selectivity_vector``), and
the per-partition counts of values the table level records for categorical columns
(``point_counts``, one read of the table-level ``frequencies.parquet``), which answer an
equality over complete partition frequencies without a partition file.

Versions without an index (written before it existed, or with ``--partitions-only``)
fall back to ``estimate_source.partitions_of``.

Over 400 lines because it is one provider: the lazy sequence, its vectors and the two
lazy sources (partition histograms, files) answer the same estimator protocol together.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.query import estimate_source
from lakestats.stats.arrays import (
    binary_array,
    binary_values,
    bool_array,
    int64_array,
    int_values,
    integer_array,
    numbers,
)
from lakestats.stats.kinds import kind_of
from lakestats.stats.selectivity import NAN_KEY, ColumnSummary, Frequencies, Histogram
from lakestats.stats.selectivity_vector import Vectors
from lakestats.stats.type_codec import parse_type
from lakestats.store import manifest
from lakestats.store.partition_histograms import (
    HELD_KINDS,
    PartitionHistograms,
    int_keys,
    ints_as_keys,
    key_ints,
    key_width,
)
from lakestats.store.partition_index import SCALAR_FIELDS, partition_summaries
from lakestats.store.reader import StatisticsReader

FIELDS = SCALAR_FIELDS
"""What the estimator reads from the index."""
LISTED_ROWS = 1_000
"""Index rows of a column up to which ``_Columns.row`` converts them all at once."""
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


FREQUENCY_FIELDS = [
    "frequencies_count",
    "frequencies_truncated",
    "frequencies_min",
    "frequency_values",
    "frequency_ints",
    "frequency_counts",
]
HISTOGRAM_FIELDS = ["histogram_lower", "histogram_width", "histogram_counts"]
"""What the estimator reads from the partition histograms: the frequency fields
and the histogram fields of a column are read separately, each only when needed."""


WHOLE_GROUPS_PARTITIONS = 1000
"""Up to this many partitions, a held column's load keeps every row of the row groups it
decodes (``_HeldPart``); above, the rows kept would make each new point count (which
scans the loaded rows) cost more than the reads it saves."""


class _HeldPart:
    """Some fields of one column's rows of the partition histograms, by partition
    position, read on first need: for the partitions the estimator said it will look at
    (``expected``), or for all of them, and, for tables of up to
    ``WHOLE_GROUPS_PARTITIONS`` partitions, the column's other rows in the row groups
    that read decodes (a resident estimator's later predicates need them, for free now)."""

    def __init__(
        self, source: PartitionHistograms, column_index: int, expected: np.ndarray,
        fields: list[str], width: int = 8,
    ) -> None:
        self.source = source
        self.column_index = column_index
        self.width = width  # of the keys its int lists hold (``key_width``)
        self.expected = expected
        self.fields = fields
        self.lists = [f for f in fields if f.endswith(("_values", "_ints", "_counts"))]
        self.slot = np.full(len(expected), -1, dtype=np.int64)
        self.loaded = np.zeros(len(expected), dtype=bool)
        self.tables: list[tuple[pa.Table, dict[str, np.ndarray]]] = []
        self.scalars: dict[int, dict[str, list]] = {}
        self.lock = threading.Lock()

    def load(self, positions: np.ndarray) -> None:
        with self.lock:
            wanted = positions[~self.loaded[positions]]
            if not len(wanted):
                return
            whole = len(self.loaded) <= WHOLE_GROUPS_PARTITIONS
            table = self.source.read(
                self.column_index, wanted, self.fields, whole_groups=whole
            ).combine_chunks()
            ids = numbers(table.column("partition_id"))
            fresh = ~self.loaded[ids]  # the groups' other rows: those not loaded before
            if not fresh.all():
                table = table.filter(bool_array(fresh))
                ids = ids[fresh]
            offsets = {
                name: numbers(table.column(name).chunk(0).offsets)
                if table.num_rows else np.zeros(1, np.int32)
                for name in self.lists
            }
            base = sum(t.num_rows for t, _ in self.tables)
            self.tables.append((table, offsets))
            self.slot[ids] = base + np.arange(len(ids))
            self.loaded[wanted] = True
            self.loaded[ids] = True

    def ensure(self, position: int) -> None:
        if not self.loaded[position]:
            if self.expected[position]:
                self.load(np.flatnonzero(self.expected))
            else:
                self.load(np.arange(len(self.loaded)))

    def row(self, position: int) -> HeldRow | None:
        """The partition's row, or None when the file has none for it."""
        self.ensure(position)
        j = int(self.slot[position])
        if j < 0:
            return None
        for k, (table, offsets) in enumerate(self.tables):
            if j < table.num_rows:
                return HeldRow(table, offsets, j, self._scalars(k, table, offsets),
                               self.width)
            j -= table.num_rows
        return None

    def _scalars(self, k: int, table: pa.Table, offsets: dict) -> dict[str, list] | None:
        """The ``k``-th loaded table's non-list fields as Python lists (made once), when
        it has at most ``LISTED_ROWS`` rows."""
        if table.num_rows > LISTED_ROWS:
            return None
        found = self.scalars.get(k)
        if found is None:
            found = self.scalars[k] = {
                f: table.column(f).to_pylist() for f in table.column_names if f not in offsets
            }
        return found


class _Held:
    """One column of the partition histograms: its frequency and histogram fields."""

    def __init__(self, source: PartitionHistograms, column_index: int, partitions: int,
                 width: int = 8) -> None:
        self.expected = np.zeros(partitions, dtype=bool)
        self.generation = 0  # bumped when ``expected`` grows (point counts depend on it)
        self.width = width  # of the keys the int lists hold (``key_width``)
        self.frequencies = _HeldPart(source, column_index, self.expected, FREQUENCY_FIELDS,
                                     width)
        self.histograms = _HeldPart(source, column_index, self.expected, HISTOGRAM_FIELDS)
        self._flat: dict[int, tuple[np.ndarray, list[tuple]]] = {}

    def expect(self, positions: np.ndarray) -> None:
        if not self.expected[positions].all():
            self.expected[positions] = True
            self.generation += 1

    def point_counts(self, keys: Sequence[bytes], positions: np.ndarray) -> np.ndarray:
        """Per partition, the listed count of ``keys`` summed (0 when none is listed) for
        the partitions at ``positions``; -1 elsewhere."""
        part = self.frequencies
        part.load(positions)
        out = np.full(len(self.expected), -1, dtype=np.int64)
        binary = binary_array(list(keys))
        eight = int64_array(key_ints(keys, self.width))
        for k, (table, _) in enumerate(part.tables):
            if not table.num_rows:
                continue
            ids, flat = self._flattened(k, table)
            sums = np.zeros(table.num_rows, dtype=np.int64)
            for (values, rows, counts), wanted in zip(flat, (binary, eight), strict=True):
                hit = numbers(pc.is_in(values, wanted), False, bool)
                np.add.at(sums, rows[hit], counts[hit])
            out[ids] = sums
        return out

    def _flattened(self, k: int, table: pa.Table) -> tuple[np.ndarray, list[tuple]]:
        """The ``k``-th loaded table of frequency rows, flattened once: its partition ids
        and, per value list (binary values, 8-byte ints), the values, their rows and
        their counts (a resident estimator counts new keys in the same rows)."""
        if k not in self._flat:
            ids = numbers(table.column("partition_id"))
            counts = table.column("frequency_counts").chunk(0)
            listed = numbers(pc.list_flatten(counts), 0, np.int64)
            lengths = numbers(pc.list_value_length(counts), 0)
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
            flat = []
            for name in ("frequency_values", "frequency_ints"):
                lists = table.column(name).chunk(0)
                rows = numbers(pc.list_parent_indices(lists))
                # each key's count: its row's first count + its place in the row
                within = np.arange(len(rows)) - np.searchsorted(rows, rows)
                at = starts[rows] + within
                flat.append((pc.list_flatten(lists), rows, listed[at]))
            self._flat[k] = (ids, flat)
        return self._flat[k]


class HeldRow:
    """Some fields of one partition x column row of the partition histograms."""

    def __init__(
        self,
        table: pa.Table,
        offsets: dict[str, np.ndarray],
        j: int,
        scalars: dict[str, list] | None = None,
        width: int = 8,
    ) -> None:
        self.table, self.offsets, self.j, self.width = table, offsets, j, width
        if scalars is not None:
            self.fields = {f: values[j] for f, values in scalars.items()}
        else:
            self.fields = {
                f: table.column(f)[j].as_py() for f in table.column_names if f not in offsets
            }

    def is_valid(self, name: str) -> bool:
        return self.table.column(name)[self.j].is_valid

    def _list(self, name: str) -> pa.Array:
        start, stop = self.offsets[name][self.j : self.j + 2]
        return self.table.column(name).chunk(0).values.slice(int(start), int(stop - start))

    def frequency_rows(self) -> tuple[list[bytes], np.ndarray]:
        if "frequency_ints" in self.offsets and self.is_valid("frequency_ints"):
            ints = numbers(self._list("frequency_ints"))
            values = ints_as_keys(ints, self.width)
        else:
            values = binary_values(self._list("frequency_values"))
        return values, numbers(self._list("frequency_counts"), 0, np.int64)

    def frequency_arrays(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``frequency_rows`` without a Python object per value: the keys as one NumPy
        array of fixed-width bytes (``S{width}``, compared as ``memcmp``), or None when
        the keys differ in width or have nulls (``frequency_rows`` then)."""
        counts = numbers(self._list("frequency_counts"), 0, np.int64)
        if "frequency_ints" in self.offsets and self.is_valid("frequency_ints"):
            ints = numbers(self._list("frequency_ints"), 0, np.int64)
            return int_keys(ints, self.width), counts
        return fixed_width(self._list("frequency_values")), counts

    def histogram_counts(self) -> np.ndarray:
        counts = self._list("histogram_counts")
        return numbers(counts, 0, np.int64)



def fixed_width(array: pa.Array) -> np.ndarray | None:
    """A null-free binary array whose values all have one width as a NumPy ``S{width}``
    array over its buffer, else None."""
    if array.null_count or array.type != pa.binary() or not len(array):
        return None
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[
        array.offset : array.offset + len(array) + 1
    ]
    width = int(offsets[1] - offsets[0])
    if width <= 0 or buffers[2] is None or not np.all(np.diff(offsets) == width):
        return None
    data = np.frombuffer(buffers[2], dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
    return data.view(f"S{width}")


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
        self._files: estimate_source.ReaderPartition | None = None
        self._summaries: dict[str, ColumnSummary] = {}

    def _file_partition(self) -> estimate_source.ReaderPartition:
        if self._files is None:
            self._files = estimate_source.ReaderPartition(
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
        return estimate_source.frequencies_of({**row, **found.fields}, found.frequency_rows)

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
        return estimate_source.frequencies_of(
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
        return estimate_source.histogram_of(fields, dtype, True, found.histogram_counts)


class IndexPartitions(Sequence):
    """Every partition of a version (made when asked for), with the columns' scalars as
    vectors for the batched estimator (``predicates.estimate``)."""

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
        self.listed_cache: dict[str, tuple] = {}  # survivors.listed, per column
        self.row_heads: dict[int, tuple] = {}  # survivor_sets.combine's, per partition
        self._table_rows: dict[str, list[pa.Table]] = {}  # _table_frequency_rows, kept
        self._table_flags: dict[str, dict] = {}  # the table level's frequency flags
        self.term_cache = None  # term_cache.Terms, made on first use

    def add_columns(self, columns: Sequence[str]) -> None:
        """Answer ``columns`` too: the index rows of those not yet read, one read (a
        resident estimator keeps one ``IndexPartitions`` per statistics version and adds
        each predicate's columns; the partitions made so far see them)."""
        missing = [c for c in dict.fromkeys(columns) if c not in self._columns]
        if missing:
            self._columns.update(column_data(self.reader, missing))

    def columns(self) -> list[str]:
        return list(self._columns)

    def visited(self, columns: Sequence[str], positions: np.ndarray) -> bool:
        """Whether every partition at ``positions`` was estimated with all the
        statistics of ``columns`` before (``mark_visited``): they are in memory."""
        for column in columns:
            seen = self._visited.get(column)
            if seen is None or not seen[positions].all():
                return False
        return True

    def visited_mask(self, columns: Sequence[str], positions: np.ndarray) -> np.ndarray:
        """Per position, whether ``visited`` holds for it."""
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
) -> IndexPartitions | list[estimate_source.ReaderPartition]:
    """Every partition of the reader's version, from its index when it has one."""
    columns = list(dict.fromkeys(columns))
    if reader.partition_index() is None:
        return list(estimate_source.partitions_of(reader, columns))
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
