"""Derived statistics: the statistics of the rows a predicate keeps (``analyze --where``).

A derived entry is a statistics store of its own under the table's, keyed by the
normalized predicate (``query.predicate.normalize``)::

    <root>/derived/<first 16 hex of sha256(normalized predicate)>/
        predicate.json            {"predicate": normalized text, "key": ...}
        versions/, partitions/, table/, partition_index.parquet ...   (as in <root>)

Each of its versions is one analysis of the predicate at one snapshot (``snapshot_id`` in
the version, ``derived_predicate`` in its ``extra``): the three files per partition of
the partitions that can match, the table level and the partition index, written by the
normal analyze job with the rows filtered inside the tasks. The table's own versions and
files are never touched. ``find`` is the lookup (``stats --where`` and ``estimate
--where`` answer from it without Spark); ``entries`` lists them for ``history``;
``expire`` removes the versions whose snapshot no kept table version references.
"""

from __future__ import annotations

import contextlib
import hashlib
import json

import pyarrow.fs as pafs

from lakestats.errors import CorruptStatisticsError, StatisticsNotFoundError
from lakestats.store import manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import VersionKind
from lakestats.store.reader import StatisticsReader

DERIVED_DIR = "derived"
PREDICATE_FILE = "predicate.json"


def key_of(normalized: str) -> str:
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]


def root_of(stats_root: StatisticsStore, normalized: str) -> StatisticsStore:
    """The derived store of a normalized predicate."""
    return stats_root.child(DERIVED_DIR, key_of(normalized))


def write_predicate(stats_root: StatisticsStore, normalized: str) -> StatisticsStore:
    """Create the derived store's ``predicate.json`` (idempotent); returns the store."""
    root = root_of(stats_root, normalized)
    body = json.dumps({"predicate": normalized, "key": key_of(normalized)}, indent=1)
    root.write_bytes_atomic(root.join(PREDICATE_FILE), body.encode("utf-8"))
    return root


def find(
    stats_root: StatisticsStore, normalized: str, snapshot_id: int | None
) -> StatisticsReader | None:
    """The newest derived version of the predicate computed at ``snapshot_id``, or None."""
    root = root_of(stats_root, normalized)
    try:
        numbers = manifest.version_numbers(root)
    except (StatisticsNotFoundError, FileNotFoundError):
        return None
    for number in reversed(numbers):
        try:
            version = manifest.load_version(root, number)
        except (CorruptStatisticsError, StatisticsNotFoundError):
            continue
        same = version.extra.get("derived_predicate") == normalized
        if same and version.snapshot_id == snapshot_id:
            return StatisticsReader(root, number)
    return None


def keys(stats_root: StatisticsStore) -> frozenset[str]:
    """The keys (``key_of``) of the derived stores under the table's statistics: one
    listing, so a lookup of many predicates skips ``find``'s listing for those absent."""
    return frozenset(
        info.base_name
        for info in stats_root.list_files(stats_root.join(DERIVED_DIR))
        if info.type == pafs.FileType.Directory
    )


def roots(stats_root: StatisticsStore) -> list[StatisticsStore]:
    """Every derived store under the table's statistics."""
    out = []
    for info in stats_root.list_files(stats_root.join(DERIVED_DIR)):
        if info.type == pafs.FileType.Directory:
            out.append(stats_root.child(DERIVED_DIR, info.base_name))
    return sorted(out, key=lambda store: store.uri)


def entries(stats_root: StatisticsStore) -> list[dict[str, object]]:
    """One row per derived version: for ``history`` (``kind`` ``"derived"``)."""
    out: list[dict[str, object]] = []
    for root in roots(stats_root):
        with contextlib.suppress(StatisticsNotFoundError, FileNotFoundError):
            for number in manifest.version_numbers(root):
                try:
                    v = manifest.load_version(root, number)
                except (CorruptStatisticsError, StatisticsNotFoundError):
                    continue
                out.append(
                    {
                        "kind": VersionKind.DERIVED,
                        "predicate": v.extra.get("derived_predicate"),
                        "key": root.uri.rsplit("/", 1)[-1],
                        "version": v.version,
                        "snapshot_id": v.snapshot_id,
                        "row_count": v.merged_record_count,
                        "partitions": len(v.partitions),
                        "created_at": v.created_at,
                    }
                )
    return out


def expire(
    stats_root: StatisticsStore,
    kept_snapshots: set[int | None],
    dry_run: bool = False,
) -> list[dict[str, object]]:
    """Remove derived versions whose snapshot no kept table version references (their
    files with them); returns what was (or, with ``dry_run``, would be) removed."""
    from lakestats.store.expire import apply_expiry, plan_expiry

    removed: list[dict[str, object]] = []
    for root in roots(stats_root):
        live = {s for s in kept_snapshots if s is not None}
        plan = plan_expiry(root, live, retain_last=0, orphan_age_seconds=3600.0)
        if plan.versions_removed:
            key = root.uri.rsplit("/", 1)[-1]
            removed.append({"key": key, "versions": plan.versions_removed})
            if not dry_run:
                apply_expiry(root, plan)
    return removed


__all__ = ["entries", "expire", "find", "key_of", "root_of", "roots", "write_predicate"]
