"""Shared helpers for the benchmarks: TPC-H data, timing, printing."""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

DATA = Path(__file__).resolve().parent / "data"


def tpch_lineitem(scale: float) -> Path:
    """lineitem at ``scale`` from tpchgen-cli, generated once under bench/data."""
    from lakestats.demo import tpch_lineitem_file

    return tpch_lineitem_file(DATA, scale)


def partitioned(source: Path, layout: str) -> Path:
    """lineitem as a hive-partitioned Parquet directory by ship year or year+month."""
    out = source.parent / f"lineitem_by_{layout}"
    if (out / "_SUCCESS").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    table = pq.read_table(source)
    table = table.append_column("ship_year", pc.year(table["l_shipdate"]))
    columns = ["ship_year"]
    if layout == "month":
        table = table.append_column("ship_month", pc.month(table["l_shipdate"]))
        columns.append("ship_month")
    table = table.sort_by([(c, "ascending") for c in columns])
    # one file and row groups of up to 1M rows per partition, as a compacted table has
    pq.write_to_dataset(
        table,
        out,
        partition_cols=columns,
        compression="snappy",
        min_rows_per_group=1 << 20,
        max_rows_per_group=1 << 20,
    )
    (out / "_SUCCESS").touch()
    return out


def median_time(action: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def machine() -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )
