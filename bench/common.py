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
    if source.stat().st_size > 1 << 30:  # beyond scale ~4: stream with DuckDB, not in memory
        return _partitioned_with_duckdb(source, layout, out)
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


def _partitioned_with_duckdb(source: Path, layout: str, out: Path) -> Path:
    """``partitioned`` for tables larger than memory comfortably holds: DuckDB streams the
    rows into one file per partition (row groups of ~1M rows)."""
    import duckdb

    columns = "year(l_shipdate) AS ship_year" + (
        ", month(l_shipdate) AS ship_month" if layout == "month" else ""
    )
    keys = "ship_year" + (", ship_month" if layout == "month" else "")
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET preserve_insertion_order = false")
    con.execute(
        f"COPY (SELECT *, {columns} FROM read_parquet('{source}')) TO '{out}' "
        f"(FORMAT parquet, PARTITION_BY ({keys}), COMPRESSION snappy, ROW_GROUP_SIZE 1048576)"
    )
    con.close()
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


def lineitem_by_year_table(source: Path):  # noqa: ANN201 - a pyarrow Table
    """lineitem with its ``ship_year`` partition column, sorted by it (as ``partitioned``)."""
    table = pq.read_table(source)
    table = table.append_column("ship_year", pc.year(table["l_shipdate"]))
    return table.sort_by("ship_year")


def as_iceberg(source: Path, deleted_every: int = 0) -> Path:
    """lineitem by ship year as an Iceberg table (pyiceberg, SQLite catalog under
    bench/data); with ``deleted_every`` = k, every k-th row of each data file is deleted
    by merge-on-read position delete files. Returns the table directory."""
    from pyiceberg.transforms import IdentityTransform

    from lakestats.formats.iceberg import load_catalog

    name = f"lineitem_year_del{deleted_every}" if deleted_every else "lineitem_year"
    warehouse = source.parent / "iceberg"
    done = warehouse / f"{name}.done"
    catalog = load_catalog(warehouse=str(warehouse))
    if done.exists():
        return Path(catalog.load_table(f"bench.{name}").location().removeprefix("file://"))
    catalog.create_namespace_if_not_exists("bench")
    if catalog.table_exists(f"bench.{name}"):
        catalog.purge_table(f"bench.{name}")
    data = lineitem_by_year_table(source)
    table = catalog.create_table(
        f"bench.{name}",
        schema=data.schema,
        properties={"format-version": "2", "write.parquet.row-group-limit": str(1 << 20)},
    )
    with table.update_spec() as spec:
        spec.add_field("ship_year", IdentityTransform(), "ship_year")
    table.append(data)
    if deleted_every:
        from tests.iceberg_deletes import add_position_deletes

        files = {t.file.file_path: t.file.record_count for t in table.scan().plan_files()}
        add_position_deletes(
            table, {path: list(range(0, rows, deleted_every)) for path, rows in files.items()}
        )
    done.touch()
    return Path(table.location().removeprefix("file://"))


def as_delta(source: Path) -> Path:
    """lineitem by ship year as a Delta table written by delta-rs."""
    from deltalake import write_deltalake

    out = source.parent / "delta_lineitem_year"
    if (out / "_done").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    write_deltalake(str(out), lineitem_by_year_table(source), partition_by=["ship_year"])
    (out / "_done").touch()
    return out
