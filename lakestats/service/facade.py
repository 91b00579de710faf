"""Answers the routes and pages share, each built from ``LakestatsTable`` calls only.

Table-level statistics are memoized per table version, snapshot and column list
(``TableSet.memo``), because ``table_statistics`` also plans the table to say how stale
the statistics are.
"""

from __future__ import annotations

import lakestats.api as ls
from lakestats.errors import LakestatsError
from lakestats.service.jsonio import column_row
from lakestats.service.tables import TableSet


def table_summary(tables: TableSet, name: str, strict: bool = False) -> dict[str, object]:
    """Name, version, snapshot, rows, partitions; a table without statistics says so in
    ``error`` (``strict``: raises instead)."""
    try:
        handle = tables.get(name)
        version = handle.reader().version
    except LakestatsError as exc:
        if strict:
            raise
        return {"name": name, "version": None, "error": tables.redact(exc.message)}
    return {
        "name": name,
        "version": version.version,
        "snapshot_id": version.snapshot_id,
        "row_count": version.merged_record_count or version.row_count,
        "partitions": len(version.partitions),
        "table_level": bool(version.table_files),
        "created_at": version.created_at,
    }


def column_names(handle: ls.LakestatsTable) -> list[dict[str, str]]:
    return [{"name": c["name"], "type": c["type"]} for c in handle.reader().columns]


def table_level(
    tables: TableSet, name: str, snapshot_id: int | None, columns: list[str] | None
) -> dict[str, object]:
    """``table_statistics`` as JSON (``show --json``) for ``columns`` (all when None),
    memoized per column list: reading every column of a wide table costs seconds, a
    page's worth milliseconds."""
    handle = tables.get(name)
    key = ("table_level", snapshot_id, tuple(columns) if columns is not None else None)
    return tables.memo(name, key, lambda: _table_level(handle, snapshot_id, columns))


def staleness(tables: TableSet, name: str, snapshot_id: int | None) -> dict[str, object]:
    """The table-level answer's snapshot, version and ``stale`` fields, without columns."""
    first = tables.get(name).reader().columns[:1]
    data = table_level(tables, name, snapshot_id, [c["name"] for c in first])
    return {k: v for k, v in data.items() if k != "columns"}


def _table_level(
    handle: ls.LakestatsTable, snapshot_id: int | None, columns: list[str] | None
) -> dict[str, object]:
    data = handle.table_statistics(snapshot_id, columns)
    data["columns"] = [column_row(r) for r in data["columns"]]
    return data


def frequencies(
    handle: ls.LakestatsTable, column: str, partition: str | None, top: int | None
) -> dict[str, object]:
    """Top-``top`` values with their counts, and whether the list is complete."""
    reader = handle.reader()
    entry = reader.partition(partition or None)
    [row] = handle.statistics(entry.name or None, [column])
    pairs = handle.frequencies(column, entry.name or None, top)
    return {
        "column": column,
        "partition": entry.name or None,
        "version": reader.version.version,
        "row_count": row["row_count"],
        "distinct_count": row["distinct_count"],
        "all_distinct": row.get("all_distinct"),
        "truncated": bool(row.get("frequencies_truncated")),
        "omitted": row.get("frequencies_omitted"),
        # the list is every value occurring more than once; the omitted ones occur once each
        "duplicates_only": bool(row.get("duplicates_only")),
        "frequencies": [{"value": v, "frequency": f} for v, f in pairs],
    }


def histogram(
    handle: ls.LakestatsTable, column: str, partition: str | None, start: int, stop: int | None
) -> dict[str, object]:
    """Bins ``[start, stop)`` and the histogram's total bin count."""
    reader = handle.reader()
    entry = reader.partition(partition or None)
    bins = handle.histogram(column, entry.name or None, start, stop)
    [row] = handle.statistics(entry.name or None, [column])
    total = row.get("histogram_bins") or 0
    return {
        "column": column,
        "partition": entry.name or None,
        "version": reader.version.version,
        "histogram_bins": total,
        "start": min(start, total),
        "stop": min(start + len(bins), total) if bins else min(start, total),
        "bins": bins,
    }


def derived_entry(
    handle: ls.LakestatsTable, where: str, snapshot_id: int | None
) -> dict[str, object] | None:
    """The statistics of the rows ``where`` keeps, as ``lakestats analyze --where`` stored
    them (every analyzed column, table level), or None when that predicate was not analyzed.

    A predicate that does not parse is an error (400), not a missing entry (404).
    """
    found = handle.derived_reader(where, snapshot_id)
    if found is None:
        return None
    names = [column["name"] for column in found.columns]
    data = handle.stats(names, where=where, by_partition=False, snapshot_id=snapshot_id)
    return {**data, "version": data["table"]["version"]}
