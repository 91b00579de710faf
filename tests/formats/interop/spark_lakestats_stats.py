"""Run by a PySpark that the formats' Spark runtimes support (``.venv-interop``), not by the
test process: what Spark's optimizer has for scans of Iceberg and Delta tables, with
lakestats' Spark component (``make jvm``) on and off in one session
(``spark.lakestats.enabled``). Prints one JSON line: per case and per way, the scan's row
count and distinct counts (``optimizedPlan().stats()``, ``spark.sql.cbo.enabled`` on), each
filter's estimated row count, and the ``EXPLAIN COST`` text of the plain scan; per join (tables
read as temporary views), its estimated row count, ``EXPLAIN COST`` text and order of joining
with the component, with it and ``spark.lakestats.histograms=false``, without it, and in the
join's own ``ways`` (with ``reorder``: Spark's join reordering on).

    python spark_lakestats_stats.py SPEC_JSON

SPEC: {"jars": [...], "extensions": [...], "cases": [{"name", "format": "iceberg"|"delta",
"path", "options": {reader options: time travel}, "filters": [...]}], "ways": {name:
settings} (optional), "joins": [{"name", "views": {view: {"format", "path"}}, "sql",
"ways": [...], "reorder": bool}] (optional)}
"""

from __future__ import annotations

import json
import sys

from component_cases import plan_stats, run_cases
from pyspark.sql import SparkSession

DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def join_shape(plan) -> object:
    """The optimized plan's joins as nested pairs (each pair sorted, so that only the order of
    joining counts, not the sides); a joined input by what it reads: ``filtered`` when a LIKE
    filters it, else ``iceberg`` (a V2 scan) or ``delta`` (a V1 relation)."""
    if plan.nodeName() == "Join":
        return sorted((join_shape(plan.left()), join_shape(plan.right())), key=json.dumps)
    text = plan.toString()  # the node and all below it
    if plan.children().size() == 1 and "Join" in text:
        return join_shape(plan.children().apply(0))
    if "StartsWith" in text:
        return "filtered"
    leaf = plan.collectLeaves().apply(0).nodeName()
    return "iceberg" if "V2" in leaf or "Scan" in leaf else "delta"


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
    if spec.get("debug_logger"):  # the component's debug lines, on stderr
        log4j = spark._jvm.org.apache.logging.log4j
        log4j.core.config.Configurator.setLevel(spec["debug_logger"], log4j.Level.DEBUG)
    out = run_cases(spark, spec["cases"], spec.get("ways"))
    utils = spark._jvm.org.apache.spark.sql.api.python.PythonSQLUtils
    out["joins"] = {}
    for join in spec.get("joins", []):
        for view, table in join["views"].items():
            spark.read.format(table["format"]).load(table["path"]).createOrReplaceTempView(view)
        ways = {"lakestats": {"spark.lakestats.enabled": "true"},
                "no histograms": {"spark.lakestats.histograms": "false"},
                "spark": {"spark.lakestats.enabled": "false"}}
        ways.update({name: spec["ways"][name] for name in join.get("ways", [])})
        if join.get("reorder"):  # Spark's cost-based join reordering on, in every way
            ways = {name: {**settings, "spark.sql.cbo.joinReorder.enabled": "true"}
                    for name, settings in ways.items()}
        seen = {}
        for way, settings in ways.items():
            for key, value in settings.items():
                spark.conf.set(key, value)
            frame = spark.sql(join["sql"])
            execution = frame._jdf.queryExecution()
            seen[way] = {"row_count": plan_stats(frame)["row_count"],
                         "explain": utils.explainString(execution, "cost"),
                         "shape": join_shape(execution.optimizedPlan())}
            if join.get("reorder"):  # the rows, whatever the order of joining
                seen[way]["rows"] = [[str(v) for v in r] for r in frame.collect()]
            for key in settings:
                spark.conf.unset(key)
        out["joins"][join["name"]] = seen
    print(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
