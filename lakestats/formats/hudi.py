"""Apache Hudi tables through ``hudi`` (hudi-rs): the timeline gives snapshots, file slices
give partitions and files.

Snapshots are the completed commits of the timeline (``commit``, ``deltacommit``,
``replacecommit``); ``--snapshot <instant>`` reads as of that instant, so rolled-back and
inflight commits are never counted. A partition is a Hudi partition path; its data files
are the base files of its latest file slices and its delete files are their log files.
A file slice with only a base file is read directly with pyarrow (the fast path: base files
hold every column, meta columns included); a slice with log files goes through hudi-rs's
file group reader, which merges updates and deletes. What hudi-rs cannot read (table
versions before 6, ORC base files, bootstrap tables) is refused with one line. The change
log between two instants (``changed_files``, what ``sample refresh`` reads) comes from the
commit metadata of the completed instants in between, through hudi-rs's timeline.

Over 400 lines on purpose: one format's whole contract (timeline, planning, the two read
paths, samples).
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote

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
    SampleUnit,
    Slice,
    SnapshotInfo,
)
from lakestats.formats.parquet_dir import read_data_file
from lakestats.stats.keys import to_json

# Hudi's own log file name pattern (FSUtils): .<fileId>_<baseInstant>.log.<version>_<token>
_LOG_NAME = re.compile(r"^\.(?P<file_id>.+)_(?P<instant>[^_]*)\.(log|archive)\.\d+")
_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_PATH_FIELD = "_hoodie_partition_path"  # key field when a path cannot be split into fields
_DERIVED_KEYGENS = ("Timestamp", "Custom")  # partition values are not the column values


def _file_id(uri: str) -> str:
    """The file group of a base or log file, from its name (Hudi's naming convention)."""
    name = posixpath.basename(uri)
    match = _LOG_NAME.match(name)
    return match.group("file_id") if match else name.split("_")[0]


def _is_log(uri: str) -> bool:
    return _LOG_NAME.match(posixpath.basename(uri)) is not None


def _groups(part: Slice) -> list[tuple[DataFile | None, tuple[DataFile, ...]]]:
    """The file groups of a slice: (base file or None, its log files). Log files come from
    the slice or, for a slice of base files only, from its partition's delete files."""
    bases = [f for f in part.files if not _is_log(f.path)]
    logs = [f for f in part.files if _is_log(f.path)]
    if not logs:
        ids = {_file_id(f.path) for f in bases}
        logs = [f for f in part.partition.delete_files if _file_id(f.path) in ids]
    by_id: dict[str, list[DataFile]] = {}
    for log in sorted(logs, key=lambda f: f.path):
        by_id.setdefault(_file_id(log.path), []).append(log)
    groups = [(base, tuple(by_id.pop(_file_id(base.path), ()))) for base in bases]
    return groups + [(None, tuple(files)) for files in by_id.values()]


def _written(metadata: dict | None) -> Iterator[tuple[str, dict]]:
    """(partition path, write stat) of every file an instant's commit metadata wrote."""
    for partition, stats in ((metadata or {}).get("partitionToWriteStats") or {}).items():
        for stat in stats or []:
            if isinstance(stat, dict):
                yield stat.get("partitionPath") or partition or "", stat


def _conform(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` as ``target``: by name, missing columns null, types cast (Parquet list
    element names, meta columns' nullability)."""
    arrays = [
        table.column(f.name).cast(f.type)
        if f.name in table.column_names
        else pa.nulls(table.num_rows, f.type)
        for f in target
    ]
    return pa.Table.from_arrays(arrays, schema=target)


def _typed(raw: str | None, dtype: pa.DataType) -> object:
    """A partition path value as the column's type; the string when it does not cast."""
    if raw is None or raw == _DEFAULT_PARTITION:
        return None
    try:
        return pa.array([raw], pa.string()).cast(dtype)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return raw


def _hudi_error(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _open(uri: str, storage_options: dict[str, str]):  # noqa: ANN202 - hudi's HudiTable
    from hudi import HudiTableBuilder

    builder = HudiTableBuilder.from_base_uri(uri)
    if storage_options:
        builder = builder.with_storage_options(storage_options)
    return builder.build()


def _read_options(as_of: str | None):  # noqa: ANN202 - hudi's HudiReadOptions
    from hudi import HudiReadOptions

    options = HudiReadOptions()
    return options if as_of is None else options.with_as_of_timestamp(as_of)


@dataclass(frozen=True)
class HudiMergingReader(PartitionReader):
    """Reads file slices with log files through hudi-rs's file group reader, which merges
    the logs' updates and deletes into the base file (or reads log-only file groups)."""

    uri: str
    schema: pa.Schema
    as_of: str | None = None
    storage_options: tuple[tuple[str, str], ...] = ()

    def read(self, part: Slice, columns: list[str] | None) -> pa.Table:
        target = pa.schema([f for f in self.schema if columns is None or f.name in columns])
        try:
            table = _open(self.uri, dict(self.storage_options))
            options = _read_options(self.as_of)
            reader = table.create_file_group_reader_with_options(options)
            batches = [
                reader.read_file_slice_from_paths(
                    self._relative(base.path) if base else "",
                    [self._relative(log.path) for log in logs],
                    options,
                )
                for base, logs in _groups(part)
            ]
        except Exception as exc:
            raise DataFileError(
                f"hudi-rs could not read partition {part.partition.name or '(all)'} of "
                f"{self.uri}: {_hudi_error(exc)}"
            ) from exc
        tables = [_conform(pa.Table.from_batches([b]), target) for b in batches if b.num_rows]
        return pa.concat_tables(tables) if tables else target.empty_table()

    def _relative(self, uri: str) -> str:
        return uri[len(self.uri) :].lstrip("/")


@dataclass(frozen=True)
class HudiReader(PartitionReader):
    """Base files without log files read directly with pyarrow; the rest via ``merging``."""

    schema: pa.Schema
    merging: HudiMergingReader
    fill: tuple[str, ...] = ()  # partition columns dropped from the files: from the path
    s3: fs.S3Options | None = None

    def read(self, part: Slice, columns: list[str] | None) -> pa.Table:
        target = pa.schema([f for f in self.schema if columns is None or f.name in columns])
        groups = _groups(part)
        direct = [base for base, logs in groups if base is not None and not logs]
        merged = tuple(f for base, logs in groups if logs for f in (base, *logs) if f)
        tables = [self._read_base(part, base, target) for base in direct]
        if merged:
            tables.append(self.merging.read(Slice(part.partition, merged), columns))
        return pa.concat_tables(tables) if tables else target.empty_table()

    def _read_base(self, part: Slice, base: DataFile, target: pa.Schema) -> pa.Table:
        table = read_data_file(base.path, target.names, part, self.s3)
        raw = dict(part.partition.key)
        for name in self.fill:
            if name in target.names and name not in table.column_names:
                value = raw.get(name)
                value = None if value == _DEFAULT_PARTITION else value
                typed = pa.array([value], pa.string()).cast(target.field(name).type)[0]
                table = table.append_column(name, pa.repeat(typed, table.num_rows))
        return _conform(table, target)


class HudiTableFormat(PathTable):
    format_name = "hudi"

    def __init__(self, uri: str, s3: fs.S3Options | None = None) -> None:
        self._uri = fs.normalize(uri)
        self._s3 = s3
        self._storage = fs.object_store_options(s3)
        try:
            self._table = _open(self._uri, self._storage)
        except Exception as exc:
            message = _hudi_error(exc)
            if "support" in message.lower():
                raise UnsupportedFeatureError(
                    f"Hudi table {uri} cannot be read by hudi-rs: {message}"
                ) from exc
            raise NotATableError(f"cannot open Hudi table {uri}: {message}") from exc
        self._options = self._table.hudi_options()
        self._check_supported()
        self._stats: tuple[dict[str, int], dict[str, int]] | None = None
        self._log: list[tuple[int, dict | None]] | None = None

    def _check_supported(self) -> None:
        if self._options.get("hoodie.bootstrap.base.path"):
            raise UnsupportedFeatureError(
                f"Hudi table {self._uri} is a bootstrap table (hoodie.bootstrap.base.path), "
                "which this version does not support"
            )
        if self._drops_partition_columns() and any(self._derived(f) for f in self._fields()):
            raise UnsupportedFeatureError(
                f"Hudi table {self._uri} drops its timestamp-based partition columns from its "
                "data files (hoodie.datasource.write.drop.partition.columns), which this "
                "version does not support"
            )

    def statistics_root_refusal(self, root: str) -> str | None:
        """hudi-rs takes every file under the base path but ``.hoodie/``'s for a partition's,
        so a partitioned table with statistics inside it could not be listed again."""
        base = fs.normalize(self._uri).rstrip("/") + "/"
        inside = fs.normalize(root).rstrip("/") + "/"
        if not self._fields() or not inside.startswith(base):
            return None
        return (
            f"statistics at {root} would be inside the partitioned Hudi table {self._uri}, "
            "where hudi-rs reads every file but .hoodie/'s as the table's: pass a "
            "--stats-root outside the table (e.g. beside it)"
        )

    def _option(self, key: str, default: str = "") -> str:
        """A table property; hudi-rs keeps Java properties escapes (``ts\\:timestamp``)."""
        return re.sub(r"\\(.)", r"\1", self._options.get(key, default))

    def _fields(self) -> list[str]:
        raw = self._option("hoodie.table.partition.fields")
        return [f.split(":")[0].strip() for f in raw.split(",") if f.strip()]

    def _derived(self, name: str) -> bool:
        """Whether the partition value is computed from the column (timestamp key
        generators) rather than being the column value itself."""
        keygen = self._option("hoodie.table.keygenerator.class") + self._option(
            "hoodie.table.keygenerator.type"
        )
        raw = self._option("hoodie.table.partition.fields")
        custom = {f.split(":")[0].strip(): f.partition(":")[2] for f in raw.split(",")}
        if "custom" in keygen.lower() and custom.get(name):
            return custom[name].strip().lower() == "timestamp"
        return any(kind.lower() in keygen.lower() for kind in _DERIVED_KEYGENS)

    def _drops_partition_columns(self) -> bool:
        value = self._option("hoodie.datasource.write.drop.partition.columns", "false")
        return value.lower() == "true"

    def schema(self, snapshot_id: int | None = None) -> pa.Schema:
        """Meta columns first, then the table's columns: what hudi-rs's reads return."""
        return self._table.get_schema_with_meta_fields()

    def native_types(self, snapshot_id: int | None = None) -> dict[str, str]:
        """The Avro types of the table's schema (its top-level and record fields)."""
        import json

        from lakestats.stats.leaves import leaf_name

        out: dict[str, str] = {}

        def walk(path: tuple[str, ...], kind: object) -> None:
            if isinstance(kind, list):  # a union: the non-null branch
                branches = [k for k in kind if k != "null"]
                kind = branches[0] if len(branches) == 1 else kind
            if isinstance(kind, dict) and kind.get("type") == "record":
                for child in kind.get("fields", []):
                    walk((*path, child["name"]), child["type"])
                return
            if isinstance(kind, dict):
                kind = kind.get("logicalType") or kind.get("type")
            out[leaf_name(path)] = kind if isinstance(kind, str) else json.dumps(kind)

        schema = json.loads(self._table.get_schema_in_avro_str_with_meta_fields())
        for field in schema.get("fields", []):
            walk((field["name"],), field["type"])
        return out

    def snapshots(self) -> list[SnapshotInfo]:
        timeline = self._table.get_timeline()
        instants = {
            i.timestamp: i
            for get in (
                timeline.get_completed_commits,
                timeline.get_completed_deltacommits,
                timeline.get_completed_replacecommits,
            )
            for i in get()
        }
        result, parent = [], None
        for stamp in sorted(instants, key=int):
            instant = instants[stamp]
            result.append(
                SnapshotInfo(
                    int(stamp), instant.epoch_mills, None, parent, {"action": instant.action}
                )
            )
            parent = int(stamp)
        return result

    def current_snapshot_id(self) -> int | None:
        snapshots = self.snapshots()
        return snapshots[-1].snapshot_id if snapshots else None

    def _as_of(self, snapshot_id: int | None) -> str | None:
        """The instant to read as of; a snapshot must be a completed commit."""
        if snapshot_id is None:
            return None
        known = [s.snapshot_id for s in self.snapshots()]
        if snapshot_id not in known:
            raise SnapshotNotFoundError(
                f"snapshot {snapshot_id} is not a completed commit of Hudi table {self._uri}; "
                f"latest commits: {known[-5:]}"
            )
        return str(snapshot_id)

    def _commit_log(self) -> list[tuple[int, dict | None]]:
        """The completed write instants of the active timeline, oldest first, each with its
        commit metadata (hudi-rs decodes the JSON and, from table version 8, Avro files);
        None where the metadata cannot be read. Read once per opened table."""
        if self._log is None:
            timeline = self._table.get_timeline()
            instants = {
                int(i.timestamp): i
                for get in (
                    timeline.get_completed_commits,
                    timeline.get_completed_deltacommits,
                    timeline.get_completed_replacecommits,
                    timeline.get_completed_clustering_commits,
                )
                for i in get()
            }
            log: list[tuple[int, dict | None]] = []
            for stamp in sorted(instants):
                try:
                    metadata = json.loads(timeline.get_instant_metadata_in_json(instants[stamp]))
                except Exception:  # noqa: BLE001 - unreadable: the callers degrade
                    metadata = None
                log.append((stamp, metadata if isinstance(metadata, dict) else None))
            self._log = log
        return self._log

    def _write_stats(self) -> tuple[dict[str, int], dict[str, int]]:
        """From the commits' write statistics: rows of each base file, and the first
        instant that wrote each log file (both by relative path)."""
        if self._stats is None:
            counts: dict[str, int] = {}
            written: dict[str, int] = {}
            for stamp, metadata in self._commit_log():
                for _, stat in _written(metadata):
                    path, rows = stat.get("path"), stat.get("numWrites")
                    if path and _is_log(path):
                        written[path] = min(stamp, written.get(path, stamp))
                    elif path and rows is not None:
                        counts[path] = int(rows)
            self._stats = counts, written
        return self._stats

    def changed_files(self, from_snapshot: int | None, to_snapshot: int | None) -> set[str] | None:
        """Hudi's change log: the files that the completed instants after ``from_snapshot``
        up to ``to_snapshot`` wrote (``partitionToWriteStats`` paths: base files, log
        files) and every file the active timeline knows of each file group they wrote to or
        replaced (``partitionToReplaceFileIds``: insert overwrite, clustering), so a file
        slice's previous version is named too (a file group never leaves its partition).
        None when either instant is not a completed instant of the active timeline
        (archived), when an instant's metadata cannot be read, or when a replaced file
        group's files are unknown (written by an archived instant): callers then compare
        file lists."""
        if from_snapshot is None or to_snapshot is None or from_snapshot > to_snapshot:
            return None
        log = [(stamp, metadata) for stamp, metadata in self._commit_log() if stamp <= to_snapshot]
        stamps = {stamp for stamp, _ in log}
        if from_snapshot not in stamps or to_snapshot not in stamps:
            return None
        history: dict[tuple[str, str], set[str]] = {}  # file group -> files written to it
        changed: set[str] = set()
        groups: set[tuple[str, str]] = set()
        replaced: set[tuple[str, str]] = set()
        for stamp, metadata in log:
            if metadata is None:
                if stamp > from_snapshot:
                    return None
                continue
            for partition, stat in _written(metadata):
                group = (partition, str(stat.get("fileId") or _file_id(stat.get("path") or "")))
                if not stat.get("path"):
                    if stamp > from_snapshot:
                        return None
                    continue
                history.setdefault(group, set()).add(stat["path"])
                if stamp > from_snapshot:
                    changed.add(stat["path"])
                    groups.add(group)
            if stamp > from_snapshot:
                for partition, ids in (metadata.get("partitionToReplaceFileIds") or {}).items():
                    replaced.update((partition, str(file_id)) for file_id in ids or [])
        if any(group not in history for group in replaced):
            return None
        for group in groups | replaced:
            changed |= history[group]
        return changed

    def _uncommitted(self, relative: str, written: dict[str, int]) -> bool:
        """Whether a log file was written by no completed instant although its instant is
        on the active timeline (an inflight or rolled-back write); a log file from before
        the active timeline (its writer archived) counts as committed."""
        if relative in written:
            return False
        match = _LOG_NAME.match(posixpath.basename(relative))
        log = self._commit_log()
        if not match or not match.group("instant").isdigit() or not log:
            return False
        return int(match.group("instant")) >= log[0][0]

    def _key(self, path: str) -> tuple[tuple[str, str], ...]:
        """(field, value) pairs of a partition path: hive-style ``f=v`` segments, plain
        segments matched to the partition fields, else the whole path."""
        if not path:
            return ()
        fields = self._fields()
        segments = path.split("/")
        decode = self._option("hoodie.datasource.write.partitionpath.urlencode") == "true"

        def clean(value: str) -> str:
            return unquote(value) if decode else value

        if all("=" in s for s in segments) and (
            not fields or [s.partition("=")[0] for s in segments] == fields
        ):
            return tuple((s.partition("=")[0], clean(s.partition("=")[2])) for s in segments)
        if len(segments) == len(fields):
            return tuple(
                (f, clean(s.removeprefix(f"{f}="))) for f, s in zip(fields, segments, strict=True)
            )
        if len(fields) == 1:
            return ((fields[0], clean(path.removeprefix(f"{fields[0]}="))),)
        return ((_PATH_FIELD, clean(path)),)

    def _values(self, key: tuple[tuple[str, str], ...]) -> dict[str, object]:
        schema = self._table.get_schema()
        values: dict[str, object] = {}
        for name, raw in key:
            if name in schema.names and not self._derived(name):
                values[name] = to_json(_typed(raw, schema.field(name).type))
            else:
                values[name] = None if raw == _DEFAULT_PARTITION else raw
        return values

    def plan(self, snapshot_id: int | None = None) -> list[PartitionPlan]:
        as_of = self._as_of(snapshot_id)
        try:
            slices = self._table.get_file_slices(_read_options(as_of))
        except Exception as exc:
            inside = fs.join(self._uri, "_lakestats")
            if self._fields() and fs.is_dir(inside, self._s3):
                raise UnsupportedFeatureError(
                    f"hudi-rs could not list the file slices of {self._uri}: {_hudi_error(exc)}; "
                    f"lakestats' statistics at {inside} are inside the table, where hudi-rs "
                    "takes every file but .hoodie/'s for a partition's: keep a partitioned "
                    "Hudi table's statistics outside it (--stats-root)"
                ) from exc
            raise LakestatsError(
                f"hudi-rs could not list the file slices of {self._uri}: {_hudi_error(exc)}"
            ) from exc
        counts, written = self._write_stats()
        groups: dict[str, tuple[list[DataFile], list[DataFile]]] = {}
        for s in slices:
            bases, logs = groups.setdefault(s.partition_path, ([], []))
            if s.base_file_name:
                relative = s.base_file_relative_path()
                uri = fs.join(self._uri, *relative.split("/"))
                bases.append(DataFile(uri, s.base_file_size, counts.get(relative)))
            for relative, size in zip(s.log_files_relative_paths(), s.log_file_sizes, strict=True):
                # hudi-rs lists log files written after the instant or by a write still in
                # flight (and skips their blocks when reading): leave them out, so the
                # fingerprint is that of the instant and changes when such a write commits
                if self._uncommitted(relative, written) or (
                    as_of is not None and written.get(relative, 0) > int(as_of)
                ):
                    continue
                logs.append(DataFile(fs.join(self._uri, *relative.split("/")), size))
        plans = []
        for path, (bases, logs) in sorted(groups.items()):
            key = self._key(path)
            rows = [f.record_count for f in bases]
            plans.append(
                PartitionPlan(
                    key=key,
                    values=self._values(key),
                    data_files=tuple(sorted(bases, key=lambda f: f.path)),
                    delete_files=tuple(sorted(logs, key=lambda f: f.path)),
                    # logs hold updates and deletes: only a merge says how many rows remain
                    row_count=None if logs or None in rows else sum(rows),
                )
            )
        return plans

    def slices(self, partition: PartitionPlan, max_slice_bytes: int) -> list[Slice]:
        """Whole file groups (base file and its logs) per slice: logs merge into their base."""
        units = [
            [base, *logs] if base else list(logs)
            for base, logs in _groups(
                Slice(partition, partition.data_files + partition.delete_files)
            )
        ]
        batches: list[list[DataFile]] = [[]]
        size = 0
        for unit in sorted(units, key=lambda u: u[0].path):
            unit_size = sum(f.size_bytes for f in unit)
            if batches[-1] and size + unit_size > max_slice_bytes:
                batches.append([])
                size = 0
            batches[-1].extend(unit)
            size += unit_size
        return [
            Slice(partition, tuple(batch), index, len(batches))
            for index, batch in enumerate(batches)
        ]

    def sample_units(
        self, partition: PartitionPlan, snapshot_id: int | None = None
    ) -> list[SampleUnit]:
        """One unit per file group (its base file and log files): a log file holds updates
        and deletes of its own file group only, so an upsert re-reads the groups it wrote."""
        return [SampleUnit.of(self.location, piece, ()) for piece in self.slices(partition, 1)]

    def reader(self, snapshot_id: int | None = None) -> PartitionReader:
        schema = self.schema(snapshot_id)
        merging = HudiMergingReader(
            self._uri, schema, self._as_of(snapshot_id), tuple(sorted(self._storage.items()))
        )
        fill = tuple(self._fields()) if self._drops_partition_columns() else ()
        return HudiReader(schema, merging, fill, self._s3)
