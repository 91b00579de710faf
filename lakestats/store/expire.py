"""Expire statistics versions and delete the files nothing references any more.

Also removes what failed or killed runs leave behind once older than the in-flight grace
period: unreferenced partition and table files, ``*.tmp`` files of interrupted writes
(a full disk), ``_staging/`` leftovers; and version manifests that are damaged (they
cannot be read, so lookups already skip them; their files then age out as orphans).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import pyarrow.fs as pafs

from lakestats.errors import CorruptStatisticsError, StatisticsNotFoundError
from lakestats.store import layout, manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.partition_histograms import part_paths


@dataclass
class ExpirePlan:
    versions_removed: list[int] = field(default_factory=list)
    versions_kept: list[int] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)  # relative to the root
    damaged_versions: list[int] = field(default_factory=list)  # unreadable manifests
    # Iceberg: the Puffin files (snapshot id, path) of removed versions that no kept
    # version records; ``interop/puffin.remove`` unregisters and deletes them
    puffin_files: list[tuple[int, str]] = field(default_factory=list)


def plan_expiry(
    root: StatisticsStore,
    live_snapshots: set[int] | None,
    retain_last: int = 1,
    orphan_age_seconds: float = 3600.0,
) -> ExpirePlan:
    """Versions whose snapshot the table no longer has go (the newest ``retain_last`` always
    stay); then every file under ``partitions/`` and ``table/`` that no kept version
    references. Unreferenced files younger than ``orphan_age_seconds`` are left alone:
    they may belong to an analyze still running."""
    numbers = manifest.version_numbers(root)
    plan = ExpirePlan()
    keep_newest = set(numbers[-retain_last:]) if retain_last > 0 else set()
    referenced: set[str] = set()
    removed_refs: set[str] = set()
    puffin_kept: set[str] = set()
    for number in numbers:
        try:
            version = manifest.load_version(root, number)
        except CorruptStatisticsError:
            plan.damaged_versions.append(number)  # references unknown: its files age out
            plan.versions_removed.append(number)
            continue
        except StatisticsNotFoundError:
            continue  # removed since the listing
        refs = {path for e in version.partitions for path in e.files.values()}
        refs |= set((version.table_files or {}).values())
        refs |= set(version.extra.get("reduce_cache", {}).values())  # reduce/cache.GroupCache
        exact = version.extra.get("exact", {})
        refs |= set(exact.get("files", []))  # exact rank parts, of every layer
        refs |= set(exact.get("layers", []))  # the layers' index files
        refs |= set((exact.get("frequency_layers") or {}).get("files", []))
        if version.partition_index:
            refs.add(version.partition_index)
        if version.partition_histograms:
            refs.add(version.partition_histograms)
        if version.partition_histogram_parts:  # the directory and the parts it lists
            refs.add(version.partition_histogram_parts)
            refs |= set(part_paths(root, version.partition_histogram_parts))
        gone = (
            live_snapshots is not None
            and version.snapshot_id is not None
            and version.snapshot_id not in live_snapshots
        )
        puffin = version.extra.get("puffin") or {}
        if gone and number not in keep_newest:
            plan.versions_removed.append(number)
            removed_refs |= refs
            if puffin.get("path"):
                plan.puffin_files.append((int(puffin["snapshot_id"]), puffin["path"]))
        else:
            plan.versions_kept.append(number)
            referenced |= refs
            if puffin.get("path"):
                puffin_kept.add(puffin["path"])
    plan.puffin_files = [(s, p) for s, p in plan.puffin_files if p not in puffin_kept]
    _, base = root.resolve(root.uri)
    now = time.time()

    def young(info: pafs.FileInfo) -> bool:
        return info.mtime is not None and now - info.mtime.timestamp() < orphan_age_seconds

    for top in ("partitions", "table"):
        for info in root.list_files(root.join(top), recursive=True):
            if info.type != pafs.FileType.File:
                continue
            relative = info.path[len(base) + 1 :]
            if relative in referenced:
                continue
            if relative in removed_refs or not young(info):
                plan.files_removed.append(relative)
    leftovers = [
        *root.list_files(root.uri),
        *root.list_files(root.join("versions"), recursive=True),
        *root.list_files(root.join("_staging"), recursive=True),
    ]
    for info in leftovers:
        relative = info.path[len(base) + 1 :]
        interrupted = relative.endswith(".tmp") or relative.startswith("_staging/")
        if info.type == pafs.FileType.File and interrupted and not young(info):
            plan.files_removed.append(relative)
    kept = set(plan.versions_kept)
    for info in root.list_files(root.join(layout.SPARK_DIR)):  # the Spark component's
        number = layout.spark_file_version(info.base_name)
        interrupted = info.base_name.endswith(".tmp") and not young(info)  # a killed write's
        if info.type == pafs.FileType.File and number is not None and (
            number not in kept or interrupted
        ):
            plan.files_removed.append(info.path[len(base) + 1 :])
    return plan


def apply_expiry(root: StatisticsStore, plan: ExpirePlan) -> None:
    """Delete the planned files, then the expired versions. Kept versions' files are never
    in the plan, so a crash part-way leaves every kept version whole."""
    filesystem, base = root.resolve(root.uri)
    for relative in plan.files_removed:
        with contextlib.suppress(FileNotFoundError):
            filesystem.delete_file(f"{base}/{relative}")
    markers = manifest.snapshot_markers(root)
    for number in plan.versions_removed:
        with contextlib.suppress(FileNotFoundError):
            filesystem.delete_file(f"{base}/{layout.version_path(number)}")
        if number in markers:  # after the version: a marker alone is ignored by lookups
            marker = layout.snapshot_marker(number, *markers[number])
            with contextlib.suppress(FileNotFoundError):
                filesystem.delete_file(f"{base}/{marker}")
