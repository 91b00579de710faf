"""Delta Lake tables through ``deltalake`` (delta-rs): the log gives partitions and files.

Partitions are the add actions grouped by partition values (typed by the log); data files
are read directly with pyarrow (the fast path) and partition columns filled from the log,
in table order. Versions are snapshots (``--snapshot N`` is ``DeltaTable(version=N)``).
Deletion vectors keep the fast path: a file that has one is read directly too and its rows
filtered by the keep mask delta-rs decodes (``DeltaTable.deletion_vectors``); files without
one are read as they are. Column mapping by name stays on the fast path too: files are read
under the physical names the schema records and relabelled (``delta_columns.py``); mapping
by field id goes through delta-rs's own query engine (``QueryBuilder``), one whole
partition per task. Any other unknown reader feature is refused with one line naming it,
never read with wrong numbers.

Over 400 lines on purpose: one format's whole contract (log, planning, deletion vectors,
column mapping, samples).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats import fs
from lakestats.errors import (
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
    SampleUnit,
    Slice,
    SnapshotInfo,
    TableFormat,
)
from lakestats.formats.parquet_dir import ParquetDirReader, decoded_where_files_differ
from lakestats.stats.keys import to_json

SUPPORTED_READER_FEATURES = {"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"}


@dataclass(frozen=True)
class DeltaMergingReader(PartitionReader):
    """Reads a whole partition with delta-rs's engine (deletion vectors, column mapping)."""

    uri: str
    version: int
    partition_columns: tuple[str, ...]
    storage_options: tuple[tuple[str, str], ...] = ()

    def read(self, part: Slice, columns: list[str] | None) -> pa.Table:
        from deltalake import DeltaTable, QueryBuilder

        table = DeltaTable(
            self.uri, version=self.version, storage_options=dict(self.storage_options) or None
        )
        wanted = "*" if columns is None else ", ".join(_quote(c) for c in columns)
        values = part.partition.values
        where = " AND ".join(_predicate(c, values.get(c)) for c in self.partition_columns)
        sql = f"SELECT {wanted} FROM t" + (f" WHERE {where}" if where else "")
        try:
            result = QueryBuilder().register("t", table).execute(sql)
            return pa.table(result.read_all() if hasattr(result, "read_all") else result)
        except Exception as exc:
            from lakestats.errors import DataFileError
            from lakestats.formats.parquet_dir import unreadable_file

            bad = unreadable_file([f.path for f in part.files])
            if bad is not None:  # name the file, not only its partition
                raise DataFileError(
                    f"cannot read data file {bad} (partition "
                    f"{part.partition.name or '(all)'}); repair or remove the file"
                ) from exc
            raise DataFileError(
                f"delta-rs could not read partition {part.partition.name or '(all)'} of "
                f"{self.uri}: {str(exc).splitlines()[0]}"
            ) from exc


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _predicate(column: str, value: object) -> str:
    if value is None:
        return f"{_quote(column)} IS NULL"
    if isinstance(value, bool):
        return f"{_quote(column)} = {str(value).upper()}"
    if isinstance(value, int | float):
        return f"{_quote(column)} = {value}"
    text = str(value).replace("'", "''")
    return f"CAST({_quote(column)} AS VARCHAR) = '{text}'"


DV_MARKER = "#deletion-vector"
"""Suffix of the pseudo delete file that stands for a data file's deletion vector in a
plan: its size is the number of deleted rows, so the fingerprint changes with the vector."""


def _vector_file(url: str) -> str:
    """A ``deletion_vectors()`` file URL as ``file_uris()`` spells it: the URL is percent-
    encoded once more (``%3A`` in a Spark partition directory arrives as ``%253A``)."""
    parsed = urlparse(url)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path)
    return f"{parsed.scheme}://{parsed.netloc}{unquote(parsed.path)}"


def deletion_vector_counts(table) -> dict[str, int]:  # noqa: ANN001 - a deltalake DeltaTable
    """Data file -> rows its deletion vector deletes (files without one are absent)."""
    vectors = pa.table(table.deletion_vectors())
    if vectors.num_rows == 0:
        return {}
    masks = vectors.column("selection_vector").combine_chunks()
    deleted = pc.invert(pc.list_flatten(masks))
    parents = pc.list_parent_indices(masks).to_numpy(zero_copy_only=False)
    counts = np.bincount(
        parents, weights=deleted.to_numpy(zero_copy_only=False), minlength=len(masks)
    )
    paths = vectors.column("filepath").to_pylist()
    return {_vector_file(p): int(c) for p, c in zip(paths, counts, strict=True)}


@lru_cache(maxsize=4)
def _keep_masks(
    uri: str, version: int, storage: tuple[tuple[str, str], ...]
) -> dict[str, pa.Array]:
    """Data file -> its keep mask (True = live row), decoded by delta-rs, once per process."""
    from deltalake import DeltaTable

    table = DeltaTable(uri, version=version, storage_options=dict(storage) or None)
    vectors = pa.table(table.deletion_vectors())
    masks = vectors.column("selection_vector").to_pylist()
    paths = vectors.column("filepath").to_pylist()
    return {_vector_file(p): pa.array(m, pa.bool_()) for p, m in zip(paths, masks, strict=True)}


@dataclass(frozen=True)
class DeltaReader(PartitionReader):
    """Reads data files directly; partition columns come from the log, in table order.
    Files with a deletion vector are filtered by its keep mask."""

    files: ParquetDirReader
    order: tuple[str, ...]
    uri: str = ""
    version: int = 0
    storage_options: tuple[tuple[str, str], ...] = ()
    physical: tuple[tuple[str, str], ...] = ()  # column mapping: (logical, physical) names
    logical: pa.Schema | None = None  # the table schema, when files use physical names

    def read(self, part: Slice, columns: list[str] | None) -> pa.Table:
        if not self.physical:
            return self._read(part, columns)
        from lakestats.formats.delta_columns import relabel

        to_physical = dict(self.physical)
        wanted = None if columns is None else [to_physical.get(c, c) for c in columns]
        table = self._read(part, wanted)
        to_logical = {p: n for n, p in self.physical}
        arrays, fields = [], []
        for name in table.column_names:
            field = self.logical.field(to_logical.get(name, name))
            arrays.append(relabel(table.column(name), field.type))
            fields.append(field)
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def read_encoded(self, part: Slice, columns: list[str] | None) -> pa.Table:
        if self.physical:  # relabelled columns come decoded
            return self.read(part, columns)
        return self._read(part, columns, encoded=True).unify_dictionaries()

    def _read(self, part: Slice, columns: list[str] | None, encoded: bool = False) -> pa.Table:
        read = self.files.read_encoded if encoded else self.files.read
        vectors = {
            f.path.removesuffix(DV_MARKER)
            for f in part.partition.delete_files
            if f.path.endswith(DV_MARKER)
        }
        if not vectors & {f.path for f in part.files}:
            return self._ordered(read(part, columns))
        masks = _keep_masks(self.uri, self.version, self.storage_options)
        pieces = []
        for data_file in part.files:
            table = read(Slice(part.partition, (data_file,)), columns)
            if data_file.path in vectors:
                table = table.filter(_padded(masks[data_file.path], table.num_rows))
            pieces.append(table)
        return self._ordered(pa.concat_tables(decoded_where_files_differ(pieces)))

    def _ordered(self, table: pa.Table) -> pa.Table:
        """Columns in table order (under physical names until ``read`` relabels them)."""
        to_physical = dict(self.physical)
        names = [to_physical.get(n, n) for n in self.order]
        return table.select([n for n in names if n in table.column_names])


def _padded(mask: pa.Array, rows: int) -> pa.Array:
    """A keep mask as long as the file (rows past the vector's end are live)."""
    if len(mask) >= rows:
        return mask.slice(0, rows)
    return pa.concat_arrays([mask, pa.array(np.ones(rows - len(mask), dtype=bool))])


class DeltaTableFormat(PathTable):
    format_name = "delta"
    writes_sample_table = True

    def __init__(self, uri: str, s3: fs.S3Options | None = None) -> None:
        from deltalake import DeltaTable

        self._uri = fs.normalize(uri)
        self._s3 = s3
        self._storage = fs.object_store_options(s3) or None
        try:
            self._table = DeltaTable(self._uri, storage_options=self._storage)
        except Exception as exc:
            raise NotATableError(f"cannot open Delta table {uri}: {exc}") from exc
        self._versions: dict[int, object] = {}

    def _at(self, snapshot_id: int | None):  # noqa: ANN202
        if snapshot_id is None:
            return self._table
        if snapshot_id not in self._versions:
            from deltalake import DeltaTable

            latest = self.current_snapshot_id()
            if latest is None or not 0 <= snapshot_id <= latest:  # delta-rs searches ~60 s
                raise SnapshotNotFoundError(
                    f"version {snapshot_id} of Delta table {self._uri} does not exist "
                    f"(never written); its latest is {latest}"
                )
            try:
                self._versions[snapshot_id] = DeltaTable(
                    self._uri, version=snapshot_id, storage_options=self._storage
                )
            except Exception as exc:
                if snapshot_id not in {s.snapshot_id for s in self.snapshots()}:
                    raise SnapshotNotFoundError(
                        f"version {snapshot_id} of Delta table {self._uri} does not exist "
                        f"(expired or never written); its latest is {self.current_snapshot_id()}"
                    ) from exc
                raise LakestatsError(
                    f"version {snapshot_id} of Delta table {self._uri} cannot be loaded: {exc}"
                ) from exc
        return self._versions[snapshot_id]

    @staticmethod
    def _mapping_mode(table) -> str:  # noqa: ANN001
        return table.metadata().configuration.get("delta.columnMapping.mode") or "none"

    def _needs_engine(self, table) -> bool:  # noqa: ANN001
        """Column mapping by field id: files are matched to columns by Parquet field ids,
        which delta-rs's engine does (``name`` mode is read on the fast path)."""
        return self._mapping_mode(table) not in ("none", "name")

    @staticmethod
    def _has_deletion_vectors(table) -> bool:  # noqa: ANN001
        return "deletionVectors" in set(table.protocol().reader_features or [])

    def _check_supported(self, table) -> None:  # noqa: ANN001
        protocol = table.protocol()
        features = set(protocol.reader_features or [])
        unknown = features - SUPPORTED_READER_FEATURES - {"deletionVectors", "columnMapping"}
        if unknown:
            raise UnsupportedFeatureError(
                f"Delta table {self._uri} needs reader features {sorted(unknown)}, which "
                "this version does not support"
            )

    def schema(self, snapshot_id: int | None = None) -> pa.Schema:
        return pa.schema(self._at(snapshot_id).schema().to_arrow())

    def schema_id(self, snapshot_id: int | None = None) -> int | None:
        return None

    def native_types(self, snapshot_id: int | None = None) -> dict[str, str]:
        from lakestats.stats.leaves import leaf_name

        out: dict[str, str] = {}

        def walk(path: tuple[str, ...], kind: object) -> None:
            fields = getattr(kind, "fields", None)
            if fields:
                for child in fields:
                    walk((*path, child.name), child.type)
            else:
                out[leaf_name(path)] = _delta_type_text(kind)

        for field in self._at(snapshot_id).schema().fields:
            walk((field.name,), field.type)
        return out

    def current_snapshot_id(self) -> int | None:
        return self._table.version()

    def snapshots(self) -> list[SnapshotInfo]:
        return [
            SnapshotInfo(
                h["version"],
                h.get("timestamp", 0),
                None,
                h["version"] - 1 if h["version"] else None,
            )
            for h in self._table.history()
        ]

    def _actions(self, snapshot_id: int | None) -> tuple[list[dict], list[str]]:
        table = self._at(snapshot_id)
        self._check_supported(table)
        actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
        uris = table.file_uris()
        if len(uris) != len(actions):
            raise LakestatsError(f"Delta log of {self._uri} lists files inconsistently")
        for action, uri in zip(actions, uris, strict=True):
            if not (uri.endswith(action["path"]) or uri.endswith(unquote(action["path"]))):
                raise LakestatsError(f"Delta file {action['path']} does not match {uri}")
        return actions, uris

    def plan(self, snapshot_id: int | None = None) -> list[PartitionPlan]:
        actions, uris = self._actions(snapshot_id)
        table = self._at(snapshot_id)
        names = table.metadata().partition_columns
        # deletion vectors: the log's record counts include deleted rows
        counts_known = not self._needs_engine(table)
        deleted = deletion_vector_counts(table) if self._has_deletion_vectors(table) else {}
        groups: dict[tuple, list[DataFile]] = {}
        vectors: dict[tuple, list[DataFile]] = {}
        for action, uri in zip(actions, uris, strict=True):
            values = tuple(action.get(f"partition.{n}") for n in names)
            groups.setdefault(values, []).append(
                DataFile(uri, action["size_bytes"], action.get("num_records"))
            )
            if uri in deleted:
                count = deleted.pop(uri)
                vectors.setdefault(values, []).append(DataFile(uri + DV_MARKER, count, count))
        if deleted:  # a vector for a file the log does not list: never read rows it deletes
            raise LakestatsError(
                f"Delta table {self._uri}: deletion vectors of {sorted(deleted)[:3]} match no "
                "data file of the snapshot; cannot apply them"
            )
        plans = []
        for values, files in sorted(groups.items(), key=lambda kv: [str(v) for v in kv[0]]):
            key = tuple(
                (n, "__HIVE_DEFAULT_PARTITION__" if v is None else str(to_json(v)))
                for n, v in zip(names, values, strict=True)
            )
            counts = [f.record_count for f in files] if counts_known else [None]
            dropped = vectors.get(values, [])
            plans.append(
                PartitionPlan(
                    key=key,
                    values={n: to_json(v) for n, v in zip(names, values, strict=True)},
                    data_files=tuple(files),
                    delete_files=tuple(dropped),
                    row_count=(
                        None if None in counts else sum(counts) - sum(d.size_bytes for d in dropped)
                    ),
                )
            )
        return plans

    def slices(self, partition: PartitionPlan, max_slice_bytes: int) -> list[Slice]:
        if self._needs_engine(self._table):
            return [Slice(partition, partition.data_files)]  # the engine reads whole partitions
        return TableFormat.slices(partition, max_slice_bytes)

    def sample_units(
        self, partition: PartitionPlan, snapshot_id: int | None = None
    ) -> list[SampleUnit]:
        """One unit per data file with its own deletion vector (the engine path reads
        whole partitions: one unit)."""
        units = []
        for piece in self.slices(partition, 1):
            own = {f.path for f in piece.files}
            deletes = tuple(
                d for d in partition.delete_files if d.path.removesuffix(DV_MARKER) in own
            )
            units.append(SampleUnit.of(self.location, piece, deletes))
        return units

    def changed_files(self, from_snapshot: int | None, to_snapshot: int | None) -> set[str] | None:
        """The change log between two versions: the paths of the ``add`` and ``remove``
        actions of the commits after ``from_snapshot`` up to ``to_snapshot`` (a file that
        gained a deletion vector is removed and added again), relative to the table. None
        when a commit file is gone (expired)."""
        import json

        if from_snapshot is None or to_snapshot is None:
            return None
        changed = set()
        for version in range(from_snapshot + 1, to_snapshot + 1):
            uri = fs.join(self._uri, "_delta_log", f"{version:020d}.json")
            try:
                lines = fs.read_bytes(uri, self._s3).decode().splitlines()
            except (FileNotFoundError, OSError):
                return None
            for line in filter(None, lines):
                action = json.loads(line)
                for kind in ("add", "remove"):
                    if kind in action:
                        changed.add(unquote(action[kind]["path"]))
        return changed

    def write_sample_table(self, rows: pa.Table, location: str, previous: dict | None) -> dict:
        """The sample as a Delta table at ``location``, partitioned as the table is; each
        create or refresh is one overwrite commit (its version is the sample's)."""
        from deltalake import DeltaTable, write_deltalake

        partitions = list(self._table.metadata().partition_columns) or None
        write_deltalake(
            location, rows, mode="overwrite", partition_by=partitions,
            schema_mode="overwrite", storage_options=self._storage,
        )
        version = DeltaTable(location, storage_options=self._storage).version()
        return {"format": "delta", "location": location, "version": version,
                "snapshot_id": version}

    def update_sample_table(
        self,
        rows: pa.Table,
        location: str,
        previous: dict,
        partitions: dict[str, dict[str, object]],
    ) -> dict | None:
        """Replace the sample table's ``partitions`` by ``rows`` in one overwrite commit
        whose predicate selects those partitions (delta-rs removes their files only). None
        when the sample table is gone, its schema or partitioning differs, or a partition
        value has no exact SQL literal: the caller rewrites it."""
        from deltalake import DeltaTable, write_deltalake

        from lakestats.formats.delta_predicate import partition_predicate

        names = list(self._table.metadata().partition_columns)
        if not names:
            return None
        try:
            sibling = DeltaTable(location, storage_options=self._storage)
        except Exception:  # noqa: BLE001 - deltalake's TableNotFoundError: write it whole
            return None
        if list(sibling.metadata().partition_columns) != names or [
            f.name for f in sibling.schema().fields
        ] != rows.schema.names:
            return None
        predicate = partition_predicate(list(partitions.values()), rows.schema, names)
        if predicate is None:
            return None
        write_deltalake(
            location, rows, mode="overwrite", predicate=predicate, partition_by=names,
            storage_options=self._storage,
        )
        version = DeltaTable(location, storage_options=self._storage).version()
        return {"format": "delta", "location": location, "version": version,
                "snapshot_id": version}

    def reader(self, snapshot_id: int | None = None) -> PartitionReader:
        table = self._at(snapshot_id)
        if self._needs_engine(table):
            return DeltaMergingReader(
                self._uri,
                table.version(),
                tuple(table.metadata().partition_columns),
                tuple(sorted(fs.object_store_options(self._s3).items())),
            )
        schema = self.schema(snapshot_id)
        names = set(table.metadata().partition_columns)
        files = pa.schema([f for f in schema if f.name not in names])
        partitions = pa.schema([f for f in schema if f.name in names])
        physical: tuple[tuple[str, str], ...] = ()
        if self._mapping_mode(table) == "name":
            from lakestats.formats.delta_columns import physical_schema

            mapped = physical_schema(table.schema().to_json(), schema)
            physical = tuple(
                (f.name, p.name) for f, p in zip(schema, mapped, strict=True) if f.name not in names
            )
            files = pa.schema(
                [p for f, p in zip(schema, mapped, strict=True) if f.name not in names]
            )
        return DeltaReader(
            ParquetDirReader(files, partitions, self._s3),
            tuple(schema.names),
            self._uri,
            table.version(),
            tuple(sorted(fs.object_store_options(self._s3).items())),
            physical,
            schema if physical else None,
        )


def _delta_type_text(kind: object) -> str:
    """A Delta type as the log writes it: ``long``, ``decimal(10,2)``, ``array<string>``."""
    if hasattr(kind, "element_type"):
        return f"array<{_delta_type_text(kind.element_type)}>"
    if hasattr(kind, "key_type"):
        return f"map<{_delta_type_text(kind.key_type)},{_delta_type_text(kind.value_type)}>"
    text = getattr(kind, "type", None)
    return str(text) if text is not None else "struct"
