"""A correctness run's timings, not a benchmark: one cold ``lakestats analyze`` of a small
table (the one ``tests/compute/test_cluster.py`` uses) on local[2], on a standalone cluster of two
1-core workers, and through a Spark Connect server (itself local[2]), each in a fresh
process with its own driver; prints seconds and the ratio to local[2].

Usage: ``python -m bench.cluster [--rows-scale N]``. The three runs' statistics are the same
(``tests/compute/test_cluster.py`` asserts it); what the times show is the cost of the extra JVMs
and hops on a small table, dominated by start-up.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from tests.compute.test_cluster import _write_table
from tests.spark_servers import connect_server, run_cli, spark_env, standalone_cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lakestats-cluster-"))
    try:
        table = _write_table(work / "t")
        env = spark_env(LAKESTATS_DRIVER_MEMORY="1g")
        times: dict[str, float] = {}

        def analyze(name: str, *where: str) -> None:
            run = run_cli(
                ["analyze", str(table), "--stats-root", str(work / name), *where, "--json"], env
            )
            if run.returncode != 0:
                raise SystemExit(f"{name} failed:\n{run.stderr[-2000:]}")
            times[name] = run.seconds

        analyze("local[2]", "--master", "local[2]")
        with standalone_cluster(work / "cluster") as master:
            analyze("standalone, 2 workers", "--master", master)
        with connect_server(work / "server") as url:
            analyze("Spark Connect", "--remote", url)
        base = times["local[2]"]
        print(f"{'session':<24}{'seconds':>9}{'/ local[2]':>12}")
        for name, seconds in times.items():
            print(f"{name:<24}{seconds:>9.1f}{seconds / base:>12.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
