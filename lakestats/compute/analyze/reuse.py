"""What a new analyze can take from the latest version: partition entries whose files
are intact and still valid for these options (``store/verify.py``), the reduction's
group cache, the exact ranks an incremental exact step updates; and whether
partitions store theta sketches for an Iceberg Puffin file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakestats.errors import CorruptStatisticsError, StatisticsNotFoundError
from lakestats.formats.base import TableFormat
from lakestats.options import AnalyzeOptions
from lakestats.store import manifest, verify
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import VersionKind
from lakestats.store.partition_histograms import open_histograms, part_paths
from lakestats.store.partition_rows import rows_in_parts

if TYPE_CHECKING:
    from lakestats.compute.analyze.columns import RowSubset


def theta_sketches(
    table: TableFormat, options: AnalyzeOptions, subset: RowSubset | None
) -> bool:
    """Whether partitions store theta sketches for an Iceberg Puffin file (the whole
    table's partitions, not a ``--where`` subset's; with --partitions-only too, so a later
    table-level analyze reuses them)."""
    return options.puffin and table.format_name == "iceberg" and subset is None


def with_puffin(table: TableFormat, options: AnalyzeOptions, subset: RowSubset | None) -> bool:
    """Whether this analyze publishes an Iceberg Puffin file (table level only)."""
    return theta_sketches(table, options, subset) and options.table_level


THETA_MARK = "theta_sketches"
"""``Version.extra`` key: its partitions store theta sketches (``interop/puffin.py``)."""


def reusable_entries(
    root: StatisticsStore,
    columns: list[dict[str, str]],
    options: AnalyzeOptions,
    thetas: bool = False,
) -> tuple[
    dict[tuple[str, str], manifest.PartitionEntry],
    set[tuple[str, str]],
    dict[str, str],
    manifest.Version | None,
]:
    """Partition entries of the latest readable version that are still valid for this
    analyze and whose files (and, from format 6, part) are intact (``store/verify.py``),
    the keys of those whose files are missing or damaged (recomputed, reported as
    repaired), the table-level reduction cache entries still present
    (``compute/reduce/cache.GroupCache``) and that version (where the reused partitions'
    frequency and histogram rows are read)."""
    try:
        previous = manifest.load_version(root, None)
    except (StatisticsNotFoundError, CorruptStatisticsError):
        return {}, set(), {}, None  # nothing (readable) to reuse: compute everything
    earlier = previous.analyze_options
    same = earlier is not None and (
        earlier.partition_stats_key() == options.partition_stats_key()
    )  # fields that do not change a partition's files (the slice size) may differ
    if previous.kind != VersionKind.FULL or previous.columns != columns or not same:
        return {}, set(), {}, None
    if thetas != bool(previous.extra.get(THETA_MARK)):  # with or without theta sketches
        return {}, set(), {}, None
    sizes = verify.stored_sizes(root)
    entries, damaged = {}, set()
    rowless = partitions_without_rows(root, previous, sizes)
    for entry in previous.partitions:
        if entry.path not in rowless and verify.intact(entry.files, entry.file_sizes, sizes):
            if not entry.file_sizes:  # a version from before sizes were recorded
                entry.file_sizes = {k: sizes[r] for k, r in entry.files.items()}
            entries[(entry.path, entry.fingerprint)] = entry
        else:
            damaged.add((entry.path, entry.fingerprint))
    recorded = dict(previous.extra.get("file_sizes", {}))
    cache = {
        key: relative
        for key, relative in dict(previous.extra.get("reduce_cache", {})).items()
        if verify.intact({key: relative}, recorded, sizes, parquet=False)
    }
    return entries, damaged, cache, previous


def partitions_without_rows(
    root: StatisticsStore, version: manifest.Version, sizes: dict[str, int]
) -> set[str]:
    """Paths of ``version``'s partitions whose frequency and histogram rows are gone: a
    part of format 6 (their one home) is missing (recomputed, reported as repaired)."""
    if not rows_in_parts(version) or not version.partition_histogram_parts:
        return set()
    paths = part_paths(root, version.partition_histogram_parts)
    ids = {e.path: i for i, e in enumerate(version.partitions)}
    histograms = open_histograms(root, version)
    if histograms is None:  # the directory itself is gone: every partition
        return set(ids)
    gone = {k for k, p in enumerate(paths) if p not in sizes}
    return {path for path, i in ids.items()
            if histograms.part_of[i] < 0 or int(histograms.part_of[i]) in gone}


def previous_exact(root: StatisticsStore) -> manifest.Version | None:
    """The latest version when it has exact ranks an incremental exact step can update."""
    previous = manifest.load_version(root, None)
    return previous if (previous.table_files or {}).get("ranks") else None
