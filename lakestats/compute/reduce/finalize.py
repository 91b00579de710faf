"""The reduction's last steps: a column's frequencies finalized, the table files assembled.

Contract: ``column_frequencies`` finalizes one column's aggregated frequency rows
(``wire.AGGREGATED_ARROW``) against the merged scalar state and grid; ``write_tables``
assembles the three table-level files (``store/writer.py``) from the merged states,
re-binned histograms and finalized frequencies and returns the bytes written;
``write_partition_index`` assembles ``partition_index.parquet`` from every group's part
(``cache.GroupCache.index_part``: cached parts are reused), ``write_partition_histograms``
lists every group's part of the partition histograms (unchanged groups' parts reused as
they are) in ``partition_histogram_parts.parquet``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lakestats.compute.reduce.job import ReduceJob
from lakestats.stats.accumulator import ColumnResult
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.rebin import Grid, table_histogram
from lakestats.stats.scalar_state import ScalarState
from lakestats.stats.table_frequencies import FrequencyResult, finalize_frequencies
from lakestats.store import histogram_parts, schemas, writer
from lakestats.store.partition_index import assemble, write_index
from lakestats.threads import thread_map

if TYPE_CHECKING:
    from lakestats.compute.reduce.cache import GroupCache


def column_frequencies(
    job: ReduceJob, states: dict[int, ScalarState], grids: dict[int, Grid], table: pa.Table
) -> tuple[int, FrequencyResult]:
    """One column's aggregated frequency rows finalized (its index and result)."""
    index = int(table.column("column_index")[0].as_py())
    result = finalize_frequencies(
        index,
        job.columns[index]["name"],
        job.dtype(index),
        table,
        states[index],
        len(job.partitions),
        job.max_frequencies,
        grids.get(index),
    )
    return index, result


def write_tables(
    job: ReduceJob,
    states: dict[int, ScalarState],
    grids: dict[int, Grid],
    rebinned: dict[int, np.ndarray],
    files: dict[str, str],
    frequencies: dict[int, FrequencyResult],
) -> int:
    """The three table-level files; the bytes written."""
    results: list[ColumnResult] = []
    frequency_tables = []
    for index in range(len(job.columns)):
        dtype = job.dtype(index)
        state = states[index]
        row = state.row(dtype)
        row["column_path"] = None
        row.update(state.custom)
        merged = frequencies.get(index)
        if merged is not None:
            row.update(merged.row)
            if merged.table.num_rows:
                frequency_tables.append(merged.table)
        elif kind_of(dtype) not in (Kind.NESTED, Kind.NULL, Kind.OTHER):
            _no_frequencies(row, state)
        fields, counts = table_histogram(
            state.row_count - state.null_count - (state.nan_count or 0),
            grids.get(index),
            rebinned.get(index),
            merged.histogram if merged else None,
            dtype,
        )
        row.update(fields)
        results.append(ColumnResult(row, histogram=counts))
    uris = {k: job.store.path(v) for k, v in files.items()}
    custom = [(s.name, s.result_type) for s in job.statistics]
    return writer.write_partition(
        results, custom, job.bins, uris, job.store, frequencies=_concat(frequency_tables)
    )


def write_partition_index(groups: GroupCache, relative: str) -> int:
    """The version's ``partition_index.parquet`` from every group's part (cached parts
    reused: an incremental reduction reads only the changed groups' statistics files);
    returns the bytes written."""
    job = groups.job
    parts = [(members, groups.index_part(members)) for members in groups.members]
    table = assemble(parts, job.partitions, job.columns)
    return write_index(table, job.store.path(relative), job.store, len(job.partitions))


def write_partition_histograms(groups: GroupCache, relative: str) -> int:
    """The version's directory of partition histogram parts: every group's part (the
    previous version's where the group is unchanged, else computed now) and its members'
    partition ids; returns the bytes of the directory (parts are group cache entries)."""
    job = groups.job
    paths = thread_map(groups.partition_histograms_part, groups.members)
    uri = job.store.path(relative)
    return histogram_parts.write_directory(
        list(zip(groups.members, paths, strict=True)), uri, job.store
    )


def _no_frequencies(row: dict[str, object], state: ScalarState) -> None:
    """A column no partition stored frequency rows for (all values null or all distinct)."""
    non_null = state.row_count - state.null_count
    row["frequencies_count"] = 0
    row["frequencies_truncated"] = False
    row["frequencies_exact"] = state.frequencies_complete
    if state.frequencies_complete:
        row.update(
            distinct_count=0,
            distinct_count_lower=0,
            distinct_count_upper=0,
            distinct_count_exact=True,
            all_distinct=False,
        )
    elif non_null and row.get("distinct_count_upper") == non_null:
        row["all_distinct"] = True


def _concat(tables: list[pa.Table]) -> pa.Table:
    if not tables:
        return schemas.TABLE_FREQUENCIES_SCHEMA.empty_table()
    return pa.concat_tables([t.cast(schemas.TABLE_FREQUENCIES_SCHEMA) for t in tables])
