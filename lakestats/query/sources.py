"""Partition statistics for the estimator, read from a published version's files.

``partitions_of(reader, columns)`` is a ``PartitionSource`` (``query.source``) over one
``ReaderPartition`` per partition of the version; ``table_level(reader, columns)`` one
for the table-level files. Each reads its ``statistics.parquet`` rows of the predicate's
columns once, and its frequencies and histogram only when an estimate needs them (a range
inside [min, max] without complete frequencies, an equality on an unlisted value).
``ListSource`` makes any list of partition statistics a source (no vectors: every
partition is estimated one by one, on the estimator's one path); the partition index
(``index_source``) is the columnar source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from lakestats.errors import StatisticsNotFoundError
from lakestats.query.source import PartitionStatistics
from lakestats.stats.arrays import int64_array, numbers
from lakestats.stats.column_summary import ColumnSummary, Frequencies, Histogram
from lakestats.stats.key_ranges import KeyRange
from lakestats.stats.selectivity import storage_number
from lakestats.stats.selectivity_vector import Vectors
from lakestats.stats.type_codec import parse_type
from lakestats.store import manifest
from lakestats.store.reader import StatisticsReader

_FIELDS = [
    "column",
    "type",
    "row_count",
    "null_count",
    "nan_count",
    "distinct_count",
    "all_distinct",
    "min",
    "max",
    "frequencies_count",
    "frequencies_truncated",
    "frequencies_min",
    "histogram_lower",
    "histogram_width",
    "histogram_bins",
    "histogram_exact",
    "frequencies_exact",
    "duplicates_only",
]


class ReaderPartition:
    """One partition (or the table level) of a version, for the estimator."""

    def __init__(
        self,
        reader: StatisticsReader,
        entry: manifest.PartitionEntry,
        columns: list[str],
        table_level: bool = False,
    ) -> None:
        self.reader = reader
        self.entry = entry
        self.columns = columns
        self.table_level = table_level
        self.name = entry.name
        self.values = dict(entry.values)
        self.row_count = int(entry.row_count)
        self._rows: dict[str, dict] | None = None
        self._summaries: dict[str, ColumnSummary] = {}

    def add_columns(self, columns: Sequence[str]) -> None:
        """Answer ``columns`` too (a resident estimator's next predicate): the statistics
        rows are read again on next need, the summaries already made are kept."""
        new = [c for c in columns if c not in self.columns]
        if new:
            self.columns = [*self.columns, *new]
            self._rows = None

    def _statistics_rows(self) -> dict[str, dict]:
        if self._rows is None:
            handle = self.reader.parquet_file(self.entry, "statistics")
            names = handle.schema_arrow.names
            fields = [f for f in _FIELDS if f in names]
            indices = [self.reader.column_index(c) for c in self.columns]
            table = handle.read(columns=fields).take(int64_array(indices))
            self._rows = {r["column"]: r for r in table.to_pylist()}
        return self._rows

    def summary(self, column: str) -> ColumnSummary:
        if column not in self._summaries:
            self._summaries[column] = self._summary(column)
        return self._summaries[column]

    def _summary(self, column: str) -> ColumnSummary:
        row = self._statistics_rows()[column]
        dtype = parse_type(row["type"])
        return ColumnSummary(
            dtype=dtype,
            row_count=int(row["row_count"]),
            null_count=int(row["null_count"]),
            nan_count=int(row.get("nan_count") or 0),
            distinct_count=row.get("distinct_count"),
            min_key=row.get("min"),
            max_key=row.get("max"),
            frequencies_source=lambda: self._frequencies(column, row),
            histogram_source=lambda: self._histogram(column, row),
            range_count=self._range_count(column) if self.table_level else None,
        )

    def _range_count(self, column: str) -> Callable[[KeyRange], int | None] | None:
        """The exact count of a key range from the version's exact ranks (``analyze
        --exact``), opened on first use; None when the version has none."""
        version = self.reader.version
        table_files = version.table_files or {}
        if table_files.get("ranks") is None:
            return None
        from lakestats.store import ranks  # pyarrow.compute: only for ranks

        index = self.reader.column_index(column)
        opened: list[ranks.LayeredRanks] = []

        def count(r: KeyRange) -> int | None:
            (low, low_inclusive), (high, high_inclusive) = r.lower, r.upper
            if low is None or high is None:  # bounded by min and max when asked
                return None
            if not opened:
                exact = version.extra.get("exact") or {}
                opened.append(
                    ranks.open_layers(self.reader.store, ranks.layer_indexes(table_files, exact))
                )
            layers = opened[0]
            if not layers.has(index):
                return None
            below, equal, _ = layers.rank_of(index, high)
            upto = below + (equal if high_inclusive else 0)
            below, equal, _ = layers.rank_of(index, low)
            return max(0, upto - below - (0 if low_inclusive else equal))

        return count

    def _frequencies(self, column: str, row: dict) -> Frequencies | None:
        if self.table_level and not row.get("frequencies_exact"):
            # table-level counts of truncated columns are bounds, not counts: unused here
            return None
        return frequencies_of(row, lambda: self._frequency_rows(column))

    def _frequency_rows(self, column: str) -> tuple[list[bytes], list[int]]:
        index = self.reader.column_index(column)
        merged = (
            self.reader.merged_frequencies(index, ["value", "frequency"])
            if self.table_level
            else None
        )
        keys_out: list[bytes] = []
        counts_out: list[int] = []
        chunks = merged.chunks() if merged is not None else (
            # the column's rows over the version's frequency layers, else its file's or
            # the partition's (``store/partition_rows``)
            self.reader.frequency_chunks(self.entry, index)
        )
        for t in chunks:
            keys_out.extend(t.column("value").to_pylist())
            counts_out.extend(t.column("frequency").to_pylist())
        order = sorted(range(len(keys_out)), key=keys_out.__getitem__)
        return [keys_out[i] for i in order], [counts_out[i] for i in order]

    def _histogram(self, column: str, row: dict) -> Histogram | None:
        def counts() -> np.ndarray:
            read = self.reader.histogram_counts(self.entry, column)
            read = read.slice(0, row["histogram_bins"])
            return numbers(read, 0, np.int64)

        exact = (not self.table_level) or bool(row.get("histogram_exact"))
        return histogram_of(row, parse_type(row["type"]), exact, counts)


def frequencies_of(
    row: dict,
    rows: Callable[[], tuple[Sequence[bytes], Sequence[int]]],
    keep_keys: bool = False,
) -> Frequencies:
    """A partition's ``Frequencies`` of one column from its ``statistics.parquet`` fields
    (``all_distinct``, ``distinct_count``, ``frequencies_count``, ``frequencies_truncated``,
    ``frequencies_min``) and its frequency rows sorted by value (``rows``, called only when
    the fields do not decide): the one definition the file and table-level providers share.
    ``keep_keys``: the keys as ``rows`` gives them (a NumPy array), not a tuple."""
    if row.get("all_distinct"):
        return Frequencies((), np.zeros(0, dtype=np.int64), False, 1)
    truncated = bool(row.get("frequencies_truncated"))
    if not row.get("frequencies_count") and not truncated:
        complete = (row.get("distinct_count") or 0) == 0
        return Frequencies((), np.zeros(0, dtype=np.int64), complete, None)
    keys, counts = rows()
    return Frequencies(
        keys if keep_keys else tuple(keys),
        np.asarray(counts, dtype=np.int64),
        complete=not truncated,
        # duplicates only (analyze --exact, #1): an unlisted value occurs at most once
        unlisted_bound=(1 if row.get("duplicates_only") else row.get("frequencies_min"))
        if truncated
        else None,
    )


def histogram_of(
    row: dict, dtype: pa.DataType, exact: bool, counts: Callable[[], np.ndarray]
) -> Histogram | None:
    """A ``Histogram`` from ``histogram_lower``, ``histogram_width`` and ``histogram_bins``
    and its counts (``counts``: the first ``histogram_bins``, nulls as 0); None when the
    statistics record none."""
    if row.get("histogram_bins") is None or row.get("histogram_lower") is None:
        return None
    lower = storage_number(dtype, row["histogram_lower"])
    return Histogram(lower, float(row["histogram_width"]), counts(), exact)


class ListSource:
    """A ``PartitionSource`` over a list of partition statistics: no vectors, nothing
    held, nothing visited, so the estimator reads each partition one by one (on
    threads)."""

    def __init__(self, partitions: Sequence[PartitionStatistics]) -> None:
        self.partitions = partitions
        self.cache: dict[str, object] = {}
        self._rows: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.partitions)

    def __getitem__(self, i: int) -> PartitionStatistics:
        return self.partitions[i]

    def row_counts(self) -> np.ndarray:
        if self._rows is None:
            self._rows = np.array([p.row_count for p in self.partitions], np.int64)
        return self._rows

    def head(self, i: int) -> tuple[dict[str, object], str, int]:
        part = self.partitions[i]
        return part.values, part.name, part.row_count

    def vectors(self, column: str) -> Vectors | None:
        return None

    def point_counts(self, column: str, keys: Sequence[bytes]) -> np.ndarray | None:
        return None

    def expect(self, columns: Sequence[str], positions: np.ndarray) -> None:
        return None

    def visited_mask(self, columns: Sequence[str], positions: np.ndarray) -> np.ndarray:
        return np.zeros(len(positions), dtype=bool)

    def mark_visited(self, columns: Sequence[str], positions: np.ndarray) -> None:
        return None

    def held(self, column: str) -> None:
        return None


def partitions_of(reader: StatisticsReader, columns: list[str]) -> ListSource:
    """Every partition of the reader's version, read from its files."""
    return ListSource([ReaderPartition(reader, e, columns) for e in reader.version.partitions])


def table_level(reader: StatisticsReader, columns: list[str]) -> list[ReaderPartition]:
    """The table-level files as one partition (counts and bounds of the whole table)."""
    if not reader.version.table_files:
        raise StatisticsNotFoundError(
            "this statistics version has no table-level files; run `lakestats analyze` again"
        )
    return [ReaderPartition(reader, reader.table_entry(), columns, table_level=True)]


def column_types(reader: StatisticsReader) -> dict[str, pa.DataType]:
    return {c["name"]: parse_type(c["type"]) for c in reader.columns}


__all__ = [
    "ListSource",
    "ReaderPartition",
    "column_types",
    "frequencies_of",
    "histogram_of",
    "partitions_of",
    "table_level",
]
