"""The resident estimator (``lakestats.query.resident``): an open handle answers repeated
estimates from memory with the numbers of a fresh handle, parses a text once, shares an
answer between equivalent spellings, and ``estimate_many`` answers a list as ``estimate``
answers each predicate."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlglot

import lakestats.api as ls
from lakestats.errors import InvalidArgumentError, InvalidPredicateError, LakestatsError
from lakestats.query import estimate as estimator
from lakestats.query import predicate as predicates
from lakestats.query.predicate import plain
from lakestats.query.predicate.parse import _parse_general, _Parser
from tests.query import test_estimate_batched as batched

pytestmark = pytest.mark.spark
CONJUNCTIONS = batched.CONJUNCTIONS


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory: pytest.TempPathFactory):
    """test_estimate_batched's 64-partition table, analyzed for this module."""
    return batched.table.__wrapped__(spark, tmp_path_factory)

SINGLES = [
    "i < 400",
    "i = 1550",
    "f > 20",
    "s = 'w07'",
    "k IN ('k1', 'k5')",
    "c <> 1",
    "day >= DATE '2024-03-01'",
    "f IS NULL",
    "s LIKE 'w1%'",
]
WHERES = SINGLES + CONJUNCTIONS


def _fresh(lt: ls.LakestatsTable, where: str, **options: object) -> dict:
    return ls.open_table(lt.root_dir).estimate(where, **options).to_json()


def test_resident_answers_equal_a_fresh_handle(table) -> None:
    """One handle asked every predicate twice, in two orders and with every option, gives
    every number a new handle gives (each new handle estimates cold)."""
    lt, _ = table
    warm = ls.open_table(lt.root_dir)
    for where in WHERES + WHERES[::-1]:
        assert warm.estimate(where).to_json() == _fresh(lt, where), where
    for where in WHERES[::3]:
        assert warm.estimate(where, source="files").to_json() == _fresh(
            lt, where, source="files"
        ), where
        assert warm.estimate(where, table_level=True).to_json() == _fresh(
            lt, where, table_level=True
        ), where
    assert len(warm._residents) == 1  # one statistics version, one resident
    warm._forget_reader()
    assert not warm._residents


def test_parsed_once_and_shared_between_spellings(table, monkeypatch) -> None:
    lt, _ = table
    warm = ls.open_table(lt.root_dir)
    calls = {"parse": 0, "estimate": 0}
    parse, estimate = predicates.parse, estimator.estimate

    def counted_parse(*args: object, **kwargs: object) -> predicates.Predicate:
        calls["parse"] += 1
        return parse(*args, **kwargs)

    def counted_estimate(*args: object, **kwargs: object) -> object:
        calls["estimate"] += 1
        return estimate(*args, **kwargs)

    monkeypatch.setattr(predicates, "parse", counted_parse)
    monkeypatch.setattr(estimator, "estimate", counted_estimate)
    first = warm.estimate("i >= 1500 AND f > 30")
    assert calls == {"parse": 1, "estimate": 1}
    assert warm.estimate("i >= 1500 AND f > 30") == first
    assert calls == {"parse": 1, "estimate": 1}
    assert warm.estimate("f > 30 AND (i >= 1500)") == first  # the same normalized text
    assert calls == {"parse": 2, "estimate": 1}


def test_estimate_many_equals_estimate(table) -> None:
    lt, _ = table
    warm = ls.open_table(lt.root_dir)
    batch = warm.estimate_many(WHERES)
    assert len(batch) == len(WHERES)
    assert batch.version == warm.reader().version.version
    for where, got in zip(WHERES, batch, strict=True):
        assert got.to_json() == _fresh(lt, where), where
    data = batch.to_json()
    assert data["estimates"] == [e.to_json() for e in batch.estimates]
    assert batch.to_arrow().num_rows == len(WHERES)
    level = warm.estimate_many(WHERES[:3], table_level=True)
    assert [e.to_json() for e in level] == [
        _fresh(lt, w, table_level=True) for w in WHERES[:3]
    ]


def test_estimate_many_refuses_bad_input(table) -> None:
    lt, _ = table
    with pytest.raises(InvalidArgumentError, match="empty"):
        lt.estimate_many([])
    with pytest.raises(InvalidArgumentError, match="a list"):
        lt.estimate_many("i < 3")
    with pytest.raises(InvalidPredicateError, match="predicate 2 of 3"):
        lt.estimate_many(["i < 3", "i <", "c = 1"])


SIMPLE = [
    "a < 10", "a = 'x'", "a <> -5", "a != 2.5", "x_1 >= 0.05", "a = 'it''s'", "A=1",
    "a<-5", "a=-5", "  b  >=  -0.25  ", "a = ''", "a = 'x y  z'", "a = 007",
    '"a" = 1', '"a""b" < 2', '"x.y" >= -2.5', '"select" = 1', '"A" <> \'x\'',
]
NOT_SIMPLE = [
    "date = 1", "a = 'a\\b'", "a = 1 -- c", "a = 1e5", "a = .5", "a == 1", "a = TRUE",
    "a = NULL", "`a` = 1", "a.b = 1", "a = - 5", "a IN (1)", "a = x", '"" = 1',
    '"a = 1', '"a"."b" = 1', '"a" = "b"',
]


@pytest.mark.parametrize("text", SIMPLE)
def test_simple_comparison_is_sqlglots_tree(text: str) -> None:
    assert plain.simple_comparison(text) == sqlglot.parse_one(text)


@pytest.mark.parametrize("text", NOT_SIMPLE)
def test_other_conditions_go_to_sqlglot(text: str) -> None:
    assert plain.simple_comparison(text) is None


TYPES = {"a": pa.int64(), "b": pa.float64(), "s": pa.string(), "d": pa.decimal128(12, 2)}
CONJUNCTIONS_OF_SIMPLE = [
    "a = 1", "a = 1 AND b > 2.5", "a=1 and b<=-3 AND s = 'x AND y'", "s <> 'it''s'",
    "a = 1  AND  b != 0  ", "d >= 12.34 AND a < 7 AND s > ''", "a = -0 AND b = -0.0",
    "a = 1 AND b NOT IN (1, 2)", "a = 1 AND b IN (1, NULL)",  # IN lists: ``in_list``
    # as lakestats' Spark component writes its questions: quoted, each in parentheses
    "(a = 1) AND b = 2", "( a = 1 ) AND (b > 2.5)", '("a" <= 451) AND ("a" >= 311)',
    '("b" < 15.4146) AND ("b" IS NOT NULL) AND ("s" = \'ap\') AND ("s" IS NOT NULL)',
    '("a" > 144) AND ("a" IS NOT NULL) AND ("s" IN (\'sa\', \'ap\'))', '("s" LIKE \'x%\')',
]
GENERAL = ["a = 1AND b = 2", "a = 1 AND", "a = 1 AND NOT b = 2", "a = 1 OR b = 2",
           "a = 1 AND s NOT LIKE 'x%'", "a IS NULL OR b IS NULL", "((a = 1)) AND b = 2",
           "(a = 1 AND b = 2)", "(a = 1)AND b = 2", "(a = 1", "a = 1)", '("a" = 1) OR ("a" = 2)',
           '(("a" = 1) OR ("a" = 2)) AND ("a" IS NOT NULL)', "(a = 1) AND (b = 2"]


@pytest.mark.parametrize("text", CONJUNCTIONS_OF_SIMPLE)
def test_simple_conjunctions_parse_as_the_general_path(text: str) -> None:
    assert plain.simple_conjuncts(text) is not None
    general = _parse_general(text, _Parser(TYPES, ()))
    assert predicates.parse(text, TYPES) == general


@pytest.mark.parametrize("text", GENERAL)
def test_other_predicates_take_the_general_path(text: str) -> None:
    assert plain.simple_conjuncts(text) is None


def test_simple_conjunction_errors_are_the_general_paths() -> None:
    for text in ["a = 1 AND nope = 2", "a = 'x'", "a = 1 AND a = 99999999999999999999",
                 '("a" = 1) AND ("nope" = 2)', '("a" = \'x\')', '("nope" IS NULL)']:
        with pytest.raises(LakestatsError) as fast:
            predicates.parse(text, TYPES)
        with pytest.raises(LakestatsError) as general:
            _parse_general(text, _Parser(TYPES, ()))
        assert type(fast.value) is type(general.value)
        assert str(fast.value) == str(general.value)


def test_sql_keywords_are_sqlglots() -> None:
    """The keyword list a simple comparison is checked against without sqlglot is the
    installed sqlglot's (its name-like keywords)."""
    import re

    from sqlglot.tokens import Tokenizer

    from lakestats.query.predicate.keywords import KEYWORDS

    expected = {k for k in Tokenizer.KEYWORDS if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)}
    assert expected == KEYWORDS


SIMPLE_TYPED = [
    "a < 10", "a = -5", "a != 2", "b >= 0.05", "b < -0.25", "s = 'it''s'", "s <> ''",
    "d >= 12.34", "d = -0", "a = -0", "b = -0.0", "A = 1", "s = 1", "a = 'x'", "a = 2.5",
    "nope = 1", "a = 99999999999999999999", "d = 1.234", "b = 1e", "s > 'x AND y'",
    "t = '2020-01-02'", "t < 'nope'", "u = 'v'", '"a" < 10', '"s" = \'x\'', '"nope" = 1',
    '"A" = 1', '"u" = 2', '"date" = 1',
]


@pytest.mark.parametrize("text", SIMPLE_TYPED)
@pytest.mark.parametrize("negate", [False, True])
def test_simple_comparisons_compile_as_sqlglots_tree(text: str, negate: bool) -> None:
    """A simple comparison compiled without sqlglot is what ``node`` makes of sqlglot's
    tree: the same predicate, or the same error."""
    groups = plain.simple_groups(text)
    if groups is None:
        assert plain.simple_comparison(text) is None
        return
    types = {**TYPES, "t": pa.date32(), "A": pa.int8()}
    parser = _Parser(types, ("u",))
    try:
        expected = parser.node(sqlglot.parse_one(text), negate)
    except LakestatsError as exc:
        with pytest.raises(type(exc)) as fast:
            parser.simple(groups, negate)
        assert str(fast.value) == str(exc)
    else:
        assert parser.simple(groups, negate) == expected


PLAIN_TYPED = [
    "a IS NULL", "a IS NOT NULL", "a is not null", "s IS NULL", "nope IS NULL",
    "a BETWEEN 1 AND 5", "a BETWEEN -5 AND 007", "b BETWEEN 0.5 AND 2", "a between 'x' and 2",
    "s BETWEEN 'a' AND 'it''s'", "d BETWEEN 1.5 AND 12.345", "a BETWEEN 5 AND 1",
    "a IN (1, 2, 3)", "a IN (3,1,1)", "a in ( -1 , 2 )", "s IN ('x', 'y''z', 'x')",
    "a IN ('x')", "b IN (1.5, 2)", "d IN (1.23, 4)", "a IN (99999999999999999999)",
    "s LIKE 'x%'", "s LIKE 'x'", "s LIKE '%x'", "s LIKE 'a_b%'", "s LIKE ''", "a LIKE 'x%'",
    "s like 'it''s%'", "s LIKE 'x\\%'",
    "t >= DATE '2020-01-02'", "t = date '2020-01-02'", "t < TIMESTAMP '2020-01-02 03:04:05'",
    "t <> DATE 'nope'", "a = DATE '2020-01-01'", "z >= TIMESTAMP '2020-01-02 03:04:05'",
    "z = TIMESTAMP '2020-01-02 03:04:05+02:00'", "t != DATE '2020-02-30'",
    "date IS NULL", "u IS NULL", "u IN (1)", "A BETWEEN 1 AND 300",
    '"a" IS NOT NULL', '"s" LIKE \'x%\'', '"a" IN (1, 2)', '"t" >= DATE \'2020-01-02\'',
    '"a" BETWEEN 1 AND 5', '"date" IS NULL', '"a" LIKE \'x\'', '"nope" IN (1)',
]


@pytest.mark.parametrize("text", PLAIN_TYPED)
@pytest.mark.parametrize("negate", [False, True])
def test_plain_conditions_compile_as_sqlglots_tree(text: str, negate: bool) -> None:
    """IS [NOT] NULL, BETWEEN, IN, LIKE and DATE/TIMESTAMP comparisons compiled without
    sqlglot are what ``node`` makes of sqlglot's tree; where that is an error, the fast
    path declines and ``condition`` gives sqlglot's path's error."""
    types = {**TYPES, "t": pa.date32(), "A": pa.int8(), "z": pa.timestamp("us", tz="UTC")}
    parser = _Parser(types, ("u",))
    try:
        expected = parser.node(sqlglot.parse_one(text), negate)
    except LakestatsError as exc:
        with pytest.raises(type(exc)) as got:
            parser.condition(text, negate)
        assert str(got.value) == str(exc)
        return
    form = plain.plain_groups(text)
    if text.startswith("date") or "\\" in text:  # a keyword; backslash escapes
        assert form is None
    else:
        assert form is not None, text
        assert parser.plain(*form, negate) == expected
    assert parser.condition(text, negate) == expected


@pytest.mark.parametrize("text", [
    "a IS NULL AND b BETWEEN 1 AND 2 AND s IN ('x', 'y')",
    "t >= DATE '2020-01-02' AND s LIKE 'x%' AND a = 1",
    "a BETWEEN 1 AND 2", "a IN (1, 2) AND b IS NOT NULL", "a = 1 AND b IN (1, 2)",
    "a = 1 AND s LIKE 'x%'",
    '("t" >= \'2020-01-02\') AND ("s" LIKE \'x%\') AND ("a" IN (1, 2))',
    '("a" BETWEEN 1 AND 2) AND ("b" IS NULL)',
])
def test_plain_conjunctions_parse_as_the_general_path(text: str) -> None:
    types = {**TYPES, "t": pa.date32()}
    assert plain.simple_conjuncts(text) is not None
    general = _parse_general(text, _Parser(types, ()))
    assert predicates.parse(text, types) == general
