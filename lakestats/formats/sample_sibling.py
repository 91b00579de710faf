"""The stored sample as a sibling table of the table's own format.

After ``sample create`` or ``refresh`` the sample's rows (the table's columns only) are
written as a table of the same format where a Python writer exists, through the format's
``write_sample_table``: Iceberg (pyiceberg) at ``<stats root>/sample/iceberg``, Delta
(deltalake) at ``<stats root>/sample/delta``, Paimon (pypaimon) under
``<stats root>/sample/paimon``, each partitioned as the table is. Parquet directories and
Hudi (hudi-rs cannot write) have none: the sample's hive-partitioned Parquet directory
``<stats root>/sample/data`` is their sample table. A refresh rewrites only the partitions
whose sample changed (``update_sample_table``: one commit replacing those partitions' files)
and falls back to a whole rewrite where the format cannot. Any engine reads the sibling
with the format's own reader; the manifest records where it is and which of its snapshots
holds the sample (``sibling``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.fs as pafs

from lakestats import fs
from lakestats.errors import LakestatsError
from lakestats.formats.base import TableFormat
from lakestats.store import sample as store
from lakestats.store.handle import StatisticsStore


def sample_rows(
    stats_root: StatisticsStore,
    manifest: store.SampleManifest,
    only: set[str] | None = None,
) -> pa.Table | None:
    """Every sampled row (of the partitions ``only`` names, when given), the table's
    columns only, partition by partition."""
    parts = [
        store.visible(store.read_file(stats_root, p.file))
        for p in manifest.partitions
        if p.file and (only is None or p.path in only)
    ]
    return pa.concat_tables(parts, promote_options="permissive") if parts else None


def write_sibling(
    table: TableFormat,
    stats_root: StatisticsStore,
    manifest: store.SampleManifest,
    previous: dict | None,
    changed: dict[str, dict[str, object]] | None = None,
) -> dict | None:
    """Write the sample as a table of ``table``'s format; what the manifest records about
    it, or None for formats without a Python writer. With ``changed`` (partition directory
    -> values: the partitions a refresh updated, resampled or removed) and a previous
    sample table, only those partitions are rewritten where the format can."""
    if not table.writes_sample_table:
        return None  # the sample's Parquet directory is the sample table: nothing to read
    location = sibling_location(table, stats_root)
    schema = table.schema(manifest.snapshot_id)

    def conformed(rows: pa.Table | None) -> pa.Table:
        if rows is None:
            return schema.empty_table()
        with contextlib.suppress(KeyError, pa.ArrowInvalid, ValueError):
            return rows.select(schema.names).cast(schema)  # else the writer says what misfits
        return rows

    try:
        if changed is not None and previous is not None:
            rows = conformed(sample_rows(stats_root, manifest, set(changed)))
            updated = table.update_sample_table(rows, location, previous, changed)
            if updated is not None:
                return updated
        return table.write_sample_table(
            conformed(sample_rows(stats_root, manifest)), location, previous
        )
    except LakestatsError:
        raise
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LakestatsError(
            f"cannot write the {table.format_name} sample table at {location}: {first}"
        ) from exc


def sibling_location(table: TableFormat, stats_root: StatisticsStore) -> str:
    """Where ``table``'s sample table lives under its statistics root."""
    return fs.join(store.sample_dir(stats_root), table.format_name)


# the files a commit rewrites in place (every other file a commit writes is new): Delta's
# checkpoint pointer, Paimon's snapshot hints, Iceberg's version hint
_REWRITTEN = ("_last_checkpoint", "LATEST", "EARLIEST", "version-hint.text")


@contextlib.contextmanager
def restored_on_failure(table: TableFormat, stats_root: StatisticsStore) -> Iterator[None]:
    """On failure, the sample table as it was before the block: the files and directories
    the block added are deleted and the hint files get their earlier bytes back. The
    manifest (saved last) still names the previous snapshot, and an engine reading the
    sample table's latest snapshot by itself would otherwise see the failed run's sample."""
    if not table.writes_sample_table:
        yield
        return
    location = sibling_location(table, stats_root)
    s3 = stats_root.s3
    filesystem, _ = fs.resolve(location, s3)
    entries = fs.list_files(location, s3, recursive=True)
    before = {info.path for info in entries}
    hints = {}
    for info in entries:
        if info.type == pafs.FileType.File and info.base_name in _REWRITTEN:
            with filesystem.open_input_stream(info.path) as stream:
                hints[info.path] = stream.read()
    try:
        yield
    except BaseException:
        added = [i for i in fs.list_files(location, s3, recursive=True) if i.path not in before]
        for info in sorted(added, key=lambda i: i.path.count("/"), reverse=True):
            with contextlib.suppress(OSError):
                if info.type == pafs.FileType.Directory:
                    filesystem.delete_dir(info.path)
                else:
                    filesystem.delete_file(info.path)
        for path, data in hints.items():
            with contextlib.suppress(OSError), filesystem.open_output_stream(path) as out:
                out.write(data)
        if not before:
            fs.delete_dir(location, s3)
        raise
