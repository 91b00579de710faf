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
``LakestatsTable``, ``sql``, ``FileKind``, ``VersionKind``), the options
(``AnalyzeOptions``, ``SampleOptions``) and results (``AnalyzeResult``, ``SampleResult``) on
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
    from lakestats.answers import AnalyzeResult, SampleResult
    from lakestats.api import FileKind, LakestatsTable, VersionKind, open_table, sql
    from lakestats.options import AnalyzeOptions, SampleOptions

# name -> the module it is imported from on first use
_LAZY = {
    "open_table": "lakestats.api",
    "LakestatsTable": "lakestats.api",
    "sql": "lakestats.api",
    "FileKind": "lakestats.api",
    "VersionKind": "lakestats.api",
    "AnalyzeResult": "lakestats.answers",
    "SampleResult": "lakestats.answers",
    "AnalyzeOptions": "lakestats.options",
    "SampleOptions": "lakestats.options",
}

__all__ = [
    "AnalyzeOptions",
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
    "SampleOptions",
    "SampleResult",
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
