"""Write one partition's three files from its finalized column results.

Called on Spark executors: each task writes its own files straight to the statistics
root through the filesystem layer; nothing passes through the driver.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.stats.accumulator import ColumnResult
from lakestats.stats.value_counts import VALUES_ROW_GROUP, VALUES_SCHEMA
from lakestats.store import layout, schemas
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import FileKind
from lakestats.threads import thread_map


def statistics_table(
    results: list[ColumnResult], custom: list[tuple[str, pa.DataType]]
) -> pa.Table:
    schema = schemas.statistics_schema(custom)
    columns = {name: [result.row.get(name) for result in results] for name in schema.names}
    return pa.Table.from_pydict(columns, schema=schema)


def frequencies_table(results: list[ColumnResult]) -> pa.Table:
    values, counts, indices = [], [], []
    for index, result in enumerate(results):
        if result.frequency_keys is None or len(result.frequency_keys) == 0:
            continue
        n = len(result.frequency_keys)
        indices.append(np.full(n, index, dtype=np.int32))
        values.append(result.frequency_keys.cast(pa.binary()))
        counts.append(result.frequency_counts.astype(np.int64))
    if not indices:
        return schemas.FREQUENCIES_SCHEMA.append(
            pa.field("column_index", pa.int32(), nullable=False)
        ).empty_table()
    # each row's column name taken by its index (not a Python list of a name per row)
    column_names = pa.array([result.row["column"] for result in results], pa.string())
    return pa.table(
        {
            "column": column_names.take(pa.array(np.concatenate(indices))),
            "value": pa.concat_arrays(values),
            "frequency": pa.array(np.concatenate(counts)),
            "column_index": pa.array(np.concatenate(indices)),
        },
        schema=schemas.FREQUENCIES_SCHEMA.append(
            pa.field("column_index", pa.int32(), nullable=False)
        ),
    )


def histograms_table(results: list[ColumnResult], bins: int) -> pa.Table:
    names = [r.row["column"] for r in results if r.row.get("histogram_bins") is not None]
    with_histograms = [r for r in results if r.row.get("histogram_bins") is not None]
    rows = max([bins, *[len(r.histogram) for r in with_histograms]]) if with_histograms else 0
    arrays = [pa.array(np.arange(rows, dtype=np.int32))]
    for result in with_histograms:
        counts = result.histogram
        mask = np.zeros(rows, dtype=bool)
        mask[len(counts) :] = True
        padded = np.zeros(rows, dtype=np.int64)
        padded[: len(counts)] = counts
        arrays.append(pa.array(padded, mask=mask))
    return pa.Table.from_arrays(arrays, schema=schemas.histograms_schema(names))


@contextlib.contextmanager
def parquet_output(
    uri: str, store: StatisticsStore, schema: pa.Schema, **options: object
) -> Iterator[pq.ParquetWriter]:
    """A zstd ``ParquetWriter`` on ``uri`` whose file gets ``lakestats.format_version`` in
    its key-value metadata (files of format version 1 have none and are read the same way);
    a failure (full disk, no permission, no connection) is one ``StorageError`` line and
    leaves no partial file where it can be helped."""
    try:
        with store.open_output(uri) as out, _writer(out, schema, options) as parquet:
            yield parquet
    except OSError as exc:
        filesystem, path = store.resolve(uri)
        with contextlib.suppress(OSError):
            filesystem.delete_file(path)  # unreferenced either way; expire would remove it
        raise fs.cannot_write(uri, exc, store.s3) from exc


@contextlib.contextmanager
def parquet_buffer(
    schema: pa.Schema, **options: object
) -> Iterator[tuple[pq.ParquetWriter, pa.BufferOutputStream]]:
    """``parquet_output`` into memory: the writer and its buffer (complete once the block
    ends), for files written whole with ``StatisticsStore.write_bytes_atomic``."""
    out = pa.BufferOutputStream()
    with _writer(out, schema, options) as parquet:
        yield parquet, out


@contextlib.contextmanager
def _writer(out: object, schema: pa.Schema, options: dict) -> Iterator[pq.ParquetWriter]:
    with pq.ParquetWriter(out, schema, compression="zstd", store_schema=False, **options) as w:
        yield w
        w.add_key_value_metadata({schemas.FORMAT_VERSION_KEY: str(schemas.FORMAT_VERSION)})


def write_parquet(table: pa.Table, uri: str, store: StatisticsStore, **options: object) -> int:
    """``table`` as one file (``uri``, under ``store``) through ``parquet_output``; returns
    its size."""
    row_group_size = options.pop("row_group_size", None)
    with parquet_output(uri, store, table.schema, **options) as parquet:
        parquet.write_table(table, row_group_size=row_group_size)
    return store.file_info(uri).size


def write_handoff(table: pa.Table, uri: str, store: StatisticsStore) -> int:
    """A run's hand-off rows (``layout.handoff_files``) as one Arrow IPC file, LZ4
    buffers, written whole; returns its size."""
    out = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    with pa.ipc.new_file(out, table.schema, options=options) as ipc:
        ipc.write_table(table)
    data = out.getvalue()
    store.write_bytes_atomic(uri, data)
    return data.size


def write_values(table: pa.Table, uri: str, store: StatisticsStore) -> int:
    """A partition's staged full value counts (``analyze --exact``, ``stats/value_counts.py``)
    at ``uri``, one row group per column (min/max kept: the exact step cuts ranges by
    them); returns its size."""
    index = table.column("column_index").to_numpy()
    cuts = [0, *(np.flatnonzero(np.diff(index)) + 1).tolist(), len(index)]
    options = {
        "write_statistics": ["column_index", "value"],
        "use_dictionary": False,
        "column_encoding": schemas.sorted_keys_encoding(VALUES_SCHEMA),
    }
    with parquet_output(uri, store, VALUES_SCHEMA, **options) as parquet:
        for start, stop in itertools.pairwise(cuts):
            if stop > start:
                parquet.write_table(table.slice(start, stop - start), VALUES_ROW_GROUP)
    return store.file_info(uri).size


def write_partition(
    results: list[ColumnResult],
    custom: list[tuple[str, pa.DataType]],
    bins: int,
    uris: dict[str, str],
    store: StatisticsStore,
    frequencies: pa.Table | None = None,
) -> int:
    """Write the three files (``partition_tables``); returns the bytes written."""
    return write_tables(partition_tables(results, custom, bins, frequencies), uris, store)


def partition_tables(
    results: list[ColumnResult],
    custom: list[tuple[str, pa.DataType]],
    bins: int,
    frequencies: pa.Table | None = None,
) -> dict[FileKind, pa.Table]:
    """The three files' rows. ``frequencies`` replaces the rows built from ``results`` (the
    table level builds its own, with bounds and per-partition counts)."""
    return {
        FileKind.STATISTICS: statistics_table(results, custom),
        FileKind.FREQUENCIES: frequencies if frequencies is not None
        else frequencies_table(results),
        FileKind.HISTOGRAMS: histograms_table(results, bins),
    }


def write_tables(tables: dict[FileKind, pa.Table], uris: dict[str, str],
                 store: StatisticsStore) -> int:
    """The three files (``partition_tables``) at ``uris``; returns the bytes written."""

    def write_statistics() -> int:
        return write_parquet(
            tables[FileKind.STATISTICS],
            uris[FileKind.STATISTICS],
            store,
            row_group_size=schemas.STATISTICS_ROW_GROUP,
            write_statistics=False,
            use_dictionary=False,  # a row per column: dictionaries only add pages
            compression_level=schemas.STATISTICS_ZSTD_LEVEL,
        )

    def write_frequencies() -> int:
        rows = tables[FileKind.FREQUENCIES]
        return write_parquet(
            rows,
            uris[FileKind.FREQUENCIES],
            store,
            row_group_size=schemas.FREQUENCIES_ROW_GROUP,
            write_statistics=["column_index"],
            use_dictionary=["column"],
            column_encoding=schemas.frequencies_encoding(rows.schema),
            compression_level=schemas.FREQUENCIES_ZSTD_LEVEL,
        )

    def write_histograms() -> int:
        return write_parquet(
            tables[FileKind.HISTOGRAMS],
            uris[FileKind.HISTOGRAMS],
            store,
            write_statistics=False,
            use_dictionary=False,
            column_encoding="DELTA_BINARY_PACKED",  # small counts, consecutive bins
            compression_level=schemas.HISTOGRAMS_ZSTD_LEVEL,
        )

    def rows(kind: FileKind, as_parquet: Callable[[], int]) -> Callable[[], int]:
        """The kind's writer: a run's hand-off file (``layout.handoff_files``) as Arrow
        IPC, a published one as Parquet."""
        if uris[kind].endswith(layout.HANDOFF_SUFFIX):
            return lambda: write_handoff(tables[kind], uris[kind], store)
        return as_parquet

    # compression and uploads overlap; on an object store the three requests do too
    writes = [
        write_statistics,
        rows(FileKind.FREQUENCIES, write_frequencies),
        rows(FileKind.HISTOGRAMS, write_histograms),
    ]
    return sum(thread_map(lambda write: write(), writes))
