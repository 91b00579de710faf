"""Apache Iceberg tables through pyiceberg: catalog tables and metadata paths.

Partitions are the (spec id, partition tuple) groups of the snapshot's data files,
named by their human-readable partition path (``l_shipdate_year=1995``). Executors
read a slice with pyiceberg's own ``ArrowScan`` (field-id projection, name mapping,
position deletes and deletion vectors), rebuilt from the table metadata that travels with
the job. Equality deletes, which pyiceberg refuses, are planned and applied here
(``equality_deletes.py``) as the Iceberg spec says.

Over 400 lines on purpose: one format's whole contract (catalogs, planning, deletes, change
log, samples); the executors' reader is ``iceberg_reader.py``.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

from lakestats import fs
from lakestats.errors import (
    NotATableError,
    SnapshotNotFoundError,
    TableNotFoundError,
)
from lakestats.formats.base import (
    DataFile,
    PartitionPlan,
    PartitionReader,
    SampleUnit,
    SnapshotInfo,
    TableFormat,
)
from lakestats.formats.iceberg_reader import IcebergReader
from lakestats.stats.keys import to_json

DEFAULT_CATALOG = "lakestats"
# FileIO properties a sample table's writer inherits from the table's (not catalog ones)
_SAMPLE_NAME = ("lakestats", "sample")  # the sample table in its throwaway catalog
_IO_KEYS = ("s3.", "gcs.", "adls.", "hdfs.", "py-io-impl", "client.", "oss.")


def default_warehouse() -> str:
    from lakestats import config

    return os.path.abspath(config.settings().warehouse)


def load_catalog(  # noqa: ANN201
    name: str | None = None, warehouse: str | None = None, create: bool = True
):
    """A pyiceberg catalog: the named one from pyiceberg's configuration, or the embedded
    SQLite catalog under ``./warehouse`` (``LAKESTATS_WAREHOUSE`` overrides). With
    ``create=False`` (every lookup) a missing embedded catalog is ``TableNotFoundError``,
    not a new empty ``catalog.db``: a read never creates anything."""
    from pyiceberg.catalog import load_catalog as pyiceberg_load
    from pyiceberg.catalog.sql import SqlCatalog

    from lakestats import config

    name = name or config.settings().catalog
    if name:
        return pyiceberg_load(name)
    root = warehouse or default_warehouse()
    database = os.path.join(root, "catalog.db")
    if not create and not os.path.isfile(database):
        raise TableNotFoundError(
            f"not found in catalog {DEFAULT_CATALOG!r}: there is no embedded catalog at "
            f"{database}; pass a table directory path, --warehouse DIR or --catalog NAME"
        )
    os.makedirs(root, exist_ok=True)
    return SqlCatalog(
        DEFAULT_CATALOG,
        uri=f"sqlite:///{database}",
        warehouse=f"file://{root}",
    )


def _absolute(path: str) -> str:
    if "://" in path or path.startswith("/"):
        return path
    return os.path.abspath(path)


def _absolutize(data_file) -> None:  # noqa: ANN001
    """Make a pyiceberg DataFile's path absolute (its ``file_path`` has no setter)."""
    position = 1  # DataFile's record layout: content, file_path, ...
    if data_file[position] == data_file.file_path:
        data_file[position] = _absolute(data_file.file_path)


def _partition_key(spec, schema, record) -> tuple[list[tuple[str, str]], dict[str, object]]:  # noqa: ANN001
    """A partition tuple's (field, human-readable value) pairs and JSON-ready values
    (identity fields keep the value, transforms their human string)."""
    key, values = [], {}
    partition_type = spec.partition_type(schema)
    for pos, (pfield, nfield) in enumerate(zip(spec.fields, partition_type.fields, strict=True)):
        raw = record[pos]
        human = pfield.transform.to_human_string(nfield.field_type, raw)
        key.append((pfield.name, human))
        identity = pfield.transform.__class__.__name__ == "IdentityTransform"
        values[pfield.name] = to_json(raw) if identity else human
    return key, values


class IcebergTableFormat(TableFormat):
    format_name = "iceberg"
    writes_sample_table = True

    def __init__(self, table, identifier: str) -> None:  # noqa: ANN001
        self._table = table
        self._identifier = identifier

    @classmethod
    def from_catalog(
        cls, identifier: str, catalog_name: str | None = None, warehouse: str | None = None
    ) -> IcebergTableFormat:
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        try:
            catalog = load_catalog(catalog_name, warehouse, create=False)
        except TableNotFoundError as exc:
            raise TableNotFoundError(f"table {identifier!r} {exc}") from exc
        try:
            return cls(catalog.load_table(identifier), identifier)
        except (NoSuchTableError, NoSuchNamespaceError) as exc:
            raise TableNotFoundError(
                f"table {identifier!r} not found in catalog {catalog.name!r}: check the name, "
                "or pass a table directory path"
            ) from exc
        except ValueError as exc:
            raise TableNotFoundError(f"{identifier!r} is not a table identifier: {exc}") from exc

    @classmethod
    def from_path(cls, uri: str, s3: fs.S3Options | None = None) -> IcebergTableFormat:
        from pyiceberg.table import StaticTable

        metadata_file = uri if uri.endswith(".metadata.json") else latest_metadata_file(uri, s3)
        try:
            properties = fs.iceberg_io_properties(s3) if fs.is_remote(metadata_file) else {}
            return cls(StaticTable.from_metadata(metadata_file, properties), uri)
        except (OSError, ValueError) as exc:
            raise NotATableError(f"cannot read Iceberg metadata {metadata_file}: {exc}") from exc

    @property
    def location(self) -> str:
        return fs.normalize(self._table.location())

    @property
    def identifier(self) -> str:
        return self._identifier

    def _snapshot(self, snapshot_id: int | None):  # noqa: ANN202
        if snapshot_id is None:
            return self._table.current_snapshot()
        snapshot = self._table.snapshot_by_id(snapshot_id)
        if snapshot is None:
            known = [s.snapshot_id for s in self._table.metadata.snapshots]
            raise SnapshotNotFoundError(
                f"snapshot {snapshot_id} not found in {self._identifier}; known snapshots: "
                f"{known[-5:]}"
            )
        return snapshot

    def schema_id(self, snapshot_id: int | None = None) -> int | None:
        snapshot = self._snapshot(snapshot_id)
        if snapshot is not None and snapshot.schema_id is not None:
            return snapshot.schema_id
        return self._table.metadata.current_schema_id

    def _iceberg_schema(self, snapshot_id: int | None):  # noqa: ANN202
        wanted = self.schema_id(snapshot_id)
        return next(s for s in self._table.metadata.schemas if s.schema_id == wanted)

    def schema(self, snapshot_id: int | None = None) -> pa.Schema:
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        return schema_to_pyarrow(self._iceberg_schema(snapshot_id), include_field_ids=False)

    def field_ids(self, snapshot_id: int | None = None) -> dict[str, int]:
        from pyiceberg.types import StructType

        from lakestats.stats.leaves import leaf_name

        out: dict[str, int] = {}

        def walk(path: tuple[str, ...], node) -> None:  # noqa: ANN001
            if isinstance(node.field_type, StructType) and node.field_type.fields:
                for child in node.field_type.fields:
                    walk((*path, child.name), child)
            else:
                out[leaf_name(path)] = node.field_id

        for top in self._iceberg_schema(snapshot_id).fields:
            walk((top.name,), top)
        return out

    def native_types(self, snapshot_id: int | None = None) -> dict[str, str]:
        from pyiceberg.types import StructType

        from lakestats.stats.leaves import leaf_name

        out: dict[str, str] = {}

        def walk(path: tuple[str, ...], node) -> None:  # noqa: ANN001
            if isinstance(node.field_type, StructType) and node.field_type.fields:
                for child in node.field_type.fields:
                    walk((*path, child.name), child)
            else:
                out[leaf_name(path)] = str(node.field_type)

        for top in self._iceberg_schema(snapshot_id).fields:
            walk((top.name,), top)
        return out

    def snapshots(self) -> list[SnapshotInfo]:
        return [
            SnapshotInfo(
                s.snapshot_id,
                s.timestamp_ms,
                s.schema_id,
                s.parent_snapshot_id,
                dict(s.summary.additional_properties) if s.summary else {},
            )
            for s in self._table.metadata.snapshots
        ]

    def snapshot_log(self) -> list[tuple[int, int]]:
        return [(e.timestamp_ms, e.snapshot_id) for e in self._table.metadata.snapshot_log]

    def current_snapshot_id(self) -> int | None:
        snapshot = self._table.current_snapshot()
        return snapshot.snapshot_id if snapshot else None

    def _tasks(self, snapshot_id: int | None) -> tuple[list, dict[str, tuple]]:
        """The snapshot's scan tasks (data file + position deletes) and, per data file path,
        the equality delete files that apply to it."""
        from lakestats.formats.equality_deletes import plan_scan

        snapshot = self._snapshot(snapshot_id)
        if snapshot is None:
            return [], {}
        tasks, equality = plan_scan(self._table.scan(snapshot_id=snapshot.snapshot_id))
        for task in tasks:
            # relative locations (some writers store them) resolve against the driver's
            # working directory here, not against each executor's
            _absolutize(task.file)
            for delete in task.delete_files:
                _absolutize(delete)
        for deletes in equality.values():
            for delete in deletes:
                _absolutize(delete)
        return tasks, {_absolute(path): deletes for path, deletes in equality.items()}

    def plan(self, snapshot_id: int | None = None) -> list[PartitionPlan]:
        tasks, equality = self._tasks(snapshot_id)
        schema = self._iceberg_schema(snapshot_id)
        specs = self._table.metadata.specs()
        groups: dict[tuple, list] = {}
        for task in tasks:
            groups.setdefault((task.file.spec_id, task.file.partition), []).append(task)
        plans = []
        for (spec_id, record), group in groups.items():
            key, values = _partition_key(specs[spec_id], schema, record)
            data_files = tuple(
                DataFile(t.file.file_path, t.file.file_size_in_bytes, t.file.record_count)
                for t in group
            )
            deletes = tuple(
                DataFile(d.file_path, d.file_size_in_bytes, d.record_count)
                for d in {
                    d.file_path: d
                    for t in group
                    for d in (*t.delete_files, *equality.get(t.file.file_path, ()))
                }.values()
            )
            plans.append(
                PartitionPlan(
                    key=tuple(key),
                    values=values,
                    data_files=data_files,
                    delete_files=deletes,
                    row_count=None if deletes else sum(t.file.record_count for t in group),
                    spec_id=spec_id,
                )
            )
        plans.sort(key=lambda p: (p.spec_id, p.name))
        return plans

    def sample_units(
        self, partition: PartitionPlan, snapshot_id: int | None = None
    ) -> list[SampleUnit]:
        """One unit per data file, with the position and equality delete files that apply
        to that file (a new delete file re-reads only the files it applies to)."""
        cache = self.__dict__.setdefault("_unit_deletes", {})
        if snapshot_id not in cache:  # one scan plan per snapshot, not one per partition
            tasks, equality = self._tasks(snapshot_id)
            cache[snapshot_id] = {
                t.file.file_path: tuple(
                    DataFile(d.file_path, d.file_size_in_bytes, d.record_count)
                    for d in (*t.delete_files, *equality.get(t.file.file_path, ()))
                )
                for t in tasks
            }
        deletes = cache[snapshot_id]
        return [
            SampleUnit.of(self.location, piece, deletes.get(piece.files[0].path, ()))
            for piece in self.slices(partition, 1)
        ]

    def changed_files(self, from_snapshot: int | None, to_snapshot: int | None) -> set[str] | None:
        """The change log between two snapshots: every data and delete file that the
        snapshots after ``from_snapshot`` up to ``to_snapshot`` added or removed (each
        snapshot's own manifest entries, status ADDED or DELETED), relative to the table's
        location. None when ``from_snapshot`` is not an ancestor of ``to_snapshot``."""
        from pyiceberg.manifest import ManifestEntryStatus

        io, chain = self._table.io, []
        snapshot = self._table.snapshot_by_id(to_snapshot) if to_snapshot is not None else None
        while snapshot is not None and snapshot.snapshot_id != from_snapshot:
            chain.append(snapshot)
            parent = snapshot.parent_snapshot_id
            snapshot = self._table.snapshot_by_id(parent) if parent is not None else None
        if snapshot is None:
            return None
        prefix = self.location.rstrip("/") + "/"
        changed = set()
        for step in chain:
            for manifest in step.manifests(io):
                if manifest.added_snapshot_id != step.snapshot_id:
                    continue  # written by an earlier snapshot: nothing of this step's
                for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                    if entry.status == ManifestEntryStatus.EXISTING:
                        continue
                    path = _absolute(entry.data_file.file_path)
                    changed.add(path[len(prefix) :] if path.startswith(prefix) else path)
        return changed

    @contextmanager
    def _sample_catalog(self, location: str) -> Iterator[object]:
        """A throwaway SQL catalog whose warehouse is the sample table's ``location`` (the
        sample table is registered in no catalog of the user's)."""
        import tempfile

        from pyiceberg.catalog.sql import SqlCatalog

        with tempfile.TemporaryDirectory(prefix="lakestats-sample-catalog-") as scratch:
            catalog = SqlCatalog(
                "lakestats_sample",
                uri=f"sqlite:///{scratch}/catalog.db",
                warehouse=location,
                **{k: v for k, v in self._table.io.properties.items() if k.startswith(_IO_KEYS)},
            )
            catalog.create_namespace("lakestats")
            try:
                yield catalog
            finally:
                catalog.engine.dispose()  # release the scratch database before it is removed

    @staticmethod
    def _sibling_record(catalog, location: str) -> dict:  # noqa: ANN001
        sibling = catalog.load_table(_SAMPLE_NAME)
        snapshot = sibling.current_snapshot()
        return {
            "format": "iceberg",
            "location": location,
            "metadata_location": sibling.metadata_location,
            "snapshot_id": snapshot.snapshot_id if snapshot else None,
        }

    def write_sample_table(self, rows: pa.Table, location: str, previous: dict | None) -> dict:
        """The sample as an Iceberg table at ``location`` (under the statistics root), with
        the table's schema and partition spec. It is not registered in the table's
        catalog: a throwaway SQL catalog creates it (or registers its last metadata file,
        which the sample's manifest records) and commits an overwrite; engines read it by
        its metadata file."""
        with self._sample_catalog(location) as catalog:
            last = (previous or {}).get("metadata_location")
            # a sample table deleted by hand is created again
            if last and self._table.io.new_input(str(last)).exists():
                sibling = catalog.register_table(_SAMPLE_NAME, str(last))
                if sibling.schema().as_arrow().names != rows.schema.names:
                    with sibling.update_schema() as update:
                        update.union_by_name(rows.schema)
                sibling.overwrite(rows)
            else:
                sibling = catalog.create_table(
                    _SAMPLE_NAME,
                    schema=self._iceberg_schema(self.current_snapshot_id()),
                    location=location,
                    partition_spec=self._table.spec(),
                )
                sibling.append(rows)  # a new table: nothing to overwrite
            return self._sibling_record(catalog, location)

    def _one_spec(self) -> bool:
        """Whether every live data file of the current snapshot has the current partition
        spec (the sample table's): then its partitions are the table's, one for one. Reads
        the manifest list only."""
        snapshot = self._table.current_snapshot()
        spec_id = self._table.metadata.default_spec_id
        return snapshot is None or all(
            m.partition_spec_id == spec_id
            for m in snapshot.manifests(self._table.io)
            if (m.added_files_count or 0) + (m.existing_files_count or 0) > 0
        )

    def update_sample_table(
        self,
        rows: pa.Table,
        location: str,
        previous: dict,
        partitions: dict[str, dict[str, object]],
    ) -> dict | None:
        """Replace the sample table's data files of ``partitions`` by ``rows`` in one
        overwrite snapshot (the other partitions' files stay as they are). None when the
        sample table is gone, its schema differs or the table still has data files of an
        earlier partition spec (a sibling partition may then not map to one of the
        table's): the caller rewrites it."""
        from pyiceberg.io.pyarrow import _dataframe_to_data_files

        from lakestats.store.layout import partition_dir_of

        last = previous.get("metadata_location")
        if not last or not self._table.io.new_input(str(last)).exists():
            return None
        if not self._one_spec():
            return None
        with self._sample_catalog(location) as catalog:
            sibling = catalog.register_table(_SAMPLE_NAME, str(last))
            if sibling.schema().as_arrow().names != rows.schema.names or [
                f.name for f in sibling.spec().fields
            ] != [f.name for f in self._table.spec().fields]:
                return None
            specs, schema = sibling.metadata.specs(), sibling.schema()
            gone = [
                task.file
                for task in sibling.scan().plan_files()
                if partition_dir_of(*_partition_key(specs[task.file.spec_id], schema,
                                                    task.file.partition)) in partitions
            ]
            if gone or rows.num_rows:
                with (
                    sibling.transaction() as transaction,
                    transaction.update_snapshot().overwrite() as overwrite,
                ):
                    for data_file in gone:
                        overwrite.delete_data_file(data_file)
                    if rows.num_rows:
                        for data_file in _dataframe_to_data_files(
                            table_metadata=transaction.table_metadata,
                            write_uuid=overwrite.commit_uuid,
                            df=rows,
                            io=sibling.io,
                        ):
                            overwrite.append_data_file(data_file)
            return self._sibling_record(catalog, location)

    # -- the pyiceberg table, for commits of statistics files (``interop/puffin.py``) --
    @property
    def native_table(self):  # noqa: ANN201 - pyiceberg.table.Table
        return self._table

    def reload_table(self) -> None:
        """Re-read the table's metadata (another writer committed meanwhile)."""
        self._table = self._table.refresh()

    def reader(self, snapshot_id: int | None = None) -> PartitionReader:
        tasks, equality = self._tasks(snapshot_id)
        native = {t.file.file_path: t for t in tasks}
        return IcebergReader(
            metadata_json=self._table.metadata.model_dump_json(),
            metadata_location=self._table.metadata_location,
            io_properties=dict(self._table.io.properties),
            schema_id=self.schema_id(snapshot_id),
            native=native,
            equality=equality,
        )


def latest_metadata_file(uri: str, s3: fs.S3Options | None = None) -> str:
    """The newest ``metadata/*.metadata.json`` of a table directory."""
    import pyarrow.fs as pafs

    filesystem, path = fs.resolve(uri, s3)
    metadata_dir = posixpath.join(path, "metadata")
    hint = posixpath.join(metadata_dir, "version-hint.text")
    infos = filesystem.get_file_info(pafs.FileSelector(metadata_dir, allow_not_found=True))
    names = [posixpath.basename(i.path) for i in infos if i.path.endswith(".metadata.json")]
    if not names:
        raise NotATableError(f"{uri} has no Iceberg metadata files under metadata/")
    if filesystem.get_file_info(hint).type == pafs.FileType.File:
        with filesystem.open_input_stream(hint) as stream:
            version = stream.read().decode().strip()
        for candidate in (f"v{version}.metadata.json", f"{version}.metadata.json"):
            if candidate in names:
                return fs.join(fs.normalize(uri), "metadata", candidate)

    def version_of(name: str) -> int:
        match = re.match(r"v?(\d+)[.-]", name)
        return int(match.group(1)) if match else -1

    best = max(names, key=lambda n: (version_of(n), n))
    return fs.join(fs.normalize(uri), "metadata", best)
