"""Every estimate's bounds hold: 10,000 generated predicates over a table of every type
lakestats stores, values at their extremes (decimals of 38 digits, dates and timestamps at
the ends of their range, floats with ±inf, NaN and -0.0, empty and long strings), in
partitions of every shape (skewed, all NULL, one value, all distinct), against DuckDB's
counts of the same rows. A bound that misses DuckDB's count is a wrong statistic."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls

pytestmark = pytest.mark.spark

CASES = 10_000
decimal.getcontext().prec = 60
D = decimal.Decimal
BIG38 = D("9999999999999999999999999999.9999999999")
UTC = dt.UTC


def _values(rng: np.random.Generator, n: int, shape: str) -> dict[str, list]:
    """One partition's rows: ``shape`` is skewed, nulls, single, distinct or mixed."""

    def pick(pool: list, weights: np.ndarray | None = None) -> list:
        if shape == "nulls":
            return [None] * n
        if shape == "single":
            return [pool[0]] * n
        if shape == "distinct":
            return [pool[i % len(pool)] for i in range(n)]
        index = rng.choice(len(pool), n, p=weights)
        out = [pool[i] for i in index]
        for i in rng.choice(n, n // 10, replace=False):
            out[i] = None
        return out

    def zipf(k: int) -> np.ndarray:
        w = 1.0 / np.arange(1, k + 1) ** (1.3 if shape == "skewed" else 0.2)
        return w / w.sum()

    ints = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0, -1, 1,
            *map(int, rng.integers(-10**12, 10**12, 60))]
    floats = [float("inf"), float("-inf"), -0.0, 0.0, 1e308, -1e308, 5e-324,
              *map(float, rng.normal(0, 1000, 60))]
    decimals = [BIG38, -BIG38, D(0), D("0.0000000001"), D("-0.0000000001"), D(1),
                *(D(int(v)).scaleb(-10) for v in rng.integers(-10**15, 10**15, 60))]
    small_decimals = [D(int(v)).scaleb(-2) for v in rng.integers(-10**7, 10**7, 66)]
    days = [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1),
            *(dt.date(2000, 1, 1) + dt.timedelta(days=int(v))
              for v in rng.integers(-9000, 9000, 63))]
    stamps = [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
              dt.datetime(1970, 1, 1),
              *(dt.datetime(2020, 1, 1) + dt.timedelta(seconds=int(v))
                for v in rng.integers(-10**9, 10**9, 63))]
    strings = ["", "a", "ab", "b", "z" * 300, "ünïcödé", "%", "_x", "it's",
               *(f"v{v:05d}" for v in rng.integers(0, 200, 57))]
    return {
        "i64": pick(ints, zipf(len(ints))),
        "i16": pick([int(v) for v in rng.integers(-32768, 32767, 66)], zipf(66)),
        "f64": pick(floats, zipf(len(floats))),
        "f32": pick([float(np.float32(v)) for v in rng.normal(0, 50, 66)], zipf(66)),
        "dec38": pick(decimals, zipf(len(decimals))),
        "dec9": pick(small_decimals, zipf(66)),
        "d": pick(days, zipf(len(days))),
        "ts": pick(stamps, zipf(len(stamps))),
        "tsz": pick([s.replace(tzinfo=UTC) for s in stamps[2:]], zipf(len(stamps) - 2)),
        "s": pick(strings, zipf(len(strings))),
        "flag": pick([True, False], np.array([0.8, 0.2]) if shape == "skewed" else None),
    }


SCHEMA = pa.schema([
    ("i64", pa.int64()), ("i16", pa.int16()), ("f64", pa.float64()), ("f32", pa.float32()),
    ("dec38", pa.decimal128(38, 10)), ("dec9", pa.decimal128(9, 2)), ("d", pa.date32()),
    ("ts", pa.timestamp("us")), ("tsz", pa.timestamp("us", tz="UTC")), ("s", pa.string()),
    ("flag", pa.bool_()),
])  # fmt: skip
SHAPES = ["skewed", "mixed", "nulls", "single", "distinct", "skewed", "mixed"]


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory) -> tuple[Path, dict[str, list]]:
    root = tmp_path_factory.mktemp("bounds") / "t"
    rng = np.random.default_rng(2026)
    seen: dict[str, list] = {name: [] for name in SCHEMA.names}
    for p, shape in enumerate(SHAPES):
        rows = _values(rng, int(rng.integers(50, 3000)), shape)
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(pa.table(rows, schema=SCHEMA), root / f"p={p}" / "part-0.parquet")
        for name, values in rows.items():
            seen[name].extend(v for v in values if v is not None)
    ls.open_table(str(root)).analyze(spark=spark, bins=100, max_frequencies=20)
    return root, seen


def _literal(column: str, value: object) -> str | None:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return None if value != value or value in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, int | D):
        return str(value)
    if isinstance(value, dt.datetime):
        text = value.replace(tzinfo=None).isoformat(sep=" ")
        return f"'{text}+00:00'" if value.tzinfo else f"'{text}'"
    if isinstance(value, dt.date):
        return f"'{value.isoformat()}'"
    return "'" + str(value).replace("'", "''") + "'"


def _between(rng: np.random.Generator, values: list) -> object:
    """A value of the column, or one between / beside two of them."""
    a = values[int(rng.integers(len(values)))]
    if rng.random() < 0.6 or isinstance(a, bool | str):
        return a
    b = values[int(rng.integers(len(values)))]
    if isinstance(a, float):
        return (a + b) / 2 if all(abs(x) < 1e300 for x in (a, b)) else a
    if isinstance(a, D):  # at the column's scale (a wider literal is refused, documented)
        middle = (a + b) / 2 if abs(a) < 10**27 and abs(b) < 10**27 else a
        return middle.quantize(min(a, b, key=lambda x: x.as_tuple().exponent))
    if isinstance(a, int):
        return (a + b) // 2
    if isinstance(a, dt.datetime):
        inside = 1 < a.year < 9999 and 1 < b.year < 9999
        return a + (b - a) / 2 if inside else a
    return a + (b - a) / 2 if a.year > 1 and b.year > 1 else a


def _condition(rng: np.random.Generator, seen: dict[str, list]) -> str:
    column = str(rng.choice(SCHEMA.names))
    values = seen[column]
    kind = rng.random()
    if kind < 0.06:
        return f"{column} IS {'NOT ' if rng.random() < 0.5 else ''}NULL"
    if column == "flag":
        return f"{column} = {_literal(column, bool(rng.random() < 0.5))}"
    if kind < 0.2:
        items = {_literal(column, _between(rng, values)) for _ in range(int(rng.integers(1, 6)))}
        items.discard(None)
        if not items:
            return f"{column} IS NULL"
        negate = "NOT " if rng.random() < 0.3 else ""
        return f"{column} {negate}IN ({', '.join(sorted(items))})"
    if kind < 0.3:
        a, b = (_literal(column, _between(rng, values)) for _ in range(2))
        if a is None or b is None:
            return f"{column} IS NOT NULL"
        return f"{column} BETWEEN {a} AND {b}"
    if column == "s" and kind < 0.38:
        start = str(values[int(rng.integers(len(values)))])[: int(rng.integers(0, 3))]
        return f"s LIKE '{start.replace(chr(39), chr(39) * 2)}%'"
    op = str(rng.choice(["=", "<>", "<", "<=", ">", ">="]))
    literal = _literal(column, _between(rng, values))
    return f"{column} {op} {literal}" if literal is not None else f"{column} IS NULL"


def _predicate(rng: np.random.Generator, seen: dict[str, list]) -> str:
    parts = [_condition(rng, seen) for _ in range(int(rng.choice([1, 1, 2, 3])))]
    if len(parts) == 1:
        text = parts[0]
    else:
        joiner = " AND " if rng.random() < 0.6 else " OR "
        text = joiner.join(f"({p})" for p in parts)
    return f"NOT ({text})" if rng.random() < 0.1 else text


def test_every_bound_holds_against_duckdb(table) -> None:
    root, seen = table
    rng = np.random.default_rng(11)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(
        f"CREATE VIEW t AS SELECT * FROM read_parquet('{root}/*/*.parquet', hive_partitioning=0)"
    )
    handle = ls.open_table(str(root))
    checked, missed = 0, []
    for case in range(CASES):
        where = _predicate(rng, seen)
        [(true,)] = con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchall()
        # the resident estimator over the partition index; every tenth also over the
        # partitions' own files, and over the table level as one partition
        ways = {"index": handle.estimate(where)}
        if case % 10 == 0:
            ways["files"] = handle.estimate(where, source="files")
            ways["table level"] = handle.estimate(where, table_level=True)
        for way, answer in ways.items():
            checked += 1
            if not answer.lower <= true <= answer.upper:
                missed.append((way, where, answer.lower, true, answer.upper))
    assert checked == CASES + 2 * (CASES // 10)
    assert not missed, f"{len(missed)} of {checked} bounds missed DuckDB's count: {missed[:10]}"
