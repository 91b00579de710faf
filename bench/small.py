"""Small tables stay cheap: a 10-row table's analyze against starting Spark
and running a trivial job.

* cold: a fresh Python process that starts a local SparkSession and runs
  ``spark.range(10).count()``, against a fresh process that runs
  ``lakestats.api.open_table(T).analyze()`` (which starts the session itself), interleaved;
* warm: in one process with a session already running, ``spark.range(10).count()`` against
  ``open_table(T).analyze()`` with no ``spark=`` argument (it reuses the running session).

Every analyze is of a new copy of the 10-row table (no statistics yet). Prints medians of
``--runs`` and their ratios (target: <= 1.5x).

    python -m bench.small [--runs 5] [--master local[2]]
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import machine

SPARK = """
import sys, time
start = time.perf_counter()
from lakestats.compute.session import local_session
spark = local_session(sys.argv[1])
spark.range(10).count()
print(time.perf_counter() - start)
"""
ANALYZE = """
import os, sys, time
start = time.perf_counter()
os.environ["LAKESTATS_SPARK_MASTER"] = sys.argv[1]
import lakestats.api as ls
ls.open_table(sys.argv[2]).analyze()
print(time.perf_counter() - start)
"""


def _table(work: Path, name: str) -> Path:
    directory = work / name / "p=1"
    directory.mkdir(parents=True)
    pq.write_table(pa.table({"x": list(range(10)), "s": [str(i) for i in range(10)]}),
                   directory / "a.parquet")
    return work / name


def _process(code: str, *args: str) -> float:
    """Wall seconds of a fresh process (its own figure is printed too, for reference)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    print(f"# small  {dt.date.today()}  {machine()}")
    work = Path(tempfile.mkdtemp(prefix="lakestats-small-"))
    try:
        spark_cold, analyze_cold = [], []
        for i in range(args.runs):
            spark_cold.append(_process(SPARK, args.master))
            analyze_cold.append(_process(ANALYZE, args.master, str(_table(work, f"c{i}"))))
        import lakestats.api as ls
        from lakestats.compute.session import local_session

        spark = local_session(args.master)
        spark.range(10).count()
        ls.open_table(str(_table(work, "warmup"))).analyze()  # workers and imports warm
        spark_warm, analyze_warm = [], []
        for i in range(args.runs):
            start = time.perf_counter()
            spark.range(10).count()
            spark_warm.append(time.perf_counter() - start)
            table = _table(work, f"w{i}")
            start = time.perf_counter()
            ls.open_table(str(table)).analyze()  # no spark=: the running session
            analyze_warm.append(time.perf_counter() - start)
        for label, base, ours in (
            ("cold (new process)", spark_cold, analyze_cold),
            ("warm (session running)", spark_warm, analyze_warm),
        ):
            b, o = statistics.median(base), statistics.median(ours)
            print(f"{label:24s} spark.range(10).count() {b:7.3f} s   analyze 10 rows {o:7.3f} s"
                  f"   ratio {o / b:5.2f}")
            print(f"{'':24s} each: {' '.join(f'{t:.2f}' for t in base)} | "
                  f"{' '.join(f'{t:.2f}' for t in ours)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
