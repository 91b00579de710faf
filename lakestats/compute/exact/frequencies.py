"""The table ``frequencies.parquet`` rewritten from the range tasks' runs, by one task.

The file stays one file, by column in table order, then decreasing count, ties by key, so
top-k is a prefix read. Columns the exact step did not replace keep their old rows. A
replaced column's rows come from its runs (``merge.py``), one per key range, each sorted
by (decreasing count, key). The ranges are disjoint and in key order, so the merge needs
no key comparison: for each count ``k`` from the largest down, each run's rows of count
``k`` (a prefix of what is left of it) are appended in range order. Every run is read
once, front to back, one batch at a time; rows are written in row groups of
``FREQUENCIES_ROW_GROUP``, one column's rows never sharing a group with another's. The
runs are deleted afterwards. Writing a frequency delta layer (``delta_file``), the runs
hold only the changed values: every replaced column goes to that file instead, by the
same merge (a value no longer listed, count 0, last), and keeps no rows in the table file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from lakestats.stats.arrays import int64_array, int_values, integer_array, string_array
from lakestats.store import schemas, writer
from lakestats.store.handle import StatisticsStore

RESULT_SCHEMA = "column_index int, rows long, smallest long, bytes_written long"


@dataclass(frozen=True)
class FrequencyJob:
    store: StatisticsStore
    table_file: str  # the table frequencies.parquet, rewritten in place
    names: list[str]
    runs: dict[int, list[str]]  # replaced column -> its run files in key order
    runs_dir: str
    # a frequency delta layer (store/frequency_layers.py): the runs hold only changed
    # values, merged into ``delta_file``; the table file keeps none of the replaced
    # columns' rows (a read merges the layers)
    delta_file: str | None = None


class _Cursor:
    """One run (an Arrow IPC file) read front to back; its counts never increase."""

    def __init__(self, store: StatisticsStore, relative: str) -> None:
        self._handle = store.open_input_file(store.path(relative))
        self._reader = ipc.open_file(self._handle)
        self._next = 0
        self.done = False
        self._load()

    def _load(self) -> None:
        while self._next < self._reader.num_record_batches:
            batch = self._reader.get_batch(self._next)
            self._next += 1
            if batch.num_rows:
                self.values = batch.column(0)
                self.counts = int_values(batch.column(1))
                self.negated = -self.counts  # increasing: searchable
                self.at = 0
                return
        self.done = True
        self._handle.close()

    def head(self) -> int:
        return int(self.counts[self.at])

    def take(self, k: int) -> Iterator[tuple[pa.Array, np.ndarray]]:
        """The run's next rows of count ``k`` (slices, possibly over several batches)."""
        while not self.done and self.counts[self.at] == k:
            stop = int(np.searchsorted(self.negated, -k, side="right"))
            yield self.values.slice(self.at, stop - self.at), self.counts[self.at : stop]
            self.at = stop
            if self.at == len(self.counts):
                self._load()


class _Rows:
    """Buffered rows of one column, written in whole row groups."""

    def __init__(self, parquet: pq.ParquetWriter, column: int, name: str) -> None:
        self.parquet, self.column, self.name = parquet, column, name
        self.values: list[pa.Array] = []
        self.counts: list[np.ndarray] = []
        self.buffered = 0
        self.written = 0

    def add(self, values: pa.Array, counts: np.ndarray) -> None:
        self.values.append(values)
        self.counts.append(counts)
        self.buffered += len(counts)
        if self.buffered >= 8 * schemas.FREQUENCIES_ROW_GROUP:
            self.flush(whole_groups=True)

    def flush(self, whole_groups: bool = False) -> None:
        if not self.buffered:
            return
        values = pa.concat_arrays(self.values)
        counts = np.concatenate(self.counts)
        n = len(counts)
        if whole_groups:
            n -= n % schemas.FREQUENCIES_ROW_GROUP
        self._write(values.slice(0, n), counts[:n])
        self.values, self.counts = [values.slice(n)], [counts[n:]]
        self.buffered = len(counts) - n

    def _write(self, values: pa.Array, counts: np.ndarray) -> None:
        n = len(counts)
        table = pa.table(
            {
                "column": pa.repeat(string_array([self.name])[0], n),
                "value": values,
                "frequency": int64_array(counts),
                "column_index": integer_array(np.full(n, self.column), pa.int32()),
                "frequency_upper": pa.nulls(n, pa.int64()),
                "partition_counts": pa.nulls(n, pa.list_(pa.int64())),
                "partition_ids": pa.nulls(n, pa.list_(pa.int32())),
                "partition_id_counts": pa.nulls(n, pa.list_(pa.int64())),
            },
            schema=schemas.TABLE_FREQUENCIES_SCHEMA,
        )
        self.parquet.write_table(table, row_group_size=schemas.FREQUENCIES_ROW_GROUP)
        self.written += n


def _merge_runs(job: FrequencyJob, rows: _Rows, runs: list[str]) -> int:
    """The column's runs merged into ``rows``; returns the smallest count written."""
    cursors = [_Cursor(job.store, run) for run in runs]
    smallest = 0
    while True:
        live = [c for c in cursors if not c.done]
        if not live:
            break
        k = max(c.head() for c in live)
        for cursor in live:  # key order: the ranges are disjoint and in order
            for values, counts in cursor.take(k):
                rows.add(values, counts)
        smallest = k
    rows.flush()
    return smallest


def write_frequencies(
    job: FrequencyJob, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """One task: the file rewritten; one row per replaced column (rows, smallest count)."""
    for _ in batches:
        pass
    uri = job.store.path(job.table_file)
    filesystem, path = job.store.resolve(uri)
    with filesystem.open_input_file(path) as handle:
        old = pq.ParquetFile(handle).read(use_threads=False)
    for field in schemas.TABLE_FREQUENCIES_SCHEMA:  # an unpartitioned table's: a partition's
        if field.name not in old.column_names:
            old = old.append_column(field, pa.nulls(old.num_rows, field.type))
    old = old.select(schemas.TABLE_FREQUENCIES_SCHEMA.names).cast(schemas.TABLE_FREQUENCIES_SCHEMA)
    old_index = int_values(old.column("column_index"))
    result: dict[int, tuple[int, int]] = {}
    options = {
        "write_statistics": ["column_index"],
        "use_dictionary": ["column"],
        "column_encoding": schemas.frequencies_encoding(schemas.TABLE_FREQUENCIES_SCHEMA),
    }
    with contextlib.ExitStack() as stack:
        parquet = stack.enter_context(
            writer.parquet_output(uri, job.store, schemas.TABLE_FREQUENCIES_SCHEMA, **options)
        )
        delta = None
        if job.delta_file is not None:
            delta_uri = job.store.path(job.delta_file)
            delta = stack.enter_context(
                writer.parquet_output(
                    delta_uri, job.store, schemas.TABLE_FREQUENCIES_SCHEMA, **options
                )
            )
        for column, name in enumerate(job.names):
            if column in job.runs:
                into = parquet if delta is None else delta
                rows = _Rows(into, column, name)
                smallest = _merge_runs(job, rows, job.runs[column])
                result[column] = (rows.written, smallest)
                continue
            kept = np.flatnonzero(old_index == column)
            if len(kept):
                parquet.write_table(
                    old.take(int64_array(kept)), row_group_size=schemas.FREQUENCIES_ROW_GROUP
                )
    size = filesystem.get_file_info(path).size
    if job.delta_file is not None:
        size += job.store.file_info(job.store.path(job.delta_file)).size
    _, runs_path = job.store.resolve(job.store.path(job.runs_dir))
    with contextlib.suppress(OSError):
        filesystem.delete_dir(runs_path)
    columns = sorted(result)
    yield pa.RecordBatch.from_arrays(
        [
            integer_array([-1, *columns], pa.int32()),
            int64_array([0, *(result[c][0] for c in columns)]),
            int64_array([0, *(result[c][1] for c in columns)]),
            int64_array([size, *([0] * len(columns))]),
        ],
        names=["column_index", "rows", "smallest", "bytes_written"],
    )
