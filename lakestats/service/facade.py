"""Answers the routes and pages share, each built from ``LakestatsTable`` calls only.

Table-level statistics are memoized per table version, snapshot and column list
(``TableSet.memo``), because ``table_statistics`` also plans the table to say how stale
the statistics are.
"""

from __future__ import annotations

import lakestats.api as ls
from lakestats.answers import Staleness, TableProfile, TableStatistics
from lakestats.errors import LakestatsError
from lakestats.service.tables import TableSet


def table_summary(tables: TableSet, name: str, strict: bool = False) -> dict[str, object]:
    """Name, version, snapshot, rows, partitions; a table without statistics says so in
    ``error`` (``strict``: raises instead)."""
    try:
        summary = tables.get(name).summary()
    except LakestatsError as exc:
        if strict:
            raise
        return {"name": name, "version": None, "error": tables.redact(exc.message)}
    return {"name": name, **summary.to_json()}


def column_names(handle: ls.LakestatsTable) -> list[dict[str, object]]:
    return [c.to_json() for c in handle.summary().columns]


def table_level(
    tables: TableSet, name: str, snapshot_id: int | None, columns: list[str] | None
) -> TableStatistics:
    """``table_statistics`` for ``columns`` (all when None), memoized per column list:
    reading every column of a wide table costs seconds, a page's worth milliseconds."""
    handle = tables.get(name)
    key = ("table_level", snapshot_id, tuple(columns) if columns is not None else None)
    return tables.memo(name, key, lambda: handle.table_statistics(snapshot_id, columns))


def staleness(tables: TableSet, name: str, snapshot_id: int | None) -> Staleness:
    """How stale the table-level statistics are for ``snapshot_id``, without columns."""
    first = tables.get(name).summary().columns[:1]
    return table_level(tables, name, snapshot_id, [c.name for c in first]).staleness


def profile(tables: TableSet, name: str, snapshot_id: int | None) -> TableProfile:
    """``profile``, memoized per version and snapshot: the API route and the table page's
    overview share it (it reads every column's statistics once)."""
    handle = tables.get(name)
    return tables.memo(name, ("profile", snapshot_id), lambda: handle.profile(snapshot_id))


def derived_entry(
    handle: ls.LakestatsTable, where: str, snapshot_id: int | None
) -> dict[str, object] | None:
    """The statistics of the rows ``where`` keeps, as ``lakestats analyze --where`` stored
    them (every analyzed column, table level), or None when that predicate was not analyzed.

    A predicate that does not parse is an error (400), not a missing entry (404).
    """
    names = handle.derived_columns(where, snapshot_id)
    if names is None:
        return None
    found = handle.stats(names, where=where, by_partition=False, snapshot_id=snapshot_id)
    return {**found.to_json(), "version": found.version}
