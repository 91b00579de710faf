"""Run by PySpark 3.5 (``.venv-interop35``), not by the test process: Hudi's and Paimon's own
Spark 3.5 runtimes write tables, then, once the test has analyzed them with lakestats, read
them with lakestats' Spark component (``build/jvm35``) on and off in the same session
(``spark.lakestats.enabled``). One Spark process for both phases.

    python spark35_lakestats_stats.py SPEC_JSON

SPEC: {"jars": [...], "extensions": [...], "paimon_warehouse": dir, "roots" (the
component's ``spark.lakestats.roots``),
"writes": [{"name", "format": "hudi"|"paimon", "path" (Hudi) | "table" (Paimon), "parquet",
"partition" (a column, optional), "mor" (Hudi: merge-on-read), "primary_key" (Paimon: a
column, bucketed), "updates" (a Parquet file upserted as a second commit, optional)}],
"catalog": {name: Hudi path} (registered in the session catalog after the writes)}

Phase 1 writes every table from its Parquet file (then upserts its updates) and prints
``{"written": {name: path}}``. Phase 2 reads one JSON line from standard input,
``{"before": [case], "tags": [{"name", "tag", "snapshot"}], "appends": [{"name", "parquet"}],
"cases": [case]}`` with case ``{"name", "format", "path", "options", "filters"}``: reads the
``before`` cases, creates the Paimon tags, appends those rows (a new commit or snapshot nobody
analyzed), reads the ``cases``, then prints one JSON line: per case and per way, the scan's
row count and distinct counts (``optimizedPlan().stats()``, ``spark.sql.cbo.enabled`` on), each
filter's estimated row count, the ``EXPLAIN COST`` text, and the true count.
"""

from __future__ import annotations

import json
import sys

from component_cases import run_cases
from pyspark.sql import SparkSession


def _hudi(frame, write: dict, mode: str, operation: str) -> None:
    partition = write.get("partition")
    keygen = "SimpleKeyGenerator" if partition else "NonpartitionedKeyGenerator"
    (frame.write.format("hudi")
     .option("hoodie.table.name", write["name"].replace("-", "_"))
     .option("hoodie.datasource.write.table.type",
             "MERGE_ON_READ" if write.get("mor") else "COPY_ON_WRITE")
     .option("hoodie.datasource.write.operation", operation)
     .option("hoodie.datasource.write.recordkey.field", "id")
     .option("hoodie.datasource.write.precombine.field", "id")
     .option("hoodie.datasource.write.partitionpath.field", partition or "")
     .option("hoodie.datasource.write.keygenerator.class", f"org.apache.hudi.keygen.{keygen}")
     .mode(mode).save(write["path"]))


def _write(spark, write: dict, mode: str, parquet: str | None = None) -> str:
    frame = spark.read.parquet(parquet or write["parquet"])
    if write["format"] == "hudi":
        operation = "insert" if mode == "overwrite" or not write.get("mor") else "upsert"
        _hudi(frame, write, mode, operation)
        return write["path"]
    table = f"paimon.{write['table']}"
    if mode == "overwrite":
        columns = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in frame.schema)
        options = []
        if write.get("primary_key"):
            options = [f"'primary-key' = '{write['primary_key']}'", "'bucket' = '2'"]
        partition = f" PARTITIONED BY ({write['partition']})" if write.get("partition") else ""
        properties = f" TBLPROPERTIES ({', '.join(options)})" if options else ""
        spark.sql(f"CREATE TABLE {table} ({columns}){partition}{properties}")
    frame.writeTo(table).append()  # an upsert on a primary-key table
    db, name = write["table"].split(".")
    return f"{spark.conf.get('spark.sql.catalog.paimon.warehouse')}/{db}.db/{name}"


def _written(spark, write: dict) -> str:
    path = _write(spark, write, "overwrite")
    if write.get("updates"):
        _write(spark, write, "append", write["updates"])
    return path


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
        .config("spark.lakestats.roots", spec.get("roots", ""))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("CREATE DATABASE IF NOT EXISTS paimon.db")
    written = {w["name"]: _written(spark, w) for w in spec["writes"]}
    for name, path in spec.get("catalog", {}).items():  # Hudi tables in the session catalog
        spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{path}'")
    print(json.dumps({"written": written}), flush=True)

    step = json.loads(sys.stdin.readline())
    by_name = {w["name"]: w for w in spec["writes"]}
    before = run_cases(spark, step.get("before", []), step.get("ways"))
    for tag in step.get("tags", []):
        spark.sql(f"CALL paimon.sys.create_tag(table => '{by_name[tag['name']]['table']}', "
                  f"tag => '{tag['tag']}', snapshot => {int(tag['snapshot'])})")
    for append in step["appends"]:
        _write(spark, by_name[append["name"]], "append", append["parquet"])
    out = run_cases(spark, step["cases"], step.get("ways"))
    out["cases"] |= before["cases"]
    print(json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
