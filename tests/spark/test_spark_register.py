"""lakestats.spark.register: Spark's optimizer sees lakestats' statistics.

References: true counts from DuckDB over the same files, the data itself (NumPy) for the
histograms' bins, Spark's own plans (EXPLAIN COST statistics, the join it picks) before and
after registering, and Spark's DESCRIBE EXTENDED for what the catalog holds.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import types
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.cli import main
from lakestats.errors import (
    InvalidArgumentError,
    LakestatsError,
    StatisticsNotFoundError,
    UnsupportedFeatureError,
)
from lakestats.spark import plan_statistics, register


def _orders(n: int, rng: np.random.Generator) -> pa.Table:
    start = dt.date(1992, 1, 1)
    return pa.table(
        {
            "o_orderkey": pa.array(np.arange(1, n + 1, dtype=np.int64)),
            "o_custkey": pa.array(rng.integers(1, n // 10, n)),
            "o_orderdate": pa.array([start + dt.timedelta(days=int(d)) for d in
                                     rng.integers(0, 2400, n)], pa.date32()),
            "o_totalprice": pa.array(np.round(rng.gamma(2.0, 70_000.0, n), 2)),
            "o_orderpriority": pa.array([f"{p}-PRIORITY" for p in rng.integers(1, 6, n)]),
            "o_discount": pa.array(
                [Decimal(int(v)).scaleb(-2) for v in rng.integers(-5000, 90000, n)],
                pa.decimal128(12, 2),
            ),
            "o_loaded": pa.array(
                1_700_000_000_000_000 + rng.integers(0, 10**13, n), pa.timestamp("us", tz="UTC")
            ),
        }
    )


def _lineitem(orders: pa.Table, rng: np.random.Generator) -> pa.Table:
    per_order = rng.integers(1, 8, orders.num_rows)
    keys = np.repeat(orders["o_orderkey"].to_numpy(), per_order)
    dates = np.repeat(orders["o_orderdate"].to_numpy(), per_order)
    n = len(keys)
    ship = dates + rng.integers(1, 122, n).astype("timedelta64[D]")
    quantity = rng.integers(1, 51, n)
    return pa.table(
        {
            "l_orderkey": pa.array(keys),
            "l_quantity": pa.array(quantity.astype(np.int32)),
            "l_extendedprice": pa.array(np.round(quantity * rng.uniform(900, 2000, n), 2)),
            "l_discount": pa.array(rng.integers(0, 11, n) / 100.0),
            "l_shipdate": pa.array(ship.astype("datetime64[D]")),
            "l_returnflag": pa.array(rng.choice(["A", "N", "R"], n, p=[0.25, 0.5, 0.25])),
        }
    )


@pytest.fixture(scope="module")
def tpch(tmp_path_factory, spark) -> dict[str, Path]:
    """Small TPC-H-shaped orders and lineitem, lineitem partitioned by l_returnflag."""
    rng = np.random.default_rng(14)
    root = tmp_path_factory.mktemp("tpch")
    orders = _orders(60_000, rng)
    lineitem = _lineitem(orders, rng)
    pq.write_table(orders, root / "orders.parquet")
    (root / "orders").mkdir()
    pq.write_table(orders, root / "orders" / "part-0.parquet")
    pq.write_to_dataset(lineitem, root / "lineitem", partition_cols=["l_returnflag"])
    for name in ("orders", "lineitem"):
        ls.open_table(str(root / name)).analyze(spark=spark)
    return {"orders": root / "orders", "lineitem": root / "lineitem"}


@contextmanager
def _conf(spark, **values: str):
    """Set session confs for a block and restore them: the session is shared by the suite."""
    keys = {k.replace("__", "."): v for k, v in values.items()}
    before = {k: spark.conf.get(k, None) for k in keys}
    try:
        for key, value in keys.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@contextmanager
def _tables(spark, *names: str):
    try:
        yield
    finally:
        for name in names:
            spark.sql(f"DROP TABLE IF EXISTS {name}")


def _stats(frame) -> tuple[int | None, int]:
    """(rowCount, sizeInBytes) Spark's optimizer estimates for a DataFrame's plan."""
    stats = frame._jdf.queryExecution().optimizedPlan().stats()
    rows = stats.rowCount()
    return (int(rows.get()) if rows.isDefined() else None), int(stats.sizeInBytes())


def _true_count(path: Path, where: str) -> int:
    files = [str(f) for f in sorted(path.rglob("*.parquet")) if "_lakestats" not in f.parts]
    source = f"read_parquet({files!r}, hive_partitioning = true)"
    con = duckdb.connect()
    try:
        return con.execute(f"SELECT count(*) FROM {source} WHERE {where}").fetchone()[0]
    finally:
        con.close()


def _described_histogram(spark, table: str, column: str) -> tuple[float, list[tuple]]:
    """The histogram as Spark's catalog holds it (DESCRIBE EXTENDED), not as we sent it."""
    described = spark.sql(f"DESCRIBE EXTENDED {table} {column}").collect()
    rows = {r.info_name: r.info_value for r in described}
    height = float(rows["histogram"].split(",")[0].split(":")[1])
    bins = []
    for i in range(int(rows["histogram"].split("num_of_bins:")[1])):
        parts = dict(p.strip().split(": ") for p in rows[f"bin_{i}"].split(","))
        bins.append(
            (float(parts["lower_bound"]), float(parts["upper_bound"]), int(parts["distinct_count"]))
        )
    return height, bins


def test_explain_cost_shows_lakestats_rows_and_histogram_estimates(spark, tpch):
    lineitem = ls.open_table(str(tpch["lineitem"]))
    with _tables(spark, "ls_lineitem"), _conf(spark, spark__sql__cbo__enabled="true"):
        record = register(spark, lineitem, "ls_lineitem")
        truth = pq.read_table(tpch["lineitem"]).num_rows
        assert record.row_count == truth
        rows, _ = _stats(spark.table("ls_lineitem"))
        assert rows == truth
        # what lakestats' Spark component asks the service about (docs/spark.md): the location
        # and snapshot (none: a directory) the statistics describe, as table properties
        properties = dict(spark.sql("SHOW TBLPROPERTIES ls_lineitem").collect())
        assert properties["lakestats.location"] == record.location
        assert properties["lakestats.snapshot"] == ""
        sources = {c.name: c.histogram_source for c in record.columns}
        # dates and small ints: exact frequencies; prices: the stored equi-width histogram
        assert sources["l_shipdate"] == "frequencies"
        assert sources["l_extendedprice"] == "histogram"
        assert record.skipped == {}
        for where in (
            "l_shipdate < DATE '1994-03-01'",
            "l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-06-30'",
            "l_extendedprice > 50000",
            "l_extendedprice <= 12000.5",
            "l_quantity <= 10",
        ):
            estimate, _ = _stats(spark.table("ls_lineitem").where(where))
            true = _true_count(tpch["lineitem"], where)
            assert abs(estimate - true) <= 0.02 * true + 2 * truth / 254, (where, estimate, true)
        # without lakestats' statistics Spark has no row count to estimate from
        spark.sql(f"CREATE TABLE plain_lineitem USING parquet LOCATION '{tpch['lineitem']}'")
        with _tables(spark, "plain_lineitem"):
            assert _stats(spark.table("plain_lineitem").where("l_quantity <= 10"))[0] is None
        text = spark.sql(
            "EXPLAIN COST SELECT * FROM ls_lineitem WHERE l_shipdate < DATE '1994-03-01'"
        ).collect()[0][0]
        assert f"rowCount={truth:.2E}".replace("E+0", "E+") in text


def test_histogram_bins_are_equi_height_over_the_data(spark, tpch):
    lineitem = ls.open_table(str(tpch["lineitem"]))
    data = pq.read_table(tpch["lineitem"])
    with _tables(spark, "ls_lineitem_h"):
        record = register(spark, lineitem, "ls_lineitem_h")
        by_name = {c.name: c for c in record.columns}
        for column, exact in (("l_shipdate", True), ("l_extendedprice", False)):
            values = data[column].to_numpy()
            if column == "l_shipdate":
                values = (values - np.datetime64("1970-01-01")).astype("timedelta64[D]")
                values = values.astype(np.int64).astype(np.float64)
            values = np.sort(values)
            height, bins = _described_histogram(spark, "ls_lineitem_h", column)
            sent = by_name[column]
            assert len(bins) == 254 and bins == [tuple(b) for b in sent.histogram_bins]
            assert height == pytest.approx(len(values) / 254)
            edges = [bins[0][0]] + [b[1] for b in bins]
            assert edges[0] == values[0] and edges[-1] == values[-1]
            # the widest equi-width bin of the data bounds the interpolation error
            tolerance = 0 if exact else np.histogram(values, bins=1000)[0].max()
            for i, edge in enumerate(edges[1:-1], start=1):
                below = np.searchsorted(values, edge, side="left")  # rows < edge
                upto = np.searchsorted(values, edge, side="right")  # rows <= edge
                target = i * height
                assert below - tolerance <= target <= upto + tolerance, (column, i, edge)
            if exact:  # each bin's ndv: distinct values in (lo, hi] ([lo, hi] for the first)
                distinct = np.unique(values)
                for i, (lo, hi, ndv) in enumerate(bins):
                    if lo == hi:
                        assert ndv == 1
                        continue
                    left = np.searchsorted(distinct, lo, side="left" if i == 0 else "right")
                    assert ndv == np.searchsorted(distinct, hi, side="right") - left


def test_join_becomes_broadcast_with_lakestats_statistics(spark, tpch):
    query = (
        "SELECT count(*) FROM {l} JOIN {o} ON l_orderkey = o_orderkey "
        "WHERE o_orderdate = DATE '1995-03-15'"
    )
    orders_bytes = sum(f.stat().st_size for f in tpch["orders"].glob("*.parquet"))
    settings = {
        "spark__sql__adaptive__enabled": "false",
        "spark__sql__cbo__enabled": "true",
        # below what Spark estimates for either side without statistics (even projected):
        # only a filter estimated from statistics makes the orders side small
        "spark__sql__autoBroadcastJoinThreshold": str(orders_bytes // 5),
    }
    names = ("plain_orders", "plain_li", "ls_orders", "ls_li")
    with _tables(spark, *names), _conf(spark, **settings):
        spark.sql(f"CREATE TABLE plain_orders USING parquet LOCATION '{tpch['orders']}'")
        spark.sql(f"CREATE TABLE plain_li USING parquet LOCATION '{tpch['lineitem']}'")
        spark.sql("ALTER TABLE plain_li RECOVER PARTITIONS")
        before = spark.sql(query.format(l="plain_li", o="plain_orders"))
        plan = before._jdf.queryExecution().executedPlan().toString()
        assert "SortMergeJoin" in plan and "BroadcastHashJoin" not in plan
        register(spark, ls.open_table(str(tpch["orders"])), "ls_orders")
        register(spark, ls.open_table(str(tpch["lineitem"])), "ls_li")
        after = spark.sql(query.format(l="ls_li", o="ls_orders"))
        plan = after._jdf.queryExecution().executedPlan().toString()
        assert "BroadcastHashJoin" in plan and "SortMergeJoin" not in plan
        assert after.collect()[0][0] == before.collect()[0][0]
        # the orders side was estimated from lakestats' distinct count of o_orderdate
        rows, _ = _stats(spark.table("ls_orders").where("o_orderdate = DATE '1995-03-15'"))
        true = _true_count(tpch["orders"], "o_orderdate = DATE '1995-03-15'")
        assert 0.3 * true <= rows <= 3 * true + 3


def test_values_match_sparks_own_analyze(spark, tpch):
    """min/max in Spark's external forms (timestamps shown in a non-UTC session zone, decimals,
    dates), distinct and null counts, lengths: as Spark's ANALYZE leaves them."""
    columns = ["o_orderdate", "o_totalprice", "o_discount", "o_loaded", "o_orderpriority"]
    zone = {
        "spark__sql__session__timeZone": "America/Los_Angeles",
        "spark__sql__cbo__enabled": "true",
    }
    with _tables(spark, "ls_o", "spark_o"), _conf(spark, **zone):
        record = register(spark, ls.open_table(str(tpch["orders"])), "ls_o")
        orders = pq.read_table(tpch["orders"])
        assert {c.name: c.spark_type for c in record.columns}["o_loaded"] == "timestamp"
        spark.sql(f"CREATE TABLE spark_o USING parquet LOCATION '{tpch['orders']}'")
        spark.sql(f"ANALYZE TABLE spark_o COMPUTE STATISTICS FOR COLUMNS {', '.join(columns)}")
        for column in columns:
            ours, theirs = (
                {r.info_name: r.info_value for r in
                 spark.sql(f"DESCRIBE EXTENDED {t} {column}").collect()}
                for t in ("ls_o", "spark_o")
            )
            for key in ("min", "max", "num_nulls", "avg_col_len", "max_col_len"):
                assert ours[key] == theirs[key], (column, key)
            # ours is exact; Spark's is a HyperLogLog++ estimate (relative SD 5 %: 3 SDs)
            true = len(set(orders[column].to_pylist()))
            assert int(ours["distinct_count"]) == true
            assert abs(int(theirs["distinct_count"]) - true) <= 0.15 * true
        where = "o_loaded < TIMESTAMP '2024-01-15 00:00:00' AND o_discount > 100"
        estimate, _ = _stats(spark.table("ls_o").where(where))
        true = spark.table("spark_o").where(where).count()
        assert 0.8 * true <= estimate <= 1.25 * true


def test_register_reuses_its_table_and_refuses_another_location(spark, tpch):
    orders = ls.open_table(str(tpch["orders"]))
    with _tables(spark, "ls_again"), _conf(spark, spark__sql__cbo__enabled="true"):
        register(spark, orders, "ls_again")
        again = register(spark, orders, "ls_again")  # a new session re-registers: idempotent
        assert _stats(spark.table("ls_again"))[0] == again.row_count == 60_000
        with pytest.raises(InvalidArgumentError, match=r"already exists over .*: drop it"):
            register(spark, ls.open_table(str(tpch["lineitem"])), "ls_again")


def test_register_errors(spark, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), raw / "p.parquet")
    with pytest.raises(StatisticsNotFoundError):
        register(spark, ls.open_table(str(raw)), "never_analyzed")
    assert not spark.catalog.tableExists("never_analyzed")
    connect_like = types.SimpleNamespace(conf=spark.conf)  # what Spark Connect lacks: a JVM
    with pytest.raises(LakestatsError, match="needs a classic SparkSession"):
        register(connect_like, ls.open_table(str(raw)), "t")
    from deltalake import write_deltalake

    write_deltalake(str(tmp_path / "delta"), pa.table({"a": [1, 2]}))
    with pytest.raises(UnsupportedFeatureError, match="cannot register a delta table"):
        register(spark, ls.open_table(str(tmp_path / "delta")), "t")


def test_cli_refuses_before_starting_a_spark_session(tmp_path, monkeypatch, capsys):
    import lakestats.spark

    raw = tmp_path / "raw"
    raw.mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), raw / "p.parquet")

    def no_session(metastore):
        raise AssertionError("a Spark session was started for a table without statistics")

    monkeypatch.setattr(lakestats.spark, "hive_session", no_session)
    assert main(["spark-register", str(raw), "--name", "t"]) == 2
    assert "no statistics" in capsys.readouterr().err


def test_cli_dry_run_prints_the_statistics(tpch, capsys):
    assert main(["spark-register", str(tpch["orders"]), "--name", "o", "--dry-run"]) == 0
    printed = json.loads(capsys.readouterr().out)
    orders = pq.read_table(tpch["orders"])
    assert printed["row_count"] == orders.num_rows
    columns = {c["name"]: c for c in printed["columns"]}
    dates = orders["o_orderdate"].to_pylist()
    assert columns["o_orderdate"]["min"] == min(dates).isoformat()
    assert columns["o_orderdate"]["distinct_count"] == len(set(dates))
    assert columns["o_orderpriority"]["min"] is None  # Spark ignores string min/max
    assert columns["o_orderpriority"]["max_len"] == 10
    expected = plan_statistics(ls.open_table(str(tpch["orders"])), "o").to_json()
    assert printed == json.loads(json.dumps(expected))


def test_cli_registers_into_a_persistent_metastore(tpch, tmp_path):
    """A separate JVM (Hive support is fixed per JVM): register with the CLI, then a new
    session over the same metastore sees the table and lakestats' row count."""
    script = f"""
import sys
from lakestats.cli import main
from lakestats.spark import hive_session
assert main(["spark-register", {str(tpch["orders"])!r}, "--name", "orders_hive",
             "--metastore", {str(tmp_path / "ms")!r}]) == 0
spark = hive_session({str(tmp_path / "ms")!r})
spark.conf.set("spark.sql.cbo.enabled", "true")
stats = spark.table("orders_hive")._jdf.queryExecution().optimizedPlan().stats()
print("ROWS", stats.rowCount().get())
spark.stop()
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=540, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "registered orders_hive (60000 rows" in done.stdout
    assert "ROWS 60000" in done.stdout


def test_dates_at_year_1_and_9999(spark, tmp_path, capsys):
    """Dates and timestamps at the ends of their range (naive, UTC and a
    zone west of UTC, where year 1 UTC is year 0 locally) analyze, show and dry-run.
    The table-level percentiles (a sketch's doubles, which round 9999-12-31
    23:59:59.999999 one microsecond past the largest timestamp) stay inside [min, max]
    as DuckDB computes them; Spark's catalog shows the min/max it was given (its own
    ANALYZE leaves NULL for dates before 1582, so it is no reference here)."""
    edges = [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
             dt.datetime(2000, 1, 1)]
    (tmp_path / "t" / "p=0").mkdir(parents=True)
    pq.write_table(
        pa.table({
            "day": pa.array([e.date() for e in edges], pa.date32()),
            "ts": pa.array(edges, pa.timestamp("us")),
            "tsz": pa.array(edges, pa.timestamp("us", tz="UTC")),
            "tsny": pa.array(edges, pa.timestamp("us", tz="America/New_York")),
        }),
        tmp_path / "t" / "p=0" / "0.parquet",
    )
    table = ls.open_table(str(tmp_path / "t"))
    table.analyze(spark=spark)
    rows = {r["column"]: r for r in table.statistics(None)}
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for column in ("day", "ts", "tsz", "tsny"):
        low, high = con.execute(
            f"SELECT min({column}), max({column}) FROM "
            f"read_parquet('{tmp_path / 't' / '*' / '*.parquet'}')"
        ).fetchone()
        row = rows[column]
        assert (row["min"], row["max"]) == (low, high), column
        for name in ("p01", "p25", "p50", "p75", "p99"):
            assert low <= row[name] <= high, (column, name, row[name])
    assert main(["show", str(tmp_path / "t"), "--json"]) == 0
    capsys.readouterr()
    assert main(["spark-register", str(tmp_path / "t"), "--name", "edges", "--dry-run"]) == 0
    printed = {c["name"]: c for c in json.loads(capsys.readouterr().out)["columns"]}
    assert (printed["day"]["min"], printed["day"]["max"]) == ("0001-01-01", "9999-12-31")
    for column in ("ts", "tsz", "tsny"):
        assert printed[column]["min"] == "0001-01-01 00:00:00.000000", column
        assert printed[column]["max"] == "9999-12-31 23:59:59.999999", column
    with _tables(spark, "ls_edges"), _conf(spark, spark__sql__session__timeZone="UTC"):
        register(spark, table, "ls_edges")  # Spark parses what it is given, or refuses
        for column, low, high in [("day", "0001-01-01", "9999-12-31"),
                                  ("ts", "0001-01-01 00:00:00.000000",
                                   "9999-12-31 23:59:59.999999")]:
            described = {r.info_name: r.info_value for r in
                         spark.sql(f"DESCRIBE EXTENDED ls_edges {column}").collect()}
            assert (described["min"], described["max"]) == (low, high), (column, described)
