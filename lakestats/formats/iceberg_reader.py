"""One slice of an Iceberg table read on an executor with pyiceberg's ``ArrowScan``, from
the table metadata the job carries; equality deletes applied (``equality_deletes.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import pyarrow as pa

from lakestats.errors import DataFileError
from lakestats.formats.base import PartitionReader, Slice


@lru_cache(maxsize=8)
def _metadata(metadata_json: str):  # noqa: ANN202
    from pyiceberg.table.metadata import TableMetadataUtil

    return TableMetadataUtil.parse_raw(metadata_json)


@dataclass(frozen=True)
class IcebergReader(PartitionReader):
    metadata_json: str
    metadata_location: str
    io_properties: dict[str, str]
    schema_id: int
    native: dict[str, object] = field(default_factory=dict, compare=False, hash=False)
    # data file path -> the equality delete files (pyiceberg DataFiles) that apply to it
    equality: dict[str, tuple] = field(default_factory=dict, compare=False, hash=False)

    def read(self, part: Slice, columns: list[str] | None) -> pa.Table:
        from pyiceberg.io import load_file_io

        metadata = _metadata(self.metadata_json)
        schema = next(s for s in metadata.schemas if s.schema_id == self.schema_id)
        io = load_file_io(self.io_properties, self.metadata_location)
        tasks = [self.native[f.path] for f in part.files]
        if not any(self.equality.get(t.file.file_path) for t in tasks):
            return self._read_tasks(part, metadata, schema, io, tasks, columns)
        from lakestats.formats.equality_deletes import (
            apply_equality_deletes,
            key_columns,
            read_schema,
        )

        pieces = []
        output = columns if columns is not None else [f.name for f in schema.fields]
        for task in tasks:
            deletes = self.equality.get(task.file.file_path, ())
            extended = read_schema(schema, metadata, deletes)
            keys = key_columns(extended, deletes)
            wanted = [*output, *(k for k in keys if k not in output)]
            table = self._read_tasks(part, metadata, extended, io, [task], wanted)
            table = apply_equality_deletes(table, deletes, extended, metadata, io)
            pieces.append(table.select(output))
        return pa.concat_tables(pieces)

    @staticmethod
    def _read_tasks(part: Slice, metadata, schema, io, tasks: list, columns: list[str] | None):  # noqa: ANN001, ANN205
        """Rows of ``tasks`` (position deletes applied), identity-partition values filled in."""
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow

        projected = schema if columns is None else schema.select(*columns)
        # identity-partitioned columns come from the partition tuple: writers may leave
        # them out of the data files (the value lives only in the manifest)
        constants = _identity_values(metadata, tasks[0].file) if tasks else {}
        constant_ids = {i for i in constants if i in projected.field_ids}
        read_schema = projected
        if constant_ids:
            keep = [f.name for f in projected.fields if f.field_id not in constant_ids]
            if not keep and any(t.delete_files for t in tasks):
                # only constants asked for, but deletes decide the row count: read one more
                keep = [f.name for f in schema.fields if f.field_id not in constants][:1]
            read_schema = schema.select(*keep) if keep else None
        try:
            if read_schema is not None:
                table = ArrowScan(metadata, io, read_schema, AlwaysTrue()).to_table(tasks)
                rows = table.num_rows
            else:
                rows = sum(t.file.record_count for t in tasks)  # no deletes: planned exact
                table = pa.table({})
        except (OSError, pa.ArrowInvalid) as exc:
            from lakestats.formats.parquet_dir import unreadable_file

            bad = unreadable_file([t.file.file_path for t in tasks])
            where = f"data file {bad}" if bad else f"a data file: {str(exc).splitlines()[0]}"
            raise DataFileError(
                f"cannot read {where} (partition {part.partition.name or '(all)'}); "
                "repair or remove the file"
            ) from exc
        if not constant_ids:
            return table
        target = schema_to_pyarrow(projected, include_field_ids=False)
        arrays = []
        for iceberg_field, arrow_field in zip(projected.fields, target, strict=True):
            if iceberg_field.field_id in constant_ids:
                value = pa.array([constants[iceberg_field.field_id]], type=arrow_field.type)
                arrays.append(pa.repeat(value[0], rows))
            else:
                arrays.append(table.column(arrow_field.name))
        return pa.Table.from_arrays(arrays, schema=target)


def _identity_values(metadata, data_file) -> dict[int, object]:  # noqa: ANN001
    """Source field id -> value of the identity partition fields of ``data_file``."""
    spec = metadata.specs()[data_file.spec_id]
    out = {}
    for position, partition_field in enumerate(spec.fields):
        if partition_field.transform.__class__.__name__ == "IdentityTransform":
            out[partition_field.source_id] = data_file.partition[position]
    return out
