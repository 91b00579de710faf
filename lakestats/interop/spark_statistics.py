"""lakestats' statistics of one snapshot, written where lakestats' Spark component
(``jvm/``, ``io.lakestats.spark.LakestatsExtensions``) finds them when Spark scans that
snapshot of an Iceberg, Delta, Hudi or Paimon table (docs/spark.md).

    <stats root>/spark/v<version>_<snapshot id>.json

One file per statistics version: the snapshot it describes (an Iceberg snapshot id, a Delta
table version), the row count, the data files' bytes and, per column, Spark's catalog
column-statistics property map (``spark_catalog.ColumnStatistics.spark_map``: what
``ANALYZE TABLE … FOR ALL COLUMNS`` stores and ``CatalogColumnStat.fromMap`` parses) with the
equi-height histogram's bins beside it (the JVM side builds Spark's ``Histogram`` from them;
no LZ4 here). The JVM side lists ``spark/`` and reads the newest version whose name carries
exactly the snapshot the scan reads: statistics of another snapshot are never reported.

The analyze job writes the file right after it publishes the version, whichever face asked
for the analyze. The file is written whole or not at all; a failure is a warning, never a
failed analyze (the version stands and Spark keeps its defaults, or an earlier version's
file of the same snapshot). ``expire`` removes the files of removed versions.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass

from lakestats.formats.base import TableFormat
from lakestats.interop.spark_catalog import catalog_columns
from lakestats.store import layout
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import Version
from lakestats.store.reader import StatisticsReader

FORMAT = "lakestats-spark-statistics"
SNAPSHOT_FORMATS = {"iceberg", "delta", "hudi", "paimon"}
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _StoredLookups:
    """A version's table-level frequencies and histograms, read from the store."""

    reader: StatisticsReader

    def frequencies(self, column: str) -> list[tuple[object, int]]:
        return self.reader.frequencies(None, column)

    def histogram(self, column: str) -> list[dict[str, object]]:
        return self.reader.histogram(None, column)

    def configured_bins(self) -> int:
        options = self.reader.version.analyze_options
        return int(options.bins or 0) if options is not None else 0


def build(table: TableFormat, store: StatisticsStore, version: Version) -> dict[str, object]:
    """The file's content for ``version`` (one with table-level statistics)."""
    reader = StatisticsReader(store, version.version)
    rows = reader.column_statistics(None, [c["name"] for c in version.columns])
    found, skipped = catalog_columns(rows, None, _StoredLookups(reader))
    columns = {}
    for column in found:
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
        "table_format": table.format_name,
        "location": table.location,
        "version": version.version,
        "snapshot_id": version.snapshot_id,
        "row_count": version.merged_record_count,
        "size_in_bytes": int(version.merged_record_size or 0),
        "columns": columns,
        "skipped": skipped,
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
    if math.isfinite(value):
        return value
    return "Infinity" if value > 0 else "-Infinity" if value < 0 else "NaN"


def path_of(store: StatisticsStore, version: Version) -> str | None:
    """Where ``version``'s file goes (None: it gets none: a table without snapshots, such as
    a Parquet directory, which ``spark-register`` covers, or no table-level statistics)."""
    if version.snapshot_id is None or not version.table_files:
        return None
    return store.join(*layout.spark_file(version.version, version.snapshot_id).split("/"))


def publish(table: TableFormat, store: StatisticsStore, version: Version) -> str | None:
    """Write ``version``'s file; its path, or None when the table's format gets none."""
    path = path_of(store, version) if table.format_name in SNAPSHOT_FORMATS else None
    if path is None:
        return None
    store.write_bytes_atomic(path, json.dumps(build(table, store, version)).encode())
    return path


def publish_quietly(table: TableFormat, store: StatisticsStore, version: Version) -> str | None:
    """``publish`` after the version is published: a failure is logged, never raised (the
    analyze itself succeeded; Spark then keeps its own defaults for that snapshot)."""
    try:
        return publish(table, store, version)
    except Exception as exc:  # noqa: BLE001 - advice for another engine, never fatal
        log.warning("statistics for Spark not written: %s", exc)
        return None
