"""Table formats behind one ``TableFormat`` interface, and detection of a path's format.

``open_table`` takes a catalog identifier (``db.table``) or a table path/URI. A path is
detected as Iceberg (``metadata/``), Delta (``_delta_log/``), Hudi (``.hoodie/``),
Paimon (``schema/``), else a Parquet directory, and opened by its loader in ``FORMATS``.
Every format is a ``<Name>TableFormat`` (``TableFormat``) with a ``<Name>Reader``
(``PartitionReader``) in ``formats/<name>.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from lakestats import extras, fs
from lakestats.errors import NotATableError, TableNotFoundError
from lakestats.formats.base import (
    DataFile,
    PartitionPlan,
    PartitionReader,
    Slice,
    SnapshotInfo,
    TableFormat,
)

__all__ = [
    "FORMATS",
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

def _iceberg(uri: str, s3: fs.S3Options | None) -> TableFormat:
    with extras.imported("an Iceberg table"):
        from lakestats.formats.iceberg import IcebergTableFormat

        return IcebergTableFormat.from_path(uri, s3)


def _delta(uri: str, s3: fs.S3Options | None) -> TableFormat:
    with extras.imported("a Delta table"):
        from lakestats.formats.delta import DeltaTableFormat

        return DeltaTableFormat(uri, s3)


def _hudi(uri: str, s3: fs.S3Options | None) -> TableFormat:
    with extras.imported("a Hudi table"):
        from lakestats.formats.hudi import HudiTableFormat

        return HudiTableFormat(uri, s3)


def _paimon(uri: str, s3: fs.S3Options | None) -> TableFormat:
    with extras.imported("a Paimon table"):
        from lakestats.formats.paimon import PaimonTableFormat

        return PaimonTableFormat(uri, s3)


def _parquet(uri: str, s3: fs.S3Options | None) -> TableFormat:
    from lakestats.formats.parquet_dir import ParquetTableFormat

    return ParquetTableFormat(uri, s3)


Loader = Callable[[str, "fs.S3Options | None"], TableFormat]

FORMATS: dict[str, Loader] = {
    "iceberg": _iceberg,
    "delta": _delta,
    "hudi": _hudi,
    "paimon": _paimon,
    "parquet": _parquet,
}
"""Format name (``TableFormat.format_name``, what ``detect_format`` returns) -> a loader
opening a table path/URI of that format. Each loader imports its format's module (and
library) only when called, so a lookup that never opens the table loads none."""

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
        with extras.imported("an Iceberg catalog's table"):
            from lakestats.formats.iceberg import IcebergTableFormat

            return IcebergTableFormat.from_catalog(table, catalog, warehouse)
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
    name = detect_format(uri, s3)
    return FORMATS[name](uri, s3)
