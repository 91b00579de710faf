"""Apache Paimon tables through ``pypaimon``: its scan plans splits, grouped into partitions.

A table is opened from its directory (``<warehouse>/<db>.db/<table>``); snapshots are
Paimon snapshots (``--snapshot N`` is ``scan.snapshot-id``). Paimon's scan gives splits per
partition and bucket. Splits whose files are already the rows (append tables, and
pypaimon's "raw convertible" primary-key splits, both without deletion vectors) are read
directly with pyarrow, selecting the table's columns (primary-key files also hold
``_KEY_*``, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``). Everything else (merges by key,
deletion vectors, data evolution, formats pyarrow cannot read) goes through pypaimon's own
reader, one task per partition. A primary-key table's rows are its rows after merging by
key (Paimon's ``mergedRecordCount``). Merge configurations pypaimon cannot read are refused.

Over 400 lines on purpose: one format's whole contract (snapshots, splits, the two read
paths, samples).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pyarrow as pa

from lakestats import fs
from lakestats.errors import (
    DataFileError,
    LakestatsError,
    NotATableError,
    SnapshotNotFoundError,
    UnsupportedFeatureError,
)
from lakestats.formats.base import (
    DataFile,
    PartitionPlan,
    PartitionReader,
    PathTable,
    Slice,
    SnapshotInfo,
    TableFormat,
)
from lakestats.stats.keys import to_json

_RAW_FORMATS = (".parquet", ".orc")  # data files pyarrow reads directly
_VALUE_KIND = "_VALUE_KIND"
_RETRACTIONS = (1, 3)  # -U and -D: never rows of the merged view
_SAMPLE_NAME = "lakestats.sample"  # the sample table in its own filesystem catalog
_DYNAMIC_OVERWRITE = "dynamic-partition-overwrite"


def _commit(table, rows: pa.Table) -> None:  # noqa: ANN001 - pypaimon's FileStoreTable
    """One overwrite commit of ``rows`` (an empty one when there are none)."""
    builder = table.new_batch_write_builder().overwrite()
    write = builder.new_write()
    try:
        if rows.num_rows:
            write.write_arrow(rows)
        builder.new_commit().commit(write.prepare_commit())
    finally:
        write.close()


def _typed(value: object, dtype: pa.DataType) -> object:
    """A JSON-ready partition value as the Python value of ``dtype`` (what pypaimon's
    partition predicates compare with)."""
    if value is None:
        return None
    return pa.array([value]).cast(dtype)[0].as_py()


def _int96_unit(schema: pa.Schema, wanted: list[str]) -> str:
    """Paimon stores timestamps of precision 7 to 9 as INT96: read them in nanoseconds when
    a wanted column is one, else in microseconds (which reach years 1 to 9999)."""
    nanos = any(
        pa.types.is_timestamp(schema.field(n).type) and schema.field(n).type.unit == "ns"
        for n in wanted
        if n in schema.names
    )
    return "ns" if nanos else "us"


def _file_io_options(s3: fs.S3Options | None) -> dict[str, str]:
    """pypaimon's file IO options for an S3-compatible store (empty for local tables)."""
    if s3 is None:
        return {}
    pairs = (
        ("fs.s3.endpoint", s3.endpoint_url),
        ("fs.s3.region", s3.region),
        ("fs.s3.accessKeyId", s3.access_key),
        ("fs.s3.accessKeySecret", s3.secret_key),
    )
    return {k: v for k, v in pairs if v}


def _read_pre_1_0_manifests() -> None:
    """Let pypaimon read manifests written by Paimon before 1.0 (Paimon 0.9's Spark 3.5
    runtime, the newest Maven Central serves here for Spark 3.5): their file entries have no
    ``_VALUE_STATS_COLS`` field, which pypaimon reads as a required key in one place and as
    optional (None: value statistics of every column, what those files hold) everywhere else.
    Patched once, to read a missing field as None."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager

    fields = ManifestFileManager._get_value_stats_fields
    if getattr(fields, "lakestats_pre_1_0", False):
        return

    def value_stats_fields(self, file_dict: dict, file_schema):  # noqa: ANN001, ANN202
        file_dict.setdefault("_VALUE_STATS_COLS", None)
        return fields(self, file_dict, file_schema)

    value_stats_fields.lakestats_pre_1_0 = True
    ManifestFileManager._get_value_stats_fields = value_stats_fields


def _open(uri: str, options: dict[str, str]):  # noqa: ANN202 - pypaimon's FileStoreTable
    from pypaimon.table.file_store_table import FileStoreTable

    _read_pre_1_0_manifests()
    try:
        return FileStoreTable.from_path(uri, options or None)
    except Exception as exc:
        raise NotATableError(f"cannot open Paimon table {uri}: {exc}") from exc


def _at(table, snapshot_id: int | None):  # noqa: ANN001, ANN202
    """The table as of a snapshot (pypaimon's time travel), latest when ``None``."""
    if snapshot_id is None:
        return table
    if table.snapshot_manager().get_snapshot_by_id(snapshot_id) is None:
        raise SnapshotNotFoundError(
            f"snapshot {snapshot_id} of Paimon table {table.table_path} does not exist "
            "(expired or never written); list its snapshots with pypaimon or Paimon's "
            "`$snapshots` table"
        )
    return table.copy({"scan.snapshot-id": str(snapshot_id)})


def _file_uri(meta) -> str:  # noqa: ANN001 - DataFileMeta
    return fs.normalize(meta.external_path or meta.file_path)


def _default_name(table) -> str:  # noqa: ANN001
    from pypaimon.common.options.core_options import CoreOptions

    return table.options.options.get(CoreOptions.PARTITION_DEFAULT_NAME, "__DEFAULT_PARTITION__")


def _key(names: list[str], values: list[object], default: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        (n, default if v is None else str(to_json(v))) for n, v in zip(names, values, strict=True)
    )


def _is_raw(split, schema_id: int) -> bool:  # noqa: ANN001 - pypaimon Split
    """Files that are the split's rows as they stand: no merge, no deletion vector, a
    format pyarrow reads, written with the schema being read (no column mapping needed)."""
    from pypaimon.read.split import DataSplit

    return (
        type(split) is DataSplit
        and split.raw_convertible
        and not any(d is not None for d in split.data_deletion_files or ())
        and all(
            f.file_name.endswith(_RAW_FORMATS) and f.schema_id == schema_id for f in split.files
        )
    )


@dataclass(frozen=True)
class PaimonReader(PartitionReader):
    """Reads raw slices with pyarrow and the merged slice (index 0 of the partitions in
    ``merged``) with pypaimon; opens the table itself, so it pickles to executors."""

    uri: str
    snapshot_id: int | None
    schema_id: int
    schema: pa.Schema  # what pypaimon's own read returns
    primary_key: bool
    raw_allowed: bool
    merged: frozenset[str]  # names of partitions whose slice 0 pypaimon reads
    partition_values: tuple[tuple[str, tuple[tuple[str, object], ...]], ...]
    s3: fs.S3Options | None = None

    def read(self, part: Slice, columns: list[str] | None) -> pa.Table:
        wanted = [n for n in self.schema.names if columns is None or n in columns]
        if part.index == 0 and part.partition.name in self.merged:
            table = self._read_merged(part, wanted)
        else:
            tables = [self._read_raw(part, f.path, wanted) for f in part.files]
            target = pa.schema([self.schema.field(n) for n in wanted])
            table = pa.concat_tables(tables) if tables else target.empty_table()
        return table.select(wanted)

    def _read_raw(self, part: Slice, uri: str, wanted: list[str]) -> pa.Table:
        filesystem, path = fs.resolve(uri, self.s3)
        extra = [_VALUE_KIND] if self.primary_key else []
        try:
            if uri.endswith(".orc"):
                import pyarrow.orc as orc

                handle = orc.ORCFile(filesystem.open_input_file(path))
                present = set(handle.schema.names)
                table = handle.read(columns=[n for n in wanted + extra if n in present])
            else:
                import pyarrow.parquet as pq

                handle = pq.ParquetFile(
                    filesystem.open_input_file(path),
                    pre_buffer=True,
                    coerce_int96_timestamp_unit=_int96_unit(self.schema, wanted),
                )
                present = set(handle.schema_arrow.names)
                table = handle.read(columns=[n for n in wanted + extra if n in present])
        except (OSError, pa.ArrowInvalid) as exc:
            raise DataFileError(
                f"cannot read data file {uri} of partition {part.partition.name or '(all)'}: "
                f"{str(exc).splitlines()[0]}; repair or remove the file"
            ) from exc
        if _VALUE_KIND in table.column_names:
            import pyarrow.compute as pc

            kinds = table.column(_VALUE_KIND)
            table = table.filter(pc.invert(pc.is_in(kinds, pa.array(_RETRACTIONS, kinds.type))))
        arrays = []
        for name in wanted:
            field = self.schema.field(name)
            column = table.column(name) if name in table.column_names else None
            arrays.append(
                pa.nulls(table.num_rows, field.type) if column is None else column.cast(field.type)
            )
        return pa.Table.from_arrays(
            arrays, schema=pa.schema([self.schema.field(n) for n in wanted])
        )

    def _read_merged(self, part: Slice, wanted: list[str]) -> pa.Table:
        """pypaimon plans this partition again (same snapshot) and reads the splits that
        are not raw: exactly the files of this slice."""
        table = _at(_open(self.uri, _file_io_options(self.s3)), self.snapshot_id)
        builder = table.new_read_builder()
        typed = dict(self.partition_values).get(part.partition.name, ())
        if typed:
            predicates = builder.new_predicate_builder()
            builder = builder.with_partition_filter(
                predicates.and_predicates(
                    [
                        predicates.is_null(n) if v is None else predicates.equal(n, v)
                        for n, v in typed
                    ]
                )
            )
        names = table.partition_keys
        default = _default_name(table)
        splits = [
            s
            for s in builder.new_scan().plan().splits()
            if _key(names, list(s.partition.values), default) == part.partition.key
            and not (self.raw_allowed and _is_raw(s, self.schema_id))
        ]
        found = {_file_uri(f) for s in splits for f in s.files}
        if found != {f.path for f in part.files}:
            raise DataFileError(
                f"Paimon table {self.uri} planned partition {part.partition.name or '(all)'} "
                "differently on an executor; retry the analyze"
            )
        builder = table.new_read_builder()
        if wanted != self.schema.names:
            builder = builder.with_projection(wanted)
        try:
            return builder.new_read().to_arrow(splits)
        except NotImplementedError as exc:
            raise UnsupportedFeatureError(
                f"Paimon table {self.uri}: pypaimon cannot read it: {str(exc).splitlines()[0]}"
            ) from exc
        except Exception as exc:
            raise DataFileError(
                f"pypaimon could not read partition {part.partition.name or '(all)'} of "
                f"{self.uri}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            ) from exc


@dataclass(frozen=True)
class _Partition:
    plan: PartitionPlan
    typed: tuple[tuple[str, object], ...]
    merged: tuple[DataFile, ...]  # files pypaimon reads (merges, deletion vectors)


class PaimonTableFormat(PathTable):
    format_name = "paimon"
    writes_sample_table = True

    def __init__(self, uri: str, s3: fs.S3Options | None = None) -> None:
        self._uri = fs.normalize(uri)
        self._s3 = s3
        self._table = _open(self._uri, _file_io_options(s3))
        self._plans: dict[int | None, list[_Partition]] = {}
        self._merged: dict[tuple, tuple[DataFile, ...]] = {}

    def _snapshot(self, snapshot_id: int | None):  # noqa: ANN202
        manager = self._table.snapshot_manager()
        if snapshot_id is None:
            return manager.get_latest_snapshot()
        return manager.get_snapshot_by_id(snapshot_id)

    def schema(self, snapshot_id: int | None = None) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        return PyarrowFieldParser.from_paimon_schema(_at(self._table, snapshot_id).fields)

    def native_types(self, snapshot_id: int | None = None) -> dict[str, str]:
        return {f.name: str(f.type) for f in _at(self._table, snapshot_id).fields}

    def schema_id(self, snapshot_id: int | None = None) -> int | None:
        snapshot = self._snapshot(snapshot_id)
        return self._table.table_schema.id if snapshot is None else snapshot.schema_id

    def current_snapshot_id(self) -> int | None:
        snapshot = self._snapshot(None)
        return None if snapshot is None else snapshot.id

    def snapshots(self) -> list[SnapshotInfo]:
        snapshots = sorted(self._table.snapshot_manager().list_snapshots(), key=lambda s: s.id)
        ids = {s.id for s in snapshots}
        return [
            SnapshotInfo(
                s.id,
                s.time_millis,
                s.schema_id,
                s.id - 1 if s.id - 1 in ids else None,
                {
                    "commitKind": str(s.commit_kind),
                    "totalRecordCount": str(s.total_record_count),
                },
            )
            for s in snapshots
        ]

    def _read_table(self, snapshot_id: int | None):  # noqa: ANN202
        from pypaimon.read.merge_engine_support import check_supported

        table = _at(self._table, snapshot_id)
        try:
            check_supported(table)
        except (NotImplementedError, ValueError) as exc:
            raise UnsupportedFeatureError(
                f"Paimon table {self._uri}: pypaimon cannot merge it: {str(exc).splitlines()[0]}"
            ) from exc
        return table

    def _raw_allowed(self, table) -> bool:  # noqa: ANN001
        """Data evolution spreads a row's columns over files: never raw."""
        return not table.options.data_evolution_enabled()

    def _partitions(self, snapshot_id: int | None) -> list[_Partition]:
        if snapshot_id in self._plans:
            return self._plans[snapshot_id]
        table = self._read_table(snapshot_id)
        schema_id = table.table_schema.id
        raw_allowed = self._raw_allowed(table)
        try:
            splits = table.new_read_builder().new_scan().plan().splits()
        except NotImplementedError as exc:
            raise UnsupportedFeatureError(
                f"Paimon table {self._uri}: pypaimon cannot scan it: {str(exc).splitlines()[0]}"
            ) from exc
        names = table.partition_keys
        default = _default_name(table)
        groups: dict[tuple, list] = {}
        for split in splits:
            groups.setdefault(_key(names, list(split.partition.values), default), []).append(split)
        if not names and not groups:
            groups[()] = []  # unpartitioned: the table is its one partition, even when empty
        partitions = []
        for key, group in sorted(groups.items()):
            values = list(group[0].partition.values) if group else []
            raw, merged, deletes = [], [], []
            counts = [s.merged_row_count() for s in group]
            for split in group:
                files = [DataFile(_file_uri(f), f.file_size, f.row_count) for f in split.files]
                (raw if raw_allowed and _is_raw(split, schema_id) else merged).extend(files)
                for d in split.data_deletion_files or ():
                    if d is not None:
                        deletes.append(
                            DataFile(fs.normalize(d.dv_index_path), d.length, d.cardinality)
                        )
            plan = PartitionPlan(
                key=key,
                values={n: to_json(v) for n, v in zip(names, values, strict=True)},
                data_files=tuple(merged + raw),
                delete_files=tuple(deletes),
                row_count=None if None in counts else sum(counts),
            )
            self._merged[(plan.key, plan.fingerprint())] = tuple(merged)
            partitions.append(
                _Partition(plan, tuple(zip(names, values, strict=True)), tuple(merged))
            )
        self._plans[snapshot_id] = partitions
        return partitions

    def plan(self, snapshot_id: int | None = None) -> list[PartitionPlan]:
        return [p.plan for p in self._partitions(snapshot_id)]

    def slices(self, partition: PartitionPlan, max_slice_bytes: int) -> list[Slice]:
        """The merged files first, as one slice pypaimon reads; raw files sliced by size."""
        merged = self._merged.get((partition.key, partition.fingerprint()))
        if merged is None:
            raise LakestatsError(f"partition {partition.name!r} was not planned by this table")
        paths = {f.path for f in merged}
        raw = tuple(f for f in partition.data_files if f.path not in paths)
        groups = [merged] if merged else []
        if raw:
            sub = dataclasses.replace(partition, data_files=raw)
            groups += [s.files for s in TableFormat.slices(sub, max_slice_bytes)]
        groups = groups or [()]  # an empty table is read as one empty slice
        return [Slice(partition, files, i, len(groups)) for i, files in enumerate(groups)]

    def changed_files(self, from_snapshot: int | None, to_snapshot: int | None) -> set[str] | None:
        """The change log between two snapshots: the names of the data files in the delta
        manifests (ADD and DELETE entries) of the snapshots after ``from_snapshot`` up to
        ``to_snapshot``. None when a snapshot in between was expired, or when the table has
        deletion vectors (they change in index manifests, which are not read here)."""
        from pypaimon.manifest.manifest_file_manager import ManifestFileManager
        from pypaimon.manifest.manifest_list_manager import ManifestListManager

        if from_snapshot is None or to_snapshot is None or from_snapshot > to_snapshot:
            return None
        if self._table.options.deletion_vectors_enabled():
            return None
        snapshots = self._table.snapshot_manager()
        lists, files = ManifestListManager(self._table), ManifestFileManager(self._table)
        changed = set()
        for snapshot_id in range(from_snapshot + 1, to_snapshot + 1):
            snapshot = snapshots.get_snapshot_by_id(snapshot_id)
            if snapshot is None:
                return None
            for manifest in lists.read_delta(snapshot):
                for entry in files.read(manifest.file_name):
                    changed.add(entry.file.file_name)
        return changed

    def _sample_catalog(self, location: str):  # noqa: ANN202 - pypaimon's Catalog
        from pypaimon import CatalogFactory

        catalog = CatalogFactory.create({"warehouse": location, **_file_io_options(self._s3)})
        catalog.create_database("lakestats", True)
        return catalog

    @staticmethod
    def _sibling_record(catalog, location: str) -> dict:  # noqa: ANN001
        snapshot = catalog.get_table(_SAMPLE_NAME).snapshot_manager().get_latest_snapshot()
        return {
            "format": "paimon",
            "location": fs.join(location, "lakestats.db", "sample"),
            "snapshot_id": snapshot.id if snapshot else None,
        }

    def write_sample_table(self, rows: pa.Table, location: str, previous: dict | None) -> dict:
        """The sample as a Paimon append table ``lakestats.sample`` of a filesystem catalog
        whose warehouse is ``location``, partitioned as the table is; each create is one
        overwrite commit of the whole table (its snapshot is the sample's)."""
        from pypaimon import Schema

        catalog = self._sample_catalog(location)
        keys = list(self._table.partition_keys)
        try:
            sibling = catalog.get_table(_SAMPLE_NAME)
        except Exception:  # noqa: BLE001 - pypaimon's TableNotExistException: create it
            catalog.create_table(_SAMPLE_NAME, Schema.from_pyarrow_schema(rows.schema, keys), False)
            sibling = catalog.get_table(_SAMPLE_NAME)
        # the whole table, also the partitions the rows no longer have (Paimon's default
        # overwrite replaces only the partitions written)
        _commit(sibling.copy({_DYNAMIC_OVERWRITE: "false"}), rows)
        return self._sibling_record(catalog, location)

    def update_sample_table(
        self,
        rows: pa.Table,
        location: str,
        previous: dict,
        partitions: dict[str, dict[str, object]],
    ) -> dict | None:
        """Replace the sample table's ``partitions``: one dynamic-partition overwrite
        commit of ``rows`` (Paimon replaces exactly the partitions written) and, for
        partitions left without rows, one commit truncating them. None when the table is
        unpartitioned, or the sample table is gone or differs: the caller rewrites it."""
        keys = list(self._table.partition_keys)
        if not keys:
            return None
        catalog = self._sample_catalog(location)
        try:
            sibling = catalog.get_table(_SAMPLE_NAME)
        except Exception:  # noqa: BLE001 - pypaimon's TableNotExistException
            return None
        fields = sibling.table_schema.fields
        if list(sibling.partition_keys) != keys or [f.name for f in fields] != rows.schema.names:
            return None
        written = {
            tuple(to_json(row[k]) for k in keys)
            for row in rows.select(keys).group_by(keys).aggregate([]).to_pylist()
        }
        emptied = [
            {k: _typed(values.get(k), rows.schema.field(k).type) for k in keys}
            for values in partitions.values()
            if tuple(values.get(k) for k in keys) not in written
        ]
        if rows.num_rows:
            _commit(sibling.copy({_DYNAMIC_OVERWRITE: "true"}), rows)
        if emptied:
            commit = sibling.new_batch_write_builder().new_commit()
            try:
                commit.truncate_partitions(emptied)
            finally:
                commit.close()
        return self._sibling_record(catalog, location)

    def reader(self, snapshot_id: int | None = None) -> PartitionReader:
        partitions = self._partitions(snapshot_id)
        table = _at(self._table, snapshot_id)
        return PaimonReader(
            uri=self._uri,
            # pinned, so executors read what was planned even if a commit lands meanwhile
            snapshot_id=self.current_snapshot_id() if snapshot_id is None else snapshot_id,
            schema_id=table.table_schema.id,
            schema=self.schema(snapshot_id),
            primary_key=table.is_primary_key_table,
            raw_allowed=self._raw_allowed(table),
            merged=frozenset(p.plan.name for p in partitions if p.merged),
            partition_values=tuple((p.plan.name, p.typed) for p in partitions if p.merged),
            s3=self._s3,
        )
