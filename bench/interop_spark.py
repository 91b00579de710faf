"""Run by ``bench/interop.py`` in the PySpark the formats' runtimes support (``.venv-interop``):
Spark's optimizer estimates for filters and joins over Iceberg and Delta tables, each way
(``spark.lakestats.enabled`` and Iceberg's ``report-column-stats`` switched per way in one
session). Prints one JSON line: per table, way and query, the optimized plan's row count.

    python bench/interop_spark.py SPEC_JSON

SPEC: {"jars": [...], "extensions": [...], "tables": {name: {"format", "path"}},
"queries": {name: {"table": name, "sql": "... FROM t ..."}}, "ways": {way: {conf: value}}}
"""

from __future__ import annotations

import json
import sys
import time

from pyspark.sql import SparkSession

DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def main(spec_path: str) -> None:
    with open(spec_path) as handle:
        spec = json.load(handle)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", ",".join(spec["jars"]))
        .config("spark.sql.extensions", ",".join(spec["extensions"]))
        .config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
        .config("spark.sql.cbo.enabled", "true")
        .config("spark.sql.cbo.joinReorder.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out: dict = {"spark": spark.version, "estimates": {}, "plan_ms": {}}
    for way, settings in spec["ways"].items():
        for key, value in settings.items():
            spark.conf.set(key, value)
        for name, table in spec["tables"].items():
            frame = spark.read.format(table["format"]).load(table["path"])
            frame.createOrReplaceTempView(name)
        estimates, plan_ms = {}, {}
        for query, what in spec["queries"].items():
            started = time.perf_counter()
            stats = spark.sql(what["sql"])._jdf.queryExecution().optimizedPlan().stats()
            plan_ms[query] = (time.perf_counter() - started) * 1000
            rows = stats.rowCount()
            estimates[query] = int(str(rows.get())) if rows.isDefined() else None
        out["estimates"][way] = estimates
        out["plan_ms"][way] = plan_ms
    print(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
