"""``analyze --from-sample``: statistics estimated from the stored sample.

1. The normal analyze job runs over the sample (``formats.sample.SampleTableFormat``) into
   ``<stats root>/sample/analysis`` (its own versions, so it is incremental across
   refreshes: unchanged sample partitions are reused).
2. The driver reads those small files and writes scaled copies into the statistics root
   (``compute/sample_scale.py``): row counts from the table's metadata (the sample's
   recorded populations), everything else estimated from the sample with intervals;
   distinct counts by ``select_estimator`` on each column's sample profile (the driver
   reads the sample once for those profiles).
3. It publishes a version of kind ``sampled`` for the sample's snapshot, with how the
   sample was drawn in ``extra["sample"]``.

A partition whose sample has no rows (a partition too small for the sample's rate) has no
partition statistics in a sampled version; its rows count in the table's row count.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from lakestats import fs
from lakestats.compute.analyze import AnalyzeResult, analyze, publish_version
from lakestats.compute.sample_bounds import footer_bounds, usable
from lakestats.compute.sample_scale import (
    PARTITION_REPLICATES,
    SAMPLED_FIELDS,
    apply_bounds,
    frequency_interval,
    scale_row,
)
from lakestats.errors import InvalidArgumentError
from lakestats.formats.base import Slice, TableFormat
from lakestats.formats.sample import SampleTableFormat
from lakestats.options import AnalyzeOptions
from lakestats.stats.leaves import leaf_array, leaves_of
from lakestats.stats.ndv import frequency_of_frequencies
from lakestats.store import layout, manifest, schemas, verify
from lakestats.store import sample as store
from lakestats.store.kinds import VersionKind

ANALYSIS_DIR = "analysis"


def analyze_from_sample(
    table: TableFormat,
    stats_root: str,
    options: AnalyzeOptions,
    spark: SparkSession,
    s3: fs.S3Options | None = None,
) -> AnalyzeResult:
    sample = store.load(stats_root, table.identifier, s3)
    sampled = SampleTableFormat(stats_root, sample, s3)
    if sample.sample_rows == 0:
        raise InvalidArgumentError(
            f"the sample of {table.identifier} holds no rows; create a larger one with "
            "`lakestats sample create --rows N`"
        )
    scratch = fs.join(store.sample_dir(stats_root), ANALYSIS_DIR)
    result = analyze(sampled, scratch, options, spark, s3=s3)
    base = manifest.load_version(scratch, result.version, s3)
    run_id = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    by_path = {p.path: p for p in sample.partitions}
    names = [c["name"] for c in base.columns]
    profiles, table_profile = _profiles(sampled, names, s3)
    bounds, table_bounds = _metadata_bounds(table, sample, sampled.schema(), names, s3)
    partitions, written = [], 0
    for entry in base.partitions:
        part = by_path[entry.path]
        files = layout.partition_files(entry.path, run_id)
        scaling = Scaling(part.population, part.sample_rows, profiles.get(entry.path, {}),
                          bounds=bounds.get(entry.path, {}))
        written += _scale_files(scratch, stats_root, entry.files, files, scaling, s3)
        partitions.append(
            manifest.PartitionEntry(
                path=entry.path,
                name=entry.name,
                values=entry.values,
                row_count=part.population,
                size_bytes=0,
                files=files,
                fingerprint=part.fingerprint,
                run_id=run_id,
            )
        )
    table_files = layout.table_files(run_id)
    if base.table_files:
        rates = [by_path[e.path].population / by_path[e.path].sample_rows for e in base.partitions]
        scaling = Scaling(sample.population, sample.sample_rows, table_profile,
                          bounds=table_bounds, partition_rates=rates)
        written += _scale_files(
            scratch, stats_root, base.table_files, table_files, scaling, s3,
        )
    relative = [r for e in partitions for r in e.files.values()] + list(table_files.values())
    sizes = verify.sizes_of(stats_root, relative, s3)
    for e in partitions:
        e.file_sizes = {k: sizes[r] for k, r in e.files.items() if r in sizes}
    version = manifest.Version(
        version=0,
        created_at=store.now(),
        table=manifest.TableRef(table.format_name, table.identifier, table.location),
        snapshot_id=sample.snapshot_id,
        schema_id=table.schema_id(sample.snapshot_id) if sample.snapshot_id is not None else None,
        options={**base.options, "from_sample": True},
        columns=base.columns,
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
    number = publish_version(stats_root, version, s3)
    return AnalyzeResult(
        number, sample.snapshot_id, result.partitions_computed, result.partitions_reused,
        sample.population, written, stats_root,
    )


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


def _profiles(
    sampled: SampleTableFormat, names: list[str], s3: fs.S3Options | None
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """Each column's frequency of frequencies per sample partition and over the whole
    sample (the driver reads the sample once)."""
    leaves = [leaf for leaf in leaves_of(sampled.schema()) if leaf.name in set(names)]
    reader = sampled.reader()
    per_partition: dict[str, dict[str, np.ndarray]] = {}
    arrays: dict[str, list] = {leaf.name: [] for leaf in leaves}
    for plan in sampled.plan():
        rows = reader.read(Slice(plan, plan.data_files), None)
        path = layout.partition_dir_of(list(plan.key), plan.values)
        per_partition[path] = {}
        for leaf in leaves:
            values = leaf_array(rows, leaf)
            profile = _profile(values)
            if profile is not None:
                per_partition[path][leaf.name] = profile
                arrays[leaf.name].append(values)
    whole = {}
    for name, parts in arrays.items():
        if parts:
            chunks = [c for p in parts for c in _chunks(p)]
            profile = _profile(pa.chunked_array(chunks))
            if profile is not None:
                whole[name] = profile
    return per_partition, whole


def _chunks(values: pa.ChunkedArray | pa.Array) -> list[pa.Array]:
    return values.chunks if isinstance(values, pa.ChunkedArray) else [values]


def _profile(values: pa.ChunkedArray) -> np.ndarray | None:
    try:
        return frequency_of_frequencies(values)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):
        return None  # a type Arrow cannot count (lists, maps): no distinct estimate


def _read(root: str, relative: str, s3: fs.S3Options | None) -> pa.Table:
    filesystem, path = fs.resolve(layout.absolute(root, relative), s3)
    with filesystem.open_input_file(path) as handle:
        return pq.read_table(handle)


def _write(
    table: pa.Table, root: str, relative: str, s3: fs.S3Options | None, **kw: object
) -> int:
    uri = layout.absolute(root, relative)
    try:
        with fs.open_output(uri, s3) as out:
            pq.write_table(table, out, compression="zstd", store_schema=False, **kw)
    except OSError as exc:
        raise fs.cannot_write(uri, exc) from exc
    return fs.file_info(uri, s3).size


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


def _scale_files(
    source_root: str,
    target_root: str,
    source: dict[str, str],
    target: dict[str, str],
    scaling: Scaling,
    s3: fs.S3Options | None,
) -> int:
    """Scaled copies of one partition's (or the table's) three files; bytes written."""
    N, n, profiles = scaling.population, scaling.sample_rows, scaling.profiles
    bounds, partition_rates = scaling.bounds, scaling.partition_rates
    # the table's distinct-count intervals get the rule's 200 bootstrap replicates,
    # each partition's PARTITION_REPLICATES (partitions x columns of them add up)
    replicates = None if partition_rates is not None else PARTITION_REPLICATES
    statistics = _read(source_root, source["statistics"], s3)
    rows = [
        apply_bounds(scale_row(row, N, n, profiles.get(row["column"]), replicates),
                     (bounds or {}).get(row["column"]))
        for row in statistics.to_pylist()
    ]
    schema = statistics.schema
    for extra in SAMPLED_FIELDS:
        schema = schema.append(extra)
    written = _write(
        pa.Table.from_pylist(rows, schema=schema), target_root, target["statistics"], s3,
        row_group_size=schemas.STATISTICS_ROW_GROUP, write_statistics=False,
    )
    frequencies = _scale_frequencies(_read(source_root, source["frequencies"], s3), N, n,
                                     partition_rates)
    written += _write(
        frequencies, target_root, target["frequencies"], s3,
        row_group_size=schemas.FREQUENCIES_ROW_GROUP, write_statistics=["column_index"],
        use_dictionary=["column"],
    )
    histograms = _read(source_root, source["histograms"], s3)
    for i, name in enumerate(histograms.column_names):
        if name != "bin":
            histograms = histograms.set_column(i, name, _scaled(histograms.column(i), N / n))
    written += _write(
        histograms, target_root, target["histograms"], s3, write_statistics=False,
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
        upper = np.array([frequency_interval(int(c), n, N)[2] for c in counts])
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
