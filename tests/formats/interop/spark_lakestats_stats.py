"""Run by a PySpark that the formats' Spark runtimes support (``.venv-interop``), not by the
test process: what Spark's optimizer has for scans of Iceberg and Delta tables, with
lakestats' Spark component (``make jvm``) on and off in one session
(``spark.lakestats.enabled``). Prints one JSON line: per case and per way, the scan's row
count and distinct counts (``optimizedPlan().stats()``, ``spark.sql.cbo.enabled`` on), each
filter's estimated row count, and the ``EXPLAIN COST`` text of the plain scan.

    python spark_lakestats_stats.py SPEC_JSON

SPEC: {"jars": [...], "extensions": [...], "cases": [{"name", "format": "iceberg"|"delta",
"path", "options": {reader options: time travel}, "filters": [...]}]}
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def _stats(frame) -> dict:
    stats = frame._jdf.queryExecution().optimizedPlan().stats()
    rows = stats.rowCount()
    distinct = {}
    attributes = stats.attributeStats()
    names = attributes.keys().iterator()
    while names.hasNext():
        attribute = names.next()
        found = attributes.apply(attribute).distinctCount()
        distinct[attribute.name()] = int(str(found.get())) if found.isDefined() else None
    return {"row_count": int(str(rows.get())) if rows.isDefined() else None,
            "distinct": distinct, "size": int(str(stats.sizeInBytes()))}


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
    utils = spark._jvm.org.apache.spark.sql.api.python.PythonSQLUtils
    out = {"spark": spark.version, "cases": {}}
    for case in spec["cases"]:
        result = {}
        for way, enabled in (("lakestats", "true"), ("spark", "false")):
            spark.conf.set("spark.lakestats.enabled", enabled)
            reader = spark.read.format(case["format"]).options(**case.get("options", {}))
            frame = reader.load(case["path"])
            seen = _stats(frame)
            seen["explain"] = utils.explainString(frame._jdf.queryExecution(), "cost")
            seen["filters"] = {f: _stats(frame.where(f))["row_count"] for f in case["filters"]}
            seen["counted"] = frame.count() if way == "spark" else None
            result[way] = seen
        out["cases"][case["name"]] = result
    print(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
