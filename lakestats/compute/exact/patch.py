"""The table files the exact step makes exact, patched on the driver.

``histograms`` replaces the table histogram counts of the columns the range tasks recounted
on the table grid; ``statistics`` rewrites the rows of the columns made exact: distinct
count (from the rank index, or from metadata for #0), nearest-rank percentiles read from
the ranks, and the frequency bookkeeping of the rewritten ``frequencies.parquet``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakestats.compute.exact.scenarios import PartitionSummary, Scenario
from lakestats.compute.reduce.job import ReduceJob
from lakestats.stats.kinds import ORDERED_NUMERIC, Kind, kind_of
from lakestats.stats.percentiles import PERCENTILES, percentile_names
from lakestats.store import ranks, schemas


def histograms(
    job: ReduceJob, table_files: dict[str, str], exact: dict[int, np.ndarray]
) -> int:
    """The table histogram counts of ``exact``'s columns replaced by those counts."""
    if not exact:
        return 0
    uri = job.store.path(table_files["histograms"])
    filesystem, path = job.store.resolve(uri)
    with filesystem.open_input_file(path) as handle:
        table = pq.ParquetFile(handle).read()
    for i, counts in exact.items():
        name = job.columns[i]["name"]
        if name not in table.column_names:
            continue
        padded = np.zeros(table.num_rows, dtype=np.int64)
        padded[: len(counts)] = counts
        mask = np.arange(table.num_rows) >= len(counts)
        at = table.column_names.index(name)
        table = table.set_column(at, table.schema.field(at), pa.array(padded, mask=mask))
    with filesystem.open_output_stream(path) as out:
        pq.write_table(
            table,
            out,
            compression="zstd",
            store_schema=False,
            write_statistics=False,
            use_dictionary=False,
        )
    return filesystem.get_file_info(path).size


def statistics(
    job: ReduceJob,
    table_files: dict[str, str],
    scenario: dict[int, Scenario],
    by_column: dict[int, list[PartitionSummary]],
    lookup: ranks.RankIndex,
    stored: dict[int, tuple[int, int]],
    exact_histograms: set[int],
) -> int:
    """The table statistics rows of the columns made exact, rewritten on the driver.

    The columns whose frequencies the step rewrote (every scenario but ``EXACT``) are
    ``duplicates_only``: their frequency rows are the values occurring more than once; with
    any value occurring once, the list is a truncated top list (every count is >= 2, every
    omitted value occurs once) whose ``frequencies_omitted`` values are exactly those."""
    uri = job.store.path(table_files["statistics"])
    filesystem, path = job.store.resolve(uri)
    with filesystem.open_input_file(path) as handle:
        table = pq.ParquetFile(handle).read()
    rows = table.to_pylist()
    for i, kind in scenario.items():
        row = rows[i]
        distinct = lookup.distinct_count(i)
        if kind == Scenario.DISJOINT:  # proven from metadata; the ranks agree
            distinct = sum(p.non_null for p in by_column[i])
        non_null = row["row_count"] - row["null_count"]
        row.update(
            distinct_count=distinct,
            distinct_count_lower=distinct,
            distinct_count_upper=distinct,
            distinct_count_exact=True,
            all_distinct=distinct == non_null and non_null > 0,
        )
        dtype = job.dtype(i)
        if kind_of(dtype) in ORDERED_NUMERIC:
            nans = (row.get("nan_count") or 0) if kind_of(dtype) == Kind.FLOATING else 0
            finite = non_null - nans
            if finite > 0:
                for name, p in zip(percentile_names(), PERCENTILES, strict=True):
                    rank = max(1, -(-finite * p // 100))
                    row[name] = lookup.value_at(i, rank)
                row["percentiles_exact"] = True
                row["percentile_rank_error"] = 0.0
        if i in exact_histograms:
            row["histogram_exact"] = True
        if kind == Scenario.EXACT:
            continue
        count, smallest = stored.get(i, (0, 0))
        singles = 0 if row["all_distinct"] else distinct - count  # all distinct: none listed
        row.update(
            frequencies_exact=True,
            frequencies_count=count,
            frequencies_truncated=singles > 0,
            frequencies_omitted=singles,
            frequencies_min=smallest if singles > 0 else None,
            duplicates_only=True,
        )
    patched = pa.Table.from_pylist(rows, schema=table.schema)
    with filesystem.open_output_stream(path) as out:
        pq.write_table(
            patched,
            out,
            compression="zstd",
            store_schema=False,
            row_group_size=schemas.STATISTICS_ROW_GROUP,
            write_statistics=False,
            use_dictionary=False,
        )
    return filesystem.get_file_info(path).size

