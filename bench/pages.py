"""The preview's pages on a table of 10,000 partitions.

A generated hive-partitioned Parquet table (``--partitions`` day partitions of
``--rows`` rows each: an id, a drifting measure, a category with NULLs), analyzed once with
lakestats on local Spark and kept under ``bench/data``. ``lakestats serve`` serves it;
each page is fetched uncached once (the first request of a fresh server) and then three
times (median): the table page, its overview fragment (profile and alerts), the
partitions API, a column page (its partitions table paged) and that column page's last
partitions page. Target: a page opens in under 300 ms.

    python -m bench.pages [--partitions 10000] [--rows 20]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import DATA, machine
from bench.serve import analyzed, serving

TARGET_MS = 300.0


def partitioned_table(root: Path, partitions: int, rows: int) -> Path:
    """``partitions`` day partitions (``day=YYYY-MM-DD``) of ``rows`` rows each."""
    if (root / "_SUCCESS").exists():
        return root
    start = dt.date(2000, 1, 1)
    for p in range(partitions):
        rng = np.random.default_rng(p)
        ids = np.arange(p * rows, (p + 1) * rows, dtype=np.int64)
        category = [None if v == 0 else f"c{v}" for v in rng.integers(0, 12, rows)]
        directory = root / f"day={start + dt.timedelta(days=p)}"
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({
            "id": ids,
            "measure": rng.normal(p / 100, 1, rows),  # drifts from partition to partition
            "category": pa.array(category, pa.string()),
        }), directory / "part-0.parquet")
    (root / "_SUCCESS").touch()
    return root


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=20)
    args = parser.parse_args()
    import httpx

    table = partitioned_table(DATA / f"pages_{args.partitions}x{args.rows}", args.partitions,
                              args.rows)
    analyzed(table)
    config = Path(tempfile.mkdtemp(prefix="pages-bench-")) / "tables.json"
    config.write_text(json.dumps({"tables": {"days": {"table": str(table)}}}))
    pages_total = -(-args.partitions // 200)
    urls = ["/tables/days", "/tables/days/overview", "/api/tables/days/partitions",
            "/tables/days/columns/measure", f"/tables/days/columns/measure?parts={pages_total}"]
    print(f"machine: {machine()}; a table of {args.partitions:,} partitions x {args.rows} "
          f"rows; lakestats serve --workers 1; target: a page under {TARGET_MS:.0f} ms",
          flush=True)
    with serving(config, 1) as (base, _), httpx.Client(base_url=base, timeout=120) as client:
        for url in urls:
            times = []
            for _ in range(4):
                started = time.perf_counter()
                response = client.get(url)
                times.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200:
                    raise SystemExit(f"{url}: {response.status_code} {response.text[:200]}")
            warm = statistics.median(times[1:])
            print(f"{url:55s} first {times[0]:7.0f} ms, then median {warm:6.0f} ms, "
                  f"{len(response.content) / 1024:6.0f} KiB (target {TARGET_MS:.0f} ms: "
                  f"{'met' if warm <= TARGET_MS else 'NOT met'} warm, "
                  f"{'met' if times[0] <= TARGET_MS else 'NOT met'} first)", flush=True)


if __name__ == "__main__":
    main()
