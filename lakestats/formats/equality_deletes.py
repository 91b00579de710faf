"""Iceberg equality deletes, planned and applied as the spec says (pyiceberg refuses them).

Planning (spec, "Scan Planning"): an equality delete file applies to a data file when
its data sequence number is *greater* than the data file's, and it is either in an
unpartitioned spec (a global delete) or in the same spec and partition as the data file.
Applying: a row is deleted when its values in the delete's equality columns equal one
row of the delete file, where null equals null. Position deletes and deletion vectors
still go through pyiceberg's ``DeleteFileIndex`` and ``ArrowScan``.
"""

from __future__ import annotations

import decimal
from itertools import chain

import pyarrow as pa
import pyarrow.compute as pc

from lakestats.errors import DataFileError, UnsupportedFeatureError


def plan_scan(scan) -> tuple[list, dict[str, tuple]]:  # noqa: ANN001 - a pyiceberg DataScan
    """``scan``'s ``FileScanTask``s (position deletes attached, as pyiceberg plans them)
    and, per data file path, the equality delete files that apply to it."""
    from pyiceberg.manifest import DataFileContent
    from pyiceberg.table import FileScanTask
    from pyiceberg.table.delete_file_index import DeleteFileIndex
    from pyiceberg.table.metadata import INITIAL_SEQUENCE_NUMBER

    snapshot = scan.snapshot()
    if snapshot is None:
        return [], {}
    # pyiceberg's own planner (manifest pruning, parallel manifest reads); its plan_files
    # raises on equality deletes, so the entries are sorted here
    planner = scan._manifest_planner
    entries = chain.from_iterable(planner.plan_manifest_entries(snapshot.manifests(scan.io)))
    data, equality, positions = [], [], DeleteFileIndex()
    for entry in entries:
        content = entry.data_file.content
        if content == DataFileContent.DATA:
            data.append(entry)
        elif content == DataFileContent.POSITION_DELETES:
            positions.add_delete_file(entry, partition_key=entry.data_file.partition)
        elif content == DataFileContent.EQUALITY_DELETES:
            equality.append(entry)
        else:
            raise UnsupportedFeatureError(f"unknown Iceberg file content {content}")
    specs = scan.table_metadata.specs()
    # global deletes apply to every data file, the others only within their partition:
    # index them so planning stays linear in data files plus delete files
    scoped: dict[tuple, list] = {}
    for e in equality:
        spec_id = e.data_file.spec_id
        key = () if _is_global(specs[spec_id]) else (spec_id, e.data_file.partition)
        scoped.setdefault(key, []).append(e)
    tasks, applies = [], {}
    for entry in data:
        sequence = entry.sequence_number or INITIAL_SEQUENCE_NUMBER
        data_file = entry.data_file
        tasks.append(
            FileScanTask(
                data_file,
                delete_files=positions.for_data_file(
                    sequence, data_file, partition_key=data_file.partition
                ),
            )
        )
        candidates = scoped.get((), []) + scoped.get((data_file.spec_id, data_file.partition), [])
        matching = tuple(
            e.data_file
            for e in candidates
            if (e.sequence_number or INITIAL_SEQUENCE_NUMBER) > sequence
        )
        if matching:
            applies[data_file.file_path] = matching
    return tasks, applies


def _is_global(spec) -> bool:  # noqa: ANN001 - a pyiceberg PartitionSpec
    """An unpartitioned spec (no fields, or only void transforms): its deletes are global."""
    from pyiceberg.transforms import VoidTransform

    return all(isinstance(f.transform, VoidTransform) for f in spec.fields)


DROPPED_PREFIX = "__lakestats_dropped_"
"""Columns an equality delete compares that the schema dropped are read under this name
(plus the field id): the spec says such deletes still apply."""


def read_schema(schema, metadata, deletes: tuple):  # noqa: ANN001, ANN201 - pyiceberg types
    """``schema`` plus every dropped column ``deletes`` compare, under private names, found
    by field id in the table's older schemas (data and delete files still hold it)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField

    extra = []
    for field_id in sorted({i for delete in deletes for i in (delete.equality_ids or ())}):
        if schema.find_column_name(field_id) is not None:
            continue
        older = next(
            (s for s in reversed(metadata.schemas) if s.find_column_name(field_id) is not None),
            None,
        )
        if older is None or "." in older.find_column_name(field_id):
            raise UnsupportedFeatureError(
                f"Iceberg equality delete on field id {field_id}, which no schema of the table "
                "has as a top-level column"
            )
        field = older.find_field(field_id)
        extra.append(
            NestedField(field_id, f"{DROPPED_PREFIX}{field_id}", field.field_type, required=False)
        )
    return Schema(*schema.fields, *extra, schema_id=schema.schema_id) if extra else schema


def key_columns(schema, deletes: tuple) -> list[str]:  # noqa: ANN001 - pyiceberg Schema
    """Top-level column names the equality deletes compare (in schema order); ``schema``
    comes from ``read_schema``, so dropped columns are there under private names."""
    ids = {i for delete in deletes for i in (delete.equality_ids or ())}
    names = []
    for field_id in sorted(ids):
        name = schema.find_column_name(field_id)
        if name is None or (
            "." in name and schema.find_field(name.split(".")[0]).field_type.is_struct
        ):
            raise UnsupportedFeatureError(
                f"Iceberg equality delete on nested field {name or field_id!r} is not supported"
            )
        names.append(name)
    return [f.name for f in schema.fields if f.name in names]


def apply_equality_deletes(
    table: pa.Table,
    deletes: tuple,
    schema,  # noqa: ANN001 - pyiceberg Schema, from read_schema
    metadata,  # noqa: ANN001 - pyiceberg TableMetadata
    io,  # noqa: ANN001 - pyiceberg FileIO
) -> pa.Table:
    """``table`` without the rows any of ``deletes`` (equality delete files) deletes."""
    for delete in deletes:
        names = key_columns(schema, (delete,))
        keys = _read_delete_keys(delete, schema.select(*names), metadata, io)
        keys = keys.cast(pa.schema([table.schema.field(n) for n in keys.column_names]))
        if keys.num_rows and table.num_rows:
            table = _anti_join(table, keys, names)
    return table


def _read_delete_keys(delete, key_schema, metadata, io) -> pa.Table:  # noqa: ANN001
    """The delete file's equality columns, projected by field id like a data file."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.table import FileScanTask

    try:
        return ArrowScan(metadata, io, key_schema, AlwaysTrue()).to_table([FileScanTask(delete)])
    except (OSError, pa.ArrowInvalid) as exc:
        raise DataFileError(
            f"cannot read Iceberg equality delete file {delete.file_path}: "
            f"{str(exc).splitlines()[0]}"
        ) from exc


def _anti_join(table: pa.Table, keys: pa.Table, names: list[str]) -> pa.Table:
    """Rows of ``table`` matching no row of ``keys`` on ``names``, null equal to null.

    Arrow's hash join never matches nulls, so each key column is compared as two: whether
    it is null, and its value with nulls replaced by a placeholder of the same type.
    """
    marker = "__lakestats_row"
    left = {marker: pa.array(range(table.num_rows), pa.int64())}
    right: dict[str, pa.Array] = {}
    join_keys = []
    for index, name in enumerate(names):
        for side, source in ((left, table.column(name)), (right, keys.column(name))):
            source = source.combine_chunks() if isinstance(source, pa.ChunkedArray) else source
            if isinstance(source.type, pa.BaseExtensionType):
                source = source.storage
            side[f"n{index}"] = source.is_null()
            side[f"v{index}"] = pc.fill_null(source, _placeholder(source.type))
        join_keys += [f"n{index}", f"v{index}"]
    matched = pa.table(left).join(
        pa.table(right).group_by(join_keys).aggregate([]), join_keys, join_type="left semi"
    )
    mask = pc.invert(pc.is_in(left[marker], value_set=matched.column(marker)))
    return table.filter(mask)


def _placeholder(arrow_type: pa.DataType) -> pa.Scalar:
    """Any non-null value of ``arrow_type`` (nulls are told apart by the null column)."""
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return pa.scalar(b"", arrow_type)
    if pa.types.is_fixed_size_binary(arrow_type):
        return pa.scalar(b"\0" * arrow_type.byte_width, arrow_type)
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return pa.scalar("", arrow_type)
    if pa.types.is_boolean(arrow_type):
        return pa.scalar(False)
    if pa.types.is_decimal(arrow_type):
        return pa.scalar(decimal.Decimal(0), arrow_type)
    width = pa.int32() if arrow_type.bit_width == 32 else pa.int64()
    return pa.scalar(0, width).cast(arrow_type)
