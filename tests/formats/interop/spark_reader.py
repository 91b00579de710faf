"""Run by the PySpark of ``.venv-interop`` (Spark 4.1 with Iceberg's and Delta's runtimes and
lakestats' component), not by the test process: one Spark session answering what its optimizer
sees of a table, for tests that change the table's statistics between questions (a killed
publish, a publish racing the planner, a damaged file). One JSON request a line on stdin, one
JSON answer a line on stdout; the component's warnings go to stderr (``io.lakestats`` at WARN).

    python spark_reader.py SPEC_JSON

SPEC: {"jars": [...], "extensions": [...]}. Requests:

* ``{"op": "plan", "table": T, "filters": [...]}``: per way (the component on, off) the scan's
  row count, distinct counts, the lakestats version the scan reports (None: none), each
  filter's estimated rows, ``EXPLAIN COST``; and the true count.
* ``{"op": "loop", "table": T, "seconds": S}``: plans a fresh read of T again and again for S
  seconds, the component on and off in turn; answers every distinct view seen, with how
  often, and every error.
* ``{"op": "conf", "key": K, "value": V}``, ``{"op": "stop"}``.

T: ``{"format": "iceberg", "catalog": CATALOG_DB, "namespace": N, "name": NAME}`` (the
metadata file the catalog lists at that moment, read as pyiceberg's SQL catalog resolves it)
or ``{"format": "delta", "path": P}``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import traceback

from component_cases import plan_stats
from pyspark.sql import SparkSession

DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def _frame(spark, table: dict):
    if table["format"] == "iceberg":
        with sqlite3.connect(table["catalog"]) as db:
            [(location,)] = db.execute(
                "SELECT metadata_location FROM iceberg_tables "
                "WHERE table_namespace = ? AND table_name = ?",
                (table["namespace"], table["name"]),
            ).fetchall()
        return spark.read.format("iceberg").load(location.removeprefix("file://"))
    return spark.read.format(table["format"]).load(table["path"])


def _version(frame) -> int | None:
    """The lakestats version the plan's scan reports (the component's ``LakestatsScan``)."""
    plan = frame._jdf.queryExecution().optimizedPlan()
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() == "DataSourceV2ScanRelation":
            scan = leaf.scan()
            names = [c.getName() for c in scan.getClass().getInterfaces()]
            if "io.lakestats.spark.LakestatsScan" in names:
                return int(scan.lakestatsVersion())
        if leaf.getClass().getSimpleName() == "LogicalRelation" and (
            leaf.catalogTable().isDefined()
        ):
            mark = leaf.catalogTable().get().properties().get("lakestats.statistics.version")
            if mark.isDefined():
                return int(mark.get())
    return None


def _view(spark, table: dict, enabled: str) -> dict:
    spark.conf.set("spark.lakestats.enabled", enabled)
    frame = _frame(spark, table)
    seen = plan_stats(frame)
    seen["version"] = _version(frame) if enabled == "true" else None
    return {"frame": frame, "seen": seen}


def plan(spark, request: dict) -> dict:
    utils = spark._jvm.org.apache.spark.sql.api.python.PythonSQLUtils
    out = {}
    for way, enabled in (("lakestats", "true"), ("spark", "false")):
        view = _view(spark, request["table"], enabled)
        frame, seen = view["frame"], view["seen"]
        seen["explain"] = utils.explainString(frame._jdf.queryExecution(), "cost")
        seen["filters"] = {f: plan_stats(frame.where(f))["row_count"]
                           for f in request.get("filters", [])}
        seen["counted"] = frame.count()
        out[way] = seen
    return out


def loop(spark, request: dict) -> dict:
    seen: dict[str, dict[str, int]] = {"lakestats": {}, "spark": {}}
    errors: list[str] = []
    plans = 0
    deadline = time.monotonic() + request["seconds"]
    while time.monotonic() < deadline:
        for way, enabled in (("lakestats", "true"), ("spark", "false")):
            try:
                view = _view(spark, request["table"], enabled)["seen"]
                view.pop("size", None)
                key = json.dumps(view, sort_keys=True)
                seen[way][key] = seen[way].get(key, 0) + 1
                plans += 1
            except Exception:  # noqa: BLE001 - every failure is what the test asks about
                errors.append(traceback.format_exc(limit=3)[-1500:])
    return {"plans": plans, "errors": errors,
            "seen": {way: [{"view": json.loads(k), "times": n} for k, n in views.items()]
                     for way, views in seen.items()}}


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
    jvm = spark._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        "io.lakestats", jvm.org.apache.logging.log4j.Level.WARN)
    print(json.dumps({"ready": spark.version}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["op"] == "stop":
                break
            if request["op"] == "conf":
                spark.conf.set(request["key"], request["value"])
                answer: dict = {}
            elif request["op"] == "plan":
                answer = plan(spark, request)
            else:
                answer = loop(spark, request)
        except Exception:  # noqa: BLE001 - the test reads the failure
            answer = {"error": traceback.format_exc()[-3000:]}
        print(json.dumps(answer), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
