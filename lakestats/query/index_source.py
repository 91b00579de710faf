"""Partition statistics for the estimator from the version's partition index.

``partitions_of(reader, columns)`` returns one ``IndexPartition`` (a
``lakestats.predicates.PartitionStatistics``) per partition of the version, with the
scalars of every partition (row, null, NaN and distinct counts, min and max keys,
complete / all-distinct flags) taken from ONE read of ``partition_index.parquet``: the
row groups of ``columns`` only. Frequencies and histograms are not in the index: they are
loaded lazily, per partition and column, only when an estimate asks for them (a range
inside [min, max] without complete frequencies, an equality on a value the scalars cannot
decide), through the file provider (``estimate_source.ReaderPartition``), so the numbers
are the file provider's. Partitions min/max, null counts or all-distinct flags settle
never open a file.

Versions without an index (written before it existed, or with ``--partitions-only``)
fall back to ``estimate_source.partitions_of``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakestats.query import estimate_source
from lakestats.stats.selectivity import ColumnSummary, Frequencies
from lakestats.stats.type_codec import parse_type
from lakestats.store import manifest
from lakestats.store.partition_index import SCALAR_FIELDS, partition_summaries
from lakestats.store.reader import StatisticsReader

FIELDS = SCALAR_FIELDS
"""What the estimator reads from the index."""


class _Columns:
    """The index rows of one column: Python lists by field, one slot per partition id."""

    def __init__(self, dtype: pa.DataType, rows: pa.Table, partitions: int) -> None:
        self.dtype = dtype
        ids = rows.column("partition_id").to_numpy(zero_copy_only=False)
        self.slot = np.full(partitions, -1, dtype=np.int64)
        self.slot[ids] = np.arange(len(ids))
        self.values = {f: rows.column(f).to_pylist() for f in FIELDS}


class IndexPartition:
    """One partition of a version, answered from the partition index."""

    def __init__(
        self,
        reader: StatisticsReader,
        position: int,
        entry: manifest.PartitionEntry,
        columns: dict[str, _Columns],
    ) -> None:
        self.reader = reader
        self.position = position
        self.entry = entry
        self.name = entry.name
        self.values = dict(entry.values)
        self.row_count = int(entry.row_count)
        self._columns = columns
        self._files: estimate_source.ReaderPartition | None = None
        self._summaries: dict[str, ColumnSummary] = {}

    def _file_partition(self) -> estimate_source.ReaderPartition:
        if self._files is None:
            self._files = estimate_source.ReaderPartition(
                self.reader, self.entry, list(self._columns)
            )
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
        row = {f: data.values[f][j] for f in FIELDS}
        return ColumnSummary(
            dtype=data.dtype,
            row_count=int(row["row_count"]),
            null_count=int(row["null_count"]),
            nan_count=int(row["nan_count"] or 0),
            distinct_count=row["distinct_count"],
            min_key=row["min"],
            max_key=row["max"],
            frequencies_source=lambda: self._frequencies(column, row),
            histogram_source=lambda: self._file_partition().summary(column).histogram,
        )

    def _frequencies(self, column: str, row: dict) -> Frequencies | None:
        # the same answers as ReaderPartition._frequencies, without a file where the
        # index decides them
        if row["all_distinct"]:
            return Frequencies((), np.zeros(0, dtype=np.int64), False, 1)
        if row["frequencies_complete"] and (row["distinct_count"] or 0) == 0:
            return Frequencies((), np.zeros(0, dtype=np.int64), True, None)
        return self._file_partition().summary(column).frequencies


def partitions_of(
    reader: StatisticsReader, columns: Sequence[str]
) -> list[IndexPartition] | list[estimate_source.ReaderPartition]:
    """Every partition of the reader's version, from its index when it has one."""
    columns = list(dict.fromkeys(columns))
    if reader.partition_index() is None:
        return list(estimate_source.partitions_of(reader, columns))
    rows = partition_summaries(reader, columns, FIELDS)
    entries = reader.version.partitions
    column_index = rows.column("column_index").to_numpy(zero_copy_only=False)
    data: dict[str, _Columns] = {}
    for name in columns:
        index = reader.column_index(name)
        start, stop = np.searchsorted(column_index, [index, index + 1])
        chunk = rows.slice(int(start), int(stop - start))
        dtype = parse_type(reader.columns[index]["type"])
        data[name] = _Columns(dtype, chunk, len(entries))
    return [IndexPartition(reader, i, entry, data) for i, entry in enumerate(entries)]


__all__ = ["FIELDS", "IndexPartition", "partitions_of"]
