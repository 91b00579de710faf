"""Run by ``bench/interop_queries.py`` in the PySpark Iceberg's runtime supports
(``.venv-interop``): TPC-H queries over Iceberg and Delta tables with cost-based join
reordering, each query with and without lakestats' Spark component (the ways' settings
switched per run in one session, the ways alternating so that neither always runs first).
Prints one JSON line: per format, query and way, the wall time of each run, the executed
plan's join strategies, the optimized plan's table order, the initial physical plan (expression
ids dropped) and the answer's rows as text; with an ``explain`` directory, each query's
``EXPLAIN COST`` per format and way is written there as ``<format>-<query>-<way>.txt``.
With 0 runs nothing is executed: the plans only.

    python bench/interop_queries_spark.py SPEC_JSON

SPEC: {"jars": [...], "extensions": [...], "tables": {format: {name: path}},
"queries": {name: sql}, "ways": {way: {conf: value}}, "runs": n, "explain": dir or null}
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

STRATEGIES = {"broadcast": "BroadcastHashJoin", "shuffled": "ShuffledHashJoin",
              "merge": "SortMergeJoin"}


PREFIXES = {"l": "lineitem", "o": "orders", "c": "customer", "p": "part", "ps": "partsupp",
            "s": "supplier", "n": "nation", "r": "region"}


def _order(plan: object) -> list[str]:
    """The tables the optimized plan's leaves read, left to right (a TPC-H table by its
    columns' prefix)."""
    leaves = plan.collectLeaves()
    out = []
    for i in range(leaves.size()):
        output = leaves.apply(i).output()
        name = output.apply(0).name() if output.size() else ""
        out.append(PREFIXES.get(name.split("_")[0], "?"))
    return out


def _initial(executed: str) -> str:
    """The physical plan the optimizer chose (adaptive execution's initial plan), without
    expression ids, plan ids and scan details that name no choice."""
    plan = executed.split("== Initial Plan ==")[-1]
    plan = re.sub(r"#\d+L?", "", plan)
    plan = re.sub(r"plan_id=\d+", "", plan)
    plan = re.sub(r"\b(delta|hudi)_[0-9a-f]+", "", plan)  # the component's catalog table name
    plan = re.sub(r"\[id=#?\d+\]", "", plan)
    return plan.strip()


def main(spec_path: str) -> None:
    with open(spec_path) as handle:
        spec = json.load(handle)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", ",".join(spec["jars"]))
        .config("spark.sql.extensions", ",".join(spec["extensions"]))
        .config("spark.sql.cbo.enabled", "true")
        .config("spark.sql.cbo.joinReorder.enabled", "true")
        .config("spark.sql.catalog.spark_catalog",
                "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "6g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    explain = Path(spec["explain"]) if spec.get("explain") else None
    ways = list(spec["ways"])
    out: dict = {"spark": spark.version, "runs": {}}
    for fmt, tables in spec["tables"].items():
        for name, path in tables.items():
            spark.read.format(fmt).load(path).createOrReplaceTempView(name)
        runs: dict = {}
        for query, sql in spec["queries"].items():
            result = {way: {"seconds": []} for way in ways}
            for run in range(max(spec["runs"], 1)):  # 0 runs: plans only
                for way in ways if run % 2 == 0 else reversed(ways):
                    for key, value in spec["ways"][way].items():
                        spark.conf.set(key, value)
                    frame = spark.sql(sql)
                    rows = None
                    if spec["runs"]:
                        started = time.perf_counter()
                        rows = [[str(v) for v in r] for r in frame.collect()]
                        result[way]["seconds"].append(time.perf_counter() - started)
                    execution = frame._jdf.queryExecution()
                    executed = execution.executedPlan().toString()
                    result[way].update({
                        "joins": {k: executed.split("== Initial Plan ==")[0].count(v)
                                  for k, v in STRATEGIES.items()},
                        "order": _order(execution.optimizedPlan()),
                        "plan": _initial(executed),
                        "rows": rows,
                    })
            if explain is not None:
                for way in ways:
                    for key, value in spec["ways"][way].items():
                        spark.conf.set(key, value)
                    text = spark.sql("EXPLAIN COST " + sql).collect()[0][0]
                    (explain / f"{fmt}-{query}-{way}.txt").write_text(text)
            runs[query] = result
            print(f"{fmt} {query} done", file=sys.stderr, flush=True)
        out["runs"][fmt] = runs
    print(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
