"""Long IN lists, as planners send them.

* The fast reader (``predicate.in_list`` with ``typed_many``) builds the tree sqlglot's
  path builds from the same text, or raises the same error: compared on a generated
  corpus over every column type, short and long lists, NULLs, duplicates, bad values.
* Many single values are estimated at once (``_points_sum`` of ``selectivity`` and of
  ``selectivity_vector``) to the same numbers, to the bit, as range by range: compared on
  random partitions and value sets.
* Estimates of 20,000-value IN and NOT IN lists against DuckDB's counts: exact where the
  frequencies are complete, inside the bounds where they are truncated; through the
  Python API and the service's POST body.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.errors import LakestatsError, PredicateTooLargeError
from lakestats.query.predicate import in_list, parse
from lakestats.query.predicate.parse import _Parser
from lakestats.stats import key_ranges as kr
from lakestats.stats import keys
from lakestats.stats import selectivity as sel
from lakestats.stats import selectivity_vector as sv
from lakestats.stats.column_summary import ColumnSummary, Estimate, Frequencies, Histogram

COLUMNS = {
    "i": pa.int64(), "i8": pa.int8(), "u": pa.uint64(), "s": pa.string(),
    "d": pa.decimal128(12, 2), "day": pa.date32(), "ts": pa.timestamp("us"),
    "tsz": pa.timestamp("us", tz="UTC"), "f": pa.float64(), "f4": pa.float32(),
    "b": pa.bool_(), "My Col": pa.int64(),
}


def _value(rng: random.Random, column: str) -> str:
    """A literal for ``column``, mostly of its type, sometimes not (or out of range)."""
    pick = rng.random()
    if pick < 0.04:
        return "NULL"
    if pick < 0.07:  # another kind of literal
        return rng.choice(["'x'", "1.5", "TRUE", "DATE '2020-01-01'", "-7", "'2020-02-30'",
                           "300", "99999999999999999999", "TIMESTAMP '2021-01-01 00:00:00'"])
    n = rng.randint(-1000, 1000)
    if column in ("i", "My Col", "i8", "u"):
        return rng.choice([str(n), str(abs(n)), f"{abs(n):05d}"])
    if column == "s":
        return "'" + rng.choice(["a", "b'c", "", "ünï", "x y", str(n)]).replace("'", "''") + "'"
    if column == "d":
        return rng.choice([f"{n}.{rng.randint(0, 99):02d}", str(n), f"'{n}.5'", f"{n}.5"])
    if column == "day":
        day = dt.date(2020, 1, 1) + dt.timedelta(days=n)
        return rng.choice([f"DATE '{day}'", f"'{day}'", f"date '{day}'"])
    if column in ("ts", "tsz"):
        stamp = dt.datetime(2021, 1, 1) + dt.timedelta(seconds=n * 997)
        return rng.choice([f"TIMESTAMP '{stamp}'", f"'{stamp}'", f"DATE '{stamp.date()}'"])
    if column in ("f", "f4"):
        return rng.choice([f"{n}.{rng.randint(0, 9)}", str(n), "'NaN'", "'Infinity'"])
    return rng.choice(["TRUE", "FALSE", "true"])


def _general(text: str):
    import sqlglot

    try:
        return _Parser(COLUMNS, ()).node(sqlglot.parse_one(text), False)
    except LakestatsError as exc:
        return type(exc), str(exc)


def _fast(text: str):
    try:
        return parse(text, COLUMNS)
    except LakestatsError as exc:
        return type(exc), str(exc)


def test_the_fast_reader_builds_the_general_tree() -> None:
    rng = random.Random(3)
    read = 0
    for _ in range(1500):
        column = rng.choice(list(COLUMNS))
        size = rng.choice([1, 2, 5, 17, 40, 120])
        values = [_value(rng, column) for _ in range(size)]
        if rng.random() < 0.7:  # mostly one kind and valid: the batches decide them
            values = [v for v in values if v != "NULL" and v[0] in "'-0123456789D"] or ["NULL"]
        name = f'"{column}"' if " " in column or rng.random() < 0.1 else column
        joiner = rng.choice([", ", ",", " ,  "])
        op = rng.choice(["IN", "in", "NOT IN", "not In"])
        text = f"{name} {op} ({joiner.join(values)})"
        if rng.random() < 0.2:
            text = f"  {text}  "
        read += in_list.read_whole(text) is not None
        assert repr(_fast(text)) == repr(_general(text)), text  # repr: NaN equals NaN
    assert read > 1400  # the fast reader read them, not sqlglot's path


@pytest.mark.parametrize(
    "text",
    ["i IN (1, 2 + 3)", "i IN (1, - 2)", "i IN (1e3, 2)", "i IN (SELECT 1)",
     "in IN (1, 2)", "i IN ('a\\'b')", "i IN (1, 2) extra", "s IN ('a' 'b')"],
)
def test_other_forms_are_left_to_the_general_path(text: str) -> None:
    assert in_list.read_whole(text) is None


def _summary(rng: np.random.Generator, complete: bool) -> tuple[ColumnSummary, list[int]]:
    values = rng.integers(0, 400, rng.integers(1, 3000))
    uniq, counts = np.unique(values, return_counts=True)
    listed = len(uniq) if complete else int(rng.integers(0, len(uniq) + 1))
    order = np.argsort(-counts, kind="stable")[:listed]
    chosen = np.sort(uniq[order])
    dtype = pa.int64()
    key = [keys.encode_value(int(v), dtype) for v in chosen]
    counted = dict(zip(uniq.tolist(), counts.tolist(), strict=True))
    freq = Frequencies(tuple(key), np.array([counted[v] for v in chosen.tolist()]),
                           complete, None if complete else int(counts.min()))
    bins = int(rng.integers(1, 20))
    low, high = int(values.min()), int(values.max())
    width = max(1, -(-(high - low + 1) // bins))
    hist = Histogram(low, width, np.bincount((values - low) // width, minlength=bins))
    nulls = int(rng.integers(0, 50))
    s = ColumnSummary(dtype, len(values) + nulls, nulls, 0, len(uniq),
                          keys.encode_value(low, dtype), keys.encode_value(high, dtype),
                          freq, hist if rng.random() < 0.8 else None)
    return s, values.tolist()


def test_many_values_at_once_equal_range_by_range() -> None:
    rng = np.random.default_rng(5)
    for _ in range(300):
        s, _ = _summary(rng, bool(rng.random() < 0.4))
        chosen = rng.integers(-50, 450, int(rng.integers(64, 400))).tolist()
        ranges = kr.points([keys.encode_value(int(v), pa.int64()) for v in chosen])
        assert sel._points_sum(s, kr.point_keys(ranges)) == sel._sum(
            [sel._range(s, r) for r in ranges])
        assert sel.estimate_keys(s, kr.complement(ranges)) == Estimate.of(
            *_flipped(s, ranges))
        count = int(rng.integers(1, 12))
        parts = [_summary(rng, False)[0] for _ in range(count)]
        v = sv.Vectors(
            pa.int64(), np.array([p.row_count for p in parts]),
            np.array([p.null_count for p in parts]), np.zeros(count, dtype=np.int64),
            np.array([float(p.distinct_count) for p in parts]),
            pa.array([p.min_key for p in parts], pa.binary()),
            pa.array([p.max_key for p in parts], pa.binary()),
        )
        fast = sv._points_sum(v, kr.point_keys(ranges), count)
        slow = sv._sum([sv._range(v, r, v.fractions()) for r in ranges], count)
        for a, b in ((fast.rows, slow.rows), (fast.lower, slow.lower), (fast.upper, slow.upper)):
            assert a.tobytes() == b.tobytes()


def _flipped(s: ColumnSummary, ranges: kr.KeySet) -> tuple:
    kept = sel._sum([sel._range(s, r) for r in ranges])
    return (s.non_null - kept.rows, max(0, s.non_null - kept.upper), s.non_null - kept.lower,
            kept.method)


def test_the_values_limit_names_its_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKESTATS_MAX_IN_VALUES", "1000")
    text = "i IN (" + ", ".join(str(k) for k in range(600)) + ") AND s NOT IN (" + ", ".join(
        f"'{k}'" for k in range(600)) + ")"
    with pytest.raises(PredicateTooLargeError) as caught:
        parse(text, COLUMNS)
    assert "hold 1,200 values (the list on 's' reached it), over the limit of 1,000" in str(
        caught.value)
    assert "LAKESTATS_MAX_IN_VALUES" in str(caught.value)
    assert "max_in_values" in str(caught.value)


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pa.Table]:
    root = tmp_path_factory.mktemp("in_lists")
    rng = np.random.default_rng(11)
    parts = []
    for shift in range(3):
        n = 20_000
        k = rng.integers(0, 30_000, n) + shift * 5_000
        nulls = rng.random(n) < 0.05
        part = pa.table({
            "s": pa.array([f"key-{v}" for v in k.tolist()], mask=nulls),
            "i": pa.array(k * 3, pa.int64()),
            "d": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in k.tolist()],
                          pa.decimal128(12, 2)),
            "day": pa.array([dt.date(1990, 1, 1) + dt.timedelta(days=int(v)) for v in k],
                            pa.date32()),
        })
        (root / "data" / f"p={shift}").mkdir(parents=True)
        pq.write_table(part, root / "data" / f"p={shift}" / "0.parquet")
        parts.append(part.append_column("p", pa.array([shift] * n, pa.int64())))
    for name, listed in (("complete", 100_000), ("truncated", 500)):
        ls.open_table(str(root / "data"), stats_root=str(root / name)).analyze(
            max_frequencies=listed, bins=32, spark=spark)
    return root / "complete", root / "truncated", pa.concat_tables(parts)


def _literal(column: str, v: int) -> str:
    if column == "s":
        return f"'key-{v}'"
    if column == "i":
        return str(v * 3)
    if column == "d":
        return str(decimal.Decimal(v).scaleb(-2))
    return f"DATE '{dt.date(1990, 1, 1) + dt.timedelta(days=v)}'"


@pytest.mark.timeout(600)
def test_long_in_lists_against_duckdb(table) -> None:
    complete, truncated, data = table
    con = duckdb.connect()
    con.register("t", data)
    rng = np.random.default_rng(2)
    for column in ("s", "i", "d", "day"):
        chosen = rng.choice(45_000, 20_000, replace=False).tolist()  # a third absent
        items = ", ".join(_literal(column, v) for v in chosen)
        for op in ("IN", "NOT IN"):
            where = f"{column} {op} ({items})"
            extra = rng.random() < 0.5
            if extra:
                where += " AND p <> 1"
            [(truth,)] = con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchall()
            for root in (complete, truncated):
                got = ls.open_table(str(root.parent / "data"), stats_root=str(root)).estimate(
                    where)
                assert 0 <= got.lower <= truth <= got.upper, (column, op, root.name, got)
                if root == complete:
                    assert got.exact and got.row_count == truth, (column, op, got)


@pytest.mark.timeout(600)
def test_long_in_list_over_http(table) -> None:
    from fastapi.testclient import TestClient

    from lakestats.service.app import create_app
    from lakestats.service.config import TableConfig

    complete, _, data = table
    where = "i IN (" + ", ".join(str(v * 3) for v in range(0, 100_000, 2)) + ")"
    config = TableConfig(name="t", table=str(complete.parent / "data"),
                         stats_root=str(complete))
    with TestClient(create_app([config])) as http:
        response = http.post("/api/tables/t/estimate", json={"where": [where]})
        assert response.status_code == 200, response.text[:500]
        [got] = response.json()["estimates"]
    con = duckdb.connect()
    con.register("t", data)
    [(truth,)] = con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchall()
    assert got["exact"] and got["row_count"] == truth
