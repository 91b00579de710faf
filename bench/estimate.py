"""Selectivity estimates: lakestats vs Spark's CBO, q-error against DuckDB's true counts.

    python -m bench.estimate [--scale 1] [--seed 14] [--tables lineitem,zipf | --zipf-only]
                             [--no-spark-cbo] [--reuse-stats] [--out DIR]

Everything the run writes goes under ``--out`` (default ``bench/data/est14``): the Zipf
table, lakestats' statistics roots, Spark's catalog (a Hive metastore in Derby and its
warehouse, ``spark/``) and the per-predicate results (``results_<table>.json``). Spark's
``ANALYZE`` is the slow part (~1,000 s on lineitem under load): its analyzed catalog table
persists in that metastore, and a re-run over the same data skips it (a marker file records
that the ANALYZE finished and how long it took); ``--reanalyze-spark`` forces it.

Two tables: TPC-H lineitem at ``--scale`` partitioned by ship year+month (84 partitions),
and a skewed table (Zipf values whose frequent values differ by partition, partition sizes
Zipf too). A fixed, seeded set of predicates per class (single column: equality on a
frequent value (columns with <= 100 distinct values) and on a rare one, ranges, IN lists,
IS [NOT] NULL, prefix LIKE; two and three conjuncts over different columns; OR), true
counts from DuckDB, estimates from ``LakestatsTable.estimate`` and from Spark's CBO after
``ANALYZE TABLE ... COMPUTE STATISTICS FOR ALL COLUMNS`` with
``spark.sql.statistics.histogram.enabled`` (the optimized plan's ``rowCount``; when Spark
has none, e.g. LIKE, its plan keeps every row, which is what we count).
q-error = max(est, true) / min(est, true), both floored at 1 row. The last line checks the
issue's targets: lakestats' median <= 1.05 and p90 <= 1.5 over single-column predicates,
p90 <= 3 over conjunctions, and a lower q-error than Spark's in every class (median and p90).
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lakestats.api as ls
from bench.common import DATA, machine, partitioned, tpch_lineitem

SINGLE = ("eq frequent", "eq rare", "range", "in", "null", "prefix like")
CONJUNCTIONS = ("and 2", "and 3")

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


OUT = DATA / "est14"


def zipf_table(rows: int, seed: int, base: Path = OUT) -> Path:
    out = base / f"zipf_{rows}"
    if (out / "_SUCCESS").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    rng = np.random.default_rng(seed)
    sizes = np.maximum(200, (rows / np.arange(1, 31) ** 0.8))
    sizes = (sizes / sizes.sum() * rows).astype(int)
    for day, n in enumerate(sizes, start=1):
        z = rng.zipf(1.3, n) % 20_000
        rotate = (day * 37) % 500  # the frequent values differ by partition
        x = rng.normal(day, 10, n)
        base = dt.date(2024, 1, 1)
        table = pa.table(
            {
                "z": pa.array((z + rotate) % 20_000, pa.int64()),
                "cat": pa.array([f"c{(int(v) * 7 + day) % 3000:04d}" for v in rng.zipf(1.2, n)]),
                "x": pa.array(x, mask=rng.random(n) < 0.1 * (day % 3)),
                "g": pa.array(rng.integers(0, 1_000_000, n), pa.int64()),
                "amount": pa.array(
                    [decimal.Decimal(int(v)).scaleb(-2) for v in rng.zipf(1.5, n) % 100_000],
                    pa.decimal128(12, 2),
                ),
                "seen": pa.array([base + dt.timedelta(days=int(v)) for v in
                                  rng.integers(0, 365, n)], pa.date32()),
            }
        )
        (out / f"day={day}").mkdir(parents=True)
        pq.write_table(table, out / f"day={day}" / "part-0.parquet")
    (out / "_SUCCESS").touch()
    return out


def sql_literal(value: object) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)
    return str(value)


class Generator:
    """Seeded predicates over one table, from a reservoir sample of its rows."""

    def __init__(self, con: duckdb.DuckDBPyConnection, source: str, spec: dict, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.spec = spec
        self.sample = con.execute(
            f"SELECT * FROM {source} USING SAMPLE reservoir(3000 ROWS) REPEATABLE ({seed})"
        ).to_arrow_table()

    def value(self, column: str) -> object:
        values = self.sample.column(column)
        while True:
            v = values[int(self.rng.integers(0, len(values)))].as_py()
            if v is not None and not (isinstance(v, float) and np.isnan(v)):
                return v

    def pick(self, kind: str) -> str:
        return str(self.rng.choice(self.spec[kind]))

    def single(self, cls: str, exclude: set[str] = frozenset()) -> tuple[str, str]:
        for _ in range(100):
            kind = {"eq frequent": "frequent", "eq rare": "rare", "range": "ordered",
                    "in": "frequent", "null": "nullable", "prefix like": "prefix"}[cls]
            column = self.pick(kind)
            if column not in exclude:
                break
        if cls in ("eq frequent", "eq rare"):
            return column, f"{column} = {sql_literal(self.value(column))}"
        if cls == "range":
            a, b = sorted([self.value(column), self.value(column)])
            form = int(self.rng.integers(0, 3))
            if form == 0:
                return column, f"{column} < {sql_literal(a)}"
            if form == 1:
                return column, f"{column} >= {sql_literal(a)}"
            return column, f"{column} BETWEEN {sql_literal(a)} AND {sql_literal(b)}"
        if cls == "in":
            if self.rng.random() < 0.3 and self.spec["rare"]:
                column = self.pick("rare")
            items = sorted({sql_literal(self.value(column))
                            for _ in range(int(self.rng.integers(2, 6)))})
            return column, f"{column} IN ({', '.join(items)})"
        if cls == "null":
            return column, f"{column} IS {'NOT ' if self.rng.random() < 0.5 else ''}NULL"
        text = str(self.value(column))
        prefix = text[: int(self.rng.integers(1, 5))].replace("%", "").replace("_", "")
        return column, f"{column} LIKE {sql_literal(prefix + '%')}"

    def conjunction(self, k: int) -> str:
        used: set[str] = set()
        parts = []
        for _ in range(k):
            cls = str(self.rng.choice(["eq frequent", "range", "in", "range"]))
            column, text = self.single(cls, used)
            used.add(column)
            parts.append(text)
        return " AND ".join(parts)

    def disjunction(self) -> str:
        a = self.single(str(self.rng.choice(["eq frequent", "range", "in"])))[1]
        b = self.single(str(self.rng.choice(["eq frequent", "range", "eq rare"])))[1]
        return f"({a}) OR ({b})"

    def predicates(self, counts: dict[str, int]) -> list[tuple[str, str]]:
        out = []
        for cls, n in counts.items():
            for _ in range(n):
                if cls in SINGLE:
                    out.append((cls, self.single(cls)[1]))
                elif cls == "and 2":
                    out.append((cls, self.conjunction(2)))
                elif cls == "and 3":
                    out.append((cls, self.conjunction(3)))
                else:
                    out.append((cls, self.disjunction()))
        return out


LINEITEM = {
    "frequent": ["l_shipmode", "l_returnflag", "l_linestatus", "l_quantity", "l_discount",
                 "l_tax", "l_linenumber", "l_shipinstruct"],
    "rare": ["l_orderkey", "l_partkey", "l_suppkey", "l_extendedprice", "l_comment"],
    "ordered": ["l_shipdate", "l_commitdate", "l_receiptdate", "l_quantity", "l_extendedprice",
                "l_discount", "l_partkey", "l_orderkey", "l_suppkey"],
    "nullable": [],
    "prefix": ["l_comment", "l_shipinstruct", "l_shipmode"],
}
ZIPF = {
    "frequent": ["z", "cat"],
    "rare": ["g", "amount"],
    "ordered": ["z", "x", "g", "amount", "seen"],
    "nullable": ["x"],
    "prefix": ["cat"],
}


def qerror(est: float, true: int) -> float:
    e, t = max(float(est), 1.0), max(float(true), 1.0)
    return max(e / t, t / e)


def spark_rows(spark, name: str, where: str) -> float | None:  # noqa: ANN001
    plan = spark.sql(f"SELECT * FROM {name} WHERE {where}")._jdf.queryExecution().optimizedPlan()
    count = plan.stats().rowCount()
    if not count.isDefined():
        return None
    value = count.get()  # py4j hands a Scala BigInt back as a Python int
    return float(value if isinstance(value, int) else value.toString())


def run_table(
    spark,  # noqa: ANN001
    label: str,
    table_dir: Path,
    spec: dict,
    counts: dict,
    seed: int,
    reuse: bool = False,
    out: Path = OUT,
    reanalyze: bool = False,
) -> list:
    con = duckdb.connect()
    con.execute("SET threads = 2")
    source = f"read_parquet('{table_dir}/**/*.parquet', hive_partitioning = true)"
    root = out / "estimate_stats" / label
    table = ls.open_table(str(table_dir), stats_root=str(root))
    start = time.perf_counter()
    if not (reuse and (root / "latest.json").exists()):
        shutil.rmtree(root, ignore_errors=True)
        table.analyze(spark=spark)
    analyze_s = time.perf_counter() - start
    print(f"  ... {label}: lakestats analyze {analyze_s:.1f} s", flush=True)

    name = f"est_{label}"
    spark_analyze_s = float("nan")
    if spark is not None:
        spark_analyze_s = _spark_analyze(spark, name, table_dir, out / "spark", reanalyze)
    print(f"  ... {label}: Spark ANALYZE {spark_analyze_s:.1f} s", flush=True)
    total_rows = con.execute(f"SELECT count(*) FROM {source}").fetchone()[0]
    results = _evaluate(spark, label, table, con, source, spec, counts, seed, total_rows,
                        analyze_s, spark_analyze_s)
    (out / f"results_{label}.json").write_text(json.dumps(results, indent=1, default=str))
    return results


def cbo_session(spark_dir: Path):  # noqa: ANN201
    """A local Spark session whose catalog persists: a Hive metastore in Derby and a
    warehouse under ``spark_dir``, so an analyzed table (and its column statistics and
    histograms) survives the process. Started before ``get_spark``, which then returns it."""
    import os
    import sys

    from pyspark.sql import SparkSession

    spark_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    metastore = spark_dir / "metastore_db"
    return (
        SparkSession.builder.master(os.environ.get("LAKESTATS_SPARK_MASTER", "local[*]"))
        .appName("lakestats-bench-estimate")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", os.environ.get("LAKESTATS_DRIVER_MEMORY", "4g"))
        .config("spark.python.unix.domain.socket.enabled", "true")
        .config("spark.sql.warehouse.dir", str(spark_dir / "warehouse"))
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={metastore};create=true")
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={spark_dir}")
        .config("spark.sql.cbo.enabled", "true")
        .config("spark.sql.statistics.histogram.enabled", "true")
        .enableHiveSupport()
        .getOrCreate()
    )


def _spark_analyze(
    spark: SparkSession, name: str, table_dir: Path, spark_dir: Path, reanalyze: bool = False
) -> float:
    """Spark's ANALYZE ... FOR ALL COLUMNS with histograms, or its cached result: the
    marker names the data directory and the ANALYZE time; the table must still be in the
    (persistent) catalog."""
    spark.conf.set("spark.sql.cbo.enabled", "true")
    spark.conf.set("spark.sql.statistics.histogram.enabled", "true")
    marker = spark_dir / f"{name}.analyzed.json"
    if not reanalyze and marker.exists() and spark.catalog.tableExists(name):
        done = json.loads(marker.read_text())
        if done.get("path") == str(table_dir):
            print(f"  ... {name}: Spark's analyzed table from the cached catalog "
                  f"(ANALYZE took {done['seconds']:.1f} s on {done['date']})", flush=True)
            return float(done["seconds"])
    marker.unlink(missing_ok=True)
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.catalog.createTable(name, path=str(table_dir), source="parquet")
    spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")
    start = time.perf_counter()
    spark.sql(f"ANALYZE TABLE {name} COMPUTE STATISTICS FOR ALL COLUMNS")
    seconds = time.perf_counter() - start
    marker.write_text(json.dumps({"path": str(table_dir), "seconds": seconds,
                                  "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}))
    return seconds


def _evaluate(spark, label, table, con, source, spec, counts, seed, total_rows,  # noqa: ANN001
              analyze_s, spark_analyze_s) -> list:  # noqa: ANN001
    name = f"est_{label}"
    results = []
    lakestats_ms, spark_ms = [], []
    predicates = Generator(con, source, spec, seed).predicates(counts)
    for number, (cls, where) in enumerate(predicates):
        if number % 50 == 0:
            print(f"  ... {label}: predicate {number}/{len(predicates)}", flush=True)
        truth = con.execute(f"SELECT count(*) FROM {source} WHERE {where}").fetchone()[0]
        t0 = time.perf_counter()
        ours = table.estimate(where).to_json()
        t1 = time.perf_counter()
        theirs = spark_rows(spark, name, where) if spark is not None else float("nan")
        t2 = time.perf_counter()
        lakestats_ms.append((t1 - t0) * 1000)
        spark_ms.append((t2 - t1) * 1000)
        results.append(
            {
                "table": label,
                "class": cls,
                "where": where,
                "true": truth,
                "lakestats": ours["row_count"],
                "bounds_hold": ours["lower"] <= truth <= ours["upper"],
                "exact_ok": (not ours["exact"]) or ours["row_count"] == truth,
                "exact": ours["exact"],
                "spark": theirs if theirs is not None else float(total_rows),
                "bounds": (ours["lower"], ours["upper"]),
                "spark_none": theirs is None,
            }
        )
    print(f"\n## {label}: {total_rows:,} rows; lakestats analyze {analyze_s:.1f} s, Spark ANALYZE "
          f"FOR ALL COLUMNS with histograms {spark_analyze_s:.1f} s; per estimate median "
          f"lakestats {statistics.median(lakestats_ms):.0f} ms, Spark optimizer "
          f"{statistics.median(spark_ms):.0f} ms", flush=True)
    report(results)
    return results


def _stats(values: list[float]) -> str:
    a = np.array(values)
    return (f"{np.median(a):7.2f} {np.percentile(a, 90):7.2f} {np.percentile(a, 99):8.2f} "
            f"{a.max():9.1f}")


def report(results: list[dict]) -> None:
    groups: dict[str, list[dict]] = {}
    for r in results:
        groups.setdefault(r["class"], []).append(r)
    groups["ALL single-column"] = [r for r in results if r["class"] in SINGLE]
    groups["ALL conjunctions"] = [r for r in results if r["class"] in CONJUNCTIONS]
    print(f"{'class':20s} {'n':>4s} | {'lakestats q-error: p50':>22s} {'p90':>7s} {'p99':>8s} "
          f"{'max':>9s} | {'Spark CBO q-error: p50':>22s} {'p90':>7s} {'p99':>8s} {'max':>9s} "
          f"| exact  spark-none")
    for cls, rows in groups.items():
        if not rows:
            continue
        ours = [qerror(r["lakestats"], r["true"]) for r in rows]
        theirs = [qerror(r["spark"], r["true"]) for r in rows]
        exact = sum(r["exact"] for r in rows)
        none = sum(r["spark_none"] for r in rows)
        print(f"{cls:20s} {len(rows):4d} | {'':15s}{_stats(ours)} | {'':15s}{_stats(theirs)} "
              f"| {exact:5d}  {none:5d}")
    bad = [r for r in results if not (r["bounds_hold"] and r["exact_ok"])]
    print(f"bounds held for {len(results) - len(bad)}/{len(results)} predicates"
          + ("" if not bad else f"; VIOLATIONS: {[r['where'] for r in bad][:5]}"))
    print(targets(groups))


def targets(groups: dict[str, list[dict]]) -> str:
    """The targets, each with its figure and met / NOT met."""
    def q(rows: list[dict], who: str, pct: float) -> float:
        return float(np.percentile([qerror(r[who], r["true"]) for r in rows], pct))

    checks = []
    single, conj = groups.get("ALL single-column"), groups.get("ALL conjunctions")
    if single:
        checks.append((f"single-column median {q(single, 'lakestats', 50):.2f} <= 1.05",
                       q(single, "lakestats", 50) <= 1.05))
        checks.append((f"single-column p90 {q(single, 'lakestats', 90):.2f} <= 1.5",
                       q(single, "lakestats", 90) <= 1.5))
    if conj:
        checks.append((f"conjunctions p90 {q(conj, 'lakestats', 90):.2f} <= 3",
                       q(conj, "lakestats", 90) <= 3))
    lost = []
    for cls, rows in groups.items():
        if cls.startswith("ALL") or not rows or all(r["spark_none"] and r["spark"] != r["spark"]
                                                    for r in rows):
            continue
        for pct in (50, 90):
            ours, theirs = q(rows, "lakestats", pct), q(rows, "spark", pct)
            if not ours <= theirs or (ours == theirs and ours > 1.0):
                lost.append(f"{cls} p{pct} {ours:.2f} vs {theirs:.2f}")
    checks.append(("lower than Spark in every class" + (f" (not: {'; '.join(lost)})"
                                                        if lost else ""), not lost))
    return "targets: " + "; ".join(f"{text}: {'met' if ok else 'NOT met'}" for text, ok in checks)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1)
    parser.add_argument("--zipf-rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--tables", default="lineitem,zipf")
    parser.add_argument("--zipf-only", action="store_true", help="the Zipf table alone")
    parser.add_argument("--out", type=Path, default=OUT, help="where the run writes")
    parser.add_argument("--reanalyze-spark", action="store_true",
                        help="run Spark's ANALYZE even when the cached catalog has it")
    parser.add_argument("--no-spark-cbo", action="store_true", help="lakestats estimates only")
    parser.add_argument("--reuse-stats", action="store_true", help="keep a previous analyze")
    args = parser.parse_args()
    from lakestats.compute.session import get_spark

    print(f"# bench/estimate.py on {machine()}", flush=True)
    tables = ["zipf"] if args.zipf_only else args.tables.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.no_spark_cbo:
        cbo_session(args.out / "spark")
    spark = None if (args.no_spark_cbo and args.reuse_stats) else get_spark()
    cbo = None if args.no_spark_cbo else spark
    every = []
    if "lineitem" in tables:
        lineitem = partitioned(tpch_lineitem(args.scale), "month")
        every += run_table(
            cbo, "lineitem_month", lineitem, LINEITEM,
            {"eq frequent": 30, "eq rare": 30, "range": 40, "in": 25, "prefix like": 25,
             "and 2": 30, "and 3": 25, "or": 25},
            args.seed, args.reuse_stats, args.out, args.reanalyze_spark,
        )
    if "zipf" in tables:
        every += run_table(
            cbo, "zipf", zipf_table(args.zipf_rows, args.seed, args.out), ZIPF,
            {"eq frequent": 15, "eq rare": 15, "range": 20, "in": 10, "null": 10,
             "prefix like": 10, "and 2": 15, "and 3": 10, "or": 10},
            args.seed + 1, args.reuse_stats, args.out, args.reanalyze_spark,
        )
    print(f"\n## both tables: {len(every)} predicates")
    report(every)


if __name__ == "__main__":
    main()
