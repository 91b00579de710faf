"""Stored samples: the cost of `sample create`, `sample refresh` after a small change, and
`analyze --from-sample` against the full `analyze`, in one run.

Tables: TPC-H lineitem (scale 1) partitioned by ship year and month (~80 partitions, one
file each), and a generated Zipf table (5M rows, 20 partitions of 4 files; columns with Zipf
z = 0.5 (bounded), 1.5, 2 and a uniform key). For each, once (one run; times include
Spark's job overheads): full `analyze`; `sample create --fraction 0.01`; `analyze
--from-sample`; then a 1 % append (a new file in the newest partition) and a 0.5 % delete
(one data file of the largest other partition rewritten without some rows: with one file
per partition, as lineitem here, that rewrites the partition, which is resampled), and
`sample refresh`, which reads only the files that changed. Bytes read: data files the job
read (`SampleResult.bytes_read`, whole files), the sample's files for `--from-sample` (read
once, by the Spark tasks; the driver does not read them), every data file for the full
analyze. `--timings` prints each analyze's stage timings on stderr (`LAKESTATS_TIMINGS`).
Refresh also reads the changed partitions' stored candidates
(sample + reserve; printed apart). Scale 10 (`--scale 10`) needs TPC-H data at scale 10.

    python -m bench.samples [--scale 1] [--fraction 0.01] [--work DIR] [--tables zipf,lineitem]
                            [--timings]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lakestats.api as ls
from bench.common import machine, partitioned, tpch_lineitem
from lakestats.compute.session import get_spark


def _size(root: Path) -> int:
    return sum(f.stat().st_size for f in root.rglob("*.parquet") if "_lakestats" not in f.parts)


def zipf_table(out: Path, rows: int = 5_000_000, parts: int = 20, files: int = 4) -> Path:
    rng = np.random.default_rng(0)
    per = rows // parts // files
    for p in range(parts):
        (out / f"bucket={p:02d}").mkdir(parents=True, exist_ok=True)
        for f in range(files):
            table = pa.table(
                {
                    "z05": (rng.power(0.5, per) * 1_000_000).astype(np.int64),
                    "z15": np.minimum(rng.zipf(1.5, per), 10**9),
                    "z2": np.minimum(rng.zipf(2.0, per), 10**9),
                    "key": rng.integers(0, rows, per),
                    "amount": rng.exponential(50.0, per),
                }
            )
            pq.write_table(table, out / f"bucket={p:02d}" / f"part-{f}.parquet")
    return out


def _timed(action):  # noqa: ANN001, ANN202
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def change(root: Path, total_rows: int) -> tuple[int, int]:
    """Append 1 % of the rows to the newest partition (a new file, rows copied from it) and
    delete 0.5 % from the largest file of the largest other partition (that file rewritten).
    Returns (appended, deleted)."""
    partitions = sorted(p for p in root.rglob("*") if p.is_dir() and not p.name.startswith("_")
                        and any(p.glob("*.parquet")))
    partitions = [p for p in partitions if "_lakestats" not in p.parts]
    newest = partitions[-1]
    source = pq.read_table(sorted(newest.glob("*.parquet"))[0])
    appended = total_rows // 100
    repeat = pa.concat_tables([source] * (appended // max(source.num_rows, 1) + 1))
    pq.write_table(repeat.slice(0, appended), newest / "appended-1pct.parquet")
    victim = max(partitions[:-1], key=lambda p: sum(f.stat().st_size for f in p.glob("*.parquet")))
    largest = max(victim.glob("*.parquet"), key=lambda f: f.stat().st_size)
    table = pq.ParquetFile(largest).read()
    deleted = min(total_rows // 200, table.num_rows // 2)
    keep = np.ones(table.num_rows, dtype=bool)
    keep[np.random.default_rng(1).choice(table.num_rows, deleted, replace=False)] = False
    largest.unlink()
    pq.write_table(table.filter(pa.array(keep)), victim / f"rewritten-{largest.name}")
    return appended, deleted


def bench(name: str, root: Path, fraction: float, spark) -> None:  # noqa: ANN001
    table = ls.open_table(str(root))
    data_bytes = _size(root)
    files = sum(1 for f in root.rglob("*.parquet") if "_lakestats" not in f.parts)
    full_s, full = _timed(lambda: table.analyze(spark=spark))
    create_s, created = _timed(lambda: table.sample.create(fraction=fraction, spark=spark))
    sample_bytes = sum(p["file_size"] for p in table.sample.manifest().to_json()["partitions"])
    from_s, _ = _timed(lambda: table.analyze(from_sample=True, spark=spark))
    appended, deleted = change(root, full.row_count)
    refresh_s, refreshed = _timed(lambda: table.sample.refresh(spark=spark))
    print(f"\n{name}: {full.row_count:,} rows, {data_bytes / 1e6:,.1f} MB of data files, "
          f"{len(table.sample.manifest().to_json()['partitions'])} partitions")
    print(f"{'step':<38}{'seconds':>9}{'MB read':>10}{'files':>7}{'vs full analyze':>20}")
    rows = [
        ("full analyze", full_s, data_bytes, files),
        (f"sample create ({fraction:.0%})", create_s, created.bytes_read, created.files_read),
        ("analyze --from-sample", from_s, sample_bytes, None),
        (f"sample refresh (+{appended:,} -{deleted:,} rows)", refresh_s, refreshed.bytes_read,
         refreshed.files_read),
    ]
    for step, seconds, read, count in rows:
        shown = "" if count is None else f"{count:,}"
        print(f"{step:<38}{seconds:>9.1f}{read / 1e6:>10.1f}{shown:>7}"
              f"{seconds / full_s:>9.1%} time {read / data_bytes:>6.1%} B")
    print(f"refresh / create: {refresh_s / create_s:.1%} of the time, "
          f"{refreshed.bytes_read / max(created.bytes_read, 1):.1%} of the bytes "
          f"(+{refreshed.state_bytes_read / 1e6:.2f} MB of stored candidates); "
          f"{refreshed.partitions_sampled} partitions updated "
          f"({refreshed.partitions_resampled} of them resampled in full), "
          f"{refreshed.partitions_kept} kept")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1)
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--work", help="scratch directory (default: a temporary one)")
    parser.add_argument("--tables", default="lineitem,zipf", help="which tables, in order")
    parser.add_argument("--timings", action="store_true", help="stage timings on stderr")
    args = parser.parse_args()
    if args.timings:
        os.environ["LAKESTATS_TIMINGS"] = "1"
    print(machine())
    spark = get_spark()
    if args.work:
        Path(args.work).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="lakestats-samples-", dir=args.work))
    try:
        for name in args.tables.split(","):
            if name == "lineitem":
                lineitem = work / "lineitem"
                # hard links: nothing copied; the change step writes new files and unlinks
                shutil.copytree(partitioned(tpch_lineitem(args.scale), "month"), lineitem,
                                copy_function=os.link)
                bench(f"lineitem scale {args.scale:g} by ship month", lineitem, args.fraction,
                      spark)
            elif name == "zipf":
                bench("Zipf 5M rows", zipf_table(work / "zipf"), args.fraction, spark)
            else:
                raise SystemExit(f"unknown table {name!r}: lineitem or zipf")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
