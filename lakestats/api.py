"""The facade users call: open a table, analyze it, look its statistics up.

    import lakestats.api as ls

    table = ls.open_table("warehouse/lineitem")          # or "db.lineitem" (catalog)
    table.analyze(bins=1000)                              # Spark job
    table.partitions()                                    # [{partition, row_count, files}]
    table.statistics("year=1995", columns=["l_tax"])      # decoded statistics rows
    table.frequencies("l_shipmode", "year=1995", top=3)   # [(value, frequency), ...]
    table.histogram("l_quantity", "year=1995", 0, 10)     # [{lower, upper, count}, ...]
    table.stats(["l_tax", "l_discount"])                  # table + every partition, batched

The public names only, as deltalake and sqlglot re-export theirs: the handle is
``lakestats.table``, its lookups ``lakestats.lookups``, the answers ``lakestats.answers``,
version resolution ``lakestats.versions``. Lookups never start Spark; only ``analyze`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakestats.component_jar import jar_path  # the Spark component's jar for spark.jars
from lakestats.errors import LakestatsError
from lakestats.fs import S3Options  # a table's object store settings
from lakestats.lookups import EXACTNESS_FLAGS, check_root
from lakestats.options import AnalyzeOptions, SampleOptions
from lakestats.stats.keys import to_json  # the CLI's and service's JSON form of a value
from lakestats.store.kinds import FileKind, VersionKind
from lakestats.table import LakestatsTable, open_table, sql
from lakestats.versions import (
    check_snapshot,
    parse_as_of,
    snapshot_as_of,
    staleness,
    version_for_snapshot,
)

__all__ = [
    "EXACTNESS_FLAGS", "AnalyzeOptions", "FileKind", "LakestatsError", "LakestatsTable",
    "S3Options", "SampleOptions", "VersionKind", "arrow_type", "check_root", "check_snapshot",
    "default_warehouse", "jar_path", "load_catalog", "open_table", "parse_as_of",
    "snapshot_as_of", "sql", "staleness", "to_json", "version_for_snapshot",
]

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog import Catalog


def arrow_type(type_text: str) -> pa.DataType | str:
    """The Arrow type a statistics row's ``type`` names (a nested type stays its text)."""
    from lakestats.stats.type_codec import parse_type  # pyarrow's types: not for a lookup

    return parse_type(type_text)


def default_warehouse() -> str:
    """The embedded Iceberg catalog's warehouse (``$LAKESTATS_WAREHOUSE``, ./warehouse)."""
    from lakestats.formats.iceberg import default_warehouse as embedded  # pyiceberg: heavy

    return embedded()


def load_catalog(warehouse: str | None = None, catalog: str | None = None) -> Catalog:
    """A pyiceberg catalog: ``catalog`` by name, else the embedded SQLite one."""
    from lakestats.formats.iceberg import load_catalog as load  # pyiceberg: heavy

    found: Catalog = load(catalog, warehouse=warehouse)
    return found
