"""A stored sample (``lakestats.store.sample``) opened as a table: one partition per
sampled partition, planned from the sample's manifest, read without the hash column, so
the normal analyze job runs over it (``analyze --from-sample``)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.errors import StatisticsNotFoundError
from lakestats.formats.base import DataFile, PartitionPlan, PartitionReader, PathTable, Slice
from lakestats.store import layout
from lakestats.store.handle import StatisticsStore
from lakestats.store.sample import HIDDEN_COLUMNS, SampleManifest, sample_dir, visible


class SampleReader(PartitionReader):
    """Reads a sample partition's file, without the bookkeeping columns."""

    def __init__(self, s3: fs.S3Options | None) -> None:
        self.s3 = s3

    def read(self, part: Slice, columns: list[str] | None) -> pa.Table:
        tables = []
        for data in part.files:
            filesystem, path = fs.resolve(data.path, self.s3)
            with filesystem.open_input_file(path) as handle:  # one small file: no dataset
                table = pq.ParquetFile(handle).read(columns=columns, use_threads=False)
            tables.append(visible(table))
        table = pa.concat_tables(tables)
        return table.select(columns) if columns else table


class SampleTableFormat(PathTable):
    """A stored sample opened as a table: one partition per sampled partition."""

    format_name = "lakestats-sample"

    def __init__(
        self, stats_root: StatisticsStore, sample: SampleManifest
    ) -> None:
        self._uri = sample_dir(stats_root)
        self.sample = sample
        self.s3 = stats_root.s3

    def schema(self, snapshot_id: int | None = None) -> pa.Schema:
        for p in self.sample.partitions:
            if p.file:
                uri = fs.join(self._uri, *p.file.split("/"))
                filesystem, path = fs.resolve(uri, self.s3)
                with filesystem.open_input_file(path) as handle:
                    schema = pq.read_schema(handle)
                for name in HIDDEN_COLUMNS:
                    if name in schema.names:
                        schema = schema.remove(schema.get_field_index(name))
                return schema
        raise StatisticsNotFoundError("the sample holds no rows; create a larger sample")

    def current_snapshot_id(self) -> int | None:
        return self.sample.snapshot_id

    def plan(self, snapshot_id: int | None = None) -> list[PartitionPlan]:
        plans = []
        for p in self.sample.partitions:
            if not p.file:
                continue
            uri = fs.join(self._uri, *p.file.split("/"))
            plans.append(
                PartitionPlan(
                    key=tuple(layout.parse_partition_dir(p.path)),
                    values=p.values,
                    data_files=(DataFile(uri, p.file_size, p.sample_rows),),
                    row_count=p.sample_rows,
                )
            )
        return plans

    def reader(self, snapshot_id: int | None = None) -> PartitionReader:
        return SampleReader(self.s3)
