"""How many frequency candidates a group of partitions should keep (``KEEP_FACTOR``).

A Zipf-distributed column over 64 partitions (8 groups) is analyzed once with
``--max-frequencies K``; the table-level reduction then runs in this process for each
factor, and its top-K list is checked against exact counts computed with NumPy: recall of
the true top K, the mean width of the reported bounds and how far the lower bound
(``frequency``) is below the exact count, both relative to the exact count, and whether
every bound holds.

    python -m bench.keep_factor [--skews 1.3,1.1,1.05] [--k 200]
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import lakestats.api as ls
from bench.common import DATA, machine
from lakestats.compute.reduce import prune
from lakestats.compute.reduce.job import ReduceJob
from lakestats.compute.reduce.local import reduce_locally
from lakestats.compute.session import get_spark
from lakestats.stats import keys
from lakestats.store import layout, manifest
from lakestats.store.handle import StatisticsStore

PARTITIONS = 64
ROWS = 20_000
FACTORS = (2.0, 1.5, 1.0)


def run(spark, skew: float, domain: int, k: int) -> None:  # noqa: ANN001
    root = DATA / "keep_factor"
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(1)
    values = []
    for p in range(PARTITIONS):
        v = rng.zipf(skew, ROWS) % domain
        values.append(v)
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(pa.table({"v": pa.array(v, pa.int64())}), root / f"p={p}" / "d.parquet")
    distinct, counts = np.unique(np.concatenate(values), return_counts=True)
    exact = dict(zip(distinct.tolist(), counts.tolist(), strict=True))
    true_top = set(distinct[np.argsort(-counts, kind="stable")[:k]].tolist())
    stats = str(root / "_lakestats")
    ls.open_table(str(root), stats_root=stats).analyze(spark=spark, max_frequencies=k)
    version = manifest.load_version(StatisticsStore(str(stats)), None)
    print(f"\nzipf {skew} over {domain:,} values, top {k}")
    print(f"{'factor':>6s} {'recall':>7s} {'width':>8s} {'below':>8s} {'sound':>6s}")
    for factor in FACTORS:
        prune.KEEP_FACTOR = factor
        files = layout.table_files(f"factor-{factor}")
        job = ReduceJob(StatisticsStore(stats), version.partitions, version.columns, 1000, k)
        reduce_locally(job, files, f"factor-{factor}")
        table = pq.read_table(f"{stats}/{files['frequencies']}")
        table = table.filter(pc.equal(table.column("column"), "v"))
        got = list(
            zip(
                keys.decode_array(table.column("value").combine_chunks(), pa.int64()).to_pylist(),
                table.column("frequency").to_pylist(),
                table.column("frequency_upper").to_pylist(),
                strict=True,
            )
        )
        recall = len(true_top & {v for v, _, _ in got}) / k
        width = statistics.mean((upper - lower) / exact[v] for v, lower, upper in got)
        below = statistics.mean((exact[v] - lower) / exact[v] for v, lower, _ in got)
        sound = all(lower <= exact[v] <= upper for v, lower, upper in got)
        print(f"{factor:6.1f} {recall:7.3f} {width:8.4f} {below:8.4f} {sound!s:>6s}")
    prune.KEEP_FACTOR = 1.5
    shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skews", default="1.3:1000000,1.1:100000,1.05:20000")
    parser.add_argument("--k", type=int, default=200)
    args = parser.parse_args()
    print(f"# keep_factor  {dt.date.today()}  {machine()}")
    spark = get_spark("local[2]")
    for item in args.skews.split(","):
        skew, domain = item.split(":")
        run(spark, float(skew), int(domain), args.k)


if __name__ == "__main__":
    main()
