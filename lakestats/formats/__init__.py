"""Table formats behind one ``TableFormat`` interface, and detection of a path's format.

``open_table`` takes a catalog identifier (``db.table``) or a table path/URI. A path is
detected as Iceberg (``metadata/``), Delta (``_delta_log/``), Hudi (``.hoodie/``),
Paimon (``schema/``), else a Parquet directory.
"""

from __future__ import annotations

import os

from lakestats import fs
from lakestats.errors import NotATableError, TableNotFoundError, UnsupportedFeatureError
from lakestats.formats.base import (
    DataFile,
    PartitionPlan,
    PartitionReader,
    Slice,
    SnapshotInfo,
    TableFormat,
)

__all__ = [
    "DataFile",
    "PartitionPlan",
    "PartitionReader",
    "Slice",
    "SnapshotInfo",
    "TableFormat",
    "detect_format",
    "looks_like_path",
    "open_table",
]

_MARKERS = (
    ("metadata", "iceberg"),
    ("_delta_log", "delta"),
    (".hoodie", "hudi"),
    ("schema", "paimon"),
)


def looks_like_path(table: str) -> bool:
    return "://" in table or "/" in table or table.startswith(".") or os.path.exists(table)


def detect_format(uri: str, s3: fs.S3Options | None = None) -> str:
    if uri.endswith(".metadata.json"):
        return "iceberg"
    for marker, name in _MARKERS:
        if fs.is_dir(fs.join(uri, marker), s3):
            return name
    return "parquet"


def open_table(
    table: str,
    *,
    catalog: str | None = None,
    warehouse: str | None = None,
    s3: fs.S3Options | None = None,
) -> TableFormat:
    """Open ``table`` (catalog identifier or path) with the right format."""
    if not looks_like_path(table):
        from lakestats.formats.iceberg import IcebergTable

        return IcebergTable.from_catalog(table, catalog, warehouse)
    uri = fs.normalize(table)
    if s3 is None and fs.is_remote(uri):
        s3 = fs.S3Options.from_env()  # the format libraries get explicit options, not env
    if not fs.exists(uri, s3):
        raise TableNotFoundError(f"no table at {table}: the path does not exist")
    if not fs.is_dir(uri, s3) and not uri.endswith(".metadata.json"):
        raise NotATableError(
            f"{table} is a file, not a table: pass the table's directory (or an Iceberg "
            "*.metadata.json)"
        )
    kind = detect_format(uri, s3)
    if kind == "iceberg":
        from lakestats.formats.iceberg import IcebergTable

        return IcebergTable.from_path(uri, s3)
    if kind == "parquet":
        from lakestats.formats.parquet_dir import ParquetDirectory

        return ParquetDirectory(uri, s3)
    if kind == "delta":
        from lakestats.formats.delta import DeltaTableFormat

        return DeltaTableFormat(uri, s3)
    if kind == "hudi":
        from lakestats.formats.hudi import HudiTableFormat

        return HudiTableFormat(uri, s3)
    if kind == "paimon":
        from lakestats.formats.paimon import PaimonTableFormat

        return PaimonTableFormat(uri, s3)
    raise UnsupportedFeatureError(f"{table}: unknown table format {kind!r}")
