"""The predicate parser and normalizer, and the estimators' bounds on random data.

No Spark: partitions are summarized in memory the way the writer summarizes them (its
histogram module, top-k frequencies by count then value), random predicates are estimated,
and DuckDB counts the same rows with the predicate's normalized text, so the bounds, the
exactness claims and the normal form's meaning are all checked against an independent
engine.
"""

from __future__ import annotations

import datetime as dt
import decimal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakestats.query import predicate as P
from lakestats.query.estimate import estimate
from lakestats.query.partition_estimate import can_match
from lakestats.query.sources import ListSource
from lakestats.stats import histogram as hist
from lakestats.stats import key_ranges as kr
from lakestats.stats import keys
from lakestats.stats import selectivity as sel
from lakestats.stats.column_summary import NAN_KEY, ColumnSummary, Frequencies, Histogram
from lakestats.stats.kinds import Kind, kind_of

TYPES = {
    "i": pa.int64(),
    "f": pa.float64(),
    "s": pa.string(),
    "d": pa.decimal128(10, 2),
    "day": pa.date32(),
    "ts": pa.timestamp("us"),
    "tsz": pa.timestamp("us", tz="UTC"),
    "b": pa.bool_(),
}


def norm(text: str) -> str:
    return P.normalize(P.parse(text, TYPES))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("i > 1 AND s = 'x'", "s = 'x' AND 1 < i"),
        ("i BETWEEN 1 AND 5", "i <= 5 AND i >= 1"),
        ("NOT (i < 5)", "i >= 5"),
        ("NOT (i < 5 OR s IS NULL)", "s IS NOT NULL AND i >= 5"),
        ("i IN (3, 1, 2, 1)", "i IN (1, 2, 3)"),
        ("NOT i IN (1, 2)", "i NOT IN (2, 1)"),
        ("d = 1.5", "d = 1.50"),
        ("day = '2020-01-02'", "day = DATE '2020-01-02'"),
        ("tsz = TIMESTAMP '2020-01-01 02:00:00+02:00'", "tsz = '2020-01-01 00:00:00'"),
        ("f = 'NaN'", "f = 'nan'"),
        ("(i = 1 OR i = 2) AND (s = 'a')", "s = 'a' AND (i = 2 OR i = 1)"),
        ("s LIKE 'ab'", "s = 'ab'"),
        ("NOT s LIKE 'ab%'", "s NOT LIKE 'ab%'"),
        ("NOT (i BETWEEN 1 AND 5)", "i < 1 OR i > 5"),
        ("b = TRUE", "b = true"),
    ],
)
def test_equivalent_spellings_normalize_alike(a: str, b: str) -> None:
    assert norm(a) == norm(b)


def test_tree_shapes() -> None:
    pred = P.parse("NOT (i < 5 AND s LIKE 'ab%') OR i IS NULL", TYPES)
    assert isinstance(pred, P.Or)  # NOT (a AND b) OR c is one flat OR of three
    left, right, isnull = pred.children
    assert isnull == P.IsNull("i")
    assert isinstance(left, P.Compare) and left.op == ">=" and left.value.value == 5
    assert right == P.PrefixLike("s", "ab", negated=True)
    assert P.columns_of(pred) == ["i", "s"]
    like = P.parse("s LIKE 'a_c%'", TYPES)
    assert isinstance(like, P.Like)
    lit = P.parse("d = 1.5", TYPES).value
    assert lit.value == decimal.Decimal("1.50")
    assert lit.key == keys.encode(pa.array([decimal.Decimal("1.50")], TYPES["d"]))[0].as_py()
    stamp = P.parse("tsz >= TIMESTAMP '2020-01-01 10:00:00+02:00'", TYPES).value
    assert stamp.value == dt.datetime(2020, 1, 1, 8, tzinfo=dt.UTC)
    assert P.parse("i IN (1, NULL)", TYPES).has_null
    assert P.push_not(P.Not(P.Compare("i", "<", lit))) == P.Compare("i", ">=", lit)


# -- random data, summarized as the writer does -----------------------------------------


class MemoryPartition:
    """A partition summarized in memory like lakestats' writer: top-``k`` frequencies by
    (count desc, value), the writer's equi-width histograms."""

    def __init__(self, name: str, table: pa.Table, k: int, bins: int) -> None:
        self.name, self.values, self.row_count = name, {}, table.num_rows
        self.table, self.k, self.bins = table, k, bins

    def summary(self, column: str) -> ColumnSummary:
        col = self.table.column(column).combine_chunks()
        dtype = col.type
        kind = kind_of(dtype)
        valid = col.filter(pc.is_valid(col))
        encoded = keys.encode(valid) if len(valid) else pa.array([], pa.binary())
        key_list = encoded.to_pylist()
        uniq, counts = np.unique(np.array(key_list, dtype=object), return_counts=True)
        uniq = [bytes(u) for u in uniq]
        nan_count = 0
        if kind == Kind.FLOATING:
            nan_count = int(pc.sum(pc.is_nan(valid)).as_py() or 0)
        ordered = [u for u in uniq if u != NAN_KEY]
        order = sorted(range(len(uniq)), key=lambda i: (-counts[i], uniq[i]))
        all_distinct = len(uniq) == len(valid) and len(valid) > 0
        if all_distinct:
            freq = Frequencies((), np.zeros(0, np.int64), False, 1)
        elif len(uniq) <= self.k:
            freq = Frequencies(tuple(uniq), counts.astype(np.int64), True)
        else:
            top = sorted(order[: self.k], key=lambda i: uniq[i])
            freq = Frequencies(
                tuple(uniq[i] for i in top),
                counts[top].astype(np.int64),
                False,
                int(counts[order[self.k - 1]]),
            )
        histogram = None
        values = keys.decode_array(pa.array(uniq, pa.binary()), dtype) if uniq else None
        if kind == Kind.FLOATING and values is not None:
            nums = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64)
            keep = ~np.isnan(nums)
            built = hist.float_histogram(nums[keep], counts[keep], self.bins)
            if built is not None:
                histogram = Histogram(built.lower, built.width, built.counts)
        elif kind in (Kind.INTEGER, Kind.TEMPORAL, Kind.DECIMAL) and values is not None:
            ints = (
                keys.unscaled_int64(values) if kind == Kind.DECIMAL else keys.integers(values)
            )
            built = hist.integer_histogram(ints, counts, self.bins)
            histogram = Histogram(built.lower, built.width, built.counts)
        return ColumnSummary(
            dtype,
            self.row_count,
            col.null_count,
            nan_count,
            len(uniq),
            ordered[0] if ordered else None,
            ordered[-1] if ordered else None,
            freq,
            histogram,
        )


def _table(rng: np.random.Generator, n: int) -> pa.Table:
    floats = np.round(rng.normal(0, 20, n), 1)
    floats[rng.random(n) < 0.05] = np.nan
    floats[rng.random(n) < 0.02] = np.inf
    words = [f"w{int(z) % 60:02d}" for z in rng.zipf(1.5, n)]
    return pa.table(
        {
            "i": pa.array(rng.zipf(1.3, n) % 300, mask=rng.random(n) < 0.1),
            "f": pa.array(floats, mask=rng.random(n) < 0.1),
            "s": pa.array(words, mask=pa.array(rng.random(n) < 0.1)),
            "d": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(0, 2000, n)],
                          TYPES["d"]),
            "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=int(v))
                             for v in rng.integers(0, 400, n)], pa.date32()),
            "b": pa.array(rng.random(n) < 0.2, mask=rng.random(n) < 0.1),
        }
    )


def _literal(rng: np.random.Generator, column: str) -> str:
    if column == "i":
        return str(int(rng.choice([0, 1, 2, 3, 7, 50, 150, 299, 400])))
    if column == "f":
        return str(rng.choice(["-10.5", "0", "3.3", "25", "'NaN'", "'Infinity'", "-100"]))
    if column == "s":
        return f"'w{int(rng.integers(0, 70)):02d}'"
    if column == "d":
        return f"{rng.integers(-10, 2100) / 100:.2f}"
    if column == "day":
        return f"DATE '{dt.date(2020, 1, 1) + dt.timedelta(days=int(rng.integers(-5, 410)))}'"
    return str(rng.choice(["TRUE", "FALSE"]))


def _leaf(rng: np.random.Generator) -> str:
    column = str(rng.choice(["i", "f", "s", "d", "day", "b"]))
    shape = int(rng.integers(0, 8))
    a, b = _literal(rng, column), _literal(rng, column)
    if shape == 0:
        return f"{column} {rng.choice(['=', '<>', '<', '<=', '>', '>='])} {a}"
    if shape == 1:
        return f"{column} BETWEEN {a} AND {b}"
    if shape == 2:
        items = ", ".join(_literal(rng, column) for _ in range(int(rng.integers(1, 5))))
        return f"{column} {'NOT ' if rng.random() < 0.3 else ''}IN ({items})"
    if shape == 3:
        return f"{column} IS {'NOT ' if rng.random() < 0.5 else ''}NULL"
    if shape == 4 and column == "s":
        return f"s {'NOT ' if rng.random() < 0.3 else ''}LIKE 'w{int(rng.integers(0, 7))}%'"
    if shape == 5 and column == "s":
        return f"s LIKE '%{int(rng.integers(0, 10))}'"
    return f"{column} {rng.choice(['<', '>='])} {a}"


def _predicate(rng: np.random.Generator, depth: int = 0) -> str:
    r = rng.random()
    if depth >= 2 or r < 0.4:
        return _leaf(rng)
    left, right = _predicate(rng, depth + 1), _predicate(rng, depth + 1)
    if r < 0.7:
        return f"({left}) AND ({right})"
    if r < 0.9:
        return f"({left}) OR ({right})"
    return f"NOT ({left})"


def _estimate(pred: P.Predicate, parts: list) -> dict:
    """The estimator's answer over a plain list of partitions, as JSON."""
    return estimate(pred, ListSource(parts), None, 1, None).to_json()


@pytest.mark.parametrize("seed", range(4))
def test_random_predicates_bounds_hold(seed: int) -> None:
    rng = np.random.default_rng(seed)
    parts = [
        MemoryPartition(f"p{j}", _table(rng, int(n)), k=int(rng.integers(3, 40)), bins=int(b))
        for j, (n, b) in enumerate([(800, 8), (300, 32), (50, 4)])
    ]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for p in parts:
        con.register(p.name, p.table)
    exact_seen = 0
    for _ in range(120):
        text = _predicate(rng)
        pred = P.parse(text, TYPES)
        result = _estimate(pred, parts)
        normalized = P.normalize(pred)
        total = 0
        listed = {p["name"]: p for p in result["partitions"]}
        for p in parts:
            truth = con.execute(f"SELECT count(*) FROM {p.name} WHERE {text}").fetchone()[0]
            again = con.execute(f"SELECT count(*) FROM {p.name} WHERE {normalized}").fetchone()[0]
            assert truth == again, (text, normalized)
            total += truth
            if truth:
                assert p.name in listed, (text, p.name, truth)
                e = listed[p.name]
                assert e["lower"] <= truth <= e["upper"], (text, p.name, truth, e)
                if e["exact"]:
                    assert e["row_count"] == truth, (text, p.name, truth, e)
            assert can_match(pred, p) or truth == 0
        assert result["lower"] <= total <= result["upper"], (text, total, result)
        if result["exact"]:
            exact_seen += 1
            assert result["row_count"] == total
    assert exact_seen > 10


def test_truncated_frequencies_taken_out_of_the_histogram() -> None:
    """A value listed among the frequent ones is exact; the histogram's bin for an unlisted
    value is counted without the listed values (PostgreSQL's MCV + histogram)."""
    values = np.array([5] * 100 + [6] * 3 + [7] * 2 + list(range(100, 200)), dtype=np.int64)
    part = MemoryPartition("p", pa.table({"i": values}), k=1, bins=4)
    s = part.summary("i")
    assert s.frequencies.keys == (keys.encode(pa.array([5]))[0].as_py(),)
    five = sel.estimate_keys(s, kr.points([keys.encode(pa.array([5]))[0].as_py()]))
    assert five.exact and five.rows == 100
    six = sel.estimate_keys(s, kr.points([keys.encode(pa.array([6]))[0].as_py()]))
    # bin 0 is [5, 54): 105 rows, 5 once the listed 5 is taken out
    assert six.lower == 0 and six.upper == 5 and 1 <= six.rows <= 3
    def up_to(value: int) -> kr.KeySet:
        return kr.between(None, True, keys.encode(pa.array([value]))[0].as_py(), True)

    whole_bin = sel.estimate_keys(s, up_to(53))
    assert whole_bin.exact and whole_bin.rows == 105
    edge = sel.estimate_keys(s, up_to(50))
    assert (edge.lower, edge.upper, edge.exact) == (100, 105, False)


# -- planner-shaped predicates, limits, huge literals -------------


def _alternating(depth: int) -> str:
    """``depth`` nested groups alternating AND / OR, none redundant."""
    text = "i = 7"
    for level in range(depth):
        glue = "AND" if level % 2 else "OR"
        leaf = f"i <> {level}" if glue == "AND" else f"i = {level}"
        text = f"({leaf} {glue} {text})"
    return text


PLANNER_SHAPES = {
    "400 disjuncts": " OR ".join(f"i = {k}" for k in range(400)),
    "400 disjuncts, two columns": " OR ".join(
        f"i = {k}" if k % 2 else f"d = {k / 100:.2f}" for k in range(400)
    ),
    "50 nested parentheses": "(" * 50 + "i = 3 OR s = 'w01'" + ")" * 50,
    "50 nested groups, alternating": _alternating(50),
    "100 nested groups (the limit)": _alternating(100),
    "500 NOTs": "NOT " * 500 + "(i < 5)",
    "501 NOTs": "NOT " * 501 + "(i < 5)",
    "NOT chains in groups": " AND ".join(f"{'NOT ' * (k % 7)}(i <> {k})" for k in range(60)),
    "BETWEEN inside a chain": " OR ".join(
        f"i BETWEEN {k} AND {k + 2}" for k in range(0, 300, 5)
    ),
}


@pytest.mark.parametrize("name", list(PLANNER_SHAPES))
def test_planner_shaped_predicates_match_duckdb(name: str) -> None:
    """Long OR lists, deep nesting and long NOT chains parse without RecursionError, and
    every partition's bounds hold DuckDB's count of the original text and of the
    normalized text."""
    text = PLANNER_SHAPES[name]
    rng = np.random.default_rng(29)
    parts = [MemoryPartition(f"p{j}", _table(rng, 600), k=20, bins=16) for j in range(2)]
    con = duckdb.connect()
    for p in parts:
        con.register(p.name, p.table)
    pred = P.parse(text, TYPES)
    result = _estimate(pred, parts)
    normalized = P.normalize(pred)
    total = 0
    for p in parts:
        truth = con.execute(f"SELECT count(*) FROM {p.name} WHERE {text}").fetchone()[0]
        again = con.execute(f"SELECT count(*) FROM {p.name} WHERE {normalized}").fetchone()[0]
        assert truth == again
        total += truth
    assert result["lower"] <= total <= result["upper"], (total, result)
    if result["exact"]:
        assert result["row_count"] == total


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(" * 101 + "i = 1" + ")" * 101, "nests parentheses 101 deep, over the limit of 100"),
        ("i = 1 OR " * 7300 + "i = 2", "over the limit of 65,536"),
        ("i IN (" + ", ".join("1" for _ in range(1_000_001)) + ")",
         "over the limit of 1,000,000: raise the setting max_in_values"),
        ("i = " + "(" * 90 + "1" + ")" * 90, "nested too deeply to read"),
        ("i IN ()", "IN () lists no value"),
        ("i NOT IN ()", "IN () lists no value"),
        ("(i = 1", "'(' never closed"),
        ("i = 1)", "closes no '('"),
        ("i = 1 AND", "a condition is missing at its end"),
        ("i = 1 OR OR i = 2", "a condition is missing before 'OR'"),
        ("() OR i = 1", "empty parentheses"),
        ("NOT", "a condition is missing"),
    ],
)
def test_beyond_the_limits_one_line(text: str, message: str) -> None:
    """Over a documented limit (docs/limits.md), or malformed, a predicate is refused with
    one line, an ``InvalidPredicateError`` (a 400 over HTTP), never a RecursionError."""
    from lakestats.errors import InvalidPredicateError

    with pytest.raises(InvalidPredicateError) as info:
        P.parse(text, TYPES)
    assert message in str(info.value)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("i = 1e1000000", "outside the range of column 'i' (int64"),
        ("i = -1e1000000", "outside the range of column 'i' (int64"),
        ("i IN (1e999999, 1)", "outside the range of column 'i' (int64"),
        ("i = 9223372036854775808", "outside the range of column 'i' (int64"),
        ("f = 1e1000000", "outside the range of column 'f' (double"),
        ("f = -1e309", "outside the range of column 'f' (double"),
        ("f = '1e400'", "outside the range of column 'f' (double"),
        ("d = 1e1000000", "outside the range of column 'd' (decimal128(10, 2)"),
        ("d = " + "9" * 60_000, "outside the range of column 'd' (decimal128(10, 2)"),
        ("d = '-123456789'", "at most 8 digits before the point"),
    ],
)
def test_huge_literals_judged_before_conversion(monkeypatch, text: str, message: str) -> None:
    """A literal is judged against its column's range from its exponent: the value (a
    million-digit integer for ``1e1000000``) is never built."""
    from lakestats.errors import InvalidPredicateError

    def built(value: object, *args: object) -> None:
        raise AssertionError(f"the literal was converted: {str(value)[:40]}")

    from lakestats.query.predicate import literal

    monkeypatch.setattr(literal, "make_literal", built)
    with pytest.raises(InvalidPredicateError) as info:
        P.parse(text, TYPES)
    assert message in str(info.value)
    assert len(str(info.value)) < 300  # a long literal is clipped in the message


def test_literals_at_the_range_limits_still_parse() -> None:
    assert P.parse("i = -9223372036854775808", TYPES).value.value == -(2**63)
    assert P.parse("i = 9.223372036854775807e18", TYPES).value.value == 2**63 - 1
    assert P.parse("f = 1e308", TYPES).value.value == 1e308
    assert P.parse("f = 1e-1000000", TYPES).value.value == 0.0
    assert P.parse("i = 0e1000000", TYPES).value.value == 0


def test_binary_literals_are_strict_base64() -> None:
    """A binary literal that is not base64 is refused, not read as the bytes that survive
    discarding its invalid characters (``'!!'`` was ``b''``)."""
    from lakestats.errors import InvalidPredicateError

    columns = {"bin": pa.binary()}
    assert P.parse("bin = 'aGVsbG8='", columns).value.value == b"hello"
    with pytest.raises(InvalidPredicateError, match="is not a value of column 'bin'"):
        P.parse("bin = '!!'", columns)


@pytest.mark.parametrize(
    ("text", "neighbours"),
    [
        ("d < 33292.495", "compare with 33292.49 or 33292.50"),
        ("d IN (1.001, 2)", "compare with 1.00 or 1.01"),
        ("d BETWEEN -0.001 AND 3", "compare with -0.01 or 0.00"),
        ("d = '7.125'", "compare with 7.12 or 7.13"),
    ],
)
def test_a_decimal_literal_finer_than_its_column_names_the_values_beside_it(
    text: str, neighbours: str
) -> None:
    """No value of a decimal(10, 2) column equals 33292.495: one line naming the scale and
    the two values around it, which say how each comparison is written exactly."""
    from lakestats.errors import InvalidPredicateError

    with pytest.raises(InvalidPredicateError) as info:
        P.parse(text, TYPES)
    said = str(info.value)
    assert "more digits after the point than column 'd'" in said and neighbours in said, said
    assert "\n" not in said


def test_a_decimal_literal_with_trailing_zeros_is_its_value() -> None:
    assert P.parse("d = 1.500", TYPES) == P.parse("d = 1.5", TYPES)
