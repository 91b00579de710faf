"""The ``<table>$statistics`` system view: statistics versions as a Spark DataFrame.

One row per version with the ``lakestats history`` fields plus ``col_stats``, a map from
column name to its table-level ``distinct_count``, ``min``, ``max`` (as text),
``null_count``, ``avg_len`` and ``max_len`` (the fields Paimon's statistics carry).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from lakestats.answers import jsonable
from lakestats.api import LakestatsTable
from lakestats.errors import StatisticsNotFoundError
from lakestats.spark_errors import translated

VIEW_SCHEMA = (
    "version int, snapshot_id long, schema_id int, merged_record_count long, "
    "merged_record_size long, partitions_computed int, partitions_reused int, "
    "created_at string, kind string, col_stats map<string, struct<distinct_count: long, "
    "min: string, max: string, null_count: long, avg_len: double, max_len: long>>"
)


def statistics_dataframe(spark: SparkSession, table: LakestatsTable) -> DataFrame:
    rows = []
    for item in table.history():
        if item.damaged is not None or item.derived is not None:
            continue  # an unreadable manifest has no statistics; derived entries are not
            # versions of the table's statistics (their numbers are their own)
        col_stats = {}
        try:
            columns = table.statistics(version=item.version)
        except StatisticsNotFoundError:  # partition level only (--partitions-only)
            columns = []
        for row in columns:
            col_stats[row["column"]] = {
                "distinct_count": row.get("distinct_count"),
                "min": None if row.get("min") is None else str(jsonable(row["min"])),
                "max": None if row.get("max") is None else str(jsonable(row["max"])),
                "null_count": row.get("null_count"),
                "avg_len": row.get("avg_length"),
                "max_len": row.get("max_length"),
            }
        rows.append({**item.to_json(), "col_stats": col_stats})
    with translated("cannot build the statistics view on Spark"):
        return spark.createDataFrame(rows, VIEW_SCHEMA)


def register_statistics_view(
    spark: SparkSession, table: LakestatsTable, name: str | None = None
) -> str:
    """Register ``<name>$statistics`` (query it as ``SELECT * FROM `t$statistics` ``)."""
    base = name or table.name.rsplit("/", 1)[-1].replace(".", "_")
    view = f"{base}$statistics"
    frame = statistics_dataframe(spark, table)
    with translated(f"cannot register the view {view}"):
        frame.createOrReplaceTempView(f"`{view}`")
    return view
