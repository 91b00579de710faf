"""The service's test table (shared by tests/service/test_service_*.py) and the config file rules.

``analyzed_sales(directory, spark)`` writes a hive-partitioned Parquet table (three
regions; integers with nulls, floats with NaN, strings, dates, decimals) and analyzes it
once; ``duck(root)`` is DuckDB over the same files, the independent reference.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.errors import InvalidArgumentError
from lakestats.service.config import TableConfig, load_tables

REGIONS = ("east", "north", "west")
START = dt.date(2020, 1, 1)
WORDS = np.array(["ant", "bee", "cat", "dög", "ému", ""])


def _part(index: int, rows: int) -> pa.Table:
    rng = np.random.default_rng(index)
    x = rng.normal(index, 10, rows)
    days = rng.integers(0, 900, rows)
    x[rng.random(rows) < 0.05] = np.nan
    return pa.table(
        {
            "n": pa.array(rng.integers(-50, 50 + index, rows), mask=rng.random(rows) < 0.1),
            "x": pa.array(x, mask=rng.random(rows) < 0.05),
            "word": pa.array(WORDS[rng.integers(0, 3 + index, rows)]),
            "day": pa.array([START + dt.timedelta(days=int(d)) for d in days]),
            "amount": pa.array(
                [decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-9999, 9999, rows)],
                pa.decimal128(9, 2),
            ),
        }
    )


def write_sales(root: Path, rows: int = 400) -> Path:
    for i, region in enumerate(REGIONS):
        directory = root / f"region={region}"
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(_part(i, rows + 37 * i), directory / "part-0.parquet")
    return root


def analyzed_sales(directory: Path, spark) -> TableConfig:
    root = write_sales(directory / "sales")
    ls.open_table(str(root)).analyze(spark=spark)
    return TableConfig(name="sales", table=str(root))


def duck(root: str | Path) -> duckdb.DuckDBPyConnection:
    """DuckDB with a view ``sales`` over the table's files (``region`` from the paths)."""
    con = duckdb.connect()
    con.execute(
        f"CREATE VIEW sales AS SELECT * FROM read_parquet('{root}/*/*.parquet', "
        "hive_partitioning = true)"
    )
    return con


def test_config_toml_and_json(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(
        '[tables.sales]\ntable = "data/sales"\nstats_root = "s3://b/stats"\n'
        '[tables.li]\ntable = "demo.lineitem"\nwarehouse = "wh"\n'
        's3 = { endpoint_url = "http://127.0.0.1:9000", region = "us-east-1" }\n'
    )
    sales, li = load_tables(tmp_path / "t.toml")
    assert (sales.name, sales.table, sales.stats_root) == (
        "sales", str(tmp_path / "data" / "sales"), "s3://b/stats"
    )
    assert (li.table, li.warehouse, li.s3.region) == ("demo.lineitem", str(tmp_path / "wh"),
                                                     "us-east-1")
    (tmp_path / "t.json").write_text(json.dumps({"tables": {"a": {"table": "/abs/a"}}}))
    [a] = load_tables(tmp_path / "t.json")
    assert (a.name, a.table) == ("a", "/abs/a")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[tables."../etc"]\ntable = "/etc"\n', "use letters, digits"),
        ('[tables."a/b"]\ntable = "/etc"\n', "use letters, digits"),
        ("[tables.a]\npath = 'x'\n", "needs table = URI"),
        ("[tables.a]\ntable = 'x'\nwhere = 1\n", "unknown option"),
        ("[tables.a]\ntable = 'x'\ns3 = { token = 'x' }\n", "s3 takes only"),
        ("x = 1\n", "names no tables"),
        ("[tables\n", "is not valid toml"),
        # access control: a misspelt section or entry is refused, never ignored
        ("[tables.a]\ntable = 'x'\n[token.r]\nhash = 'x'\n", "unknown section.*'token'"),
        ("[tables.a]\ntable = 'x'\nsensitive = 'email'\n", "sensitive must be a list"),
        ("[tables.a]\ntable = 'x'\n[tokens.r]\nhash = 'lst_x'\ntables = '*'\n",
         "hash must be sha256"),
        (f"[tables.a]\ntable = 'x'\n[tokens.r]\nhash = 'sha256:{'0' * 64}'\ntables = ['b']\n",
         "grants ..b.., which the file does not serve"),
        (f"[tables.a]\ntable = 'x'\n[tokens.r]\nhash = 'sha256:{'0' * 64}'\ntables = []\n",
         "non-empty list"),
        (f"[tables.a]\ntable = 'x'\n[tokens.r]\nhash = 'sha256:{'0' * 64}'\ntables = '*'\n"
         f"[tokens.s]\nhash = 'sha256:{'0' * 64}'\ntables = '*'\n", "the same hash"),
        (f"[tables.a]\ntable = 'x'\n[tokens.r]\nhash = 'sha256:{'0' * 64}'\n", "tables must be"),
    ],
)
def test_config_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(text)
    with pytest.raises(InvalidArgumentError, match=message):
        load_tables(path)
