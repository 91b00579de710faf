"""lakestats' statistics of one snapshot, written where lakestats' Spark component
(``jvm/``, ``io.lakestats.spark.LakestatsExtensions``) finds them when Spark scans that
snapshot of an Iceberg, Delta, Hudi or Paimon table (docs/spark.md).

    <stats root>/spark/v<version>_<snapshot id>.json

One file per statistics version: the snapshot it describes (an Iceberg snapshot id, a Delta
table version), the row count, the data files' bytes and, per column, Spark's catalog
column-statistics property map (``ColumnStatistics.spark_map``: what ``ANALYZE TABLE … FOR
ALL COLUMNS`` stores and ``CatalogColumnStat.fromMap`` parses) with the equi-height
histogram's bins beside it (the JVM side builds Spark's ``Histogram`` from them; no LZ4 here).
The JVM side lists ``spark/`` and reads the newest version whose name carries exactly the
snapshot the scan reads: statistics of another snapshot are never reported. The files are
written on demand (``publish``; ``lakestats analyze`` calls it for Iceberg, Delta, Hudi and
Paimon tables), not by the store's publish, so the statistics versions stay what they are
and a failure here never fails an analyze.
"""

from __future__ import annotations

import json
import logging

from lakestats import fs
from lakestats.spark import plan_statistics
from lakestats.store import layout

SIDECAR_DIR = layout.SPARK_DIR
FORMAT = "lakestats-spark-statistics"
SNAPSHOT_FORMATS = {"iceberg", "delta", "hudi", "paimon"}
log = logging.getLogger(__name__)


def sidecar_path(root: str, version: int, snapshot_id: int) -> str:
    return fs.join(root, *layout.spark_file(version, snapshot_id).split("/"))


def build(table, snapshot_id: int | None = None) -> dict[str, object]:  # noqa: ANN001
    """The file's content for the newest statistics version of ``snapshot_id`` (default: the
    latest version, for the snapshot it describes)."""
    from lakestats.versions import version_for_snapshot

    version = version_for_snapshot(table.store, table.format, snapshot_id)
    record = plan_statistics(table, "lakestats", snapshot_id=version.snapshot_id)
    columns = {}
    for column in record.columns:
        entry: dict[str, object] = {"type": column.spark_type, "stats": column.spark_map()}
        if column.histogram_bins and not uniform(column.histogram_bins):
            entry["histogram"] = {
                "height": column.histogram_height,
                "bins": [[_number(lo), _number(hi), ndv] for lo, hi, ndv in column.histogram_bins],
                "source": column.histogram_source,
            }
        columns[column.name] = entry
    return {
        "format": FORMAT,
        "format_version": 1,
        "table_format": table.format.format_name,
        "location": table.format.location,
        "version": record.version,
        "snapshot_id": version.snapshot_id,
        "row_count": record.row_count,
        "size_in_bytes": record.size_in_bytes,
        "columns": columns,
        "skipped": record.skipped,
    }


UNIFORM_TOLERANCE = 0.25
"""A histogram whose every bin's width is within this share of the mean width says no more
than min and max do."""
UNIFORM_DEVIATION = 0.05
"""Nor does one whose every edge lies within this share of the range from where evenly
spread values put it (a few evenly common whole numbers: points and steps)."""


def uniform(bins: list[tuple[float, float, int]]) -> bool:
    """Whether equi-height ``bins`` describe values spread evenly between min and max. Such
    a histogram adds nothing to a filter's estimate (Spark interpolates min/max the same
    way) and makes joins worse: Spark estimates an equi-join from both keys' histograms and
    does not shrink a key's histogram after a filter on another column (TPC-H lineitem's
    self-join on l_orderkey after a filter on l_quantity: q-error 10.1 with the histogram,
    1.22 without; bench/interop.py). Ids, keys and sequence numbers are such columns."""
    import math

    widths = [hi - lo for lo, hi, _ in bins]
    if len(widths) < 4 or not all(math.isfinite(w) for w in widths):
        return False
    mean = sum(widths) / len(widths)
    if mean > 0 and all(abs(w / mean - 1) <= UNIFORM_TOLERANCE for w in widths[1:-1]):
        return True
    # a few whole numbers as evenly common (a nation key: 25 values): the bins are points
    # and steps, each edge within a step of where an even spread puts it
    low, high = bins[0][0], bins[-1][1]
    span = high - low
    steps = len(bins)
    return span > 0 and all(
        abs(hi - (low + span * (i + 1) / steps)) <= UNIFORM_DEVIATION * span
        for i, (_, hi, _) in enumerate(bins)
    )


def _number(value: float) -> float | str:
    import math

    if math.isfinite(value):
        return value
    return "Infinity" if value > 0 else "-Infinity" if value < 0 else "NaN"


def publish(table, snapshot_id: int | None = None) -> str | None:  # noqa: ANN001
    """Write the file for ``snapshot_id``'s newest version; its path, or None for a table
    without snapshots (a Parquet directory: ``spark-register`` covers those)."""
    if table.format.format_name not in SNAPSHOT_FORMATS:
        return None
    content = build(table, snapshot_id)
    if content["snapshot_id"] is None:
        return None
    path = sidecar_path(table.stats_root, int(content["version"]), int(content["snapshot_id"]))
    fs.write_bytes_atomic(path, json.dumps(content).encode(), table.s3)
    return path


def publish_quietly(table, snapshot_id: int | None) -> str | None:  # noqa: ANN001
    """``publish`` after an analyze: a failure is logged, never raised (the analyze itself
    succeeded; Spark then keeps its own defaults for that snapshot)."""
    try:
        return publish(table, snapshot_id)
    except Exception as exc:  # noqa: BLE001 - advice for another engine, never fatal
        log.warning("statistics for Spark not written: %s", exc)
        return None
