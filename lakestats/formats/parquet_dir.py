"""Plain Parquet directories with hive-style ``key=value/`` partitions.

The partition columns are part of the table (after the file columns, as Spark and
pyarrow read them); their types are inferred as pyarrow's hive discovery infers them:
the first file's schema, then each partition field as ``int32`` when every value parses
as one, else ``string``. That rule is applied here without ``pyarrow.dataset`` (whose
import loads pandas: a lookup would pay a second for it); a case it is not sure of
(a value like ``+5``, a field whose values are all null, a partition field also stored
in the files) asks ``pyarrow.dataset`` itself.
An unpartitioned directory is one partition.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.errors import DataFileError, LakestatsError, NotATableError
from lakestats.formats.base import (
    DataFile,
    PartitionPlan,
    PartitionReader,
    PathTable,
    Slice,
)
from lakestats.stats.keys import to_json

_HIDDEN = ("_", ".")
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_INT = re.compile(r"-?[0-9]+")  # what Arrow's int32 parser takes (when in range)
_UNSURE = re.compile(r"\+[0-9]+")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _uri(base_uri: str, base_path: str, path: str) -> str:
    relative = posixpath.relpath(path, base_path)
    return fs.join(base_uri, *relative.split("/"))


INT96_UNIT = "us"
"""The unit INT96 timestamps are read in (files written by Spark, Hive, Impala). Spark,
DuckDB, delta-rs and hudi-rs read them as microseconds; pyarrow's default, nanoseconds,
cannot hold years before 1677 or after 2262 and fails (or wraps) on them."""


def read_data_file(
    uri: str,
    names: list[str],
    part: Slice,
    s3: fs.S3Options | None = None,
    int96_unit: str = INT96_UNIT,
    encoded: bool = False,
) -> pa.Table:
    """The columns of ``names`` that one Parquet data file has (the fast path of every
    format); an unreadable file is one ``DataFileError`` line naming file and partition.
    INT96 timestamps come back in ``int96_unit``; ``encoded``: the string and binary
    columns stored with small dictionaries come dictionary-encoded (``few_valued``)."""
    filesystem, path = fs.resolve(uri, s3)
    try:
        source = filesystem.open_input_file(path)
        metadata = pq.read_metadata(source) if encoded else None
        handle = pq.ParquetFile(
            source,
            metadata=metadata,
            pre_buffer=True,
            coerce_int96_timestamp_unit=int96_unit,
            read_dictionary=few_valued(metadata) if metadata is not None else None,
        )
        present = set(handle.schema_arrow.names)
        return handle.read(columns=[n for n in names if n in present])
    except (OSError, pa.ArrowInvalid) as exc:
        raise DataFileError(
            f"cannot read data file {uri} of partition {part.partition.name or '(all)'}: "
            f"{str(exc).splitlines()[0]}; repair or remove the file"
        ) from exc


DICTIONARY_BYTES = 1.0
"""A string column is read dictionary-encoded where, in every row group, its dictionary page
takes at most this many bytes a value (or 1 KiB): a few values repeated (flags, modes,
countries), not a dictionary as large as the data (comments, ids), whose reading and
counting by code would cost more than the values themselves ..."""
CODE_BYTES = 2.0
"""... and its data pages at most this many bytes a value (codes of 16 bits at most): a
writer whose dictionary grew too large goes on in plain pages, 4 bytes of length and the
bytes of each value, which pyarrow would have to encode again."""


def few_valued(metadata: pq.FileMetaData) -> list[str]:
    """The top-level string and binary columns stored with small dictionaries."""
    if metadata.num_row_groups == 0:
        return []
    chosen = None
    for index in range(metadata.num_row_groups):
        group = metadata.row_group(index)
        small = set()
        for position in range(group.num_columns):
            chunk = group.column(position)
            name = chunk.path_in_schema
            if (chunk.physical_type != "BYTE_ARRAY" or "." in name
                    or not chunk.has_dictionary_page or not chunk.dictionary_page_offset):
                continue
            values = max(chunk.num_values, 1)
            dictionary = chunk.data_page_offset - chunk.dictionary_page_offset
            codes = chunk.total_uncompressed_size - dictionary
            if (0 < dictionary <= max(DICTIONARY_BYTES * values, 1024)
                    and codes <= CODE_BYTES * values):
                small.add(name)
        chosen = small if chosen is None else chosen & small
    return sorted(chosen or ())


def unreadable_file(uris: list[str], s3: fs.S3Options | None = None) -> str | None:
    """``"<uri>: <why>"`` of the first of ``uris`` whose Parquet footer cannot be read (a
    truncated or damaged file), None when every footer reads: for readers (delta-rs,
    pyiceberg, hudi-rs) whose own error names only the partition or the table."""
    for uri in uris:
        try:
            filesystem, path = fs.resolve(uri, s3)
            with filesystem.open_input_file(path) as handle:
                pq.ParquetFile(handle).metadata  # noqa: B018 - reading it is the check
        except (OSError, pa.ArrowInvalid, LakestatsError) as exc:
            return f"{uri}: {str(exc).splitlines()[0].rstrip('.')}"
    return None


@dataclass(frozen=True)
class ParquetDirReader(PartitionReader):
    file_schema: pa.Schema  # columns stored in the files
    partition_schema: pa.Schema
    s3: fs.S3Options | None = None

    def read(self, part: Slice, columns: list[str] | None) -> pa.Table:
        return self._read(part, columns, encoded=False)

    def read_encoded(self, part: Slice, columns: list[str] | None) -> pa.Table:
        return self._read(part, columns, encoded=True).unify_dictionaries()

    def _read(self, part: Slice, columns: list[str] | None, encoded: bool) -> pa.Table:
        wanted = [n for n in self.file_schema.names if columns is None or n in columns]
        target = pa.schema([self.file_schema.field(n) for n in wanted])
        tables = [self._read_file(part, data_file.path, target, encoded)
                  for data_file in part.files]
        if encoded:
            tables = decoded_where_files_differ(tables)
        table = pa.concat_tables(tables) if tables else target.empty_table()
        values = dict(part.partition.key)
        for field in self.partition_schema:
            if columns is not None and field.name not in columns:
                continue
            raw = values.get(field.name)
            scalar = None if raw in (None, "__HIVE_DEFAULT_PARTITION__") else raw
            typed = pa.array([scalar], pa.string()).cast(field.type)[0]
            array = pa.repeat(typed, table.num_rows)
            table = table.append_column(field, array)
        return table

    def _read_file(self, part: Slice, uri: str, target: pa.Schema, encoded: bool) -> pa.Table:
        """One data file as ``target``: missing columns become nulls, types are unified
        (``encoded``: a column read dictionary-encoded stays so)."""
        table = read_data_file(uri, target.names, part, self.s3, encoded=encoded)
        if encoded:
            table = _dictionaries_as(table, target)
            target = pa.schema([
                table.schema.field(f.name)
                if f.name in table.column_names and _dictionary_of(table.schema.field(f.name).type,
                                                                  f.type)
                else f
                for f in target
            ])
        if table.schema.equals(target):
            return table
        arrays = [
            _as_type(table.column(f.name), f, uri, part)
            if f.name in table.column_names
            else pa.nulls(table.num_rows, f.type)
            for f in target
        ]
        return pa.Table.from_arrays(arrays, schema=target.remove_metadata()).cast(target)


def _dictionaries_as(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` with each dictionary's values in ``target``'s type where that is their
    large (or view) form: pyarrow reads a ``large_string`` column's dictionary as
    ``string``; casting the dictionary alone keeps the codes."""
    for index, field in enumerate(table.schema):
        if not pa.types.is_dictionary(field.type) or field.name not in target.names:
            continue
        wanted = target.field(field.name).type
        if not field.type.value_type.equals(wanted) and _same_values(field.type.value_type,
                                                                     wanted):
            kind = pa.dictionary(field.type.index_type, wanted)
            table = table.set_column(index, field.with_type(kind),
                                     table.column(index).cast(kind))
    return table


def _same_values(read: pa.DataType, wanted: pa.DataType) -> bool:
    strings = (pa.types.is_string(read) and (pa.types.is_large_string(wanted)
                                             or pa.types.is_string_view(wanted)))
    binaries = (pa.types.is_binary(read) and (pa.types.is_large_binary(wanted)
                                              or pa.types.is_binary_view(wanted)))
    return strings or binaries


def _dictionary_of(kind: pa.DataType, value_type: pa.DataType) -> bool:
    return pa.types.is_dictionary(kind) and kind.value_type.equals(value_type)


def decoded_where_files_differ(tables: list[pa.Table]) -> list[pa.Table]:
    """The files' tables with a column decoded where one file read it dictionary-encoded
    and another did not: their rows are concatenated."""
    if len(tables) < 2:
        return tables
    for name in tables[0].column_names:
        kinds = [t.schema.field(name).type for t in tables]
        if len({str(k) for k in kinds}) == 1:
            continue
        for i, (table, kind) in enumerate(zip(tables, kinds, strict=True)):
            if pa.types.is_dictionary(kind):
                index = table.schema.get_field_index(name)
                tables[i] = table.set_column(index, table.schema.field(name).with_type(
                    kind.value_type), table.column(name).cast(kind.value_type))
    return tables


def _as_type(column: pa.ChunkedArray, field: pa.Field, uri: str, part: Slice) -> pa.ChunkedArray:
    """A file's column in the table's type; files that disagree are one line naming both."""
    if column.type.equals(field.type):
        return column
    try:
        return column.cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataFileError(
            f"data file {uri} of partition {part.partition.name or '(all)'} stores column "
            f"{field.name!r} as {column.type}, but the table's other files store it as "
            f"{field.type} ({str(exc).splitlines()[0].rstrip('.')}); rewrite the file with "
            "the table's type or move it out of the table"
        ) from exc


class ParquetTableFormat(PathTable):
    format_name = "parquet"

    def __init__(self, uri: str, s3: fs.S3Options | None = None) -> None:
        self._uri = fs.normalize(uri)
        self._s3 = s3
        self._fs, self._path = fs.resolve(self._uri, s3)
        selector = pafs.FileSelector(self._path, recursive=True)
        infos = [
            info
            for info in self._fs.get_file_info(selector)
            if info.type == pafs.FileType.File
            and not any(part.startswith(_HIDDEN) for part in self._relative(info.path))
        ]
        self._files = sorted(infos, key=lambda info: info.path)
        if not self._files:
            raise NotATableError(
                f"{uri} holds no Parquet files: point at a table directory "
                "(Iceberg, Delta, Hudi, Paimon or Parquet)"
            )
        try:
            self._schema = self._discovered_schema() or self._dataset_schema()
        except (OSError, pa.ArrowInvalid) as exc:
            raise NotATableError(f"{uri} is not a readable Parquet directory: {exc}") from exc
        keys = [self._partition_key(info.path) for info in self._files]
        names = [name for name, _ in keys[0]] if keys else []
        self._partition_schema = pa.schema(
            [self._schema.field(n) for n in names if n in self._schema.names]
        )
        file_fields = [f for f in self._schema if f.name not in names]
        self._file_schema = pa.schema(file_fields)

    def _discovered_schema(self) -> pa.Schema | None:
        """What ``_dataset_schema`` gives, read from one footer and the paths; None when
        a partition value or field is a case the int32-or-string rule is not sure of."""
        path = self._files[0].path
        try:
            with self._fs.open_input_file(path) as handle:
                first = pq.ParquetFile(handle, coerce_int96_timestamp_unit=INT96_UNIT).schema_arrow
        except (OSError, pa.ArrowInvalid) as exc:
            raise DataFileError(
                f"cannot read data file {fs.join(self._uri, *self._relative(path))}: "
                f"{str(exc).splitlines()[0].rstrip('.')}; repair or remove the file"
            ) from exc
        values: dict[str, list[str]] = {}
        for info in self._files:
            for name, value in self._partition_key(info.path):
                values.setdefault(name, [])
                if value != _HIVE_NULL:
                    values[name].append(value)
        fields = []
        for name, seen in values.items():
            if name in first.names or not seen or any(_UNSURE.fullmatch(v) for v in seen):
                return None
            integral = all(_INT.fullmatch(v) and _INT32_MIN <= int(v) <= _INT32_MAX for v in seen)
            fields.append(pa.field(name, pa.int32() if integral else pa.string()))
        return pa.schema([*first, *fields], metadata=first.metadata)

    def _dataset_schema(self) -> pa.Schema:
        """pyarrow's own hive discovery (imports ``pyarrow.dataset``, hence pandas)."""
        import pyarrow.dataset as pads

        dataset = pads.dataset(
            [info.path for info in self._files],
            format=pads.ParquetFileFormat(
                read_options=pads.ParquetReadOptions(coerce_int96_timestamp_unit=INT96_UNIT)
            ),
            filesystem=self._fs,
            partitioning=pads.HivePartitioning.discover(infer_dictionary=False),
            partition_base_dir=self._path,
        )
        return dataset.schema

    def _relative(self, path: str) -> list[str]:
        """``path``'s parts below the table directory (string slicing: ``relpath`` costs
        more than the listing when a statistics root inside the table holds many files)."""
        base = self._path.rstrip("/") + "/"
        if path.startswith(base):
            return path[len(base) :].split("/")
        return posixpath.relpath(path, self._path).split("/")

    def _partition_key(self, path: str) -> tuple[tuple[str, str], ...]:
        relative = self._relative(path)[:-1]
        parts = []
        for part in relative:
            if "=" in part:
                name, _, value = part.partition("=")
                parts.append((unquote(name), unquote(value)))
        return tuple(parts)

    def schema(self, snapshot_id: int | None = None) -> pa.Schema:
        return pa.schema([*self._file_schema, *self._partition_schema])

    def native_types(self, snapshot_id: int | None = None) -> dict[str, str]:
        """The first file's Parquet types: the logical type where it has one
        (``TIMESTAMP``, ``STRING``, ``DECIMAL(10,2)``), else the physical (``INT64``)."""
        from lakestats.stats.leaves import leaf_name

        with self._fs.open_input_file(self._files[0].path) as handle:
            schema = pq.ParquetFile(handle).schema
        out: dict[str, str] = {}
        for i in range(len(schema)):
            column = schema.column(i)
            logical = column.logical_type.type
            text = column.physical_type if logical == "NONE" else logical
            if logical == "DECIMAL":
                text = f"DECIMAL({column.precision},{column.scale})"
            out[leaf_name(tuple(column.path.split(".")))] = text
        return out

    def plan(self, snapshot_id: int | None = None) -> list[PartitionPlan]:
        groups: dict[tuple, list[pafs.FileInfo]] = {}
        for info in self._files:
            groups.setdefault(self._partition_key(info.path), []).append(info)
        plans = []
        for key, infos in sorted(groups.items()):
            values = {}
            for name, raw in key:
                dtype = self._partition_schema.field(name).type
                values[name] = _partition_value(raw, dtype)
            files = tuple(
                DataFile(_uri(self._uri, self._path, info.path), info.size,
                         modified_ns=info.mtime_ns)
                for info in infos
            )
            plans.append(PartitionPlan(key=key, values=values, data_files=files))
        return plans

    def reader(self, snapshot_id: int | None = None) -> PartitionReader:
        return ParquetDirReader(self._file_schema, self._partition_schema, self._s3)


def _partition_value(raw: str, dtype: pa.DataType) -> object:
    """A partition path value as JSON, of its discovered type (int32 and string without
    an Arrow cast: ``cast`` loads ``pyarrow.compute`` and with it pandas)."""
    if raw == _HIVE_NULL:
        return None
    if pa.types.is_int32(dtype):
        return int(raw)
    if pa.types.is_string(dtype):
        return raw
    return to_json(pa.array([raw], pa.string()).cast(dtype)[0].as_py())
