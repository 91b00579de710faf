"""Run by PySpark 3.5 (``.venv-interop35``), not by the test process: Hudi's and Paimon's own
Spark 3.5 runtimes write tables, then, once the test has analyzed them with lakestats, read
them with lakestats' Spark component (``build/jvm35``) on and off in the same session
(``spark.lakestats.enabled``). One Spark process for both phases.

    python spark35_lakestats_stats.py SPEC_JSON

SPEC: {"jars": [...], "extensions": [...], "paimon_warehouse": dir,
"writes": [{"name", "format": "hudi"|"paimon", "path" (Hudi) | "table" (Paimon), "parquet"}]}

Phase 1 writes every table from its Parquet file and prints ``{"written": {name: path}}``.
Phase 2 reads one JSON line from standard input, ``{"appends": [{"name", "parquet"}],
"cases": [{"name", "format", "path", "options", "filters"}]}``: appends those rows (a new
commit or snapshot nobody analyzed), then prints one JSON line: per case and per way, the
scan's row count and distinct counts (``optimizedPlan().stats()``, ``spark.sql.cbo.enabled``
on), each filter's estimated row count, the ``EXPLAIN COST`` text, and the true count.
"""

from __future__ import annotations

import json
import sys

from component_cases import run_cases
from pyspark.sql import SparkSession


def _hudi(frame, name: str, path: str, mode: str) -> None:
    (frame.write.format("hudi")
     .option("hoodie.table.name", name)
     .option("hoodie.datasource.write.table.type", "COPY_ON_WRITE")
     .option("hoodie.datasource.write.operation", "insert")
     .option("hoodie.datasource.write.recordkey.field", "id")
     .option("hoodie.datasource.write.precombine.field", "id")
     .option("hoodie.datasource.write.partitionpath.field", "")
     .option("hoodie.datasource.write.keygenerator.class",
             "org.apache.hudi.keygen.NonpartitionedKeyGenerator")
     .mode(mode).save(path))


def _write(spark, write: dict, mode: str) -> str:
    frame = spark.read.parquet(write["parquet"])
    if write["format"] == "hudi":
        _hudi(frame, write["name"].replace("-", "_"), write["path"], mode)
        return write["path"]
    table = f"paimon.{write['table']}"
    if mode == "overwrite":
        columns = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in frame.schema)
        spark.sql(f"CREATE TABLE {table} ({columns})")
    frame.writeTo(table).append()
    db, name = write["table"].split(".")
    return f"{spark.conf.get('spark.sql.catalog.paimon.warehouse')}/{db}.db/{name}"


def main(spec_path: str) -> None:
    with open(spec_path) as handle:
        spec = json.load(handle)
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.jars", ",".join(spec["jars"]))
        .config("spark.sql.extensions", ",".join(spec["extensions"]))
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.sql.catalog.paimon", "org.apache.paimon.spark.SparkCatalog")
        .config("spark.sql.catalog.paimon.warehouse", spec["paimon_warehouse"])
        .config("spark.sql.cbo.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("CREATE DATABASE IF NOT EXISTS paimon.db")
    written = {w["name"]: _write(spark, w, "overwrite") for w in spec["writes"]}
    print(json.dumps({"written": written}), flush=True)

    step = json.loads(sys.stdin.readline())
    by_name = {w["name"]: w for w in spec["writes"]}
    for append in step["appends"]:
        _write(spark, {**by_name[append["name"]], "parquet": append["parquet"]}, "append")
    out = run_cases(spark, step["cases"])
    print(json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
