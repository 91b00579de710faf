"""A sample's statistics files scaled to the population they were drawn from.

``scale_files`` takes one partition's (or the table's) three files computed on the sample
(``statistics``, ``frequencies``, ``histograms``: the task's rows as it wrote them, or
``read_files`` of the table's) and writes their scaled copies
(``sample.scale.scale_row`` per statistics row, counts × N/n, table-level partition counts
by each partition's own N/n). Spark-free: executors call it for their partition
(``sample.tasks.SampleHook``), the driver once for the table level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.compute.sample.scale import (
    PARTITION_REPLICATES,
    SAMPLED_FIELDS,
    apply_bounds,
    frequency_intervals,
    scale_row,
)
from lakestats.store import schemas
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import FileKind

SCALED_FILES = (FileKind.STATISTICS, FileKind.FREQUENCIES, FileKind.HISTOGRAMS)


def read_files(root: StatisticsStore, files: dict[str, str]) -> dict[str, pa.Table]:
    """The three files ``scale_files`` scales, read from ``files`` (kind -> relative path)."""
    out = {}
    for kind in SCALED_FILES:
        with root.open_input_file(root.path(files[kind])) as handle:
            out[kind] = pq.read_table(handle)
    return out


def _write(table: pa.Table, root: StatisticsStore, relative: str, **kw: object) -> int:
    uri = root.path(relative)
    try:
        with root.open_output(uri) as out:
            pq.write_table(table, out, compression="zstd", store_schema=False, **kw)
    except OSError as exc:
        raise fs.cannot_write(uri, exc, root.s3) from exc
    return root.file_info(uri).size


@dataclass(frozen=True)
class Scaling:
    """What one partition's (or the table's) files are scaled by: ``population`` rows of
    the table stand behind ``sample_rows`` sampled ones; ``partition_rates`` only for the
    table level (each partition's N/n, for the frequencies)."""

    population: int
    sample_rows: int
    profiles: dict[str, np.ndarray]
    bounds: dict[str, dict[str, object]] | None = None
    partition_rates: list[float] | None = None


def scale_files(
    source: dict[str, pa.Table],
    target_root: StatisticsStore,
    target: dict[str, str],
    scaling: Scaling,
) -> int:
    """Scaled copies of one partition's (or the table's) three files (``source``: kind ->
    rows) at ``target`` under ``target_root``; bytes written."""
    N, n, profiles = scaling.population, scaling.sample_rows, scaling.profiles
    bounds, partition_rates = scaling.bounds, scaling.partition_rates
    # the table's distinct-count intervals get the rule's 200 bootstrap replicates,
    # each partition's PARTITION_REPLICATES (partitions x columns of them add up)
    replicates = None if partition_rates is not None else PARTITION_REPLICATES
    statistics = source[FileKind.STATISTICS]
    rows = [
        apply_bounds(scale_row(row, N, n, profiles.get(row["column"]), replicates),
                     (bounds or {}).get(row["column"]))
        for row in statistics.to_pylist()
    ]
    schema = statistics.schema
    for extra in SAMPLED_FIELDS:
        schema = schema.append(extra)
    written = _write(
        pa.Table.from_pylist(rows, schema=schema), target_root, target["statistics"],
        row_group_size=schemas.STATISTICS_ROW_GROUP, write_statistics=False,
        use_dictionary=False,
    )
    frequencies = _scale_frequencies(source[FileKind.FREQUENCIES], N, n, partition_rates)
    written += _write(
        frequencies, target_root, target["frequencies"],
        row_group_size=schemas.FREQUENCIES_ROW_GROUP, write_statistics=["column_index"],
        use_dictionary=["column"],
        column_encoding=schemas.frequencies_encoding(frequencies.schema),
    )
    histograms = source[FileKind.HISTOGRAMS]
    for i, name in enumerate(histograms.column_names):
        if name != "bin":
            histograms = histograms.set_column(i, name, _scaled(histograms.column(i), N / n))
    written += _write(
        histograms, target_root, target["histograms"], write_statistics=False,
        use_dictionary=False,
    )
    return written


def _scaled(column: pa.ChunkedArray | pa.Array, rate: float) -> pa.Array:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    values = np.rint(array.to_numpy(zero_copy_only=False).astype(np.float64) * rate)
    mask = array.is_null().to_numpy(zero_copy_only=False)
    return pa.array(np.where(mask, 0, values).astype(np.int64), mask=mask, type=array.type)


def _scale_frequencies(
    table: pa.Table, N: int, n: int, partition_rates: list[float] | None
) -> pa.Table:
    counts = table.column("frequency").to_numpy()
    estimate = np.rint(counts * (N / n)).astype(np.int64)
    table = table.set_column(
        table.schema.get_field_index("frequency"), "frequency", pa.array(estimate)
    )
    if "frequency_upper" in table.column_names:
        upper = frequency_intervals(counts, n, N)[2]
        position = table.schema.get_field_index("frequency_upper")
        table = table.set_column(
            position, table.schema.field(position), pa.array(np.ceil(upper).astype(np.int64))
        )
    if partition_rates is not None:
        rates = np.asarray(partition_rates)
        for name, index_name in (("partition_counts", None), ("partition_id_counts",
                                                               "partition_ids")):
            if name not in table.column_names:
                continue
            lists = table.column(name).combine_chunks()
            if index_name is None:
                flat = lists.flatten()
                parents = pc.list_parent_indices(lists).to_numpy()
                offsets = lists.offsets.to_numpy()[:-1]
                where = np.arange(len(flat)) - offsets[parents] if len(flat) else np.zeros(0)
            else:
                ids = table.column(index_name).combine_chunks()
                where = ids.flatten().to_numpy(zero_copy_only=False)
                flat = lists.flatten()
            values = flat.to_numpy(zero_copy_only=False).astype(np.float64)
            scaled = np.rint(values * rates[where.astype(np.int64)]).astype(np.int64)
            rebuilt = pa.ListArray.from_arrays(
                lists.offsets, pa.array(scaled), mask=lists.is_null()
            )
            position = table.schema.get_field_index(name)
            table = table.set_column(position, table.schema.field(position), rebuilt)
    return table
