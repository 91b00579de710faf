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
) -> tuple[dict[tuple[str, str], manifest.PartitionEntry], set[tuple[str, str]], dict[str, str]]:
    """Partition entries of the latest readable version that are still valid for this
    analyze and whose files are intact (``store/verify.py``), the keys of those whose files
    are missing or damaged (recomputed, reported as repaired), and the table-level
    reduction cache entries still present (``compute/reduce/cache.GroupCache``)."""
    try:
        previous = manifest.load_version(root, None)
    except (StatisticsNotFoundError, CorruptStatisticsError):
        return {}, set(), {}  # nothing (readable) to reuse: compute everything
    earlier = previous.analyze_options
    same = earlier is not None and (
        earlier.partition_stats_key() == options.partition_stats_key()
    )  # fields that do not change a partition's files (the slice size) may differ
    if previous.kind != VersionKind.FULL or previous.columns != columns or not same:
        return {}, set(), {}
    if thetas != bool(previous.extra.get(THETA_MARK)):  # with or without theta sketches
        return {}, set(), {}
    sizes = verify.stored_sizes(root)
    entries, damaged = {}, set()
    for entry in previous.partitions:
        if verify.intact(entry.files, entry.file_sizes, sizes):
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
    return entries, damaged, cache


def previous_exact(root: StatisticsStore) -> manifest.Version | None:
    """The latest version when it has exact ranks an incremental exact step can update."""
    previous = manifest.load_version(root, None)
    return previous if (previous.table_files or {}).get("ranks") else None
