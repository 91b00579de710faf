"""The exact table level on Spark: staged value counts in, exact table files out.

Runs after the reduction (``compute/reduce/``) when ``analyze --exact`` staged every
partition's full value counts (``stats/value_counts.py``: sorted by column then key, one
column per row group, key statistics in the footer). Stages, all DataFrame APIs, and no
Spark shuffle of the values:

1. summaries: one row per (partition, column) from the partition statistics, read by the
   driver's threads (a few small rows per partition);
   ``scenarios.choose`` picks each column's scenario on the driver (#0 ``disjoint`` takes
   its distinct count from metadata; #2 and #3 differ only in their range size); every
   column it rewrites lists only its values counted more than once (``duplicates_only``);
2. outlines (``sources.py``): every source's row groups per column with their first and
   last key and rows, from the footers; the sources are each partition's staged
   ``values.parquet`` (columns it did not list fully) and ``frequencies.parquet`` (columns
   it listed fully, no data scan), or, incremental, the previous version's rank parts plus
   the added partitions' sources and the removed ones' with sign -1 (``layers.plan``: written as a
   delta layer over the previous layers while they stay few and small, else compacted into
   a new base; ``store/ranks.py`` merges the layers at read time);
3. ranges (``ranges.py``): the driver cuts each column's key space into ranges of about
   ``exact.range_rows`` rows (fewer when the table is small, so every core works) and
   packs consecutive ranges into tasks;
4. range tasks (``merge.py``, one ``mapInArrow`` over the task numbers): each reads from
   every source only the row groups overlapping its ranges, merges equal keys with Arrow
   and NumPy, writes ``table/<run>/ranks/part-<k>.parquet`` with local cumulative counts
   (a delta layer: only the values whose count changed, with the signed change) and a
   frequency run per range sorted by decreasing count, and returns per-(part,
   column) totals and exact table-histogram bins; the driver writes ``ranks/index.parquet``
   (``store/ranks.py``: a lookup reads the index and one row group);
5. the table ``frequencies.parquet`` is rewritten by one task (``frequencies.py``: kept
   columns' rows, the runs merged by decreasing count without comparing keys), and the
   table ``statistics.parquet`` rows and histogram counts are patched on the driver.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakestats.compute.exact import frequencies, layers, merge, patch, ranges, sources
from lakestats.compute.exact.scenarios import (
    ExactSettings,
    PartitionSummary,
    Scenario,
    choose,
)
from lakestats.compute.progress import Clock
from lakestats.compute.reduce.job import ReduceJob
from lakestats.compute.session import default_parallelism, result_schema
from lakestats.stats.exact_histogram import grid_of
from lakestats.stats.kinds import VALUE_KINDS, kind_of
from lakestats.stats.value_counts import needs_staging
from lakestats.store import frequency_layers, layout, ranks
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import Version
from lakestats.threads import leaf_map

SUMMARY_FIELDS = [
    "row_count",
    "null_count",
    "distinct_count",
    "all_distinct",
    "frequencies_count",
    "min",
    "max",
]

MIN_RANGES = 8
"""Key ranges a small table's values are cut into at least (``exact.range_rows`` cuts a large
one): not the cluster's cores, so the ranks are written the same way on any cluster."""


def _read(job: ReduceJob, relative: str, columns: list[str] | None = None) -> pa.Table:
    filesystem, path = job.store.resolve(job.store.path(relative))
    with filesystem.open_input_file(path) as handle:
        return pq.ParquetFile(handle).read(columns=columns, use_threads=False)


def _parquet_at(job: ReduceJob):  # noqa: ANN202 - a reader of relative paths
    """Open a statistics file by its relative path (the frequency layers' reads)."""

    def parquet_at(relative: str) -> pq.ParquetFile:
        return pq.ParquetFile(job.store.open_input_file(job.store.path(relative)))

    return parquet_at


def own_table_files(
    store: StatisticsStore, partition_files: dict[str, str], run_id: str
) -> dict[str, str]:
    """An unpartitioned table's partition files copied as its table files: ``exact_table``
    rewrites the table files in place, and the partition's stay its partition level."""
    own = layout.table_files(run_id)
    for kind, relative in own.items():
        store.write_bytes_atomic(
            store.path(relative), store.read_bytes(store.path(partition_files[kind]))
        )
    kept = {k: v for k, v in partition_files.items() if k not in own and k != "values"}
    return {**kept, **own}


def _summaries(job: ReduceJob, partition: int) -> list[PartitionSummary]:
    """One partition's summary per version column, from its ``statistics.parquet``."""
    rows = _read(job, job.partitions[partition].files["statistics"], SUMMARY_FIELDS).to_pylist()
    return [
        PartitionSummary(
            row["row_count"] - row["null_count"],
            row["distinct_count"] or 0,
            bool(row["all_distinct"]),
            not needs_staging(row),
            row["min"],
            row["max"],
        )
        for row in rows
    ]


def _indexed(spark: SparkSession, count: int, parallelism: int) -> DataFrame:
    frame = spark.range(0, count, 1, numPartitions=max(1, min(count, 2 * parallelism)))
    return frame.select(F.col("id").cast("int").alias("id"))


def _outlines(
    spark: SparkSession,
    job: ReduceJob,
    chosen: list[sources.Source],
    wanted: frozenset[int],
    parallelism: int,
) -> dict[int, list[ranges.Group]]:
    """Every wanted column's row groups over all sources (read from footers on executors)."""
    rows = (
        _indexed(spark, len(chosen), parallelism)
        .mapInArrow(
            functools.partial(sources.outline, job.store, chosen, wanted),
            result_schema(sources.OUTLINE_SCHEMA),
        )
        .collect()
    )
    groups: dict[int, list[ranges.Group]] = {}
    for r in rows:
        low, high = (None if k is None else bytes(k) for k in (r["min"], r["max"]))  # hashable
        groups.setdefault(r["column_index"], []).append(
            ranges.Group(r["source"], r["listed"], r["row_group"], low, high, r["num_rows"])
        )
    return groups


def exact_table(
    spark: SparkSession,
    job: ReduceJob,
    table_files: dict[str, str],
    run_id: str,
    previous: Version | None = None,
    settings: ExactSettings | None = None,
    clock: Clock | None = None,
) -> tuple[dict[str, str], int, dict[str, object]]:
    """Make every value column's table level exact; returns the table files (plus
    ``ranks``), the bytes written and a report (scenario per column, ranges).
    ``table_files`` are rewritten in place: the table's own, never a partition's
    (``own_table_files``). ``clock`` times its stages (``LAKESTATS_TIMINGS``)."""
    settings = settings or ExactSettings.from_environment()
    clock = clock or Clock()
    parallelism = max(2, default_parallelism(spark))
    # a few small footers and rows per partition, read by the driver's threads: a Spark
    # job for them cost ~2 s at scale 10, 50x the reads (bench/scale.py, incremental)
    summaries = leaf_map(functools.partial(_summaries, job), range(len(job.partitions)))
    value_columns = [
        i for i in range(len(job.columns)) if kind_of(job.dtype(i)) in VALUE_KINDS
    ]
    by_column: dict[int, list[PartitionSummary]] = {
        i: [rows[i] for rows in summaries if i < len(rows)] for i in value_columns
    }
    scenario = {i: choose(parts, settings) for i, parts in by_column.items()}
    report: dict[str, object] = {
        "scenarios": {job.columns[i]["name"]: s.value for i, s in scenario.items()}
    }
    plan = layers.plan(job, previous, report)
    chosen = plan.sources
    groups = _outlines(spark, job, chosen, frozenset(value_columns), parallelism)
    replaced = frozenset(i for i in value_columns if scenario[i] != Scenario.EXACT)
    layered = (
        plan.delta
        and not layers.compact(plan, groups)
        and bool(plan.frequency_files)
        and replaced == plan.frequency_columns
    )
    report["rank_layers"] = "delta" if layered else "base"

    # ranges of about equal rows, at least MIN_RANGES of them on a small table (so a few
    # cores all get work), whatever the cluster: the ranks' parts are the same bytes
    total = sum(g.rows for gs in groups.values() for g in gs)
    target = max(1, min(settings.range_rows, -(-total // MIN_RANGES)))
    pieces = [
        piece
        for i in value_columns
        if i in groups
        for piece in ranges.pieces(
            i,
            groups[i],
            min(target, settings.batch_values) if scenario[i] == Scenario.BATCHED else target,
        )
    ]
    tasks = ranges.pack(pieces, target)
    clock.lap("exact: summaries, scenarios, outlines and ranges")
    report["ranges"] = len(pieces)
    report["range_tasks"] = len(tasks)
    report["rows_read"] = sum(p.rows for p in pieces)

    table_rows = _read(job, table_files["statistics"]).to_pylist()
    grids = {
        i: grid
        for i in scenario
        if scenario[i] != Scenario.EXACT and not table_rows[i].get("histogram_exact")
        for grid in [grid_of(table_rows[i], job.dtype(i))]
        if grid is not None
    }
    merge_job = merge.MergeJob(
        job.store, run_id, chosen, tasks, {i: job.dtype(i) for i in grids}, grids, replaced, layered
    )
    range_rows = (
        spark.range(0, len(tasks), 1, numPartitions=max(1, len(tasks)))
        .select(F.col("id").cast("int").alias("id"))
        .mapInArrow(
            functools.partial(merge.merge_ranges, merge_job), result_schema(merge.RANGE_SCHEMA)
        )
        .collect()
        if tasks
        else []
    )
    range_dicts = sorted((r.asDict() for r in range_rows), key=lambda r: r["part"])
    clock.lap(f"exact: {len(tasks)} range tasks")
    directory = layout.ranks_dir(run_id)
    index_file = f"{directory}/{ranks.INDEX_FILE}"
    stored_ranges = [r for r in range_dicts if r["rank_rows"]]
    written = sum(r["bytes"] for r in range_dicts)
    written += ranks.write_index(stored_ranges, job.store.path(index_file), job.store)
    layer = ranks.RankIndex(stored_ranges, job.store, directory)
    lower = ranks.open_layers(job.store, list(plan.layers)).layers if layered else []
    lookup = ranks.LayeredRanks([*lower, layer])

    stored: dict[int, tuple[int, int]] = {}  # column: (rows stored, smallest count)
    if replaced:
        runs: dict[int, list[str]] = {i: [] for i in replaced}
        for r in range_dicts:
            if r["run_rows"]:
                runs[r["column_index"]].append(
                    merge.run_file(run_id, r["part"], r["column_index"])
                )
        frequency_job = frequencies.FrequencyJob(
            job.store,
            table_files["frequencies"],
            [c["name"] for c in job.columns],
            runs,
            merge.runs_dir(run_id),
            frequency_layers.delta_file(run_id) if layered else None,
        )
        counted = (
            _indexed(spark, 1, parallelism)
            .mapInArrow(
                functools.partial(frequencies.write_frequencies, frequency_job),
                result_schema(frequencies.RESULT_SCHEMA),
            )
            .collect()
        )
        written += sum(r["bytes_written"] for r in counted)
        stored = {
            r["column_index"]: (r["rows"], r["smallest"])
            for r in counted
            if r["column_index"] >= 0
        }
        if layered:  # the values listed before, plus each range's change; the smallest
            # count over the layers (the base's tail, the deltas' rows)
            layers_now = frequency_layers.FrequencyLayers(
                (*plan.frequency_files, frequency_layers.delta_file(run_id)), replaced
            )
            for i in replaced:
                listed = plan.listed[i] + sum(
                    r["listed"] for r in range_dicts if r["column_index"] == i
                )
                merged = frequency_layers.MergedColumn(_parquet_at(job), layers_now, i, [])
                stored[i] = (listed, merged.smallest())
    clock.lap("exact: table frequencies")
    histograms: dict[int, np.ndarray] = {}
    for r in range_dicts:
        if r["histogram"] is not None:
            counts = np.frombuffer(r["histogram"], dtype=np.int64)
            c = r["column_index"]
            histograms[c] = histograms[c] + counts if c in histograms else counts.copy()
    written += patch.histograms(job, table_files, histograms)
    written += patch.statistics(
        job, table_files, scenario, by_column, lookup, stored, set(histograms)
    )
    written_parts = sorted({r["part"] for r in stored_ranges})
    files = [f"{directory}/part-{part:05d}.parquet" for part in written_parts]
    rows = sum(r["rank_rows"] for r in stored_ranges)
    if layered:  # the base stays the version's "ranks"; the layers list it and the deltas
        report.update(
            files=[*plan.files, *files],
            layers=[*plan.layers, index_file],
            layer_rows=[*plan.rows, rows],
            frequency_layers=frequency_layers.FrequencyLayers(
                (*plan.frequency_files, frequency_layers.delta_file(run_id)), replaced
            ).to_json(),
        )
        return {**table_files, "ranks": plan.layers[0]}, written, report
    report.update(files=files, layers=[index_file], layer_rows=[rows])
    return {**table_files, "ranks": index_file}, written, report

