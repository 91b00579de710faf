"""Exact table level (``analyze --exact``) in every scenario, against DuckDB over the table.

Thresholds are lowered through the ``LAKESTATS_EXACT_*`` settings so small tables take
scenarios #0 (disjoint all-distinct partitions), #2 (aggregate) and #3 (batched by value
range); every rewritten column lists only its repeated values. Reference: DuckDB
``count(DISTINCT)``, ``GROUP BY`` counts, ``quantile_disc`` and rank counts
(``count(*) FILTER (c < v)``) over the whole table.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.errors import InvalidArgumentError
from lakestats.store import expire, manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader

pytestmark = pytest.mark.spark

PARTS = 5
ROWS = 400


def _partition(p: int, rng: np.random.Generator, shift: int = 0) -> pa.Table:
    n = ROWS
    floats = rng.integers(0, 150, n).astype(np.float64) / 4.0
    floats[rng.random(n) < 0.05] = np.nan
    floats[rng.random(n) < 0.05] = -0.0
    floats[rng.random(n) < 0.05] = 0.0
    float_mask = rng.random(n) < 0.05
    key = p * 10_000 + np.arange(n) * 7 + shift  # all distinct within a partition
    key[:3] = np.arange(3) + shift  # the same three keys in every partition: duplicates
    # all distinct across partitions too, but with overlapping ranges: #1 finding none
    unique = p + PARTS * np.arange(n) + shift
    return pa.table(
        {
            "seq": pa.array(p * n + np.arange(n), pa.int64()),  # disjoint ranges: #0
            "key": pa.array(key, pa.int64()),
            "u": pa.array(unique, pa.int64()),
            "f": pa.array(floats, mask=float_mask),
            "s": pa.array(
                [f"w{int(x)}" for x in rng.zipf(1.3, n) % 500], mask=rng.random(n) < 0.03
            ),
            "d": pa.array(
                [decimal.Decimal(int(x)) / 100 for x in rng.integers(-5000, 5000, n)],
                pa.decimal128(12, 2),
            ),
            "day": pa.array(
                [dt.date(2020, 1, 1) + dt.timedelta(days=int(x)) for x in rng.integers(0, 300, n)],
                pa.date32(),
            ),
        }
    )


def _write(root, p: int, table: pa.Table) -> None:
    directory = root / f"part={p}"
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.parquet"):
        old.unlink()
    pq.write_table(table, directory / "data.parquet")


def _analyze(handle, spark, settings: dict[str, str]) -> manifest.Version:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in settings.items():
            patch.setenv(name, value)
        handle.analyze(spark=spark, bins=40, max_frequencies=20, exact=True)
    return manifest.load_version(StatisticsStore(str(handle.stats_root)))


SETTINGS = {
    "aggregate": {},
    "batched": {"LAKESTATS_EXACT_THRESHOLD": "10", "LAKESTATS_EXACT_BATCH_VALUES": "100"},
}
EXPECTED = {
    "aggregate": {
        "seq": "disjoint",
        "key": "aggregate",
        "u": "aggregate",
        "f": "aggregate",
        "s": "aggregate",
    },
    "batched": {
        "seq": "disjoint",
        "key": "batched",
        "u": "batched",
        "f": "batched",
        "s": "batched",
    },
}


@pytest.fixture(scope="module", params=list(SETTINGS))
def analyzed(spark, tmp_path_factory: pytest.TempPathFactory, request):
    root = tmp_path_factory.mktemp("exact") / "t"
    rng = np.random.default_rng(11)
    for p in range(PARTS):
        _write(root, p, _partition(p, rng))
    handle = ls.open_table(str(root))
    version = _analyze(handle, spark, SETTINGS[request.param])
    return root, handle, version, request.param


def _whole(root) -> pa.Table:
    return pads.dataset(root, format="parquet", partitioning="hive").to_table()


def _norm(value: object) -> object:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else value + 0.0  # -0.0 -> 0.0
    return value


def _check_against_duckdb(root, handle, scenarios: dict[str, str]) -> None:
    con = duckdb.connect()
    con.register("t", _whole(root))
    reader = StatisticsReader(StatisticsStore(str(handle.stats_root)))
    rows = {r["column"]: r for r in reader.column_statistics(None)}
    for column in ["seq", "key", "u", "f", "s", "d", "day"]:
        row = rows[column]
        (distinct,) = con.execute(f"SELECT count(DISTINCT {column}) FROM t").fetchone()
        assert row["distinct_count"] == distinct, column
        assert row["distinct_count_exact"] is True, column
        groups = con.execute(
            f"SELECT {column}, count(*) FROM t WHERE {column} IS NOT NULL GROUP BY 1"
        ).fetchall()
        expected = {_norm(v): c for v, c in groups}
        stored = {_norm(v): c for v, c in handle.frequencies(column)}
        scenario = scenarios.get(column)
        if scenario == "exact":  # every partition listed every value: so does the table
            assert not row["duplicates_only"], column
            assert stored == expected, column
        else:
            _check_duplicates_only(con, handle, row, column, stored)
        assert row["frequencies_exact"] is True, column
        # ranks and quantiles over the non-null, non-NaN values (NaN is left out of every
        # order statistic; DuckDB orders NaN last, as keys do)
        not_nan = f"NOT isnan({column})" if column == "f" else "TRUE"
        values = sorted(v for v in expected if v != "nan")
        for probe in [*values[:: max(1, len(values) // 7)], values[-1]]:
            below, equal, above = con.execute(
                f"SELECT count(*) FILTER ({column} < $1::{_sql_type(column)}), "
                f"count(*) FILTER ({column} = $1::{_sql_type(column)}), "
                f"count(*) FILTER ({column} > $1::{_sql_type(column)} AND {not_nan}) FROM t",
                [probe],
            ).fetchone()
            got = handle.rank(column, probe).to_json()
            assert (got["below"], got["equal"], got["above"]) == (below, equal, above), (
                column,
                probe,
            )
        _check_table_level_ranges(con, handle, column, values)
        if column == "f":
            with pytest.raises(InvalidArgumentError, match="NaN has no rank"):
                handle.rank(column, float("nan"))
        for p in (0.0, 0.01, 0.25, 0.5, 0.9, 0.999, 1.0):
            (want,) = con.execute(
                f"SELECT quantile_disc({column}, {p}) FROM t WHERE {not_nan}"
            ).fetchone()
            assert _norm(handle.quantile(column, p).value) == _norm(want), (column, p)
        if column in ("seq", "key", "u", "f", "d", "day"):
            assert row["percentiles_exact"] is True
            (median,) = con.execute(
                f"SELECT quantile_disc({column}, 0.5) FROM t WHERE NOT isnan({column})"
                if column == "f"
                else f"SELECT quantile_disc({column}, 0.5) FROM t"
            ).fetchone()
            assert _norm(row["p50"]) == _norm(median), column
            _check_histogram(con, handle, row, column)


def _literal(column: str, value: object) -> str:
    if column == "s":
        return f"'{value}'"
    if column == "day":
        return f"DATE '{value}'"
    return str(value)


def _check_table_level_ranges(con, handle, column: str, values: list) -> None:
    """A table-level estimate of a range over the exact ranks is DuckDB's count, whether
    the column's frequencies list every value or only the repeated ones."""
    n = len(values)
    if n < 4:
        return
    low, high = values[n // 5], values[(3 * n) // 5]
    for where in (
        f"{column} >= {_literal(column, low)} AND {column} < {_literal(column, high)}",
        f"{column} > {_literal(column, low)} AND {column} <= {_literal(column, high)}",
        f"{column} BETWEEN {_literal(column, values[1])} AND {_literal(column, values[-2])}",
        f"{column} > {_literal(column, high)}",
    ):
        (truth,) = con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchone()
        got = handle.estimate(where, table_level=True).to_json()
        assert got["lower"] == got["upper"] == truth, (where, got)


def _check_duplicates_only(con, handle, row: dict, column: str, stored: dict) -> None:
    """The rewritten columns store exactly DuckDB's ``HAVING count(*) > 1`` rows, flagged
    ``duplicates_only``, by decreasing count; the omitted values are the ones occurring
    once, and an equality estimate on one of them is bounded by 1 (not 0, as a complete
    list would say)."""
    assert row["duplicates_only"] is True, column
    repeated = {
        _norm(v): c
        for v, c in con.execute(
            f"SELECT {column}, count(*) FROM t WHERE {column} IS NOT NULL "
            "GROUP BY 1 HAVING count(*) > 1"
        ).fetchall()
    }
    (once,) = con.execute(
        f"SELECT count(*) FROM (SELECT {column} FROM t WHERE {column} IS NOT NULL "
        "GROUP BY 1 HAVING count(*) = 1)"
    ).fetchone()
    assert stored == repeated, column
    top = [c for _, c in handle.frequencies(column, top=3)]
    assert top == sorted(repeated.values(), reverse=True)[:3], column
    if column in ("seq", "key", "u"):
        assert (column == "key") == bool(repeated), column  # of these, only "key" repeats
    assert row["all_distinct"] is (not repeated), column
    assert row["frequencies_count"] == len(repeated), column
    truncated = bool(repeated) and once > 0  # all distinct: nothing listed, nothing left out
    assert row["frequencies_truncated"] is truncated, column
    assert row["frequencies_omitted"] == (once if repeated else 0), column
    assert row["frequencies_min"] == (min(repeated.values()) if truncated else None), column
    listing = handle.frequencies(column)
    assert listing.duplicates_only is True and listing.omitted == row["frequencies_omitted"]
    if column not in ("seq", "key", "u", "s"):
        return
    beyond = f"max({column}) || 'z'" if column == "s" else f"max({column}) + 1"
    (single, outside) = con.execute(
        f"SELECT min({column}) FILTER (WHERE n = 1), {beyond} FROM "
        f"(SELECT {column}, count(*) AS n FROM t WHERE {column} IS NOT NULL GROUP BY 1)"
    ).fetchone()
    probes = [(single, 1), (outside, 0), *((v, c) for v, c in list(repeated.items())[:20])]
    for value, truth in probes:
        if value is None:
            continue
        literal = f"'{value}'" if isinstance(value, str) else value
        got = handle.estimate(f"{column} = {literal}", table_level=True).to_json()
        assert got["lower"] <= truth <= got["upper"], (column, value, got)
        assert got["upper"] <= max(truth, 1), (column, value, got)
        assert got["exact"] is (truth != 1 or value in repeated), (column, value, got)


def _check_histogram(con, handle, row: dict, column: str) -> None:
    """Exact table histogram: each reported bin's count equals DuckDB's count inside it."""
    assert row["histogram_exact"] is True, column
    bins = handle.histogram(column).rows()
    finite = f"NOT isnan({column})" if column == "f" else "true"
    sql_type = _sql_type(column)
    for i, b in enumerate(bins):
        upper_op = "<=" if i == len(bins) - 1 else "<"
        (want,) = con.execute(
            f"SELECT count(*) FROM t WHERE {finite} AND {column} >= $1::{sql_type} "
            f"AND {column} {upper_op} $2::{sql_type}",
            [b["lower"], b["upper"]],
        ).fetchone()
        assert b["count"] == want, (column, i, b)


def _sql_type(column: str) -> str:
    return {
        "seq": "BIGINT",
        "key": "BIGINT",
        "u": "BIGINT",
        "f": "DOUBLE",
        "s": "VARCHAR",
        "d": "DECIMAL(12,2)",
        "day": "DATE",
    }[column]


def test_every_scenario_equals_duckdb(analyzed) -> None:
    root, handle, version, name = analyzed
    scenarios = version.extra["exact"]["scenarios"]
    for column, expected in EXPECTED[name].items():
        assert scenarios[column] == expected, (column, scenarios)
    _check_against_duckdb(root, handle, scenarios)


def test_incremental_after_one_partition_changes(analyzed, spark) -> None:
    root, handle, _, name = analyzed
    _write(root, 2, _partition(2, np.random.default_rng(99), shift=5))
    version = _analyze(handle, spark, SETTINGS[name])
    assert (version.partitions_computed, version.partitions_reused) == (1, PARTS - 1)
    report = version.extra["exact"]
    # updated from the previous ranks: the old partition subtracted, the new one added
    assert (report["incremental"], report["partitions_added"], report["partitions_removed"]) == (
        True,
        1,
        1,
    )
    _check_against_duckdb(root, handle, report["scenarios"])


def test_expire_keeps_the_rank_parts(analyzed) -> None:
    root, handle, version, _ = analyzed
    plan = expire.plan_expiry(
        StatisticsStore(str(handle.stats_root)), None, retain_last=1, orphan_age_seconds=0
    )
    latest = manifest.load_version(StatisticsStore(str(handle.stats_root)))
    parts = set(latest.extra["exact"]["files"])
    assert parts and not parts & set(plan.files_removed)
    staged = [e.files["values"] for e in latest.partitions]
    assert not set(staged) & set(plan.files_removed)


def test_an_unpartitioned_table_gets_its_ranks(spark, tmp_path) -> None:
    """An unpartitioned table is its one partition: ``--exact`` still builds its ranks (its
    quantiles at any ``p``) and lists every value, as on a partitioned table."""
    root = tmp_path / "flat"
    root.mkdir()
    rng = np.random.default_rng(5)
    for p in range(2):  # two files, one partition: "key" repeats across them
        pq.write_table(_partition(p, rng), root / f"data-{p}.parquet")
    handle = ls.open_table(str(root))
    version = _analyze(handle, spark, {})
    assert len(version.partitions) == 1 and "ranks" in version.table_files
    # its staged counts served the step only: not kept, not listed
    assert "values" not in version.partitions[0].files
    stats = Path(str(handle.stats_root))
    assert list(stats.rglob("ranks/index.parquet"))
    assert not list(stats.rglob("values.parquet"))
    scenarios = version.extra["exact"]["scenarios"]
    assert (scenarios["seq"], scenarios["key"], scenarios["s"]) == (
        "disjoint", "aggregate", "aggregate"
    )
    _check_against_duckdb(root, handle, scenarios)
