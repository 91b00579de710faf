"""Exact table level at scale: lakestats ``analyze --exact`` against Spark and DuckDB.

TPC-H lineitem at ``--scale`` (10 for acceptance; 0.1 or 1 validate the script)
partitioned by ship year+month (~84 partitions). First, untimed, one month of it is analyzed
with ``--exact`` and by Spark's ANALYZE, so that every step finds the JVM and Spark's Python
workers started and warm (otherwise the first step alone pays for it). Steps (``--steps``,
default all), each timed once (the data is large; run a step again to see warm numbers):

* ``lakestats``: ``analyze --exact`` (all columns, exact table level), fresh statistics root;
* ``spark-analyze``: Spark ``ANALYZE TABLE … COMPUTE STATISTICS FOR ALL COLUMNS``
  (approximate NDV);
* ``spark-distinct``: Spark exact ``count(DISTINCT c)``, one job per column (one query with
  every column would ``Expand`` every row once per column);
* ``duckdb``: DuckDB ``SUMMARIZE`` (2 threads);
* ``comment``: ``analyze --exact --columns l_comment`` (scenario #2); ``comment-plain``: a
  plain ``groupBy(l_comment).count()``: their shuffle write bytes, stage by stage;
* ``sequence``: scenario #0: a sequence id of a table partitioned by day; the table's data
  directory is renamed away while the exact step runs, so the step provably reads 0 data
  bytes (it would fail on any data read);
* ``near-unique``: a permuted unique id by day with 12 values per day repeated in the next
  day (all-distinct partitions whose ranges overlap: the table lists its 1,008 duplicates);
  ``near-unique-plain``: a plain ``groupBy(id).count()`` of it, for the shuffle bytes;
* ``incremental``: one month appended to the ``lakestats`` step's table (a hard-linked copy
  under the work directory), ``analyze --exact`` again, against the full run.

Every finished step's result is saved at once to ``<work>/results.json`` (work directory:
``--work``, default ``bench/data/scale-sf<scale>``); a later run with other ``--steps``
adds to it, and every run prints the full table from it (steps not run yet are listed), so
the steps can be run in separate short windows. ``incremental`` needs ``lakestats`` first
(its statistics root is kept in the work directory).

Shuffle bytes come from Spark's REST status API (``/api/v1/applications/<id>/stages``: the
``shuffleWriteBytes`` of the stages each step ran), so the session is created here with the
UI on; the exact step alone (``compute.exact.job.exact_table``, wrapped here) is measured
apart from the partition analyze and the reduction. Peak memory: the Spark driver JVM's
resident peak (``VmHWM``; in ``local[2]`` the executors run in that JVM too) and Spark's
own peak JVM heap metric for the driver, and the Python driver's peak RSS.

    python -m bench.scale [--scale 10] [--steps lakestats,spark-analyze,...] [--work DIR]
        [--report]

Over 400 lines on purpose: the eight steps and their report share one session, one probe
of the exact step and one results file.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import lakestats.api as ls
import lakestats.compute.analyze.run as analyze_module
from bench.common import DATA, machine, partitioned, tpch_lineitem
from lakestats.store import manifest
from lakestats.store.handle import StatisticsStore

STEPS = (
    "lakestats",
    "spark-analyze",
    "spark-distinct",
    "duckdb",
    "comment",
    "comment-plain",
    "sequence",
    "near-unique",
    "near-unique-plain",
    "incremental",
)
LABELS = {
    "lakestats": "lakestats analyze --exact",
    "spark-analyze": "spark ANALYZE FOR ALL COLUMNS",
    "spark-distinct": "spark exact count(DISTINCT) x cols",
    "duckdb": "duckdb SUMMARIZE (2 threads)",
    "comment": "lakestats --exact l_comment only",
    "comment-plain": "spark groupBy(l_comment).count()",
    "sequence": "lakestats --exact sequence id by day",
    "near-unique": "lakestats --exact near-unique id by day",
    "near-unique-plain": "spark groupBy(near-unique id).count()",
    "incremental": "lakestats --exact, 1 month appended",
}


def session(master: str = "local[2]") -> SparkSession:
    """``local[2]``, or a standalone master URL: then the executors run in their own JVMs
    and the driver JVM's peak memory is the driver's alone."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master)
    if not master.startswith("local"):
        builder = builder.config("spark.executor.memory", "4g").config("spark.cores.max", "2")
    spark = (
        builder
        .appName("lakestats-scale")
        .config("spark.ui.enabled", "true")
        .config("spark.ui.port", "4077")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config(
            "spark.driver.memory",
            os.environ.get("LAKESTATS_DRIVER_MEMORY", "4g" if master.startswith("local") else "2g"),
        )
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
        .config("spark.python.worker.reuse", "true")
        .config("spark.python.unix.domain.socket.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class Status:
    """Spark's REST status API: stages completed since the last mark, driver memory."""

    def __init__(self, spark: SparkSession) -> None:
        context = spark.sparkContext
        self.base = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}"
        self.seen: set[tuple[int, int]] = set(self._stages())
        # py4j here only to find the driver JVM's pid (Spark integration is this bench's point)
        self.jvm_pid = int(context._jvm.java.lang.ProcessHandle.current().pid())

    def _get(self, path: str) -> list[dict]:
        with urllib.request.urlopen(f"{self.base}/{path}", timeout=30) as response:
            return json.load(response)

    def _stages(self) -> dict[tuple[int, int], dict]:
        return {
            (s["stageId"], s["attemptId"]): s
            for s in self._get("stages")
            if s["status"] == "COMPLETE"
        }

    def since_mark(self) -> list[dict]:
        """The stages completed since the last call: id, name, shuffle write bytes/records."""
        stages = self._stages()
        new = [s for key, s in sorted(stages.items()) if key not in self.seen]
        self.seen |= set(stages)
        return [
            {
                "stage": s["stageId"],
                "name": s.get("name", "")[:120],
                "shuffle_write_bytes": s.get("shuffleWriteBytes", 0),
                "shuffle_write_records": s.get("shuffleWriteRecords", 0),
                "input_bytes": s.get("inputBytes", 0),
            }
            for s in new
        ]

    def memory(self) -> dict[str, int | None]:
        """Peak resident memory of the driver JVM (VmHWM) and Spark's peak heap metric."""
        hwm = None
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.jvm_pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
        heap = None
        with contextlib.suppress(Exception):
            for executor in self._get("executors"):
                if executor["id"] == "driver":
                    heap = (executor.get("peakMemoryMetrics") or {}).get("JVMHeapMemory")
        return {"jvm_rss_peak": hwm, "jvm_heap_peak": heap}


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    seconds = time.perf_counter() - started
    print(f"  ... {seconds:.1f} s", flush=True)  # each step as it ends: scale 10 runs long
    return seconds


@contextlib.contextmanager
def exact_step_probe(status: Status, hide: Path | None, into: dict) -> Iterator[None]:
    """Wrap the exact step of ``analyze --exact``: its own time and stages, with ``hide``
    (a data directory) renamed away while it runs, so any data read would fail."""
    real = analyze_module.exact_table

    def probed(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        into["before_stages"] = status.since_mark()  # the partition analyze, the reduction
        hidden = hide.with_name(hide.name + ".hidden") if hide else None
        if hide:
            hide.rename(hidden)
        started = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            into["exact_step_seconds"] = time.perf_counter() - started
            into["exact_step_stages"] = status.since_mark()
            if hide:
                hidden.rename(hide)
                into["data_hidden_during_exact_step"] = True

    analyze_module.exact_table = probed
    try:
        yield
    finally:
        analyze_module.exact_table = real


def _probed_stages(probe: dict, status: Status) -> list[dict]:
    """Every stage of a probed analyze: before, in and after its exact step."""
    return [
        *probe.get("before_stages", []),
        *probe.get("exact_step_stages", []),
        *status.since_mark(),
    ]


def staged_bytes(root: Path) -> tuple[int, int]:
    files = list(root.rglob("values.parquet"))
    return sum(f.stat().st_size for f in files), len(files)


def linked_copy(source: Path, target: Path) -> Path:
    """A hard-linked copy of a table directory (no data copied; safe to append to)."""
    if not (target / "_SUCCESS").exists():
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run(["cp", "-al", str(source), str(target)], check=True)
    return target


class Bench:
    """One run: the data, the Spark session and the results file of the work directory."""

    def __init__(self, scale: float, work: Path, master: str = "local[2]") -> None:
        self.scale = scale
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.results_file = work / "results.json"
        self.results: dict[str, dict] = (
            json.loads(self.results_file.read_text()) if self.results_file.exists() else {}
        )
        self.source = partitioned(tpch_lineitem(scale), "month")
        self.table = linked_copy(self.source, work / "table")
        self.master = master
        self.spark = session(master)
        self.status = Status(self.spark)
        # from the footers: reading a column here would count in the driver's peak memory
        self.rows = sum(
            pq.ParquetFile(f).metadata.num_rows for f in self.source.rglob("*.parquet")
        )
        self.warm_up()

    def warm_up(self) -> None:
        """One month analyzed by lakestats (``--exact``) and by Spark's ANALYZE, untimed."""
        month = next(self.source.glob("*/*/"))
        table = self.work / "warm-up" / "ship_year=0" / "ship_month=0"
        shutil.rmtree(self.work / "warm-up", ignore_errors=True)
        table.mkdir(parents=True)
        for file in month.glob("*.parquet"):
            os.link(file, table / file.name)
        root = self.work / "warm-up-stats"
        shutil.rmtree(root, ignore_errors=True)
        ls.open_table(str(self.work / "warm-up"), stats_root=str(root)).analyze(
            spark=self.spark, exact=True
        )
        self.spark.sql("DROP TABLE IF EXISTS lineitem_warm_up")
        self.spark.catalog.createTable(
            "lineitem_warm_up", path=str(self.work / "warm-up"), source="parquet"
        )
        self.spark.sql("ALTER TABLE lineitem_warm_up RECOVER PARTITIONS")
        self.spark.sql(
            "ANALYZE TABLE lineitem_warm_up COMPUTE STATISTICS FOR ALL COLUMNS"
        ).collect()
        self.spark.sql("DROP TABLE lineitem_warm_up")
        shutil.rmtree(self.work / "warm-up", ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)

    def save(self, step: str, seconds: float, stages: list[dict], **extra: object) -> None:
        self.results[step] = {
            "seconds": seconds,
            "shuffle_write_bytes": sum(s["shuffle_write_bytes"] for s in stages),
            "stages": stages,
            "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "load_average": os.getloadavg()[0],
            **extra,
        }
        peaks = {
            **self.status.memory(),
            "python_rss_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        }
        # this process's peaks so far (a run of one step on a standalone master: that step's)
        self.results[step].update(master=self.master, memory=peaks)
        before = self.results.get("_meta", {})
        self.results["_meta"] = {
            "scale": self.scale,
            "rows": self.rows,
            "machine": machine(),
            # the highest of every run that added to these results
            **{k: max(filter(None, [v, before.get(k)]), default=None) for k, v in peaks.items()},
        }
        self.results_file.write_text(json.dumps(self.results, indent=1, default=str))

    # -- the steps -------------------------------------------------------------------
    def lakestats(self) -> None:
        root = self.work / "stats"
        shutil.rmtree(root, ignore_errors=True)
        handle = ls.open_table(str(self.table), stats_root=str(root))
        probe: dict = {}
        self.status.since_mark()
        with exact_step_probe(self.status, None, probe):
            seconds = timed(lambda: handle.analyze(spark=self.spark, exact=True))
        version = manifest.load_version(StatisticsStore(str(root)))
        size, files = staged_bytes(root)
        self.save(
            "lakestats",
            seconds,
            _probed_stages(probe, self.status),
            exact=version.extra.get("exact", {}),
            exact_step_seconds=probe.get("exact_step_seconds"),
            staged_bytes=size,
            staged_files=files,
        )

    def spark_analyze(self) -> None:
        self.spark.sql("DROP TABLE IF EXISTS lineitem_scale")
        self.spark.catalog.createTable("lineitem_scale", path=str(self.source), source="parquet")
        self.spark.sql("ALTER TABLE lineitem_scale RECOVER PARTITIONS")
        self.status.since_mark()
        seconds = timed(
            lambda: self.spark.sql(
                "ANALYZE TABLE lineitem_scale COMPUTE STATISTICS FOR ALL COLUMNS"
            ).collect()
        )
        self.save("spark-analyze", seconds, self.status.since_mark())

    def spark_distinct(self) -> None:
        frame = self.spark.read.parquet(str(self.source))

        def distinct_all() -> None:
            for column in frame.columns:
                frame.select(F.countDistinct(column)).collect()

        self.status.since_mark()
        seconds = timed(distinct_all)
        self.save("spark-distinct", seconds, self.status.since_mark())

    def duckdb(self) -> None:
        def summarize() -> None:
            con = duckdb.connect()
            con.execute("SET threads = 2")
            con.execute(
                f"SUMMARIZE SELECT * FROM read_parquet('{self.source}/ship_year=*/*/*.parquet', "
                "hive_partitioning = true)"
            ).fetchall()

        self.save("duckdb", timed(summarize), [])

    def comment(self) -> None:
        root = self.work / "comment"
        shutil.rmtree(root, ignore_errors=True)
        handle = ls.open_table(str(self.table), stats_root=str(root))
        probe: dict = {}
        self.status.since_mark()
        with exact_step_probe(self.status, None, probe):
            seconds = timed(
                lambda: handle.analyze(spark=self.spark, columns=["l_comment"], exact=True)
            )
        extra = manifest.load_version(StatisticsStore(str(root))).extra.get("exact", {})
        exact_stages = probe.get("exact_step_stages", [])
        self.save(
            "comment",
            seconds,
            _probed_stages(probe, self.status),
            exact=extra,
            exact_step_seconds=probe.get("exact_step_seconds"),
            exact_step_shuffle_bytes=sum(s["shuffle_write_bytes"] for s in exact_stages),
            exact_step_stages=exact_stages,
        )

    def comment_plain(self) -> None:
        frame = self.spark.read.parquet(str(self.source))
        self.status.since_mark()
        seconds = timed(
            lambda: frame.groupBy("l_comment").count().write.format("noop").mode("overwrite").save()
        )
        self.save("comment-plain", seconds, self.status.since_mark())

    def sequence(self) -> None:
        by_day = self.work / "by_day"
        days = 84
        per_day = max(1, self.rows // days)
        if not (by_day / "_SUCCESS").exists():
            shutil.rmtree(by_day, ignore_errors=True)
            for d in range(days):
                ids = np.arange(d * per_day, (d + 1) * per_day, dtype=np.int64)
                out = by_day / f"day={d:03d}"
                out.mkdir(parents=True)
                pq.write_table(pa.table({"id": ids}), out / "data.parquet")
            (by_day / "_SUCCESS").touch()
        root = self.work / "day_stats"
        shutil.rmtree(root, ignore_errors=True)
        handle = ls.open_table(str(by_day), stats_root=str(root))
        probe: dict = {}
        self.status.since_mark()
        with exact_step_probe(self.status, by_day, probe):
            seconds = timed(lambda: handle.analyze(spark=self.spark, exact=True))
        version = manifest.load_version(StatisticsStore(str(root)))
        [row] = ls.open_table(str(by_day), stats_root=str(root)).reader().column_statistics(
            None, ["id"]
        )
        self.save(
            "sequence",
            seconds,
            _probed_stages(probe, self.status),
            exact=version.extra.get("exact", {}),
            exact_step_seconds=probe.get("exact_step_seconds"),
            data_hidden_during_exact_step=probe.get("data_hidden_during_exact_step", False),
            distinct_count=row["distinct_count"],
            distinct_count_exact=row["distinct_count_exact"],
            true_distinct=days * per_day,
        )

    def _near_unique_table(self) -> tuple[Path, int, int]:
        """A near-unique id: one id per row, unique but for ``REPEATS`` per day copied from
        the next day,
        spread over the whole key space by a bijective multiplicative hash, so every
        partition is all-distinct, their ranges overlap (#0 cannot prove it) and the
        duplicates span two partitions."""
        table = self.work / "near_unique"
        days, repeats = 84, 12
        per_day = max(repeats + 1, self.rows // days)
        if not (table / "_SUCCESS").exists():
            shutil.rmtree(table, ignore_errors=True)

            def ids(day: int) -> np.ndarray:
                raw = np.arange(day * per_day, (day + 1) * per_day, dtype=np.uint64)
                return (raw * np.uint64(0x9E3779B97F4A7C15)).view(np.int64)

            for d in range(days):
                values = ids(d)
                values[-repeats:] = ids((d + 1) % days)[:repeats]
                out = table / f"day={d:03d}"
                out.mkdir(parents=True)
                pq.write_table(pa.table({"id": values}), out / "data.parquet")
            (table / "_SUCCESS").touch()
        return table, days * (per_day - repeats), days * repeats

    def near_unique(self) -> None:
        table, distinct, repeated = self._near_unique_table()
        root = self.work / "near_unique_stats"
        shutil.rmtree(root, ignore_errors=True)
        handle = ls.open_table(str(table), stats_root=str(root))
        probe: dict = {}
        self.status.since_mark()
        with exact_step_probe(self.status, None, probe):
            seconds = timed(lambda: handle.analyze(spark=self.spark, exact=True))
        extra = manifest.load_version(StatisticsStore(str(root))).extra.get("exact", {})
        [row] = ls.open_table(str(table), stats_root=str(root)).reader().column_statistics(
            None, ["id"]
        )
        exact_stages = probe.get("exact_step_stages", [])
        size, _ = staged_bytes(root)
        self.save(
            "near-unique",
            seconds,
            _probed_stages(probe, self.status),
            exact=extra,
            exact_step_seconds=probe.get("exact_step_seconds"),
            exact_step_shuffle_bytes=sum(s["shuffle_write_bytes"] for s in exact_stages),
            exact_step_stages=exact_stages,
            distinct_count=row["distinct_count"],
            distinct_count_exact=row["distinct_count_exact"],
            frequencies_count=row["frequencies_count"],
            true_distinct=distinct,
            true_repeated=repeated,
            staged_bytes=size,
        )

    def near_unique_plain(self) -> None:
        table, _, _ = self._near_unique_table()
        frame = self.spark.read.parquet(str(table))
        self.status.since_mark()
        seconds = timed(
            lambda: frame.groupBy("id").count().write.format("noop").mode("overwrite").save()
        )
        self.save("near-unique-plain", seconds, self.status.since_mark())

    def incremental(self) -> None:
        full = self.work / "stats"
        if "lakestats" not in self.results or not full.exists():
            raise SystemExit("bench/scale.py: error: run --steps lakestats first (incremental "
                             "appends to its statistics)")
        root = self.work / "stats-incremental"  # a copy: the full root stays reusable
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(full, root)
        months = sorted(p for p in self.table.glob("ship_year=*/ship_month=*") if p.is_dir())
        appended = self.table / "ship_year=1999" / "ship_month=1"
        shutil.copytree(months[0], appended, copy_function=os.link)
        handle = ls.open_table(str(self.table), stats_root=str(root))
        probe: dict = {}
        try:
            self.status.since_mark()
            with exact_step_probe(self.status, None, probe):
                seconds = timed(lambda: handle.analyze(spark=self.spark, exact=True))
            extra = manifest.load_version(StatisticsStore(str(root))).extra.get("exact", {})
        finally:
            shutil.rmtree(appended, ignore_errors=True)
            shutil.rmtree(root, ignore_errors=True)
        self.save(
            "incremental",
            seconds,
            _probed_stages(probe, self.status),
            exact=extra,
            exact_step_seconds=probe.get("exact_step_seconds"),
            # the full run it is compared with (a later full run does not change its ratio)
            full_seconds=self.results["lakestats"]["seconds"],
            full_when=self.results["lakestats"]["when"],
        )


def report(results: dict[str, dict]) -> None:
    """The full table from the saved results (steps not run yet listed as such)."""
    meta = results.get("_meta", {})
    print(f"\n# scale {meta.get('scale')}  {meta.get('rows', 0):,} rows  {meta.get('machine')}")
    ours = results.get("lakestats", {}).get("seconds")
    print(f"{'step':40s} {'seconds':>9s} {'ours/it':>8s} {'shuffle MB':>11s} {'load':>5s}")
    for step in STEPS:
        r = results.get(step)
        if r is None:
            print(f"{LABELS[step]:40s} {'not run':>9s}")
            continue
        ratio = f"{ours / r['seconds']:8.2f}" if ours else f"{'-':>8s}"
        print(f"{LABELS[step]:40s} {r['seconds']:9.2f} {ratio} "
              f"{r['shuffle_write_bytes'] / 1e6:11.1f} {r['load_average']:5.1f}")
    _targets(results, ours)
    _comment(results, meta)
    _sequence(results)
    _near_unique(results, meta)
    for step, r in results.items():
        if step.startswith("_") or "memory" not in r:
            continue
        m, master = r["memory"], r.get("master", "local[2]")
        where = ("executors in the same JVM" if master.startswith("local")
                 else "executors in their own JVMs")
        print(f"after {step} on {master} (process peaks so far): driver JVM RSS "
              f"{_mb(m.get('jvm_rss_peak'))}, driver heap {_mb(m.get('jvm_heap_peak'))}, Python "
              f"driver RSS {_mb(m.get('python_rss_peak'))} ({where}; target < 2 GB)")
    print(f"peak memory: driver JVM RSS {_mb(meta.get('jvm_rss_peak'))} (local[2]: executors "
          f"in it too), Spark driver JVM heap peak {_mb(meta.get('jvm_heap_peak'))}, "
          f"Python driver RSS {_mb(meta.get('python_rss_peak'))} (target: < 2 GB)")


def _mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:.0f} MB"


def _targets(results: dict[str, dict], ours: float | None) -> None:
    meta = results.get("_meta", {})
    if not ours:
        return
    for step, limit in (("spark-analyze", 1.0), ("spark-distinct", 0.5)):
        if step in results:
            ratio = ours / results[step]["seconds"]
            verdict = "met" if ratio <= limit else "NOT met"
            print(f"target ours/{step} <= {limit}: {ratio:.2f} ({verdict})")
    lake = results["lakestats"]
    print(f"scenarios: {lake.get('exact', {}).get('scenarios')}")
    print(f"exact step alone: {lake.get('exact_step_seconds') or 0:.1f} s; staged values.parquet "
          f"{lake.get('staged_bytes', 0) / 1e6:.2f} MB in {lake.get('staged_files')} partitions "
          f"({lake.get('staged_bytes', 0) / max(1, meta.get('rows') or 1):.2f} B/row)")
    if "incremental" in results:
        inc = results["incremental"]
        full = inc.get("full_seconds") or ours  # results saved before it was recorded: ours
        print(f"incremental ({inc['when']}): {inc['exact'].get('incremental')}, added "
              f"{inc['exact'].get('partitions_added')}, rank layer "
              f"{inc['exact'].get('rank_layers')} (layer rows {inc['exact'].get('layer_rows')})"
              f"; time / full = {inc['seconds'] / full:.3f} against the full run of "
              f"{inc.get('full_when', 'unknown')} ({full:.2f} s; target <= 0.10); its exact step "
              f"alone {inc.get('exact_step_seconds') or 0:.1f} s")


def _comment(results: dict[str, dict], meta: dict) -> None:
    if "comment" not in results or "comment-plain" not in results:
        return
    ours, plain = results["comment"], results["comment-plain"]
    scenario = ours.get("exact", {}).get("scenarios")
    shuffled, base = ours["exact_step_shuffle_bytes"], plain["shuffle_write_bytes"]
    rows = meta.get("rows") or 1
    print(f"l_comment {scenario}: exact step shuffle {shuffled / 1e6:.1f} MB "
          f"({shuffled / rows:.2f} B/row), plain groupBy {base / 1e6:.1f} MB "
          f"({base / rows:.2f} B/row): ours/plain = {shuffled / max(1, base):.3f} "
          "(target <= 0.20)")
    for label, stages in (("exact step", ours.get("exact_step_stages")),
                          ("plain groupBy", plain["stages"])):
        for s in stages or []:
            if s["shuffle_write_bytes"]:
                megabytes = s["shuffle_write_bytes"] / 1e6
                print(f"  {label:13s} stage {s['stage']:4d} {megabytes:9.1f} MB "
                      f"{s['shuffle_write_records']:>12,} rec  {s['name']}")


def _near_unique(results: dict[str, dict], meta: dict) -> None:
    if "near-unique" not in results:
        return
    r = results["near-unique"]
    print(f"near-unique id by day: {r['exact'].get('scenarios')}; distinct "
          f"{r['distinct_count']:,} (exact {r['distinct_count_exact']}, true "
          f"{r['true_distinct']:,}); duplicates stored {r['frequencies_count']:,} (true "
          f"{r['true_repeated']:,})")
    if "near-unique-plain" in results:
        shuffled = r["exact_step_shuffle_bytes"]
        base = results["near-unique-plain"]["shuffle_write_bytes"]
        staged = r.get("staged_bytes") or 0
        print(f"  exact step Spark shuffle {shuffled / 1e6:.1f} MB, plain groupBy "
              f"{base / 1e6:.1f} MB: ours/plain = {shuffled / max(1, base):.3f} (target <= "
              f"0.20); through storage instead: {r['exact'].get('rows_read') or 0:,} staged rows "
              f"read by the range tasks (staged values {staged / 1e6:.1f} MB written by the "
              f"partition tasks = {staged / max(1, base):.2f}x the plain shuffle)")
        for s in r.get("exact_step_stages") or []:
            if s["shuffle_write_bytes"]:
                megabytes = s["shuffle_write_bytes"] / 1e6
                print(f"  exact step stage {s['stage']:4d} {megabytes:9.1f} MB "
                      f"{s['shuffle_write_records']:>12,} rec  {s['name']}")


def _sequence(results: dict[str, dict]) -> None:
    if "sequence" not in results:
        return
    r = results["sequence"]
    print(f"sequence id by day: {r['exact'].get('scenarios')}; distinct {r['distinct_count']:,} "
          f"(exact {r['distinct_count_exact']}, true {r['true_distinct']:,}); data directory "
          f"hidden during the exact step: {r['data_hidden_during_exact_step']} -> 0 data bytes "
          f"read by the proof ({r.get('exact_step_seconds') or 0:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=10.0)
    parser.add_argument("--steps", default=",".join(STEPS),
                        help=f"comma-separated, in this order: {','.join(STEPS)}")
    parser.add_argument("--work", type=Path, default=None,
                        help="work directory (results.json, statistics roots, table copy)")
    parser.add_argument("--report", action="store_true", help="print saved results only")
    parser.add_argument("--master", default="local[2]",
                        help="Spark master (a standalone spark://host:port measures the "
                             "driver's memory apart from the executors')")
    args = parser.parse_args()
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown step(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}")
    work = args.work or DATA / f"scale-sf{args.scale:g}"
    if args.report:
        report(json.loads((work / "results.json").read_text()))
        return
    bench = Bench(args.scale, work, args.master)
    print(f"# scale  {dt.date.today()}  scale {args.scale:g}  {bench.rows:,} rows  "
          f"work {work}\n# {machine()}", flush=True)
    for step in STEPS:
        if step in steps:
            print(f"{LABELS[step]} ...", flush=True)
            getattr(bench, step.replace("-", "_"))()
    report(bench.results)


if __name__ == "__main__":
    main()
