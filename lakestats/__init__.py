"""lakestats: a statistics metastore for data-lake tables.

The public surface, as deltalake and sqlglot re-export theirs::

    import lakestats

    table = lakestats.open_table("warehouse/lineitem")
    table.analyze()
    try:
        table.statistics("year=1995", snapshot=42)
    except lakestats.SnapshotNotFoundError as exc:
        print(exc)

The errors are imported eagerly (they are small); the facade (``open_table``,
``LakestatsTable``, ``sql``, ``FileKind``, ``VersionKind``) and ``AnalyzeResult`` on
first use, so importing a ``lakestats`` module on an executor, or a lookup, loads no
more than it needs (``tests/test_lean_imports.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from lakestats.errors import (
    ColumnNotFoundError,
    ConflictError,
    CorruptStatisticsError,
    DataFileError,
    InvalidArgumentError,
    InvalidPredicateError,
    LakestatsError,
    NotATableError,
    PartitionNotFoundError,
    SnapshotNotFoundError,
    StatisticsNotFoundError,
    StorageError,
    TableNotFoundError,
    UnsupportedFeatureError,
    UnsupportedPredicateError,
)

if TYPE_CHECKING:
    from lakestats.api import FileKind, LakestatsTable, VersionKind, open_table, sql
    from lakestats.compute.analyze import AnalyzeResult

# name -> the module it is imported from on first use
# (the lead adds "AnalyzeOptions": "lakestats.options" once options.py is merged)
_LAZY = {
    "open_table": "lakestats.api",
    "LakestatsTable": "lakestats.api",
    "sql": "lakestats.api",
    "FileKind": "lakestats.api",
    "VersionKind": "lakestats.api",
    "AnalyzeResult": "lakestats.compute.analyze",
}

__all__ = [
    "AnalyzeResult",
    "ColumnNotFoundError",
    "ConflictError",
    "CorruptStatisticsError",
    "DataFileError",
    "FileKind",
    "InvalidArgumentError",
    "InvalidPredicateError",
    "LakestatsError",
    "LakestatsTable",
    "NotATableError",
    "PartitionNotFoundError",
    "SnapshotNotFoundError",
    "StatisticsNotFoundError",
    "StorageError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "UnsupportedPredicateError",
    "VersionKind",
    "__version__",
    "open_table",
    "sql",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lakestats' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
