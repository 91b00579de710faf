"""Run by a PySpark that Iceberg's Spark runtime supports (``.venv-interop``, made by
``make interop``), not by the test process: what Spark's optimizer reads of an Iceberg
table's statistics. Prints JSON: the scan's row count and each column's distinct count as
the optimized plan carries them (``stats().attributeStats()``), with
``spark.sql.cbo.enabled`` on, and the ``EXPLAIN COST`` text.

    python spark_iceberg_stats.py JAR METADATA_JSON
"""

from __future__ import annotations

import json
import re
import sys

from pyspark.sql import SparkSession


def main(jar: str, metadata: str) -> None:
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.jars", jar)
        .config("spark.sql.extensions",
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.cbo.enabled", "true")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    frame = spark.read.format("iceberg").load(metadata)
    plan = frame._jdf.queryExecution().optimizedPlan()
    stats = plan.stats()
    distinct = {}
    attributes = stats.attributeStats()
    names = attributes.keys().iterator()
    while names.hasNext():
        attribute = names.next()
        column = attributes.apply(attribute)
        found = column.distinctCount()
        distinct[attribute.name()] = int(str(found.get())) if found.isDefined() else None
    rows = stats.rowCount()
    utils = spark._jvm.org.apache.spark.sql.api.python.PythonSQLUtils
    explained = utils.explainString(frame._jdf.queryExecution(), "cost")  # EXPLAIN COST
    print(json.dumps({
        "row_count": int(str(rows.get())) if rows.isDefined() else None,
        "distinct": distinct,
        "explain": explained,
        "spark": spark.version,
        "plan": re.sub(r"\s+", " ", plan.toString())[:400],
    }))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
