"""Table-level reduction cost: 100, 1,000 and 10,000 partitions x 100 columns; and the
incremental analyze of TPC-H lineitem by month after appending to one partition.

Part 1 writes 200 distinct partition file sets (100 columns: ints, floats, categorical
strings, near-unique ids; 2,000 rows each), as a running analyze hands them to the
reduction (each partition's ``statistics.parquet`` and its frequency and histogram rows in
Arrow IPC hand-off files), and builds manifests of N partitions that cycle
through them (the reduction reads N x 3 files either way; the page cache helps it as it
would on a warm object-store client). Prints the median time of the reduction alone and
the time per partition, so linear growth shows as a flat column; then the time of the same
reduction after one partition's files changed, given the previous run's group cache.

Part 2 (``--incremental``): full analyze of lineitem by month (84 partitions), then append
a file to one partition and analyze again; prints the medians of ``--runs`` rounds (after
one untimed round), their ratio and every round's times.

    python -m bench.reduce [--sizes 100,1000,10000] [--runs 3] [--incremental]
        [--scales 1,10] [--no-scaling] [--work DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import shutil
import statistics
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lakestats.api as ls
from bench.common import DATA, machine, partitioned, tpch_lineitem
from lakestats.compute.reduce import ReduceJob, reduce_table
from lakestats.compute.session import get_spark
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.leaves import leaf_array, leaves_of
from lakestats.store import layout, writer
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry

COLUMNS = 100
DISTINCT_SETS = 200


def _partition_table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = 2000
    columns = {}
    for i in range(COLUMNS):
        kind = i % 4
        if kind == 0:
            columns[f"int_{i}"] = rng.integers(0, 500, n)
        elif kind == 1:
            columns[f"float_{i}"] = rng.normal(100, 20, n)
        elif kind == 2:
            columns[f"cat_{i}"] = pa.array(rng.integers(0, 30, n).astype(str))
        else:
            columns[f"id_{i}"] = np.arange(n) + seed * n
    return pa.table(columns)


def build_partition_files(root: Path) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Write DISTINCT_SETS partitions' files; returns their file maps and the columns."""
    marker = root / "_SUCCESS"
    sets = [
        {**layout.partition_files(f"p={i}", "bench"), **layout.handoff_files(f"p={i}", "bench")}
        for i in range(DISTINCT_SETS)
    ]
    columns = [
        {"name": leaf.name, "type": str(leaf.type)}
        for leaf in leaves_of(_partition_table(0).schema)
    ]
    if marker.exists():
        return sets, columns
    for i, files in enumerate(sets):
        table = _partition_table(i)
        results = []
        for leaf in leaves_of(table.schema):
            accumulator = ColumnAccumulator(leaf)
            accumulator.observe(leaf_array(table, leaf))
            results.append(accumulator.finalize(1000, 10_000))
        uris = {k: layout.absolute(str(root), v) for k, v in files.items()}
        writer.write_partition(results, [], 1000, uris, StatisticsStore(str(root)))
    marker.touch()
    return sets, columns


def reduce_scaling(spark, sizes: list[int], runs: int) -> None:  # noqa: ANN001
    root = DATA / "reduce_partitions_handoff"
    sets, columns = build_partition_files(root)
    print(f"\n## table-level reduction, {COLUMNS} columns")
    print(f"{'partitions':>10s} {'median s':>9s} {'ms / partition':>15s} {'1 changed s':>12s}")
    for size in sizes:
        entries = [
            PartitionEntry(
                path=f"p={i}",
                name=f"p={i}",
                values={"p": i},
                row_count=2000,
                size_bytes=0,
                files=sets[i % DISTINCT_SETS],
            )
            for i in range(size)
        ]
        times, cache, runs_dirs = [], {}, []
        for _ in range(runs if size <= 1000 else 1):
            run_id = f"bench-{uuid.uuid4().hex[:6]}"
            start = time.perf_counter()
            job = ReduceJob(StatisticsStore(str(root)), entries, columns, 1000, 10_000)
            _, _, cache = reduce_table(spark, job, run_id)
            times.append(time.perf_counter() - start)
            runs_dirs.append(root / "table" / run_id)
        # one partition's files change: the reduction reuses the other groups' caches
        entries[0] = dataclasses.replace(entries[0], files=sets[1 % DISTINCT_SETS])
        run_id = f"bench-{uuid.uuid4().hex[:6]}"
        start = time.perf_counter()
        job = ReduceJob(StatisticsStore(str(root)), entries, columns, 1000, 10_000, [], cache)
        reduce_table(spark, job, run_id)
        changed = time.perf_counter() - start
        runs_dirs.append(root / "table" / run_id)
        for directory in runs_dirs:
            shutil.rmtree(directory, ignore_errors=True)
        median = statistics.median(times)
        print(f"{size:>10d} {median:9.2f} {median / size * 1000:15.2f} {changed:12.2f}")


def incremental(spark, runs: int, scale: float = 1.0, work_dir: Path = DATA) -> None:  # noqa: ANN001
    source = tpch_lineitem(scale)
    base = partitioned(source, "month")
    work = work_dir / "lineitem_by_month_incremental"
    print(f"\n## incremental analyze, lineitem scale {scale:g} by month (84 partitions)")
    fulls, increments = [], []
    for round_ in range(runs + 1):  # round 0 untimed: JVM and Python workers warm (as in
        # analyze_tpch); cold, both the full analyze and the increment took 1.4-1.7x longer
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        handle = ls.open_table(str(work))
        start = time.perf_counter()
        handle.analyze(spark=spark)
        full_seconds = time.perf_counter() - start
        target = work / "ship_year=1995" / "ship_month=6"
        existing = pq.read_table(next(target.glob("*.parquet")))
        pq.write_table(existing.slice(0, 1000), target / "appended.parquet")
        start = time.perf_counter()
        result = handle.analyze(spark=spark)
        if round_:
            fulls.append(full_seconds)
            increments.append(time.perf_counter() - start)
        assert result.partitions_computed == 1, result
    if scale <= 1:  # reads the whole table into memory
        histogram_error(handle, work)
    full, inc = statistics.median(fulls), statistics.median(increments)
    print(f"{'full analyze (84 partitions + reduce)':40s} {full:7.2f} s")
    print(f"{'incremental (1 partition + reduce)':40s} {inc:7.2f} s")
    print(f"{'incremental / full':40s} {inc / full:7.3f}")
    print(f"{'each full analyze':40s} {' '.join(f'{t:.2f}' for t in fulls)} s")
    print(f"{'each incremental':40s} {' '.join(f'{t:.3f}' for t in increments)} s")
    shutil.rmtree(work, ignore_errors=True)


def histogram_error(handle: ls.LakestatsTable, table_dir: Path) -> None:
    """Re-binned table histograms against exact histograms on the same bin edges."""
    import pyarrow.dataset as pads

    data = pads.dataset(table_dir, format="parquet", partitioning="hive").to_table()
    print(f"{'column':18s} {'exact?':>6s} {'L1 error':>9s} {'max bin err':>12s}")
    for row in handle.statistics(None):
        if not row.get("histogram_bins"):
            continue
        bins = handle.histogram(row["column"]).rows()
        values = data[row["column"]]
        if pa.types.is_decimal(values.type):
            values = values.cast(pa.float64())
        elif pa.types.is_date(values.type):
            values = values.cast(pa.int32()).cast(pa.float64())
            bins = [{**b, "lower": _days(b["lower"]), "upper": _days(b["upper"])} for b in bins]
        numbers = values.to_numpy(zero_copy_only=False).astype(np.float64)
        edges = np.array([float(b["lower"]) for b in bins] + [float(bins[-1]["upper"])])
        exact, _ = np.histogram(numbers, bins=edges)
        got = np.array([b["count"] for b in bins])
        l1 = np.abs(got - exact).sum() / (2 * len(numbers))
        worst = np.abs(got - exact).max() / max(1, exact.max())
        print(
            f"{row['column']:18s} {bool(row['histogram_exact'])!s:>6s} {l1:9.4%} {worst:12.4%}"
        )


def _days(value: object) -> float:
    return float((value - dt.date(1970, 1, 1)).days)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--incremental", action="store_true")
    parser.add_argument("--scales", default="1", help="lineitem scales for --incremental")
    parser.add_argument("--no-scaling", action="store_true")
    parser.add_argument("--work", type=Path, default=DATA,
                        help="where --incremental copies the table (a directory of your own)")
    args = parser.parse_args()
    print(f"# reduce  {dt.date.today()}  {machine()}")
    spark = get_spark("local[2]")
    if not args.no_scaling:
        reduce_scaling(spark, [int(s) for s in args.sizes.split(",")], args.runs)
    if args.incremental:
        for scale in args.scales.split(","):
            incremental(spark, args.runs, float(scale), args.work)


if __name__ == "__main__":
    main()
