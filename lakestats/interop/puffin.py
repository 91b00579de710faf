"""Iceberg table statistics: the Puffin file of a version, written and committed for its
snapshot, and removed with it.

Every engine that reads Iceberg table statistics (Spark with Iceberg ≥ 1.7, Trino, Presto,
Impala, StarRocks) reads the ``ndv`` property of ``apache-datasketches-theta-v1`` blobs in
a Puffin file the table metadata lists for the snapshot. ``publish`` writes one such file
per analyzed snapshot, one blob per top-level column whose Iceberg type has a single-value
serialization, beside the table's metadata (``<location>/metadata/<snapshot>-<uuid>-
lakestats.stats``), and commits it through pyiceberg.

Each blob is the union of the partitions' theta sketches (``stats/theta.py``), built from
what the partition tasks stored, with no scan of the data: a partition column stores its
sketch (``theta_sketch``) unless its frequency rows list every value, in which case the
sketch is rebuilt from them here. An incremental analyze computes only the changed
partitions' sketches and unions them with the stored ones of the others. A column some
partition has no sketch for (computed before sketches were stored, or with
``--no-puffin``) gets no blob rather than a wrong one. ``ndv`` is lakestats' table-level
distinct count when it is exact (``distinct_count_exact``); else the union sketch's count
when the union kept every value (exact too); else the table level's estimate.

The file's bytes are ``puffin_file.py``'s.

Nothing but the standard blob type goes into the table metadata. The file is lakestats'
own by name (``OWN_SUFFIX``): only such files are ever replaced or removed here.
"""

from __future__ import annotations

import contextlib
import posixpath
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.config import installed_version
from lakestats.errors import LakestatsError
from lakestats.formats.base import TableFormat
from lakestats.interop.puffin_file import Blob, PuffinBytes, write_puffin
from lakestats.stats import keys, sketches, theta
from lakestats.stats.derived_sketches import frequencies_complete
from lakestats.stats.type_codec import parse_type
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry, Version
from lakestats.store.partition_rows import PartitionRows

THETA_BLOB = "apache-datasketches-theta-v1"
if TYPE_CHECKING:
    from lakestats.formats.iceberg import IcebergTableFormat

OWN_SUFFIX = "-lakestats.stats"
CREATED_BY = "lakestats"
_FIELDS = ["row_count", "null_count", "distinct_count", "frequencies_count", "theta_sketch"]


class PuffinPublishError(LakestatsError):
    """The Puffin statistics file could not be written or committed to the table."""


@dataclass(frozen=True)
class PuffinRecord:
    """What a version records of its Puffin file (``extra["puffin"]``)."""

    snapshot_id: int
    path: str | None  # None: nothing committed (see ``skipped``)
    columns: list[str]
    skipped: dict[str, str]  # column (or "*") -> why it has no blob

    def to_json(self) -> dict[str, object]:
        return {
            "snapshot_id": self.snapshot_id,
            "path": self.path,
            "columns": self.columns,
            **({"skipped": self.skipped} if self.skipped else {}),
        }


def theta_types(table: TableFormat, snapshot_id: int | None) -> dict[str, str]:
    """Leaf name -> Iceberg type of the top-level columns a theta blob can cover."""
    native = table.native_types(snapshot_id)
    top = set(table.schema(snapshot_id).names)
    return {n: t for n, t in native.items() if n in top and theta.supported(t)}


def _read(store: StatisticsStore, relative: str, columns: list[str]) -> pa.Table:
    with store.open_input_file(store.path(relative)) as handle:
        parquet = pq.ParquetFile(handle)
        present = [c for c in columns if c in parquet.schema_arrow.names]
        return parquet.read(columns=present, use_threads=False)


def _rebuilt(frequencies: pa.Table, index: int, dtype: pa.DataType, iceberg_type: str) -> bytes:
    """A complete column's sketch from its frequency rows (grouped by column, in order)."""
    column_index = frequencies.column("column_index").to_numpy(zero_copy_only=False)
    start, stop = np.searchsorted(column_index, [index, index + 1])
    rows = frequencies.column("value").slice(int(start), int(stop - start)).combine_chunks()
    values = keys.decode_array(rows, sketches.value_type(dtype))
    return theta.column_sketch(values, iceberg_type)


def partition_sketches(
    store: StatisticsStore,
    entry: PartitionEntry,
    wanted: dict[int, str],
    dtypes: list[pa.DataType],
    rows_of: PartitionRows,
) -> dict[int, bytes | None]:
    """Column position -> one partition's theta sketch (None: it has none, and its
    frequencies do not determine one)."""
    rows = _read(store, entry.files["statistics"], _FIELDS).to_pylist()
    out: dict[int, bytes | None] = {}
    rebuild: list[int] = []
    for c in wanted:
        row = rows[c]
        stored = row.get("theta_sketch")
        if stored is not None:
            out[c] = stored
        elif (row["row_count"] or 0) - (row["null_count"] or 0) == 0:
            out[c] = theta.sketch_of(np.zeros(0, np.uint64))  # no value: the empty sketch
        elif frequencies_complete(row.get("distinct_count"), row.get("frequencies_count")):
            rebuild.append(c)
        else:
            out[c] = None
    if rebuild:
        frequencies = rows_of.read(entry, "frequencies", ["column_index", "value", "frequency"])
        for c in rebuild:
            out[c] = _rebuilt(frequencies, c, dtypes[c], wanted[c])
    return out


def _distinct_counts(store: StatisticsStore, version: Version) -> list[dict]:
    if not version.table_files:
        return [{} for _ in version.columns]
    fields = ["distinct_count", "distinct_count_exact"]
    return _read(store, version.table_files["statistics"], fields).to_pylist()


def _ndv(count: dict, merged: bytes) -> int:
    """The version's exact distinct count; else the theta union's count when the union holds
    every value (no sampling: exact, where the table level only estimated it); else the
    version's estimate."""
    if count.get("distinct_count_exact") and count.get("distinct_count") is not None:
        return int(count["distinct_count"])
    hashes, sketch_theta = theta.parse(merged)
    if sketch_theta == theta.MAX_THETA:
        return len(hashes)
    if count.get("distinct_count") is not None:
        return int(count["distinct_count"])
    return round(theta.estimate(merged))


def blobs_of(
    store: StatisticsStore,
    version: Version,
    types: dict[str, str],
    sequence_number: int,
    map_partitions: Callable = map,
) -> tuple[list[Blob], dict[str, str]]:
    """The theta blobs of a version's columns, and why the others have none."""
    assert version.snapshot_id is not None
    wanted: dict[int, str] = {}
    skipped: dict[str, str] = {}
    for c, column in enumerate(version.columns):
        name = column["name"]
        if name not in types:
            continue
        if "field_id" not in column:
            skipped[name] = "no Iceberg field id recorded"
            continue
        wanted[c] = types[name]
    dtypes = [parse_type(column["type"]) for column in version.columns]
    rows_of = PartitionRows(store, version)
    gathered: dict[int, list[bytes]] = {c: [] for c in wanted}
    missing: set[int] = set()
    for sketches_of in map_partitions(
        lambda e: partition_sketches(store, e, wanted, dtypes, rows_of), version.partitions
    ):
        for c, sketch in sketches_of.items():
            if sketch is None:
                missing.add(c)
            else:
                gathered[c].append(sketch)
    counts = _distinct_counts(store, version)
    blobs = []
    for c in wanted:
        name = version.columns[c]["name"]
        if c in missing:
            skipped[name] = "a partition has no theta sketch (analyzed without them)"
            continue
        merged = theta.union(gathered[c])
        ndv = _ndv(counts[c] if c < len(counts) else {}, merged)
        blobs.append(
            Blob(
                THETA_BLOB,
                [int(version.columns[c]["field_id"])],
                version.snapshot_id,
                sequence_number,
                merged,
                {"ndv": str(ndv)},
            )
        )
    return blobs, skipped


@dataclass(frozen=True)
class Committed:
    """A Puffin file committed for a version not yet published: what ``retire`` removes once
    the version is, and ``undo`` puts back if it never is."""

    record: PuffinRecord
    replaced: object | None  # the table's StatisticsFile for the snapshot before the commit


def publish(
    table: IcebergTableFormat,
    store: StatisticsStore,
    version: Version,
    map_partitions: Callable = map,
) -> Committed:
    """Write and commit the Puffin file of ``version`` (an Iceberg table's, whole table).
    The file goes to the table's metadata folder with the store's filesystem options (a
    table handle reads the table and its statistics with the same ones). The file it
    replaces stays until ``retire``: the version still published names it."""
    snapshot = version.snapshot_id
    assert snapshot is not None
    refusal = commit_refusal(table)
    if refusal is not None:
        return Committed(PuffinRecord(snapshot, None, [], {"*": refusal}), None)
    types = theta_types(table, snapshot)
    found = table.native_table.metadata.snapshot_by_id(snapshot)
    sequence = int(found.sequence_number or 0) if found is not None else 0
    blobs, skipped = blobs_of(store, version, types, sequence, map_partitions)
    if not blobs:
        record = PuffinRecord(snapshot, None, [], skipped or {"*": "no column has a theta blob"})
        return Committed(record, None)
    written = write_puffin(blobs, f"{CREATED_BY} {installed_version()}")
    location = table.native_table.location().rstrip("/")  # as the metadata spells it
    path = f"{location}/metadata/{snapshot}-{uuid.uuid4()}{OWN_SUFFIX}"
    replaced = _statistics_file(table, snapshot)
    try:
        store.write_bytes_atomic(path, written.data)  # the store's options, beside the table
        _register(table, snapshot, path, written)
    except Exception as exc:  # any commit failure: one lakestats error
        with contextlib.suppress(Exception):
            store.delete_file(path)
        raise PuffinPublishError(
            f"the Puffin statistics file for snapshot {snapshot} could not be committed to "
            f"the table ({type(exc).__name__}: {exc}); analyze again, or pass --no-puffin"
        ) from exc
    names = [version.columns[c]["name"] for c, _ in _positions(version, blobs)]
    return Committed(PuffinRecord(snapshot, path, names, skipped), replaced)


def retire(store: StatisticsStore, committed: Committed) -> None:
    """Delete the file ``committed`` replaced, once its version is published (the table
    lists it no more; the versions before named it until then)."""
    previous = getattr(committed.replaced, "statistics_path", None)
    if previous is not None and previous != committed.record.path and is_own(previous):
        with contextlib.suppress(Exception):
            store.delete_file(previous)


def undo(table: IcebergTableFormat, store: StatisticsStore, committed: Committed) -> None:
    """The table's statistics file of the snapshot as before ``committed`` (its version was
    not published), and the new file deleted; a table another writer changed since keeps
    what it lists. Best effort: the caller is already failing."""
    path = committed.record.path
    if path is None:
        return
    snapshot = committed.record.snapshot_id
    with contextlib.suppress(Exception):
        table.reload_table()
        if statistics_files(table).get(snapshot) == path:
            if committed.replaced is not None:
                _commit(table, lambda update: update.set_statistics(committed.replaced))
            else:
                _commit(table, lambda update: update.remove_statistics(snapshot))
        if statistics_files(table).get(snapshot) != path:
            store.delete_file(path)


def _positions(version: Version, blobs: list[Blob]) -> list[tuple[int, Blob]]:
    ids = {int(c["field_id"]): i for i, c in enumerate(version.columns) if "field_id" in c}
    return [(ids[b.fields[0]], b) for b in blobs]


def is_own(path: str) -> bool:
    return posixpath.basename(path).endswith(OWN_SUFFIX)


def remove(
    table: IcebergTableFormat, snapshot_id: int, path: str, s3: fs.S3Options | None
) -> None:
    """Unregister lakestats' Puffin file of an expired snapshot and delete it (a file the
    table still lists and cannot unregister is kept)."""
    if not is_own(path):
        return
    if statistics_files(table).get(snapshot_id) == path:
        if commit_refusal(table) is not None:
            return
        try:
            _commit(table, lambda update: update.remove_statistics(snapshot_id))
        except Exception as exc:  # any commit failure: one lakestats error
            raise PuffinPublishError(
                f"the Puffin statistics file of expired snapshot {snapshot_id} could not be "
                f"removed from the table metadata ({type(exc).__name__}: {exc})"
            ) from exc
    with contextlib.suppress(FileNotFoundError):
        fs.delete_file(path, s3)


# -- the table metadata's statistics files, committed through pyiceberg ------------------
def commit_refusal(table: IcebergTableFormat) -> str | None:
    """Why statistics cannot be committed to this table (None: they can)."""
    from pyiceberg.table import StaticTable

    if isinstance(table.native_table, StaticTable):
        return "the table was opened by path, without a catalog to commit to"
    return None


def statistics_files(table: IcebergTableFormat) -> dict[int, str]:
    """Snapshot id -> the statistics file the table metadata lists for it."""
    return {s.snapshot_id: s.statistics_path for s in table.native_table.metadata.statistics}


def _statistics_file(table: IcebergTableFormat, snapshot_id: int) -> object | None:
    """The table metadata's statistics file entry for ``snapshot_id`` (None: none)."""
    for entry in table.native_table.metadata.statistics:
        if entry.snapshot_id == snapshot_id:
            return entry
    return None


def _commit(table: IcebergTableFormat, change: Callable) -> None:
    """One ``UpdateStatistics`` step (pyiceberg's ``remove_statistics`` replaces the queued
    updates: one operation per commit), redone on the reloaded table after a conflict."""
    from pyiceberg.exceptions import CommitFailedException

    for attempt in range(3):
        try:
            with table.native_table.update_statistics() as update:
                change(update)
            return
        except CommitFailedException:
            if attempt == 2:
                raise
            table.reload_table()


def _register(table: IcebergTableFormat, snapshot_id: int, path: str, written: PuffinBytes) -> None:
    """List the Puffin file at ``path`` for ``snapshot_id`` (replacing the one it had)."""
    from pyiceberg.table.statistics import BlobMetadata, StatisticsFile

    statistics = StatisticsFile(
        snapshot_id=snapshot_id,
        statistics_path=path,
        file_size_in_bytes=len(written.data),
        file_footer_size_in_bytes=written.footer_size,
        blob_metadata=[
            BlobMetadata(
                type=b["type"],
                snapshot_id=b["snapshot-id"],
                sequence_number=b["sequence-number"],
                fields=b["fields"],
                properties=b.get("properties"),
            )
            for b in written.blobs
        ],
    )
    _commit(table, lambda update: update.set_statistics(statistics))
