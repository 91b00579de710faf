"""The facade users call: open a table, analyze it, look its statistics up.

    import lakestats.api as ls

    table = ls.open_table("warehouse/lineitem")          # or "db.lineitem" (catalog)
    table.analyze(bins=1000)                              # Spark job
    table.partitions()                                    # [{partition, row_count, files}]
    table.statistics("year=1995", columns=["l_tax"])      # decoded statistics rows
    table.frequencies("l_shipmode", "year=1995", top=3)   # [(value, frequency), ...]
    table.histogram("l_quantity", "year=1995", 0, 10)     # [{lower, upper, count}, ...]

Lookups never start Spark; only ``analyze`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lakestats import fs
from lakestats.errors import TableNotFoundError
from lakestats.formats import TableFormat, looks_like_path
from lakestats.formats import open_table as open_format
from lakestats.store import layout
from lakestats.store.reader import StatisticsReader


@dataclass
class LakestatsTable:
    """A table and its statistics root."""

    name: str
    stats_root_override: str | None = None
    catalog: str | None = None
    warehouse: str | None = None
    s3: fs.S3Options | None = None
    _format: TableFormat | None = field(default=None, repr=False)
    _reader: StatisticsReader | None = field(default=None, repr=False)

    @property
    def format(self) -> TableFormat:
        if self._format is None:
            self._format = open_format(
                self.name, catalog=self.catalog, warehouse=self.warehouse, s3=self.s3
            )
        return self._format

    @property
    def stats_root(self) -> str:
        if self.stats_root_override:
            return fs.normalize(self.stats_root_override)
        if looks_like_path(self.name) and not self.name.endswith(".metadata.json"):
            return fs.join(fs.normalize(self.name), layout.STATS_DIR_NAME)
        return fs.join(self.format.location, layout.STATS_DIR_NAME)

    # -- computing ----------------------------------------------------------
    def analyze(
        self,
        columns: list[str] | None = None,
        bins: int = 1000,
        max_frequencies: int = 10_000,
        max_slice_bytes: int = 256 * 1024 * 1024,
        snapshot_id: int | None = None,
        spark=None,
        progress: bool = False,
    ):  # noqa: ANN001, ANN201
        """Compute and publish statistics for every partition (a Spark job)."""
        from lakestats.compute.analyze import analyze, select_columns, validate_options
        from lakestats.compute.tasks import AnalyzeOptions

        options = AnalyzeOptions(
            tuple(columns) if columns else None, bins, max_frequencies, max_slice_bytes
        )
        # everything that can be wrong with the request fails here, before a JVM starts
        validate_options(options)
        table = self.format
        select_columns(table.schema(snapshot_id), options.columns)
        root = self.stats_root
        probe_writable(root, self.s3)
        if spark is None:
            from lakestats.compute.session import get_spark

            spark = get_spark()
        result = analyze(
            table, root, options, spark, snapshot_id=snapshot_id, s3=self.s3, progress=progress
        )
        self._reader = None
        return result

    # -- looking up ---------------------------------------------------------
    def reader(self) -> StatisticsReader:
        if self._reader is None:
            if looks_like_path(self.name) and not fs.exists(fs.normalize(self.name), self.s3):
                raise TableNotFoundError(f"no table at {self.name}: the path does not exist")
            self._reader = StatisticsReader(self.stats_root, s3=self.s3)
        return self._reader

    def partitions(self) -> list[dict[str, object]]:
        reader = self.reader()
        return [
            {
                "partition": entry.values,
                "name": entry.name,
                "row_count": entry.row_count,
                **{
                    f"{kind}_path": layout.absolute(reader.root, path)
                    for kind, path in entry.files.items()
                },
            }
            for entry in reader.version.partitions
        ]

    def statistics(
        self, partition: str | dict | None = None, columns: list[str] | None = None
    ) -> list[dict[str, object]]:
        return self.reader().column_statistics(partition, columns)

    def frequencies(
        self, column: str, partition: str | dict | None = None, top: int | None = None
    ) -> list[tuple[object, int]]:
        return self.reader().frequencies(partition, column, top)

    def histogram(
        self,
        column: str,
        partition: str | dict | None = None,
        start: int = 0,
        stop: int | None = None,
    ) -> list[dict[str, object]]:
        return self.reader().histogram(partition, column, start, stop)


def probe_writable(root: str, s3: fs.S3Options | None = None) -> None:
    """Fail fast, with one line, when the statistics root cannot be written."""
    import uuid

    probe = fs.join(root, "_staging", f"probe-{uuid.uuid4().hex}")
    fs.write_bytes_atomic(probe, b"", s3)
    filesystem, path = fs.resolve(probe, s3)
    filesystem.delete_file(path)


def open_table(
    table: str,
    stats_root: str | None = None,
    catalog: str | None = None,
    warehouse: str | None = None,
    s3: fs.S3Options | None = None,
) -> LakestatsTable:
    """A handle on ``table`` (catalog identifier or path); nothing is read yet."""
    return LakestatsTable(table, stats_root, catalog, warehouse, s3)
