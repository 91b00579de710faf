"""The exact table level on Spark: staged value counts in, exact table files out.

Runs after the reduction (``compute/reduce/``) when ``analyze --exact`` staged every
partition's full value counts (``stats/value_counts.py``). Stages, all DataFrame APIs:

1. summaries: one row per (partition, column) from the partition statistics, collected;
   ``scenarios.choose`` picks each column's scenario on the driver;
2. contributions: every source's (column, value key, count) rows (``sources_of``): a
   partition's staged ``values.parquet`` for columns it did not list fully, its
   ``frequencies.parquet`` rows for the others (no data scan); incremental: the previous
   version's rank parts, plus added and minus removed partitions;
3. #1 (near-unique): packed fingerprint blobs per source and hash bucket find the values
   possibly repeated, which alone are recounted by value (``fingerprints.py``), so only
   real duplicates are kept; #2: ``groupBy(column, value).sum(count)``;
   #3: the same after ``repartitionByRange(b)`` (each batch a value range);
4. ranks: aggregated rows (#2/#3) and raw rows (#0/#1, whose repeats are adjacent once
   sorted) are range-partitioned by (column, key) and sorted within ranges; each range
   task merges equal keys and writes ``table/<run>/ranks/part-<k>.parquet`` with the local
   cumulative count, and returns per-(range, column) totals; the driver writes
   ``ranks/index.parquet`` with each range's offset, so a rank or quantile lookup reads
   the index and one row group (``store/ranks.py``);
5. the table ``frequencies.parquet`` is rewritten by one task (complete columns' rows kept,
   exhaustive or duplicate-only rows of the others, by decreasing count), and the
   table ``statistics.parquet`` rows of those columns are patched on the driver.

Over 400 lines on purpose: the exact scenarios' stages share one plan and the staged value
counts.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakestats import fs
from lakestats.compute.exact import fingerprints
from lakestats.compute.exact.scenarios import (
    ExactSettings,
    PartitionSummary,
    Scenario,
    choose,
)
from lakestats.compute.reduce.job import ReduceJob
from lakestats.compute.session import default_parallelism, result_schema
from lakestats.errors import LakestatsError
from lakestats.stats.exact_histogram import ExactGrid, bin_counts, grid_of
from lakestats.stats.kinds import ORDERED_NUMERIC, VALUE_KINDS, Kind, kind_of
from lakestats.stats.percentiles import PERCENTILES, percentile_names
from lakestats.stats.value_counts import needs_staging
from lakestats.store import layout, ranks, schemas
from lakestats.store.manifest import PartitionEntry, Version

SUMMARY_FIELDS = [
    "row_count",
    "null_count",
    "distinct_count",
    "all_distinct",
    "frequencies_count",
    "min",
    "max",
]
SUMMARY_SCHEMA = (
    "partition int, column_index int, non_null long, distinct_count long, "
    "all_distinct boolean, listed_all boolean, min binary, max binary"
)
ROW_SCHEMA = "column_index int, value binary, count long"
CONTRIBUTION_ARROW = pa.schema(
    [("column_index", pa.int32()), ("value", pa.binary()), ("count", pa.int64())]
)
RANGE_SCHEMA = (
    "part int, column_index int, distinct_count long, total long, "
    "min binary, max binary, bytes long, histogram binary"
)


def _read(job: ReduceJob, relative: str, columns: list[str] | None = None) -> pa.Table:
    filesystem, path = fs.resolve(layout.absolute(job.root, relative), job.s3)
    with filesystem.open_input_file(path) as handle:
        return pq.ParquetFile(handle).read(columns=columns, use_threads=False)


def _summaries(job: ReduceJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for p in batch.column(0).to_pylist():
            rows = _read(job, job.partitions[p].files["statistics"], SUMMARY_FIELDS).to_pylist()
            yield pa.RecordBatch.from_pylist(
                [
                    {
                        "partition": p,
                        "column_index": i,
                        "non_null": row["row_count"] - row["null_count"],
                        "distinct_count": row["distinct_count"] or 0,
                        "all_distinct": bool(row["all_distinct"]),
                        "listed_all": not needs_staging(row),
                        "min": row["min"],
                        "max": row["max"],
                    }
                    for i, row in enumerate(rows)
                ],
                schema=pa.schema(
                    [
                        ("partition", pa.int32()),
                        ("column_index", pa.int32()),
                        ("non_null", pa.int64()),
                        ("distinct_count", pa.int64()),
                        ("all_distinct", pa.bool_()),
                        ("listed_all", pa.bool_()),
                        ("min", pa.binary()),
                        ("max", pa.binary()),
                    ]
                ),
            )


Source = tuple[str, object, int]
"""Where exact (column, key, count) rows come from: ``("partition", PartitionEntry, sign)``
(its staged values and complete frequency rows; sign -1 subtracts a removed partition's
old contribution) or ``("ranks", part path, 1)`` (a previous exact version's rank part)."""


def sources_of(job: ReduceJob, previous: Version | None, report: dict[str, object]) -> list[Source]:
    """Every partition; or, with an exact ``previous`` version of the same columns, its rank
    parts plus the added partitions and minus the removed ones (incremental)."""
    parts = (previous.extra.get("exact", {}).get("files") or []) if previous else []
    if previous is None or not parts or previous.columns != job.columns:
        report["incremental"] = False
        return [("partition", e, 1) for e in job.partitions]
    before = {e.files["statistics"]: e for e in previous.partitions}
    now = {e.files["statistics"]: e for e in job.partitions}
    added = [e for path, e in now.items() if path not in before]
    removed = [e for path, e in before.items() if path not in now]
    report.update(incremental=True, partitions_added=len(added), partitions_removed=len(removed))
    return [
        *(("ranks", p, 1) for p in parts),
        *(("partition", e, 1) for e in added),
        *(("partition", e, -1) for e in removed),
    ]


def source_rows(
    job: ReduceJob, sources: list[Source], wanted: frozenset[int], i: int
) -> Iterator[pa.Table]:
    """Source ``i``'s (column_index, value, count) rows of the ``wanted`` columns."""
    kind, ref, sign = sources[i]
    if kind == "ranks":
        table = _read(job, str(ref), ["column_index", "value", "count"])
        mask = pc.is_in(table.column("column_index"), pa.array(sorted(wanted), pa.int32()))
        yield table.filter(mask).cast(CONTRIBUTION_ARROW)
        return
    for table in _partition_rows(job, ref, wanted):  # type: ignore[arg-type]
        if sign != 1:
            table = table.set_column(
                2, "count", pc.multiply(table.column("count"), pa.scalar(sign, pa.int64()))
            )
        yield table


def _contributions(
    job: ReduceJob,
    sources: list[Source],
    wanted: frozenset[int],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for i in batch.column(0).to_pylist():
            for table in source_rows(job, sources, wanted, i):
                yield from table.to_batches()


def _partition_rows(
    job: ReduceJob, entry: PartitionEntry, wanted: frozenset[int]
) -> Iterator[pa.Table]:
    rows = _read(job, entry.files["statistics"], SUMMARY_FIELDS).to_pylist()
    staged = {i for i, row in enumerate(rows) if needs_staging(row)} & wanted
    listed = wanted - staged
    if listed:
        freq = _read(job, entry.files["frequencies"], ["column_index", "value", "frequency"])
        mask = pc.is_in(freq.column("column_index"), pa.array(sorted(listed), pa.int32()))
        freq = freq.filter(mask)
        yield pa.table(
            {
                "column_index": freq.column("column_index"),
                "value": freq.column("value"),
                "count": freq.column("frequency"),
            }
        ).cast(CONTRIBUTION_ARROW)
    if staged:
        if "values" not in entry.files:
            raise LakestatsError(
                f"partition {entry.name!r} has no staged value counts; "
                "run analyze --exact on the whole table once"
            )
        values = _read(job, entry.files["values"])
        mask = pc.is_in(values.column("column_index"), pa.array(sorted(staged), pa.int32()))
        yield values.filter(mask).cast(CONTRIBUTION_ARROW)


def _indexed(spark: SparkSession, count: int, parallelism: int) -> DataFrame:
    frame = spark.range(0, count, 1, numPartitions=max(1, min(count, 2 * parallelism)))
    return frame.select(F.col("id").cast("int").alias("id"))


def contribution_rows(
    spark: SparkSession, job: ReduceJob, wanted: frozenset[int], sources: list[Source]
) -> DataFrame:
    """Every value's (column, key, count) rows whose sums are the table's exact counts."""
    parallelism = max(2, default_parallelism(spark))
    return _indexed(spark, len(sources), parallelism).mapInArrow(
        functools.partial(_contributions, job, sources, wanted), result_schema(ROW_SCHEMA)
    )


def _write_ranges(
    job: ReduceJob,
    directory: str,
    grids: dict[int, ExactGrid],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """One range task: merge equal keys, write the range's part file, return its totals
    (and its exact counts on the table histogram grid of the ``grids`` columns)."""
    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if not tables:
        return
    rows = pa.concat_tables(tables)
    part = int(rows.column("part")[0].as_py())
    rows = rows.drop_columns(["part"])
    # equal keys of one column are adjacent (sorted within the range): merge them
    grouped = rows.group_by(["column_index", "value"], use_threads=False).aggregate(
        [("count", "sum")]
    )
    grouped = grouped.filter(pc.greater(grouped.column("count_sum"), 0))
    if grouped.num_rows == 0:
        return
    order = pc.sort_indices(
        grouped, sort_keys=[("column_index", "ascending"), ("value", "ascending")]
    )
    grouped = grouped.take(order)
    index = grouped.column("column_index").to_numpy(zero_copy_only=False)
    counts = grouped.column("count_sum").to_numpy(zero_copy_only=False).astype(np.int64)
    cuts = [0, *(np.flatnonzero(np.diff(index)) + 1).tolist(), len(index)]
    uri = layout.absolute(job.root, f"{directory}/part-{part:05d}.parquet")
    filesystem, path = fs.resolve(uri, job.s3)
    filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
    summaries = []
    with filesystem.open_output_stream(path) as out:
        writer = pq.ParquetWriter(out, ranks.RANKS_SCHEMA, compression="zstd", store_schema=False)
        for start, stop in itertools.pairwise(cuts):
            if stop == start:
                continue
            local = np.cumsum(counts[start:stop])
            table = pa.table(
                {
                    "column_index": grouped.column("column_index").slice(start, stop - start),
                    "value": grouped.column("value").slice(start, stop - start),
                    "count": pa.array(counts[start:stop]),
                    "cumulative": pa.array(local),
                },
                schema=ranks.RANKS_SCHEMA,
            )
            # one column per row group, so row-group statistics bound key and cumulative
            writer.write_table(table, row_group_size=ranks.RANKS_ROW_GROUP)
            column = int(index[start])
            binned = (
                bin_counts(
                    table.column("value").combine_chunks(),
                    counts[start:stop],
                    job.dtype(column),
                    grids[column],
                ).tobytes()
                if column in grids
                else None
            )
            summaries.append(
                {
                    "part": part,
                    "column_index": int(index[start]),
                    "distinct_count": stop - start,
                    "total": int(local[-1]),
                    "min": grouped.column("value")[start].as_py(),
                    "max": grouped.column("value")[stop - 1].as_py(),
                    "bytes": 0,
                    "histogram": binned,
                }
            )
        writer.close()
    size = filesystem.get_file_info(path).size
    summaries[0]["bytes"] = size
    yield pa.RecordBatch.from_pylist(summaries, schema=_arrow(RANGE_SCHEMA))


def _arrow(ddl: str) -> pa.Schema:
    kinds = {"int": pa.int32(), "long": pa.int64(), "binary": pa.binary(), "boolean": pa.bool_()}
    fields = [f.strip().split(" ") for f in ddl.split(",")]
    return pa.schema([(name, kinds[kind]) for name, kind in fields])


def _write_frequencies(
    job: ReduceJob,
    table_file: str,
    replaced: frozenset[int],
    names: list[str],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """The table frequencies rewritten: kept columns' rows, then the exact rows, in
    column order (rows arrive sorted by column, decreasing count, key)."""
    old = _read(job, table_file)
    keep = pc.invert(pc.is_in(old.column("column_index"), pa.array(sorted(replaced), pa.int32())))
    old = old.filter(keep)
    old_index = old.column("column_index").to_numpy(zero_copy_only=False)
    uri = layout.absolute(job.root, table_file)
    filesystem, path = fs.resolve(uri, job.s3)
    schema = schemas.TABLE_FREQUENCIES_SCHEMA
    written_old = np.zeros(len(names), dtype=bool)
    stored: dict[int, int] = {}  # exact rows written per column
    smallest: dict[int, int] = {}  # their smallest count (rows arrive by decreasing count)

    def old_rows_before(column: int) -> list[pa.Table]:
        out = []
        for c in range(column):
            if not written_old[c]:
                written_old[c] = True
                picked = old.filter(pa.array(old_index == c))
                if picked.num_rows:
                    out.append(picked.cast(schema))
        return out

    with filesystem.open_output_stream(path) as out:
        writer = pq.ParquetWriter(
            out,
            schema,
            compression="zstd",
            store_schema=False,
            write_statistics=["column_index"],
            use_dictionary=["column"],
        )
        for batch in batches:
            if not batch.num_rows:
                continue
            index = batch.column("column_index").to_numpy(zero_copy_only=False)
            cuts = [0, *(np.flatnonzero(np.diff(index)) + 1).tolist(), len(index)]
            for start, stop in itertools.pairwise(cuts):
                column = int(index[start])
                for table in old_rows_before(column):
                    writer.write_table(table, row_group_size=schemas.FREQUENCIES_ROW_GROUP)
                n = stop - start
                stored[column] = stored.get(column, 0) + n
                smallest[column] = int(batch.column("count")[stop - 1].as_py())
                rows = pa.table(
                    {
                        "column": pa.array([names[column]] * n, pa.string()),
                        "value": batch.column("value").slice(start, n),
                        "frequency": batch.column("count").slice(start, n),
                        "column_index": batch.column("column_index").slice(start, n),
                        "frequency_upper": pa.nulls(n, pa.int64()),
                        "partition_counts": pa.nulls(n, pa.list_(pa.int64())),
                        "partition_ids": pa.nulls(n, pa.list_(pa.int32())),
                        "partition_id_counts": pa.nulls(n, pa.list_(pa.int64())),
                    },
                    schema=schema,
                )
                writer.write_table(rows, row_group_size=schemas.FREQUENCIES_ROW_GROUP)
        for table in old_rows_before(len(names)):
            writer.write_table(table, row_group_size=schemas.FREQUENCIES_ROW_GROUP)
        writer.close()
    size = filesystem.get_file_info(path).size
    columns = sorted(stored)
    yield pa.RecordBatch.from_pydict(
        {
            "column_index": pa.array(columns, pa.int32()),
            "rows": pa.array([stored[c] for c in columns], pa.int64()),
            "smallest": pa.array([smallest[c] for c in columns], pa.int64()),
            "bytes_written": pa.array([size] + [0] * (len(columns) - 1), pa.int64())
            if columns
            else pa.array([], pa.int64()),
        }
    )
    if not columns:
        yield pa.RecordBatch.from_pydict(
            {
                "column_index": pa.array([-1], pa.int32()),
                "rows": pa.array([0], pa.int64()),
                "smallest": pa.array([0], pa.int64()),
                "bytes_written": pa.array([size], pa.int64()),
            }
        )


def exact_table(
    spark: SparkSession,
    job: ReduceJob,
    table_files: dict[str, str],
    run_id: str,
    previous: Version | None = None,
    settings: ExactSettings | None = None,
) -> tuple[dict[str, str], int, dict[str, object]]:
    """Make every value column's table level exact; returns the table files (plus
    ``ranks``), the bytes written and a report (scenario per column, candidates)."""
    settings = settings or ExactSettings.from_environment()
    parallelism = max(2, default_parallelism(spark))
    frame = _indexed(spark, len(job.partitions), parallelism)
    summary_rows = frame.mapInArrow(
        functools.partial(_summaries, job), result_schema(SUMMARY_SCHEMA)
    ).collect()
    value_columns = [
        i for i in range(len(job.columns)) if kind_of(job.dtype(i)) in VALUE_KINDS
    ]
    by_column: dict[int, list[PartitionSummary]] = {i: [] for i in value_columns}
    for row in summary_rows:
        if row["column_index"] in by_column:
            by_column[row["column_index"]].append(
                PartitionSummary(
                    row["non_null"],
                    row["distinct_count"],
                    row["all_distinct"],
                    row["listed_all"],
                    row["min"],
                    row["max"],
                )
            )
    scenario = {i: choose(parts, settings) for i, parts in by_column.items()}
    report: dict[str, object] = {
        "scenarios": {job.columns[i]["name"]: s.value for i, s in scenario.items()}
    }
    wanted = frozenset(value_columns)
    sources = sources_of(job, previous, report)
    rows = contribution_rows(spark, job, wanted, sources)
    of = {s: sorted(i for i in scenario if scenario[i] == s) for s in Scenario}
    near, disjoint = of[Scenario.NEAR_UNIQUE], of[Scenario.DISJOINT]
    aggregated_columns = of[Scenario.AGGREGATE] + of[Scenario.BATCHED] + of[Scenario.EXACT]
    duplicates: DataFrame | None = None
    if near:
        duplicates = fingerprints.duplicates(
            _indexed(spark, len(sources), parallelism),
            functools.partial(source_rows, job, sources, frozenset(near)),
            {i: sum(p.non_null for p in by_column[i]) for i in near},
            parallelism,
            settings.max_candidates,
            report,
        )
        if duplicates is None:  # too many repeats: aggregate every value
            aggregated_columns += near
            near = []
    batched = of[Scenario.BATCHED]
    aggregate_rows = rows.where(F.col("column_index").isin(aggregated_columns))
    if batched:
        total = sum(sum(p.distinct for p in by_column[i]) for i in batched)
        report["batches"] = settings.batches(total)
        aggregate_rows = aggregate_rows.repartitionByRange(
            settings.batches(total), "column_index", "value"
        )
    # read twice (the ranks, then the frequencies file): kept, so the value shuffle runs once
    aggregated = (
        aggregate_rows.groupBy("column_index", "value")
        .agg(F.sum("count").alias("count"))
        .where("count > 0")
        .persist()
    )
    # ranks: exact (value, count) of every value column, sorted by (column, key) in ranges
    raw = rows.where(F.col("column_index").isin(near + disjoint))
    table_rows = _read(job, table_files["statistics"]).to_pylist()
    grids = {
        i: grid
        for i in scenario
        if scenario[i] != Scenario.EXACT and not table_rows[i].get("histogram_exact")
        for grid in [grid_of(table_rows[i], job.dtype(i))]
        if grid is not None
    }
    ranges = max(1, 2 * parallelism)
    directory = layout.ranks_dir(run_id)
    range_rows = (
        aggregated.unionByName(raw)
        .repartitionByRange(ranges, "column_index", "value")
        .sortWithinPartitions("column_index", "value")
        .withColumn("part", F.spark_partition_id())
        .mapInArrow(
            functools.partial(_write_ranges, job, directory, grids), result_schema(RANGE_SCHEMA)
        )
        .collect()
    )
    index_file = f"{directory}/{ranks.INDEX_FILE}"
    written = sum(r["bytes"] for r in range_rows)
    written += ranks.write_index(
        [r.asDict() for r in range_rows], layout.absolute(job.root, index_file), job.s3
    )
    lookup = ranks.RankIndex([r.asDict() for r in range_rows], job.root, directory, job.s3)

    replaced = [i for i in value_columns if scenario[i] != Scenario.EXACT]
    frequency_rows = aggregated.where(
        F.col("column_index").isin([i for i in replaced if i in aggregated_columns])
    )
    if duplicates is not None:
        frequency_rows = frequency_rows.unionByName(duplicates)
    stored: dict[int, tuple[int, int]] = {}  # column: (rows stored, smallest count)
    if replaced:
        # one task writes the file (rows arrive in order) and counts each column's rows
        counted = (
            frequency_rows.orderBy("column_index", F.desc("count"), "value")
            .coalesce(1)
            .mapInArrow(
                functools.partial(
                    _write_frequencies,
                    job,
                    table_files["frequencies"],
                    frozenset(replaced),
                    [c["name"] for c in job.columns],
                ),
                result_schema("column_index int, rows long, smallest long, bytes_written long"),
            )
            .collect()
        )
        written += sum(r["bytes_written"] for r in counted)
        stored = {
            r["column_index"]: (r["rows"], r["smallest"])
            for r in counted
            if r["column_index"] >= 0
        }
    aggregated.unpersist()
    histograms: dict[int, np.ndarray] = {}
    for r in range_rows:
        if r["histogram"] is not None:
            counts = np.frombuffer(r["histogram"], dtype=np.int64)
            c = r["column_index"]
            histograms[c] = histograms[c] + counts if c in histograms else counts.copy()
    written += _patch_histograms(job, table_files, histograms)
    written += _patch_statistics(
        job, table_files, scenario, by_column, lookup, stored, set(histograms)
    )
    if duplicates is not None or near:
        report["near_unique_duplicates"] = {
            job.columns[i]["name"]: stored.get(i, (0, 0))[0] for i in near
        }
    report["files"] = [
        f"{directory}/part-{part:05d}.parquet" for part in sorted({r["part"] for r in range_rows})
    ]
    return {**table_files, "ranks": index_file}, written, report


def _patch_histograms(
    job: ReduceJob, table_files: dict[str, str], histograms: dict[int, np.ndarray]
) -> int:
    """The table histogram counts of ``histograms``' columns replaced by exact ones."""
    if not histograms:
        return 0
    uri = layout.absolute(job.root, table_files["histograms"])
    filesystem, path = fs.resolve(uri, job.s3)
    with filesystem.open_input_file(path) as handle:
        table = pq.ParquetFile(handle).read()
    for i, counts in histograms.items():
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


def _patch_statistics(
    job: ReduceJob,
    table_files: dict[str, str],
    scenario: dict[int, Scenario],
    by_column: dict[int, list[PartitionSummary]],
    lookup: ranks.RankIndex,
    stored: dict[int, tuple[int, int]],
    exact_histograms: set[int],
) -> int:
    """The table statistics rows of the columns made exact, rewritten on the driver.

    Columns of scenarios #0 and #1 are ``duplicates_only``: their frequency rows are the
    values occurring more than once; with any, the list is a truncated top list (every count
    is >= 2, every omitted value occurs once) whose ``frequencies_omitted`` values are
    exactly the ones occurring once."""
    uri = layout.absolute(job.root, table_files["statistics"])
    filesystem, path = fs.resolve(uri, job.s3)
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
        duplicates_only = kind in (Scenario.DISJOINT, Scenario.NEAR_UNIQUE)
        singles = distinct - count if duplicates_only and not row["all_distinct"] else 0
        row.update(
            frequencies_exact=True,
            frequencies_count=count,
            frequencies_truncated=singles > 0,
            frequencies_omitted=singles if duplicates_only else distinct - count,
            frequencies_min=smallest if singles > 0 else None,
            duplicates_only=duplicates_only,
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
        )
    return filesystem.get_file_info(path).size

