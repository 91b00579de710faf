"""Statistics versions against the table's snapshots: which version describes a snapshot,
how stale it is, and the snapshot a time names.

A new snapshot inherits the latest statistics, marked stale (snapshots behind, partitions
whose files changed, columns whose identity changed: name, type and, where the format has
them, field id). Kept apart from the facade because the CLI, the service and the Spark
integration all ask these questions of a table before they look anything up.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import pyarrow as pa

from lakestats.errors import InvalidArgumentError, SnapshotNotFoundError, StatisticsNotFoundError
from lakestats.formats import TableFormat
from lakestats.store import layout, manifest
from lakestats.store.handle import StatisticsStore

if TYPE_CHECKING:
    from lakestats.answers import Staleness


def snapshot_as_of(table: TableFormat, timestamp_ms: int) -> int:
    """The snapshot that was current at ``timestamp_ms``: the last one to become current at
    or before it (``TableFormat.snapshot_log``; for Iceberg its snapshot log, so rolled-back
    and branch snapshots are never picked)."""
    log = table.snapshot_log()  # oldest first; a later entry wins a tie
    earlier = [snapshot for at, snapshot in log if at <= timestamp_ms]
    if not earlier:
        first = min((at for at, _ in log), default=None)
        raise InvalidArgumentError(
            f"{table.identifier} has no snapshot at or before {_iso(timestamp_ms)}"
            + (f"; its first snapshot is from {_iso(first)}" if first is not None else "")
        )
    return earlier[-1]


def _iso(timestamp_ms: int) -> str:
    import datetime as dt

    try:
        moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=timestamp_ms)
    except OverflowError:
        return f"{timestamp_ms} ms after 1970-01-01"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_snapshot(table: TableFormat, snapshot_id: int | None) -> None:
    """Refuse a ``--snapshot`` the table does not have (a Parquet directory has none)."""
    if snapshot_id is None:
        return
    ids = [s.snapshot_id for s in table.snapshots()]
    if not ids:
        raise InvalidArgumentError(
            f"{table.identifier} is a {table.format_name} table without snapshots: "
            "drop --snapshot / --as-of"
        )
    if snapshot_id not in ids:
        raise SnapshotNotFoundError(
            f"snapshot {snapshot_id} is not a snapshot of {table.identifier}; its newest "
            f"is {table.current_snapshot_id()}"
        )


def parse_as_of(text: str) -> int:
    """``--as-of``: an ISO-8601 time (UTC unless it has an offset) or epoch milliseconds,
    as epoch milliseconds; anything else is an ``InvalidArgumentError``."""
    import datetime as dt

    lowest = dt.datetime(1, 1, 2, tzinfo=dt.UTC)  # a day's margin for any offset
    highest = dt.datetime(9999, 12, 30, tzinfo=dt.UTC)
    out_of_range = InvalidArgumentError(
        f"{text!r} is out of range: give a time between {lowest.date().isoformat()} and "
        f"{highest:%Y-%m-%d} (UTC), or epoch milliseconds in that range"
    )
    if text.isdigit():
        value = int(text)
        if value > int(highest.timestamp() * 1000):
            raise out_of_range
        return value
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgumentError(
            f"expected an ISO-8601 time such as 2024-05-01T12:00:00Z, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        if not lowest <= moment <= highest:
            raise out_of_range
    except OverflowError:
        raise out_of_range from None
    return int(moment.timestamp() * 1000)


def staleness(
    table: TableFormat, version: manifest.Version, snapshot_id: int | None
) -> Staleness:
    """How far ``version`` lags behind ``snapshot_id`` (default: the table's current one).

    Counts the snapshots committed after the version's snapshot up to the target, and the
    partitions whose files differ; lists the columns whose type changed or that are gone
    (their statistics are not inherited; unchanged columns keep theirs). A column's
    identity is its name, type and, where the format has them, its field id: a column
    dropped and added again under the same name does not inherit the old statistics.
    """
    target = snapshot_id if snapshot_id is not None else table.current_snapshot_id()
    snapshots = {s.snapshot_id: s for s in table.snapshots()}
    described = version.extra.get("columns_snapshot_id", version.snapshot_id)
    behind = 0
    if target is not None and described is not None and target != described:
        start = snapshots.get(described)
        end = snapshots.get(target)
        if start is not None and end is not None:
            behind = sum(
                1
                for s in snapshots.values()
                if start.timestamp_ms < s.timestamp_ms <= end.timestamp_ms
            )
    plans = table.plan(target)
    known = {(e.path, e.fingerprint) for e in version.partitions}
    paths = {layout.partition_dir_of(list(p.key), p.values): p.fingerprint() for p in plans}
    changed = sum(1 for path, fp in paths.items() if (path, fp) not in known)
    changed += sum(1 for e in version.partitions if e.path not in paths)
    ids = table.field_ids(target)
    current = {
        name: (kind, ids.get(name)) for name, kind in _leaf_types_of(table.schema(target))
    }
    dropped = [
        c["name"]
        for c in version.columns
        if current.get(c["name"]) != (c["type"], c.get("field_id"))
    ]
    from lakestats.answers import Staleness  # on first use: a partition lookup never asks

    return Staleness(
        snapshot_id=target,
        statistics_snapshot_id=described,
        stale=bool(behind or changed or dropped),
        snapshots_behind=behind,
        partitions_changed=changed,
        columns_not_inherited=tuple(dropped),
    )


def _leaf_types_of(schema: pa.Schema) -> tuple[tuple[str, str], ...]:
    try:
        return _leaf_types(schema)
    except TypeError:  # a schema whose metadata pyarrow cannot hash
        return _leaf_types.__wrapped__(schema)


@functools.lru_cache(maxsize=32)
def _leaf_types(schema: pa.Schema) -> tuple[tuple[str, str], ...]:
    """(name, type) of every leaf: walking a 1,000-column schema costs milliseconds, and
    ``staleness`` asks on every table-level lookup (a schema is hashable and immutable)."""
    from lakestats.stats.leaves import leaves_of

    return tuple((leaf.name, str(leaf.type)) for leaf in leaves_of(schema))


def version_for_snapshot(
    root: StatisticsStore, table: TableFormat, snapshot_id: int | None
) -> manifest.Version:
    """The version of ``snapshot_id``, else the nearest earlier one (stale), else the latest."""
    latest = manifest.load_version(root, None)
    if snapshot_id is None or latest.snapshot_id == snapshot_id:
        return latest
    snapshots = {s.snapshot_id: s.timestamp_ms for s in table.snapshots()}
    if snapshot_id not in snapshots:
        raise SnapshotNotFoundError(
            f"snapshot {snapshot_id} is not a snapshot of {table.identifier}; "
            "see `lakestats history` for analyzed snapshots"
        )
    target_ts = snapshots[snapshot_id]
    numbers = manifest.version_numbers(root)
    described = manifest.snapshots_of_versions(root, numbers)
    best: int | None = None
    best_ts = 0
    for number in reversed(numbers):  # the newest version of a snapshot wins
        described_id, described_ts = described[number]
        if described_id == snapshot_id:
            return manifest.load_version(root, number)
        ts = described_ts or snapshots.get(described_id)
        if ts is not None and ts <= target_ts and (best is None or ts > best_ts):
            best, best_ts = number, ts
    if best is None:
        raise StatisticsNotFoundError(
            f"no statistics version describes snapshot {snapshot_id} or an earlier one; "
            "analyze that snapshot with --snapshot"
        )
    return manifest.load_version(root, best)
