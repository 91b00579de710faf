"""Independent reference statistics computed with DuckDB, and the comparisons."""

from __future__ import annotations

import bisect
import decimal
import json
import math
from collections.abc import Callable

import duckdb
import pyarrow as pa
import pytest

from lakestats import cli
from lakestats.stats.keys import to_json
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.leaves import leaves_of
from lakestats.stats.percentiles import PERCENTILES

ORDERED = (Kind.INTEGER, Kind.FLOATING, Kind.DECIMAL, Kind.TEMPORAL)


def _sql_path(path: tuple[str, ...]) -> str:
    head = '"' + path[0].replace('"', '""') + '"'
    for part in path[1:]:
        head += "['" + part.replace("'", "''") + "']"
    return head


def _close(a: object, b: object, rel: float = 1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == pytest.approx(b, rel=rel, abs=1e-9)
    return a == b


def check_partition(
    table: pa.Table,
    rows: list[dict],
    frequencies: Callable[[str], list],
    histogram: Callable[[str], list],
    max_frequencies: int = 10_000,
) -> None:
    """Compare lakestats' statistics of ``table`` with DuckDB's, column by column."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("t", table)
    by_name = {r["column"]: r for r in rows}
    leaves = leaves_of(table.schema)
    assert [r["column"] for r in rows] == [leaf.name for leaf in leaves]
    for leaf in leaves:
        row = by_name[leaf.name]
        col = _sql_path(leaf.path)
        kind = kind_of(leaf.type)
        where = f"{col} IS NOT NULL"
        if kind == Kind.FLOATING:
            where += f" AND NOT isnan({col})"
        total, non_null = con.execute(f"SELECT count(*), count({col}) FROM t").fetchone()
        assert row["row_count"] == total, leaf.name
        assert row["null_count"] == total - non_null, leaf.name
        if kind in (Kind.NESTED, Kind.NULL, Kind.OTHER):
            if kind == Kind.NESTED and non_null:
                fn = "cardinality" if "map" in str(leaf.type) else "len"
                lo, avg, hi = con.execute(
                    f"SELECT min({fn}({col})), avg({fn}({col})), max({fn}({col})) FROM t"
                ).fetchone()
                assert (row["min_length"], row["max_length"]) == (lo, hi), leaf.name
                assert _close(row["avg_length"], avg), leaf.name
            continue
        distinct = con.execute(f"SELECT count(DISTINCT {col}) FROM t").fetchone()[0]
        assert row["distinct_count"] == distinct, leaf.name
        assert row["all_distinct"] == (distinct == non_null and non_null > 0), leaf.name
        if kind == Kind.FLOATING:
            nans = con.execute(f"SELECT count(*) FILTER (WHERE isnan({col})) FROM t").fetchone()[0]
            assert row["nan_count"] == nans, leaf.name
        lo, hi, counted = con.execute(
            f"SELECT min({col}), max({col}), count(*) FROM t WHERE {where}"
        ).fetchone()
        if counted == 0:
            assert row["min"] is None and row["max"] is None, leaf.name
            continue
        assert _close(row["min"], lo) and _close(row["max"], hi), (leaf.name, row["min"], lo)
        if kind in ORDERED:
            qs = ", ".join(str(p / 100) for p in PERCENTILES)
            expected = con.execute(
                f"SELECT quantile_disc({col}, [{qs}]) FROM t WHERE {where}"
            ).fetchone()[0]
            got = [row[f"p{p:02d}"] for p in PERCENTILES]
            assert all(_close(g, e) for g, e in zip(got, expected, strict=True)), (
                leaf.name,
                got,
                expected,
            )
        if kind in (Kind.INTEGER, Kind.FLOATING, Kind.DECIMAL):
            s, mean, var, sd = con.execute(
                f"SELECT sum({col}::DOUBLE), avg({col}::DOUBLE), var_samp({col}::DOUBLE), "
                f"stddev_samp({col}::DOUBLE) FROM t WHERE {where}"
            ).fetchone()
            for name, value in (("sum", s), ("mean", mean), ("variance", var), ("stddev", sd)):
                assert _close(row[name], value, rel=1e-7), (leaf.name, name, row[name], value)
        if kind in (Kind.STRING, Kind.BINARY):
            fn = "length" if kind == Kind.STRING else "octet_length"
            lo_len, avg_len, hi_len = con.execute(
                f"SELECT min({fn}({col})), avg({fn}({col})), max({fn}({col})) FROM t WHERE {where}"
            ).fetchone()
            assert (row["min_length"], row["max_length"]) == (lo_len, hi_len), leaf.name
            assert _close(row["avg_length"], avg_len), leaf.name
        if kind == Kind.BOOLEAN:
            trues = con.execute(f"SELECT count(*) FILTER (WHERE {col}) FROM t").fetchone()[0]
            assert row["true_count"] == trues, leaf.name
        _check_frequencies(con, leaf.name, col, row, frequencies, max_frequencies, non_null)
        if kind in ORDERED:
            _check_histogram(con, leaf.name, col, kind, where, histogram(leaf.name), counted)


def _check_frequencies(con, name, col, row, frequencies, limit, non_null) -> None:
    stored = frequencies(name)
    expected = con.execute(
        f"SELECT {col}, count(*) AS n FROM t WHERE {col} IS NOT NULL GROUP BY ALL ORDER BY n DESC"
    ).fetchall()
    if row["all_distinct"]:
        assert stored == [] and row["frequencies_count"] == 0, name
        return
    assert row["frequencies_count"] == len(stored) == min(len(expected), limit), name
    assert row["frequencies_truncated"] == (len(expected) > limit), name
    assert row["frequencies_omitted"] == max(0, len(expected) - limit), name
    counts = [f for _, f in stored]
    assert counts == sorted(counts, reverse=True), name
    assert counts == [n for _, n in expected[: len(counts)]], name
    truth = {_norm(v): n for v, n in expected}
    for value, count in stored:
        assert truth[_norm(value)] == count, (name, value)
    assert sum(counts) <= non_null


def _norm(value: object) -> object:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return value + 0.0
    if isinstance(value, decimal.Decimal):
        return value.normalize()
    return value


def _check_histogram(con, name, col, kind, where, bins, counted) -> None:
    """Each bin holds exactly the values in [lower, upper) (the last also its upper edge;
    for floats the first and last bins also hold -inf and +inf)."""
    assert bins, name
    assert sum(b["count"] for b in bins) == counted, name
    lowers = [b["lower"] for b in bins]
    assert lowers == sorted(lowers), name
    values = sorted(v for (v,) in con.execute(f"SELECT {col} FROM t WHERE {where}").fetchall())
    for i, b in enumerate(bins):
        first, last = i == 0, i == len(bins) - 1
        start = 0 if (first and kind == Kind.FLOATING) else bisect.bisect_left(values, b["lower"])
        stop = len(values) if last else bisect.bisect_left(values, b["upper"])
        assert b["count"] == stop - start, (name, i, b, stop - start)


def analyze_and_show(capsys: pytest.CaptureFixture, path: str, root: str) -> dict:
    """``lakestats analyze`` then ``lakestats show --json`` (table level) of ``path``."""
    assert cli.main(["analyze", path, "--stats-root", root]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert cli.main(["show", path, "--stats-root", root, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def show_json(capsys: pytest.CaptureFixture, args: list[str]) -> dict:
    """Run a ``lakestats`` command with ``--json`` and return what it printed."""
    assert cli.main([*args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def assert_shown_matches(shown: dict, expected: pa.Table) -> None:
    """Row count, and per column null count, min and max, of ``lakestats show --json``
    output equal DuckDB's over ``expected`` (what the format's own reader returned)."""
    assert shown["row_count"] == expected.num_rows
    con = duckdb.connect()
    con.register("t", expected)
    rows = {c["name"]: c for c in shown["columns"]}
    for leaf in leaves_of(expected.schema):
        col = _sql_path(leaf.path)
        total, non_null, lo, hi = con.execute(
            f"SELECT count(*), count({col}), min({col}), max({col}) FROM t"
        ).fetchone()
        row = rows[leaf.name]
        assert (row["row_count"], row["null_count"]) == (total, total - non_null), leaf.name
        assert (row["min"], row["max"]) == (to_json(lo), to_json(hi)), leaf.name
