"""Write Iceberg position and equality delete files and commit them in a delete manifest,
as Spark's and Flink's merge-on-read deletes do. pyiceberg 0.12 only deletes copy-on-write,
so tests and the benchmark build merge-on-read tables with this (spec: "Position Delete
Files", "Equality Delete Files")."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pyarrow.parquet as pq

FILE_PATH_ID = 2147483546
POS_ID = 2147483545


def add_position_deletes(table, deleted: dict[str, list[int]]):
    """Commit one position delete file per data file in ``deleted`` (data file path ->
    row positions); returns the reloaded table."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    files = {t.file.file_path: t.file for t in table.scan().plan_files()}
    delete_files = []
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": str(FILE_PATH_ID)}),
            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": str(POS_ID)}),
        ]
    )
    for path, positions in deleted.items():
        data_file = files[path]
        location = f"{table.location()}/data/delete-{uuid.uuid4()}.parquet"
        rows = pa.table(
            [pa.array([path] * len(positions)), pa.array(sorted(positions))], schema=schema
        )
        output = table.io.new_output(location)
        with output.create() as stream:
            pq.write_table(rows, stream)
        delete_files.append(
            DataFile.from_args(
                content=DataFileContent.POSITION_DELETES,
                file_path=location,
                file_format=FileFormat.PARQUET,
                partition=data_file.partition,
                record_count=len(positions),
                file_size_in_bytes=len(table.io.new_input(location)),
                lower_bounds={FILE_PATH_ID: path.encode()},
                upper_bounds={FILE_PATH_ID: path.encode()},
                spec_id=data_file.spec_id,
            )
        )
    return _commit_deletes(table, delete_files)


def add_equality_deletes(table, rows: pa.Table):
    """Commit one global equality delete file (unpartitioned table) deleting every row
    equal to one of ``rows`` on ``rows``' columns; returns the reloaded table."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    schema = table.schema()
    ids = [schema.find_field(name).field_id for name in rows.column_names]
    arrow = schema_to_pyarrow(schema.select(*rows.column_names))  # carries the field ids
    location = f"{table.location()}/data/eq-delete-{uuid.uuid4()}.parquet"
    with table.io.new_output(location).create() as stream:
        pq.write_table(rows.cast(arrow), stream)
    delete_file = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=rows.num_rows,
        file_size_in_bytes=len(table.io.new_input(location)),
        equality_ids=ids,
        spec_id=table.spec().spec_id,
    )
    return _commit_deletes(table, [delete_file])


def _commit_deletes(table, delete_files: list):
    """One snapshot adding ``delete_files`` in a delete manifest."""
    from pyiceberg.manifest import ManifestContent, ManifestWriterV2
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.table.update.snapshot import _FastAppendFiles

    class DeleteManifestWriter(ManifestWriterV2):
        def content(self) -> ManifestContent:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict[str, str]:
            return {**super()._meta, "content": "deletes"}

    class AddDeletes(_FastAppendFiles):
        def new_manifest_writer(self, spec):
            return DeleteManifestWriter(
                spec, self.schema(), self.new_manifest_output(), self._snapshot_id, "deflate"
            )

    with table.transaction() as tx:
        producer = AddDeletes(Operation.DELETE, tx, table.io)
        for delete_file in delete_files:
            producer.append_data_file(delete_file)
        producer.commit()
    return table.refresh()
