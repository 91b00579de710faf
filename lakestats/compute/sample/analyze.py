"""``analyze --from-sample``: statistics estimated from the stored sample.

1. The driver looks up what the table's metadata knows exactly (null counts, min, max from
   data file footers: ``compute/sample/bounds.py``; row counts are the sample's recorded
   populations).
2. The normal analyze job runs over the sample (``formats.sample.SampleTableFormat``) into
   ``<stats root>/sample/analysis/<run id>`` (deleted when the run ends: it is only
   scaled, and keeps no partition index, parts or group cache), one task per sample
   partition, with a
   ``compute/sample/tasks.SampleHook``: each task, on the rows it read, also computes each
   column's sample profile and writes its partition's **scaled** files into the statistics
   root (``compute/sample/files.py``, ``compute/sample/scale.py``: estimates with
   intervals, distinct counts by ``select_estimator``), and emits its distinct values'
   hashes, which one Spark aggregation turns into the whole sample's profiles. The sample
   is read once, by the tasks; the driver neither reads it nor rewrites partition files.
   Nothing is reused from an earlier run (the table's profiles need every partition's
   values; the sample is 1 % of the table).
3. The driver scales the table-level files (one set), sums the scaled partitions' column
   groups (``analyze --column-groups``) to the table's as an analyze does, and publishes a
   version of kind ``sampled`` for the sample's snapshot, with how the sample was drawn in
   ``extra["sample"]``.

A partition whose sample has no rows (a partition too small for the sample's rate) has no
partition statistics in a sampled version; its rows count in the table's row count.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import uuid

import pyarrow as pa
from pyspark.sql import SparkSession

from lakestats import fs
from lakestats.answers import AnalyzeResult
from lakestats.compute.analyze import analyze, column_records, publish_version
from lakestats.compute.progress import Clock
from lakestats.compute.reduce.groups import reduce_groups
from lakestats.compute.sample.bounds import footer_bounds, usable
from lakestats.compute.sample.files import Scaling, read_files, scale_files
from lakestats.compute.sample.tasks import SampleHook
from lakestats.errors import InvalidArgumentError
from lakestats.formats.base import TableFormat
from lakestats.formats.sample import SampleTableFormat
from lakestats.options import AnalyzeOptions
from lakestats.stats.leaves import leaves_of
from lakestats.store import layout, manifest, verify
from lakestats.store import sample as store
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import VersionKind

ANALYSIS_DIR = "analysis"
ONE_TASK_BYTES = 1 << 62
"""The analysis of a sample never splits a partition into slices (the hook sees all of a
partition's rows in one task; a partition's sample is 1 % of it)."""
TASK_BYTES = 32 << 20
MIN_TASKS = 2
"""Sample partitions are grouped into Spark tasks of about ``TASK_BYTES`` of sample files,
at least ``MIN_TASKS`` of them (a 1 % sample of a partition is small: a task per partition
would spend more on scheduling than on work)."""


def analyze_from_sample(
    table: TableFormat,
    stats_root: StatisticsStore,
    options: AnalyzeOptions,
    spark: SparkSession,
) -> AnalyzeResult:
    s3 = stats_root.s3  # the tasks' and the table's: one object store
    sample = store.load(stats_root, table.identifier)
    if sample.sample_rows == 0:
        raise InvalidArgumentError(
            f"the sample of {table.identifier} holds no rows; create a larger one with "
            "`lakestats sample create --rows N`"
        )
    run_id = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    # the sample analyzed as a table of its own, only scaled: its root is this run's and
    # goes when the run ends (each run would otherwise leave a version of the sample behind)
    scratch = StatisticsStore(fs.join(store.sample_dir(stats_root), ANALYSIS_DIR, run_id), s3)
    try:
        return _from_sample(table, stats_root, options, spark, (sample, scratch, run_id))
    finally:
        scratch.delete_dir(scratch.uri)


def _from_sample(
    table: TableFormat,
    stats_root: StatisticsStore,
    options: AnalyzeOptions,
    spark: SparkSession,
    run: tuple[store.SampleManifest, StatisticsStore, str],
) -> AnalyzeResult:
    """``analyze_from_sample`` of ``run``: the sample, the root of its own analysis, the
    run id."""
    sample, scratch, run_id = run
    s3 = stats_root.s3
    sampled = SampleTableFormat(stats_root, sample)
    clock = Clock()
    by_path = {p.path: p for p in sample.partitions}
    schema = sampled.schema()
    names = [leaf.name for leaf in leaves_of(schema)]
    bounds, table_bounds = _metadata_bounds(table, sample, schema, names, s3)
    clock.lap("from sample: bounds from the table's footers")
    hook = SampleHook(
        stats_root, run_id,
        {
            p.path: Scaling(p.population, p.sample_rows, {}, bounds=bounds.get(p.path, {}))
            for p in sample.partitions
        },
        tasks=max(MIN_TASKS, math.ceil(sum(p.file_size for p in sample.partitions) / TASK_BYTES)),
    )
    # every sample partition is read once, by one task (the hook needs all of its rows);
    # nothing is reused: the table level's profiles need every partition's values
    whole = dataclasses.replace(options, max_slice_bytes=ONE_TASK_BYTES)
    # only scaled: no partition index, parts or group cache for the sample's own version
    result = analyze(sampled, scratch, whole, spark, incremental=False, hook=hook, kept=False)
    base = manifest.load_version(scratch, result.version)
    clock.lap("from sample: the sample analyzed (its partitions scaled by the tasks)")
    partitions, written = [], result.bytes_written
    for entry in base.partitions:
        part = by_path[entry.path]
        partitions.append(
            manifest.PartitionEntry(
                path=entry.path,
                name=entry.name,
                values=entry.values,
                row_count=part.population,
                size_bytes=0,
                files={  # written by the tasks
                    **layout.partition_files(entry.path, run_id),
                    **({"groups": layout.groups_file(entry.path, run_id)}
                       if "groups" in entry.files else {}),
                },
                fingerprint=part.fingerprint,
                run_id=run_id,
            )
        )
    table_files = layout.table_files(run_id)
    if base.table_files:
        rates = [by_path[e.path].population / by_path[e.path].sample_rows for e in base.partitions]
        scaling = Scaling(sample.population, sample.sample_rows, hook.table_profiles,
                          bounds=table_bounds, partition_rates=rates)
        written += scale_files(
            read_files(scratch, base.table_files), stats_root, table_files, scaling,
        )
    if base.table_files and any("groups" in e.files for e in partitions):
        table_files, group_bytes = reduce_groups(  # the scaled partitions' groups, summed
            stats_root, partitions, run_id, options.max_frequencies, table_files,
            declared=[",".join(g) for g in options.declared_groups],
        )
        written += group_bytes
    clock.lap("from sample: table level scaled")
    relative = [r for e in partitions for r in e.files.values()] + list(table_files.values())
    sizes = verify.sizes_of(stats_root, relative)
    for e in partitions:
        e.file_sizes = {k: sizes[r] for k, r in e.files.items() if r in sizes}
    version = manifest.Version(
        version=0,
        created_at=store.now(),
        table=manifest.TableRef(table.format_name, table.identifier, table.location),
        snapshot_id=sample.snapshot_id,
        schema_id=table.schema_id(sample.snapshot_id) if sample.snapshot_id is not None else None,
        options={**base.options, "from_sample": True},
        columns=_table_columns(table, sample.snapshot_id, base.columns),
        partitions=partitions,
        run_id=run_id,
        partitions_computed=result.partitions_computed,
        partitions_reused=result.partitions_reused,
        table_files=table_files,
        merged_record_count=sample.population,
        snapshot_timestamp_ms=sample.snapshot_timestamp_ms,
        kind=VersionKind.SAMPLED,
        extra={
            "sample": _sample_record(sample),
            "file_sizes": {r: sizes[r] for r in table_files.values() if r in sizes},
        },
    )
    number = publish_version(stats_root, version)
    clock.lap(f"from sample: version {number} published")
    return AnalyzeResult(
        number, sample.snapshot_id, result.partitions_computed, result.partitions_reused,
        sample.population, written, stats_root.uri,
    )


def _table_columns(
    table: TableFormat, snapshot_id: int | None, analyzed: list[dict[str, object]]
) -> list[dict[str, object]]:
    """The analyzed columns as the table records them (its types and field ids), not as the
    sample's Parquet copy does: staleness compares a version's columns with the table's."""
    names = {c["name"] for c in analyzed}
    leaves = [leaf for leaf in leaves_of(table.schema(snapshot_id)) if leaf.name in names]
    return column_records(table, snapshot_id, leaves)


def _metadata_bounds(
    table: TableFormat,
    sample: store.SampleManifest,
    schema: pa.Schema,
    names: list[str],
    s3: fs.S3Options | None,
) -> tuple[dict[str, dict], dict[str, dict]]:
    """Footer null counts and bounds per sample partition whose files are still those the
    sample was drawn from, and their roll-up to the table when every partition has them."""
    top = {n: schema.field(n).type for n in names if n in schema.names}
    top = {n: t for n, t in top.items() if not pa.types.is_nested(t)}
    if not top:
        return {}, {}
    try:
        plans = table.plan(sample.snapshot_id)
    except Exception:  # noqa: BLE001 - the snapshot may be gone: the sample's values stand
        return {}, {}
    fingerprints = {p.path: p.fingerprint for p in sample.partitions}
    out: dict[str, dict] = {}
    for plan in plans:
        path = layout.partition_dir_of(list(plan.key), plan.values)
        if fingerprints.get(path) == plan.fingerprint() and usable(table.format_name, plan):
            out[path] = footer_bounds(plan, top, s3)
    table_level: dict[str, dict] = {}
    if set(out) == set(fingerprints):
        for name in top:
            parts = [out[p].get(name) for p in out]
            if parts and all(parts):
                lows = [p["min"] for p in parts if p["min"] is not None]
                highs = [p["max"] for p in parts if p["max"] is not None]
                table_level[name] = {
                    "null_count": sum(p["null_count"] for p in parts),
                    "min": min(lows) if lows else None,
                    "max": max(highs) if highs else None,
                    "exact": all(p["exact"] for p in parts),
                }
    return out, table_level


def _sample_record(sample: store.SampleManifest) -> dict[str, object]:
    return {
        "snapshot_id": sample.snapshot_id,
        "seed": sample.seed,
        "rows": sample.rows,
        "fraction": sample.fraction,
        "rate": sample.rate,
        "sample_rows": sample.sample_rows,
        "population": sample.population,
        "sample_run_id": sample.run_id,
        "created_at": sample.created_at,
        "refreshed_at": sample.refreshed_at,
    }
