"""Selectivity estimates against DuckDB's true counts over the same generated table.

The table has four partitions with different distributions (skew), truncated and complete
frequencies, NaN, infinities and NULLs; it is analyzed with few bins and a short frequency
list so that every estimation path (complete frequencies, listed values, histogram edges,
key interpolation, min/max pruning) is taken. Every estimate must hold the true count inside
its bounds, equal it when it claims exactness, and list every partition that has a match.
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
from lakestats import cli
from lakestats.errors import (
    ColumnNotFoundError,
    InvalidPredicateError,
    LakestatsError,
    StatisticsNotFoundError,
    UnsupportedPredicateError,
)

pytestmark = pytest.mark.spark

WORDS = [f"{a}{b}" for a in ("apple", "apricot", "banana", "berry", "cherry", "date", "fig")
         for b in range(40)]


def _partition(rng: np.random.Generator, n: int, shift: int) -> pa.Table:
    nulls = rng.random(n) < 0.1
    ints = (rng.zipf(1.6, n) % 500 + shift * 100).astype(np.int64)
    floats = rng.normal(shift * 10, 25, n)
    floats[rng.random(n) < 0.03] = np.nan
    floats[rng.random(n) < 0.01] = np.inf
    floats[rng.random(n) < 0.01] = -np.inf
    words = [WORDS[(int(k) * 7 + shift) % len(WORDS)] for k in rng.zipf(1.4, n)]
    base = dt.date(2020, 1, 1) + dt.timedelta(days=shift * 30)
    days = [base + dt.timedelta(days=int(d)) for d in rng.integers(0, 120, n)]
    stamps = [
        dt.datetime(2021, 3, 1) + dt.timedelta(seconds=int(s))
        for s in rng.integers(0, 86_400 * 10, n)
    ]
    cents = rng.integers(-5000, 50_000, n)
    return pa.table(
        {
            "i": pa.array(ints, mask=nulls),
            "f": pa.array(floats, mask=rng.random(n) < 0.05),
            "s": pa.array(words, mask=pa.array(rng.random(n) < 0.08)),
            "d": pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents],
                          pa.decimal128(12, 2)),
            "day": pa.array(days, pa.date32()),
            "ts": pa.array(stamps, pa.timestamp("us")),
            "tsz": pa.array(stamps, pa.timestamp("us", tz="UTC")),
            "b": pa.array(rng.random(n) < 0.3, mask=rng.random(n) < 0.1),
            "u": pa.array(np.arange(n, dtype=np.int64) * 3 + shift * 100_000),
            "small": pa.array(rng.integers(0, 5, n).astype(np.int32)),
        }
    )


@pytest.fixture(scope="module")
def analyzed(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, duckdb.DuckDBPyConnection]:  # noqa: E501
    root = tmp_path_factory.mktemp("estimate") / "t"
    rng = np.random.default_rng(14)
    tables = []
    for shift, n in enumerate((3000, 1200, 400, 50)):
        t = _partition(rng, n, shift)
        (root / f"part=p{shift}").mkdir(parents=True)
        pq.write_table(t, root / f"part=p{shift}" / "data.parquet")
        tables.append(t.append_column("part", pa.array([f"p{shift}"] * n)))
    table = ls.open_table(str(root))
    table.analyze(bins=16, max_frequencies=30, spark=spark)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("t", pa.concat_tables(tables))
    return root, con


PREDICATES = [
    # equality: frequent, rare, absent, outside min/max
    "i = 100",
    "i = 1",
    "i = 137",
    "i = 99999",
    "s = 'apple0'",
    "s = 'fig39'",
    "s = 'nothing'",
    "small = 3",
    "b = TRUE",
    "b = FALSE",
    "u = 300",
    "u = 301",
    "d = 12.34",
    "day = DATE '2020-02-01'",
    "tsz = TIMESTAMP '2021-03-02 00:00:00'",
    # ranges
    "i < 50",
    "i >= 120 AND i < 160",
    "i BETWEEN 10 AND 400",
    "i > 1000",
    "f > 10.5",
    "f <= -3",
    "f > 'Infinity'",
    "f >= 'Infinity'",
    "f = 'NaN'",
    "f <> 'NaN'",
    "f < 'NaN'",
    "d < 0",
    "d BETWEEN 100.00 AND 250.50",
    "day >= DATE '2020-03-15'",
    "day < DATE '2020-01-10' OR day > DATE '2020-06-01'",
    "ts < TIMESTAMP '2021-03-05 12:00:00'",
    "tsz >= TIMESTAMP '2021-03-08 06:30:00+02:00'",
    "u BETWEEN 1000 AND 2000",
    "s < 'b'",
    "s >= 'cherry' AND s < 'date'",
    # IN, NOT IN, with NULL
    "i IN (100, 101, 102, 5000)",
    "i NOT IN (100, 101)",
    "i NOT IN (100, NULL)",
    "i IN (100, NULL)",
    "s IN ('apple0', 'banana3', 'zzz')",
    "s NOT IN ('apple0')",
    "small IN (1, 2)",
    # NULLs and three-valued NOT
    "i IS NULL",
    "i IS NOT NULL",
    "NOT (i < 150)",
    "NOT (i IS NULL OR i > 150)",
    "NOT (b)" if False else "NOT (b = TRUE)",
    "f IS NULL OR f > 0",
    "i <> 100",
    # LIKE
    "s LIKE 'apple%'",
    "s LIKE 'ch%'",
    "s NOT LIKE 'apple%'",
    "s LIKE 'apple1'",
    "s LIKE '%9'",
    "s LIKE 'b_rry%'",
    # conjunctions and disjunctions across columns
    "i < 150 AND s LIKE 'apple%'",
    "i < 150 AND small = 2 AND b = TRUE",
    "i = 100 OR s = 'apple0'",
    "small = 1 OR f > 20 OR i IS NULL",
    "(i < 120 OR i > 300) AND NOT (small IN (0, 4))",
    "part = 'p1'",
    "part IN ('p0', 'p3') AND i < 120",
]


def _true_counts(con: duckdb.DuckDBPyConnection, where: str) -> dict[str, int]:
    rows = con.execute(f"SELECT part, count(*) FROM t WHERE {where} GROUP BY part").fetchall()
    return dict(rows)


@pytest.mark.parametrize("where", PREDICATES)
def test_estimate_holds_the_true_count(analyzed, where: str) -> None:
    root, con = analyzed
    truth = _true_counts(con, where)
    result = ls.open_table(str(root)).estimate(where).to_json()
    total = sum(truth.values())
    assert result["lower"] <= total <= result["upper"], (where, total, result)
    if result["exact"]:
        assert result["row_count"] == total, (where, total, result)
    assert result["lower"] <= result["row_count"] <= result["upper"]
    by_name = {p["partition"]["part"]: p for p in result["partitions"]}
    for part, count in truth.items():
        assert part in by_name, f"{where}: partition {part} holds {count} rows but was pruned"
        p = by_name[part]
        assert p["lower"] <= count <= p["upper"], (where, part, count, p)
        if p["exact"]:
            assert p["row_count"] == count
    rows = sum(p["partition_rows"] for p in result["partitions"])
    assert rows <= result["table_rows"]
    assert result["selectivity"] == pytest.approx(result["row_count"] / result["table_rows"])


EXACT = [
    "i IS NULL",
    "i IS NOT NULL",
    "small = 3",
    "small IN (1, 2)",
    "small < 3 AND small > 0",
    "b = TRUE",
    "NOT (b = TRUE)",
    "i = 1",
    "i > 99999",
    "u < 0",
    "day >= DATE '2019-01-01'",
    "f = 'NaN'",
    "part = 'p1'",
    "small = 1 OR small = 2 OR small IS NULL",
    "f > 'Infinity'",
]


def test_index_provider_equals_file_provider(analyzed, monkeypatch) -> None:
    """The partition-index provider (the default) gives the file provider's estimates,
    bounds and partitions, and opens no partition file where min/max or null counts
    settle every partition."""
    from lakestats.store.reader import StatisticsReader

    root, con = analyzed
    table = ls.open_table(str(root))
    assert table.reader().partition_index() is not None
    for where in PREDICATES:
        assert table.estimate(where) == table.estimate(where, source="files"), where
    opened: list[str] = []
    original = StatisticsReader.parquet_file

    def spy(self, entry, kind):
        opened.append(kind)
        return original(self, entry, kind)

    monkeypatch.setattr(StatisticsReader, "parquet_file", spy)
    fresh = ls.open_table(str(root))
    result = fresh.estimate("i > 99999 OR u IS NULL").to_json()
    assert (result["row_count"], result["exact"]) == (0, True)
    assert sum(_true_counts(con, "i > 99999 OR u IS NULL").values()) == 0
    assert opened == []  # every partition settled by the index's scalars


@pytest.mark.parametrize("where", EXACT)
def test_exact_where_the_statistics_allow(analyzed, where: str) -> None:
    root, con = analyzed
    total = sum(_true_counts(con, where).values())
    result = ls.open_table(str(root)).estimate(where).to_json()
    assert result["exact"], (where, result)
    assert result["row_count"] == total


def test_pruned_partitions_hold_no_match(analyzed) -> None:
    root, con = analyzed
    result = ls.open_table(str(root)).estimate("u >= 200000 AND u < 200003").to_json()
    assert [p["partition"]["part"] for p in result["partitions"]] == ["p2"]
    assert set(_true_counts(con, "u >= 200000 AND u < 200003")) == {"p2"}


def test_single_column_estimates_are_close(analyzed) -> None:
    """Not a bound check: the point estimates of single-column predicates are near the
    truth (q-error), which is what a planner uses."""
    root, con = analyzed
    table = ls.open_table(str(root))
    errors = []
    for where in ["i < 50", "i BETWEEN 10 AND 400", "f > 10.5", "d < 0", "u BETWEEN 1000 AND 2000",
                  "day >= DATE '2020-03-15'", "s = 'apple0'", "i IN (100, 101, 102, 5000)"]:
        truth = max(1, sum(_true_counts(con, where).values()))
        est = max(1.0, table.estimate(where).to_json()["row_count"])
        errors.append(max(est / truth, truth / est))
    assert float(np.median(errors)) <= 1.2, errors


def test_detail_per_conjunct(analyzed) -> None:
    root, con = analyzed
    result = ls.open_table(str(root)).estimate(
        "i < 150 AND i >= 100 AND s LIKE 'apple%'"
    ).to_json()
    texts = [d["predicate"] for d in result["detail"]]
    assert texts == ['"i" < 150 AND "i" >= 100', "\"s\" LIKE 'apple%'"]
    for d in result["detail"]:
        truth = sum(_true_counts(con, d["predicate"]).values())
        assert d["lower"] <= truth <= d["upper"]


def test_table_level_estimate_holds_bounds(analyzed) -> None:
    root, con = analyzed
    for where in ("i < 150", "small = 3", "s = 'apple0'", "f > 0 AND b = TRUE"):
        total = sum(_true_counts(con, where).values())
        result = ls.open_table(str(root)).estimate(where, table_level=True).to_json()
        assert result["lower"] <= total <= result["upper"], (where, result)
        if result["exact"]:
            assert result["row_count"] == total


def test_cli_json_keys(analyzed, capsys) -> None:
    root, con = analyzed
    code = cli.main(["estimate", str(root), "--where", "small = 3 AND i < 200", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert {"row_count", "lower", "upper", "exact", "selectivity", "partitions", "detail"} <= set(
        data
    )
    total = sum(_true_counts(con, "small = 3 AND i < 200").values())
    assert data["lower"] <= total <= data["upper"]


@pytest.mark.parametrize(
    ("where", "error", "message"),
    [
        ("nope = 1", ColumnNotFoundError, "unknown column 'nope' in predicate"),
        ("i = 'abc'", InvalidPredicateError, "literal 'abc' is not a value of column 'i' (int64)"),
        ("i = 1.5", InvalidPredicateError, "literal 1.5 is not a value of column 'i' (int64)"),
        ("day = 5", InvalidPredicateError, "literal 5 is not a value of column 'day' (date32"),
        ("s = 5", InvalidPredicateError, "literal 5 is not a value of column 's' (string)"),
        ("i < s", UnsupportedPredicateError, "comparing two columns"),
        ("abs(i) = 1", UnsupportedPredicateError, "function call"),
        ("i = (SELECT 1)", UnsupportedPredicateError, "a subquery"),
        ("i = 1 +", InvalidPredicateError, "cannot parse predicate"),
        ("i = NULL", InvalidPredicateError, "write i IS NULL instead"),
        ("i LIKE 'a%'", InvalidPredicateError, "LIKE needs a string column"),
    ],
)
def test_errors(analyzed, capsys, where: str, error: type, message: str) -> None:
    root, _ = analyzed
    with pytest.raises(error) as info:
        ls.open_table(str(root)).estimate(where).to_json()
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    code = cli.main(["estimate", str(root), "--where", where, "--json"])
    _, err = capsys.readouterr()
    assert code != 0
    assert err.startswith("lakestats: error: ") and err.count("\n") == 1


def test_never_analyzed(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    pq.write_table(pa.table({"a": [1]}), tmp_path / "t" / "x.parquet")
    with pytest.raises(StatisticsNotFoundError):
        ls.open_table(str(tmp_path / "t")).estimate("a = 1").to_json()
    assert issubclass(StatisticsNotFoundError, LakestatsError)


def test_column_without_statistics(spark, tmp_path: Path, capsys) -> None:
    (tmp_path / "t").mkdir()
    pq.write_table(pa.table({"a": [1, 2, 2], "b": [1.0, None, 3.0]}), tmp_path / "t" / "x.parquet")
    table = ls.open_table(str(tmp_path / "t"))
    table.analyze(columns=["a"], spark=spark)
    assert table.estimate("a = 2").to_json()["row_count"] == 2
    with pytest.raises(StatisticsNotFoundError, match="column 'b' has no statistics: analyze it"):
        table.estimate("a = 2 AND b > 1").to_json()
    with pytest.raises(ColumnNotFoundError, match="unknown column 'c' in predicate"):
        table.estimate("c > 1").to_json()
    # the same one-line errors for stats --where (CLI: one line, non-zero exit)
    with pytest.raises(StatisticsNotFoundError, match="column 'b' has no statistics: analyze it"):
        table.stats(["a"], where="b > 1")
    with pytest.raises(InvalidPredicateError, match="'x'"):
        table.stats(["a"], where="a = 'x'")
    assert table.stats(["a"], where="a > 1").to_json()["table"]["partitions_matched"] == 1
    for command in (["stats", "--columns", "a"], ["estimate"]):
        for where in ("b > 1", "c > 1", "a = 'x'"):
            code = cli.main([command[0], str(tmp_path / "t"), *command[1:], "--where", where])
            err = capsys.readouterr().err.strip()
            assert code != 0 and err.startswith("lakestats: error:") and "\n" not in err, err
