"""The facade's answers: frozen, typed, each with one ``to_json()``.

Every ``LakestatsTable`` lookup returns one of these, and the faces only render them: the
CLI's ``--json`` prints ``to_json()``, the HTTP route answers it, the text output and the
pages lay out its fields. So ``lakestats frequencies --json`` and ``GET …/frequencies`` are
one shape by construction. Values inside are decoded Python values (``Decimal``,
``datetime``, ``bytes``…); ``to_json()`` turns them into JSON values with the conventions
of ``lakestats.stats.keys.to_json`` (decimals and 64-bit-unsafe integers as text,
timestamps as ISO-8601, bytes as base64, NaN/±inf as strings). Tabular answers also have
``to_arrow()``. ``base`` derives every answer's JSON from its fields; ``statistics``,
``estimates`` and ``tables`` hold the answers, imported from here.
"""

from lakestats.answers.base import (
    Answer,
    Row,
    as_json,
    column_json,
    frozen_row,
    jsonable,
    table_of,
)
from lakestats.answers.estimates import (
    BatchStatistics,
    DerivedStatistics,
    Estimate,
    EstimateBatch,
    GroupDistinct,
    PartitionColumns,
    estimate_conjunct,
    estimate_partition,
)
from lakestats.answers.statistics import (
    Bin,
    Frequencies,
    Histogram,
    Holder,
    Partition,
    Partitions,
    PartitionsContaining,
    PartitionStatistics,
    Quantile,
    Rank,
    Staleness,
    StatisticsRows,
    TableStatistics,
)
from lakestats.answers.tables import (
    Alert,
    AnalyzeResult,
    ColumnInfo,
    ExpireReport,
    SampleResult,
    ServedTable,
    SqlResult,
    TableProfile,
    TableSummary,
    VersionInfo,
    Versions,
)

__all__ = [
    "Alert",
    "AnalyzeResult",
    "Answer",
    "BatchStatistics",
    "Bin",
    "ColumnInfo",
    "DerivedStatistics",
    "Estimate",
    "EstimateBatch",
    "ExpireReport",
    "Frequencies",
    "GroupDistinct",
    "Histogram",
    "Holder",
    "Partition",
    "PartitionColumns",
    "PartitionStatistics",
    "Partitions",
    "PartitionsContaining",
    "Quantile",
    "Rank",
    "Row",
    "SampleResult",
    "ServedTable",
    "SqlResult",
    "Staleness",
    "StatisticsRows",
    "TableProfile",
    "TableStatistics",
    "TableSummary",
    "VersionInfo",
    "Versions",
    "as_json",
    "column_json",
    "estimate_conjunct",
    "estimate_partition",
    "frozen_row",
    "jsonable",
    "table_of",
]
