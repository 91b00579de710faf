"""An analyze that would redo nothing, answered without Spark.

When every partition of the snapshot to analyze has the files (fingerprints) the latest
version describes, its statistics files are intact, and that version was made with the
same columns and the options that shape the files (``AnalyzeOptions.partition_stats_key``,
the table level and the exact step when asked for), there is nothing to compute:

* the latest version already describes that snapshot: nothing is published, and the
  result says so (``AnalyzeResult.unchanged``): five re-analyses no longer leave five
  versions of one snapshot;
* it describes an earlier snapshot (a commit that changed no data file: a metadata or
  property change, an empty commit): a version for the new snapshot is published that
  shares the earlier one's files (``extra["inherited_from"]``), with no Spark job; an
  Iceberg table gets the new snapshot's Puffin file too, and every snapshot format the
  Spark component's file (``publish``).

Spark does not start either way, so this costs a plan of the table and one manifest read.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from lakestats.answers import AnalyzeResult
from lakestats.compute.analyze.columns import column_records, select_columns
from lakestats.compute.analyze.publish import publish, publish_missing
from lakestats.compute.analyze.reuse import reusable_entries, theta_sketches, with_puffin
from lakestats.errors import CorruptStatisticsError, StatisticsNotFoundError
from lakestats.formats.base import TableFormat
from lakestats.options import AnalyzeOptions
from lakestats.stats.registry import registered_statistics
from lakestats.store import layout, manifest, verify
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import VersionKind


def without_spark(
    table: TableFormat, stats_root: StatisticsStore, options: AnalyzeOptions
) -> AnalyzeResult | None:
    """The result of an analyze that has nothing to compute, or None when it has."""
    if options.where is not None or options.from_sample or registered_statistics():
        return None
    try:
        previous = manifest.load_version(stats_root, None)
    except (StatisticsNotFoundError, CorruptStatisticsError):
        return None
    if previous.kind != VersionKind.FULL or previous.skipped_versions:
        return None
    snapshot = options.snapshot_id if options.snapshot_id is not None else (
        table.current_snapshot_id()
    )
    leaves, _ = select_columns(table.schema(snapshot), options.columns)
    columns = column_records(table, snapshot, leaves)
    thetas = theta_sketches(table, options, None)
    reusable, damaged, _, _ = reusable_entries(stats_root, columns, options, thetas)
    plans = table.plan(snapshot)
    keys = {
        (layout.partition_dir_of(list(plan.key), plan.values), plan.fingerprint())
        for plan in plans
    }
    if damaged or len(keys) != len(previous.partitions) or not keys <= set(reusable):
        return None
    if not _table_level_ready(previous, options, stats_root):
        return None
    if previous.snapshot_id == snapshot:
        if options.table_level:
            publish_missing(table, stats_root, previous)
        return AnalyzeResult(
            previous.version, snapshot, 0, len(plans), previous.row_count, 0, stats_root.uri,
            unchanged=True,
        )
    timestamps = {s.snapshot_id: s.timestamp_ms for s in table.snapshots()}
    inherited = dataclasses.replace(
        previous,
        version=0,
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        snapshot_id=snapshot,
        schema_id=table.schema_id(snapshot),
        columns=columns,
        partitions_computed=0,
        partitions_reused=len(plans),
        snapshot_timestamp_ms=timestamps.get(snapshot) if snapshot is not None else None,
        extra={
            **{k: v for k, v in previous.extra.items() if k != "puffin"},
            "inherited_from": previous.version,
        },
        skipped_versions=[],
    )
    # the new snapshot's own engine files (engines read statistics of the exact snapshot)
    puffin = with_puffin(table, options, None) and bool(inherited.partitions)
    number = publish(table, stats_root, inherited, puffin_file=puffin,
                     engine_files=options.table_level)
    return AnalyzeResult(number, snapshot, 0, len(plans), previous.row_count, 0, stats_root.uri)


def _table_level_ready(
    previous: manifest.Version,
    options: AnalyzeOptions,
    stats_root: StatisticsStore,
) -> bool:
    """The table level (and its exact ranks) this analyze asks for exist and are intact."""
    if not options.table_level:
        return True
    files = previous.table_files or {}
    if not files or (options.exact and "ranks" not in files and len(previous.partitions) > 1):
        return False
    recorded = dict(previous.extra.get("file_sizes", {}))
    if not recorded:
        return False  # a version from before sizes were recorded: recompute to be sure
    sizes = verify.stored_sizes(stats_root)
    return verify.intact(files, recorded, sizes, parquet=False)
