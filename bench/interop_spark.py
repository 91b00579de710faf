"""Run by ``bench/interop.py`` in the PySpark the formats' runtimes support (``.venv-interop``):
Spark's optimizer estimates for filters and joins over Iceberg and Delta tables, each way
(``spark.lakestats.enabled`` and Iceberg's ``report-column-stats`` switched per way in one
session). Prints one JSON line: per table, way and query, the optimized plan's row count.

    python bench/interop_spark.py SPEC_JSON

SPEC: {"jars": [...], "extensions": [...], "tables": {name: {"format", "path"}},
"queries": {name: {"table": name, "sql": "... FROM t ..."}}, "ways": {way: {conf: value}},
"compute_table_stats": {"way", "view", "table", "metadata"} (optional), "analyze_parquet":
path (optional), "debug_logger": a logger name to log at DEBUG on stderr (optional)}

``compute_table_stats``: the Iceberg table (its metadata file) is registered in an Iceberg
Hadoop catalog of this session (``lakestats_bench``, a temporary warehouse; the pyiceberg
catalog that wrote it is not touched) and Iceberg's own ``CALL ….system.compute_table_stats``
commits its Puffin statistics there, timed; in that way the view reads the registered table.
``analyze_parquet``: Spark's own ``ANALYZE TABLE … COMPUTE STATISTICS FOR ALL COLUMNS`` of the
same rows as a Parquet table (Spark's ANALYZE does not run on V2 tables such as Iceberg's and
Delta's), timed.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time

from pyspark.sql import SparkSession

DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
BENCH_CATALOG = "lakestats_bench"


def _timed(spark, sql: str) -> float:  # noqa: ANN001
    started = time.perf_counter()
    spark.sql(sql).collect()
    return time.perf_counter() - started


def _compute_table_stats(spark, spec: dict) -> float:  # noqa: ANN001
    """Register the table in the session's Iceberg Hadoop catalog; the seconds Iceberg's
    ``compute_table_stats`` takes there."""
    table = spec["table"]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {BENCH_CATALOG}.{table.split('.')[0]}")
    spark.sql(f"CALL {BENCH_CATALOG}.system.register_table(table => '{table}', "
              f"metadata_file => '{spec['metadata']}')").collect()
    return _timed(spark, f"CALL {BENCH_CATALOG}.system.compute_table_stats(table => '{table}')")


def main(spec_path: str) -> None:
    with open(spec_path) as handle:
        spec = json.load(handle)
    spark = (
        SparkSession.builder.master("local[2]")
        # the planning JVM's heap (Spark's default 1g unless the spec names one)
        .config("spark.driver.memory", spec.get("driver_memory", "1g"))
        .config("spark.jars", ",".join(spec["jars"]))
        .config("spark.sql.extensions", ",".join(spec["extensions"]))
        .config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
        .config("spark.sql.cbo.enabled", "true")
        .config("spark.sql.cbo.joinReorder.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config(f"spark.sql.catalog.{BENCH_CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{BENCH_CATALOG}.type", "hadoop")
        .config(f"spark.sql.catalog.{BENCH_CATALOG}.warehouse",
                f"file:{tempfile.mkdtemp(prefix='lakestats-bench-catalog-')}")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    if spec.get("debug_logger"):  # e.g. the component's per-filter timings, on stderr
        log4j = spark._jvm.org.apache.logging.log4j
        log4j.core.config.Configurator.setLevel(spec["debug_logger"], log4j.Level.DEBUG)
    out: dict = {"spark": spark.version, "estimates": {}, "plan_ms": {}, "seconds": {}}
    compute = spec.get("compute_table_stats")
    if compute:
        out["seconds"]["compute_table_stats"] = _compute_table_stats(spark, compute)
    if spec.get("analyze_parquet"):
        spark.sql(f"CREATE TABLE bench_parquet USING parquet LOCATION '{spec['analyze_parquet']}'")
        out["seconds"]["spark ANALYZE"] = _timed(
            spark, "ANALYZE TABLE bench_parquet COMPUTE STATISTICS FOR ALL COLUMNS")
    for way, settings in spec["ways"].items():
        for key, value in settings.items():
            spark.conf.set(key, value)
        for name, table in spec["tables"].items():
            if compute and way == compute["way"] and name == compute["view"]:
                frame = spark.table(f"{BENCH_CATALOG}.{compute['table']}")
            else:
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
