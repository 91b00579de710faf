"""A statistics version as Paimon's statistics JSON (the PIP's ``Stats`` file), on demand:
what Paimon's planner would read for the snapshot."""

from __future__ import annotations

from lakestats.stats.keys import to_json
from lakestats.store import manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader


def paimon_statistics(stats_root: StatisticsStore, version: int | None = None) -> dict[str, object]:
    """``snapshotId``, ``schemaId``, ``mergedRecordCount``, ``mergedRecordSize`` and
    ``colStats`` (``distinctCount``, ``min``, ``max``, ``nullCount``, ``avgLen``, ``maxLen``;
    min and max serialized as strings, as Paimon's ``serializedMin``/``serializedMax``)."""
    v = manifest.load_version(stats_root, version)
    out: dict[str, object] = {
        "snapshotId": v.snapshot_id,
        "schemaId": v.schema_id,
        "mergedRecordCount": v.merged_record_count,
        "mergedRecordSize": v.merged_record_size,
        "colStats": {},
    }
    if not v.table_files:
        return out
    reader = StatisticsReader(stats_root, v.version)
    for row in reader.column_statistics(None):
        stats: dict[str, object] = {
            "distinctCount": row.get("distinct_count"),
            "min": None if row.get("min") is None else str(to_json(row["min"])),
            "max": None if row.get("max") is None else str(to_json(row["max"])),
            "nullCount": row.get("null_count"),
        }
        if row.get("avg_length") is not None:
            stats["avgLen"] = round(row["avg_length"])
            stats["maxLen"] = row.get("max_length")
        out["colStats"][row["column"]] = stats
    return out
