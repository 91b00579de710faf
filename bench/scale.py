"""Exact table level at scale: lakestats ``analyze --exact`` against Spark and DuckDB, in one run.

TPC-H lineitem at ``--scale`` (10 for the issue's acceptance; 1 validates the script)
partitioned by ship year+month (~84 partitions). In one run, each timed once (the data is
large; run twice to see warm numbers):

* ``lakestats analyze --exact`` (all columns, exact table level), fresh statistics root;
* Spark ``ANALYZE TABLE … COMPUTE STATISTICS FOR ALL COLUMNS`` (approximate NDV);
* Spark exact ``count(DISTINCT c)``, one job per column (one query with every column would
  ``Expand`` every row once per column);
* DuckDB ``SUMMARIZE`` (2 threads);
* scenario #1 on ``l_comment``: the exact step's shuffle against a plain
  ``groupBy(l_comment).count()`` over the data;
* scenario #0: a sequence id of a table partitioned by day: proven distinct from the
  partition summaries (the exact step reads staged value counts only for ranks, 0 data bytes);
* incremental: one month appended, ``analyze --exact`` again, against the full run.

Shuffle bytes come from Spark's REST status API (``/api/v1/applications/<id>/stages``: the
``shuffleWriteBytes`` of the stages each step ran), so the session is created here with the
UI on. Prints ratios; record them in BENCHMARKS.md.

    python bench/scale.py [--scale 10]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import lakestats.api as ls
from bench.common import machine, partitioned, tpch_lineitem
from lakestats.store import manifest


def session() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("lakestats-scale")
        .config("spark.ui.enabled", "true")
        .config("spark.ui.port", "4077")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", os.environ.get("LAKESTATS_DRIVER_MEMORY", "4g"))
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
        .config("spark.python.worker.reuse", "true")
        .config("spark.python.unix.domain.socket.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class Shuffle:
    """Shuffle write bytes of the stages run since the last mark (REST status API)."""

    def __init__(self, spark: SparkSession) -> None:
        context = spark.sparkContext
        self.url = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}/stages"
        self.seen: set[tuple[int, int]] = set(self._stages())

    def _stages(self) -> dict[tuple[int, int], dict]:
        with urllib.request.urlopen(self.url, timeout=30) as response:
            stages = json.load(response)
        return {(s["stageId"], s["attemptId"]): s for s in stages if s["status"] == "COMPLETE"}

    def since_mark(self) -> tuple[int, int]:
        """(shuffle write bytes, input bytes) of the stages completed since the last call."""
        stages = self._stages()
        new = [s for key, s in stages.items() if key not in self.seen]
        self.seen |= set(stages)
        return (
            sum(s.get("shuffleWriteBytes", 0) for s in new),
            sum(s.get("inputBytes", 0) for s in new),
        )


def timed(action) -> float:  # noqa: ANN001
    started = time.perf_counter()
    action()
    seconds = time.perf_counter() - started
    print(f"  ... {seconds:.1f} s", flush=True)  # each step as it ends: scale 10 runs long
    return seconds


def staged_bytes(root: Path) -> tuple[int, int]:
    files = list(root.rglob("values.parquet"))
    return sum(f.stat().st_size for f in files), len(files)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=10.0)
    args = parser.parse_args()
    source = tpch_lineitem(args.scale)
    table_dir = partitioned(source, "month")
    spark = session()
    shuffle = Shuffle(spark)
    rows = pq.ParquetDataset(table_dir).read(columns=["l_orderkey"]).num_rows
    partitions = len({p.parent for p in table_dir.rglob("*.parquet")})
    print(f"# scale  {dt.date.today()}  scale {args.scale:g}  {rows:,} rows  {partitions} parts")
    print(f"# {machine()}")
    results: dict[str, tuple[float, int, int]] = {}
    work = Path(tempfile.mkdtemp(prefix="lakestats-scale-"))
    try:
        root = work / "stats"
        handle = ls.open_table(str(table_dir), stats_root=str(root))
        seconds = timed(lambda: handle.analyze(spark=spark, exact=True))
        results["lakestats analyze --exact"] = (seconds, *shuffle.since_mark())
        version = manifest.load_version(str(root))
        exact = version.extra["exact"]
        size, files = staged_bytes(root)

        spark.sql("DROP TABLE IF EXISTS lineitem_scale")
        spark.catalog.createTable("lineitem_scale", path=str(table_dir), source="parquet")
        spark.sql("ALTER TABLE lineitem_scale RECOVER PARTITIONS")
        seconds = timed(
            lambda: spark.sql("ANALYZE TABLE lineitem_scale COMPUTE STATISTICS FOR ALL COLUMNS")
        )
        results["spark ANALYZE FOR ALL COLUMNS"] = (seconds, *shuffle.since_mark())

        frame = spark.read.parquet(str(table_dir))

        def distinct_all() -> None:
            for column in frame.columns:
                frame.select(F.countDistinct(column)).collect()

        results["spark exact count(DISTINCT) x cols"] = (timed(distinct_all), *shuffle.since_mark())

        def summarize() -> None:
            con = duckdb.connect()
            con.execute("SET threads = 2")
            con.execute(
                f"SUMMARIZE SELECT * FROM read_parquet('{table_dir}/**/*.parquet', "
                "hive_partitioning = true)"
            ).fetchall()

        results["duckdb SUMMARIZE (2 threads)"] = (timed(summarize), 0, 0)

        comment_root = work / "comment"
        comment = ls.open_table(str(table_dir), stats_root=str(comment_root))
        seconds = timed(
            lambda: comment.analyze(spark=spark, columns=["l_comment"], exact=True)
        )
        results["lakestats --exact l_comment only"] = (seconds, *shuffle.since_mark())
        comment_scenario = manifest.load_version(str(comment_root)).extra["exact"]["scenarios"]
        seconds = timed(
            lambda: frame.groupBy("l_comment").count().write.format("noop").mode("overwrite").save()
        )
        results["spark groupBy(l_comment).count()"] = (seconds, *shuffle.since_mark())

        by_day = work / "by_day"
        days = 84
        per_day = max(1, rows // days)
        for d in range(days):
            ids = np.arange(d * per_day, (d + 1) * per_day, dtype=np.int64)
            out = by_day / f"day={d:03d}"
            out.mkdir(parents=True)
            pq.write_table(pa.table({"id": ids}), out / "data.parquet")
        day_root = work / "day_stats"
        seconds = timed(
            lambda: ls.open_table(str(by_day), stats_root=str(day_root)).analyze(
                spark=spark, exact=True
            )
        )
        results["lakestats --exact sequence id by day"] = (seconds, *shuffle.since_mark())
        day_scenario = manifest.load_version(str(day_root)).extra["exact"]["scenarios"]

        appended = table_dir / "ship_year=1999" / "ship_month=1"
        months = sorted(p for p in table_dir.glob("ship_year=*/ship_month=*") if p.is_dir())
        shutil.copytree(months[0], appended)
        try:
            seconds = timed(lambda: handle.analyze(spark=spark, exact=True))
            results["lakestats --exact, 1 month appended"] = (seconds, *shuffle.since_mark())
            incremental = manifest.load_version(str(root)).extra["exact"]
        finally:
            shutil.rmtree(appended, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    ours = results["lakestats analyze --exact"][0]
    header = f"{'seconds':>9s} {'ours/it':>8s} {'shuffle MB':>11s} {'input MB':>9s}"
    print(f"\n{'contender':40s} {header}")
    for label, (seconds, shuffled, read) in results.items():
        print(
            f"{label:40s} {seconds:9.2f} {ours / seconds:8.2f} {shuffled / 1e6:11.1f} "
            f"{read / 1e6:9.1f}"
        )
    ours_comment = results["lakestats --exact l_comment only"][1]
    plain = results["spark groupBy(l_comment).count()"][1]
    print(f"\nscenarios: {exact['scenarios']}")
    print(f"l_comment scenario {comment_scenario}; shuffle ours/plain = {ours_comment / plain:.2f}")
    print(f"sequence id by day: {day_scenario}")
    print(f"incremental: {incremental.get('incremental')}, "
          f"added {incremental.get('partitions_added')}; time / full = "
          f"{results['lakestats --exact, 1 month appended'][0] / ours:.2f}")
    print(f"staged values.parquet: {size / 1e6:.1f} MB in {files} partitions "
          f"({size / max(1, files) / 1e6:.2f} MB each, {size / rows:.2f} B/row)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak Python driver RSS {peak:.0f} MB (the JVM driver heap is capped by "
          "spark.driver.memory)")


if __name__ == "__main__":
    main()
