"""Run by a PySpark that the formats' Spark runtimes support (``.venv-interop``), not by the
test process: what Spark's optimizer has for scans of Iceberg and Delta tables, with
lakestats' Spark component (``make jvm``) on and off in one session
(``spark.lakestats.enabled``). Prints one JSON line: per case and per way, the scan's row
count and distinct counts (``optimizedPlan().stats()``, ``spark.sql.cbo.enabled`` on), each
filter's estimated row count, and the ``EXPLAIN COST`` text of the plain scan; per join (tables
read as temporary views), its estimated row count and ``EXPLAIN COST`` text with the component,
with it and ``spark.lakestats.histograms=false``, and without it.

    python spark_lakestats_stats.py SPEC_JSON

SPEC: {"jars": [...], "extensions": [...], "cases": [{"name", "format": "iceberg"|"delta",
"path", "options": {reader options: time travel}, "filters": [...]}], "ways": {name:
settings} (optional), "joins": [{"name", "views": {view: {"format", "path"}}, "sql"}]
(optional)}
"""

from __future__ import annotations

import json
import sys

from component_cases import plan_stats, run_cases
from pyspark.sql import SparkSession

DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def main(spec_path: str) -> None:
    with open(spec_path) as handle:
        spec = json.load(handle)
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.jars", ",".join(spec["jars"]))
        .config("spark.sql.extensions", ",".join(spec["extensions"]))
        .config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
        .config("spark.sql.cbo.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out = run_cases(spark, spec["cases"], spec.get("ways"))
    utils = spark._jvm.org.apache.spark.sql.api.python.PythonSQLUtils
    out["joins"] = {}
    for join in spec.get("joins", []):
        for view, table in join["views"].items():
            spark.read.format(table["format"]).load(table["path"]).createOrReplaceTempView(view)
        seen = {}
        for way, enabled, histograms in (("lakestats", "true", "true"),
                                         ("no histograms", "true", "false"),
                                         ("spark", "false", "true")):
            spark.conf.set("spark.lakestats.enabled", enabled)
            spark.conf.set("spark.lakestats.histograms", histograms)
            frame = spark.sql(join["sql"])
            seen[way] = {"row_count": plan_stats(frame)["row_count"],
                         "explain": utils.explainString(frame._jdf.queryExecution(), "cost")}
        spark.conf.set("spark.lakestats.histograms", "true")
        out["joins"][join["name"]] = seen
    print(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
