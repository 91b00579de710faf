"""Footer bounds for ``analyze --from-sample`` (``compute/sample/bounds.py``) against the
files' own values, for files written by DuckDB (decimals as INT64, as Spark and Trino
write them up to 18 digits; Arrow cannot convert those statistics) and by pyarrow
(decimals as fixed-length bytes)."""

from __future__ import annotations

import decimal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lakestats.compute.sample.bounds import footer_bounds
from lakestats.formats.base import DataFile, PartitionPlan
from lakestats.stats.keys import encode

COLUMNS = {
    "price": pa.decimal128(15, 2),
    "small": pa.decimal128(7, 3),
    "n": pa.int64(),
    "day": pa.date32(),
}


def _plan(*paths) -> PartitionPlan:
    return PartitionPlan(
        (), {}, tuple(DataFile(str(p), p.stat().st_size, pq.read_metadata(p).num_rows)
                      for p in paths)
    )


def _write_with_duckdb(path, first: int) -> None:
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT ((i * 37 % 1000 - 400) / 7)::DECIMAL(15,2) AS price, "
        f"((i % 91) / 13)::DECIMAL(7,3) AS small, i AS n, DATE '2020-01-01' + i::INT AS day, "
        f"FROM range({first}, {first} + 500) t(i)) TO '{path}' "
        "(FORMAT parquet, ROW_GROUP_SIZE 128)"
    )


@pytest.mark.parametrize("writer", ["duckdb", "pyarrow"])
def test_footer_bounds_equal_the_files_values(tmp_path, writer: str) -> None:
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for first, path in zip((0, 10_000), paths, strict=True):
        _write_with_duckdb(path, first)
        if writer == "pyarrow":  # the same rows, decimals as fixed-length bytes
            pq.write_table(pq.read_table(path), path, row_group_size=128)
    if writer == "duckdb":  # what made Arrow's statistics unreadable
        physical = pq.read_metadata(paths[0]).row_group(0).column(0).physical_type
        assert physical == "INT64"
    bounds = footer_bounds(_plan(*paths), COLUMNS)
    whole = pa.concat_tables(pq.read_table(p) for p in paths)
    assert set(bounds) == set(COLUMNS)
    for name, dtype in COLUMNS.items():
        values = whole.column(name).cast(dtype)
        low, high = pc.min_max(values).values()
        assert bounds[name]["min"] == encode(pa.array([low.as_py()], dtype))[0].as_py(), name
        assert bounds[name]["max"] == encode(pa.array([high.as_py()], dtype))[0].as_py(), name
        assert bounds[name]["null_count"] == values.null_count
        assert bounds[name]["exact"] is True
    assert isinstance(pc.min(whole.column("price")).as_py(), decimal.Decimal)
