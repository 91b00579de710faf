"""Feeding Spark's optimizer: ``lakestats.spark.register`` vs Spark's own ``ANALYZE TABLE …
COMPUTE STATISTICS FOR ALL COLUMNS`` with histograms, on TPC-H lineitem by month.

Both start from nothing in Spark's catalog (the table is dropped before each round) and end
with a table whose catalog statistics hold a row count and, per column, distinct count,
min/max, nulls, lengths and an equi-height histogram. lakestats' ``analyze`` runs once
before and is not timed: ``register`` only reads its table-level files. Then the row counts
Spark's CBO estimates (EXPLAIN COST, ``optimizedPlan().stats()``) for a few filters with
either set of statistics are compared with the true counts (DuckDB).

    python -m bench.register [--scale 1] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import duckdb

import lakestats.api as ls
from bench.common import machine, partitioned, tpch_lineitem
from lakestats.compute.session import get_spark
from lakestats.spark import plan_statistics, register

FILTERS = (
    "l_shipdate < DATE '1993-01-01'",
    "l_shipdate BETWEEN DATE '1995-03-01' AND DATE '1995-03-31'",
    "l_commitdate > DATE '1998-06-01'",
    "l_quantity <= 5",
    "l_quantity = 25",
    "l_extendedprice > 90000",
    "l_discount = 0.05",
    "l_orderkey < 100000",
    "l_returnflag = 'R'",
    "l_shipmode = 'AIR'",
    "ship_year = 1995",
)


def _estimate(spark, table: str, where: str) -> int:  # noqa: ANN001
    stats = spark.table(table).where(where)._jdf.queryExecution().optimizedPlan().stats()
    return int(stats.rowCount().get())


def _q_error(estimate: int, true: int) -> float:
    estimate, true = max(estimate, 1), max(true, 1)
    return max(estimate / true, true / estimate)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    data = partitioned(tpch_lineitem(args.scale), "month")
    spark = get_spark()
    table = ls.open_table(str(data))
    start = time.perf_counter()
    table.analyze(spark=spark)
    print(f"# {machine()}; lineitem scale {args.scale:g} by month ({data})")
    print(f"lakestats analyze (not timed below): {time.perf_counter() - start:.1f} s")

    spark.conf.set("spark.sql.cbo.enabled", "true")
    spark.conf.set("spark.sql.statistics.histogram.enabled", "true")

    def with_lakestats() -> None:
        spark.sql("DROP TABLE IF EXISTS ls_lineitem")
        register(spark, table, "ls_lineitem")

    def with_spark_analyze() -> None:
        spark.sql("DROP TABLE IF EXISTS spark_lineitem")
        spark.sql(f"CREATE TABLE spark_lineitem USING parquet LOCATION '{data}'")
        spark.sql("ALTER TABLE spark_lineitem RECOVER PARTITIONS")
        spark.sql("ANALYZE TABLE spark_lineitem COMPUTE STATISTICS FOR ALL COLUMNS")

    def create_only() -> None:
        spark.sql("DROP TABLE IF EXISTS bare_lineitem")
        spark.sql(f"CREATE TABLE bare_lineitem USING parquet LOCATION '{data}'")
        spark.sql("ALTER TABLE bare_lineitem RECOVER PARTITIONS")

    rounds: dict[str, list[float]] = {"create": [], "lakestats": [], "spark": [], "plan": []}
    create_only()  # one untimed round: JVM classes and file listings warm for both
    for _ in range(args.runs):
        for label, action in (
            ("create", create_only),
            ("plan", lambda: plan_statistics(table, "x")),
            ("lakestats", with_lakestats),
            ("spark", with_spark_analyze),
        ):
            start = time.perf_counter()
            action()
            rounds[label].append(time.perf_counter() - start)
    median = {k: statistics.median(v) for k, v in rounds.items()}
    print(f"\nmedian of {args.runs}                                   seconds")
    print(f"CREATE TABLE + RECOVER PARTITIONS (both do it)      {median['create']:8.2f}")
    print(f"lakestats register (create + set statistics)        {median['lakestats']:8.2f}")
    print(f"  of which reading lakestats' files, cutting bins   {median['plan']:8.2f}")
    print(f"Spark create + ANALYZE FOR ALL COLUMNS + histograms {median['spark']:8.2f}")
    print(f"Spark ANALYZE / lakestats register                  "
          f"{median['spark'] / median['lakestats']:8.1f}x")  # fmt: skip
    print("rounds:", {k: [round(t, 2) for t in v] for k, v in rounds.items()})

    files = f"read_parquet('{data}/ship_year=*/ship_month=*/*.parquet', hive_partitioning = true)"
    con = duckdb.connect()
    print(f"\n{'filter':60s} {'true':>9s} {'lakestats':>10s} {'q':>6s} {'spark':>10s} {'q':>6s}")
    q_ls, q_spark = [], []
    for where in FILTERS:
        true = con.execute(f"SELECT count(*) FROM {files} WHERE {where}").fetchone()[0]
        ours = _estimate(spark, "ls_lineitem", where)
        theirs = _estimate(spark, "spark_lineitem", where)
        q_ls.append(_q_error(ours, true))
        q_spark.append(_q_error(theirs, true))
        print(f"{where:60s} {true:9d} {ours:10d} {q_ls[-1]:6.3f} {theirs:10d} {q_spark[-1]:6.3f}")
    print(f"{'median q-error':60s} {'':9s} {'':10s} {statistics.median(q_ls):6.3f} "
          f"{'':10s} {statistics.median(q_spark):6.3f}")  # fmt: skip
    print(f"{'max q-error':60s} {'':9s} {'':10s} {max(q_ls):6.3f} {'':10s} {max(q_spark):6.3f}")
    for name in ("ls_lineitem", "spark_lineitem", "bare_lineitem"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


if __name__ == "__main__":
    main()
