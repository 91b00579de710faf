"""What the component tests' Spark scripts (``spark_lakestats_stats.py`` on Spark 4.1,
``spark35_lakestats_stats.py`` on Spark 3.5) read from Spark, in one place: imported by them
from their own folder (a script's folder is first on its ``sys.path``), in the PySpark of
their venv."""

from __future__ import annotations


def plan_stats(frame) -> dict:
    """The optimized plan's row count, distinct counts and size."""
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


WAYS = {"lakestats": {"spark.lakestats.enabled": "true"},
        "spark": {"spark.lakestats.enabled": "false"}}


def run_cases(spark, cases: list[dict], ways: dict | None = None) -> dict:
    """Per case and way (the component on, off, and those of ``ways``, settings by name,
    that the case names in its ``ways``):
    the scan's statistics, ``EXPLAIN COST``, each filter's estimated rows (the case's
    ``filters`` and its ``way_filters`` of the way), each ``group_by`` column list's estimated
    groups (in the case's own ways), (with the
    component off) the true count and, for a case with an ``explain_filter``, that filtered
    read's ``EXPLAIN EXTENDED``."""
    utils = spark._jvm.org.apache.spark.sql.api.python.PythonSQLUtils
    out = {"spark": spark.version, "cases": {}}
    for case in cases:
        result = {}
        extra = {name: (ways or {})[name] for name in case.get("ways", [])}
        for way, settings in {**WAYS, **extra}.items():
            for key, value in settings.items():
                spark.conf.set(key, value)
            if case.get("table"):  # a table of the session catalog
                frame = spark.table(case["table"])
            else:
                reader = spark.read.format(case["format"]).options(**case.get("options", {}))
                frame = reader.load(case["path"])
            seen = plan_stats(frame)
            seen["explain"] = utils.explainString(frame._jdf.queryExecution(), "cost")
            asked = [*case["filters"], *case.get("way_filters", {}).get(way, [])]
            seen["filters"] = {f: plan_stats(frame.where(f))["row_count"] for f in asked}
            seen["groups"] = {",".join(g): plan_stats(frame.groupBy(*g).count())["row_count"]
                              for g in case.get("group_by", []) if way in extra}
            seen["counted"] = frame.count() if way == "spark" else None
            if case.get("explain_filter"):  # the plans Spark makes for one filtered read
                filtered = frame.where(case["explain_filter"])._jdf.queryExecution()
                seen["filter_explain"] = utils.explainString(filtered, "extended")
            for key in settings:
                spark.conf.unset(key)
            result[way] = seen
        out["cases"][case["name"]] = result
    return out
