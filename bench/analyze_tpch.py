"""Analyze TPC-H lineitem (scale 1) with lakestats and its competitors, in one run.

Layouts: partitioned by ship year (7 partitions) and by ship year+month (~80).
For each, median of 3: a plain Spark scan of all columns (``noop`` write), Spark
``ANALYZE TABLE … COMPUTE STATISTICS FOR ALL COLUMNS`` without and with
``spark.sql.statistics.histogram.enabled``, DuckDB ``SUMMARIZE`` with 2 threads, and
``lakestats analyze`` (all three files for every partition, 1,000 bins; the row
"+ table-level reduction" is the same run followed by the table-level files). Prints the
ratios against lakestats' partition-level analyze.

Formats (``--formats``): the yearly table also stored as Iceberg (pyiceberg) and Delta
(delta-rs), and as Iceberg with every 10th row deleted by position delete files;
``lakestats analyze`` (partition level) of each, against the Parquet directory's time.

    python bench/analyze_tpch.py [--scale 1] [--runs 3] [--layouts year,month]
        [--formats parquet,iceberg,delta,iceberg-10%-deleted]
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import tempfile
from pathlib import Path

import duckdb

import lakestats.api as ls
from bench.common import (
    as_delta,
    as_iceberg,
    machine,
    median_time,
    partitioned,
    tpch_lineitem,
)
from lakestats.compute.session import get_spark


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--layouts", default="year,month")
    parser.add_argument("--formats", default="parquet,iceberg,delta,iceberg-10%-deleted")
    args = parser.parse_args()

    source = tpch_lineitem(args.scale)
    spark = get_spark("local[2]")
    print(f"# analyze_tpch  {dt.date.today()}  scale {args.scale:g}  {machine()}")
    for layout in filter(None, args.layouts.split(",")):
        run_layout(spark, source, layout, args.runs)
    if args.formats:
        run_formats(spark, source, args.formats.split(","), args.runs)


def run_formats(spark, source: Path, formats: list[str], runs: int) -> dict[str, float]:  # noqa: ANN001
    """lakestats analyze (partition level) of the yearly table in each format."""
    tables = {
        "parquet": lambda: partitioned(source, "year"),
        "iceberg": lambda: as_iceberg(source),
        "delta": lambda: as_delta(source),
        "iceberg-10%-deleted": lambda: as_iceberg(source, deleted_every=10),
    }
    root = Path(tempfile.mkdtemp(prefix="lakestats-bench-"))
    results = {}
    try:
        warm = str(tables["parquet"]())  # one untimed run: JVM and Python workers warm
        ls.open_table(warm, stats_root=str(root)).analyze(spark=spark, table_level=False)
        for name in ["parquet", *(f for f in formats if f != "parquet")]:
            path = str(tables[name]())

            def analyze(path: str = path) -> None:
                shutil.rmtree(root, ignore_errors=True)
                ls.open_table(path, stats_root=str(root)).analyze(spark=spark, table_level=False)

            results[name] = median_time(analyze, runs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = results["parquet"]
    print("\n## lineitem by year (7 partitions) in each format, lakestats analyze")
    print(f"{'format':32s} {'median s':>9s} {'/ parquet dir':>15s}")
    for label, seconds in results.items():
        print(f"{label:32s} {seconds:9.2f} {seconds / base:15.2f}")
    return results


def run_layout(spark, source: Path, layout: str, runs: int) -> dict[str, float]:  # noqa: ANN001
    table_dir = partitioned(source, layout)
    partitions = len({p.parent for p in table_dir.rglob("*.parquet")})
    name = f"lineitem_{layout}"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.catalog.createTable(name, path=str(table_dir), source="parquet")
    spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")

    def scan() -> None:
        spark.read.parquet(str(table_dir)).write.format("noop").mode("overwrite").save()

    def spark_analyze(histograms: bool) -> None:
        spark.conf.set("spark.sql.statistics.histogram.enabled", str(histograms).lower())
        spark.sql(f"ANALYZE TABLE {name} COMPUTE STATISTICS FOR ALL COLUMNS")
        spark.conf.set("spark.sql.statistics.histogram.enabled", "false")

    def duckdb_summarize() -> None:
        con = duckdb.connect()
        con.execute("SET threads = 2")
        con.execute(
            f"SUMMARIZE SELECT * FROM read_parquet('{table_dir}/**/*.parquet', "
            "hive_partitioning = true)"
        ).fetchall()
        con.close()

    root = Path(tempfile.mkdtemp(prefix="lakestats-bench-"))

    def lakestats_analyze(table_level: bool) -> None:
        # a fresh statistics root each run: nothing is reused from the previous run
        shutil.rmtree(root, ignore_errors=True)
        ls.open_table(str(table_dir), stats_root=str(root)).analyze(
            spark=spark, table_level=table_level
        )

    results = {}
    try:
        results["spark scan (noop)"] = median_time(scan, runs)
        results["spark ANALYZE"] = median_time(lambda: spark_analyze(False), runs)
        results["spark ANALYZE + histograms"] = median_time(lambda: spark_analyze(True), runs)
        results["duckdb SUMMARIZE (2 threads)"] = median_time(duckdb_summarize, runs)
        results["lakestats analyze"] = median_time(lambda: lakestats_analyze(False), runs)
        results["  + table-level reduction"] = median_time(lambda: lakestats_analyze(True), runs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ours = results["lakestats analyze"]
    print(f"\n## lineitem by {layout}: {partitions} partitions, parquet directory")
    print(f"{'contender':32s} {'median s':>9s} {'lakestats / it':>15s}")
    for label, seconds in results.items():
        print(f"{label:32s} {seconds:9.2f} {ours / seconds:15.2f}")
    return results


if __name__ == "__main__":
    main()
