"""Run by ``bench/interop_queries.py`` in the PySpark Iceberg's runtime supports
(``.venv-interop``): TPC-H queries over Iceberg tables with cost-based join reordering, each
way (``spark.lakestats.enabled`` and Iceberg's ``report-column-stats`` switched per way in one
session). Prints one JSON line: per way and query, the median wall time, the executed plan's
join strategies, the optimized plan's table order and the answer's rows as text.

    python bench/interop_queries_spark.py SPEC_JSON

SPEC: {"jars": [...], "extensions": [...], "tables": {name: metadata.json path},
"queries": {name: sql}, "ways": {way: {conf: value}}, "runs": n}
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from pyspark.sql import SparkSession

STRATEGIES = {"broadcast": "BroadcastHashJoin", "shuffled": "ShuffledHashJoin",
              "merge": "SortMergeJoin"}


def _order(plan: object, tables: dict[str, str]) -> list[str]:
    """The tables the optimized plan's leaves read, left to right (a table by its
    directory in the leaf's description)."""
    leaves = plan.collectLeaves()
    names = sorted(tables, key=len, reverse=True)  # partsupp before part
    out = []
    for i in range(leaves.size()):
        text = leaves.apply(i).toString()
        found = next((n for n in names if f"/{n}/" in text or text.endswith(f"/{n}")), "?")
        out.append(found)
    return out


def main(spec_path: str) -> None:
    with open(spec_path) as handle:
        spec = json.load(handle)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", ",".join(spec["jars"]))
        .config("spark.sql.extensions", ",".join(spec["extensions"]))
        .config("spark.sql.cbo.enabled", "true")
        .config("spark.sql.cbo.joinReorder.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "6g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out: dict = {"spark": spark.version, "runs": {}}
    for way, settings in spec["ways"].items():
        for key, value in settings.items():
            spark.conf.set(key, value)
        for name, path in spec["tables"].items():
            spark.read.format("iceberg").load(path).createOrReplaceTempView(name)
        runs = {}
        for query, sql in spec["queries"].items():
            seconds, rows, frame = [], None, None
            for _ in range(spec["runs"]):
                frame = spark.sql(sql)
                started = time.perf_counter()
                rows = [list(r) for r in frame.collect()]
                seconds.append(time.perf_counter() - started)
            execution = frame._jdf.queryExecution()
            executed = execution.executedPlan().toString().split("== Initial Plan ==")[0]
            runs[query] = {
                "seconds": statistics.median(seconds),
                "joins": {k: executed.count(v) for k, v in STRATEGIES.items()},
                "order": _order(execution.optimizedPlan(), spec["tables"]),
                "rows": [[str(v) for v in row] for row in rows],
            }
        out["runs"][way] = runs
    print(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
