"""The end of a run: the table-level files of an empty table; the version published with
what other engines read of it (``lakestats.interop``), in one step whichever face asked for
the analyze (a race with another analyze of the same snapshot is a clear conflict); or,
after a failure, what the run wrote removed."""

from __future__ import annotations

import contextlib

from lakestats.errors import ConflictError, LakestatsError
from lakestats.formats.base import TableFormat
from lakestats.interop import puffin, spark_statistics
from lakestats.options import AnalyzeOptions
from lakestats.store import cleanup, layout, manifest
from lakestats.store.handle import StatisticsStore
from lakestats.threads import prefetch


def remove_failed_run(root: StatisticsStore, run_id: str) -> None:
    """What a failed run wrote, unless its version was published before the failure
    (then those files are the version's)."""
    with contextlib.suppress(LakestatsError):
        if manifest.load_version(root, None).run_id == run_id:
            return
    with contextlib.suppress(LakestatsError, OSError):
        cleanup.remove_run(root, run_id)


def publish(
    table: TableFormat,
    root: StatisticsStore,
    version: manifest.Version,
    *,
    puffin_file: bool,
    engine_files: bool,
) -> int:
    """Publish ``version`` and what engines read of it; its number.

    Each engine's view changes in one step, in this order, so a process killed between
    any two leaves every reader with a whole set, the new one or the one before: the
    Puffin file is written whole and then committed (Iceberg's readers switch with the
    table metadata); the version manifest is created (lakestats' readers switch); the
    Spark component's file is written whole under its version's name (the component
    switches). The Puffin file the commit replaced is deleted only once the version is
    published (the version before names it until then); a failure to publish the version
    puts the table's previous Puffin file back. Failing the Puffin file fails the
    analyze; failing the Spark component's file is a warning (the version stands)."""
    committed = None
    if puffin_file:
        committed = puffin.publish(table, root, version, lambda f, items: prefetch(f, list(items)))
        version.extra["puffin"] = committed.record.to_json()
    try:
        number = publish_version(root, version)
    except BaseException:
        if committed is not None:
            puffin.undo(table, root, committed)
        raise
    if committed is not None:
        puffin.retire(root, committed)
    if engine_files:
        spark_statistics.publish_quietly(table, root, version)
    return number


def publish_missing(table: TableFormat, root: StatisticsStore, version: manifest.Version) -> None:
    """The Spark component's file of a published ``version`` that has none (an earlier
    release's, or one whose write failed)."""
    path = spark_statistics.path_of(root, version)
    with contextlib.suppress(Exception):  # advice for another engine, never fatal
        if path is not None and not root.exists(path):
            spark_statistics.publish_quietly(table, root, version)


def write_empty_table(
    root: StatisticsStore,
    leaves: list,
    options: AnalyzeOptions,
    statistics: list,
    run_id: str,
) -> tuple[dict[str, str], int]:
    """Table-level files of a table without data files (every column: zero rows), so an
    empty table reads like any other instead of failing lookups."""
    from lakestats.stats.accumulator import ColumnAccumulator
    from lakestats.store import writer

    results = [
        ColumnAccumulator(leaf, list(statistics)).finalize(options.bins, options.max_frequencies)
        for leaf in leaves
    ]
    files = layout.table_files(run_id)
    uris = {k: root.path(v) for k, v in files.items()}
    custom = [(s.name, s.result_type) for s in statistics]
    return files, writer.write_partition(results, custom, options.bins, uris, root)


def publish_version(root: StatisticsStore, version: manifest.Version) -> int:
    """Publish; when another analyze won the race, publish after it unless it published
    statistics of the same snapshot (then stop with a clear conflict)."""

    def same_snapshot(winner: manifest.Version) -> None:
        if winner.snapshot_id == version.snapshot_id and winner.run_id != version.run_id:
            raise ConflictError(
                f"another analyze published statistics version {winner.version} for the "
                "same snapshot while this one ran; its result stands (nothing to do)"
            )

    return manifest.publish(root, version, on_conflict=same_snapshot)
