"""SQL predicates over a table's columns: parsing, normal form, pruning and row estimates.

``parse(text, columns)`` turns a SQL boolean expression (parsed by sqlglot) into a frozen
tree of ``Compare``, ``Between``, ``In``, ``IsNull``, ``PrefixLike``, ``Like``, ``And`` and
``Or``, with every literal typed by its column's Arrow type and carried as its
order-preserving key (``lakestats.stats.keys``), so comparisons against stored min, max and
frequency values are byte comparisons. ``NOT`` is pushed down to the leaves with SQL's
three-valued logic (``NOT (a < 5)`` is ``a >= 5``, which, like ``a < 5``, keeps no NULL).
``Not`` exists as a node type for callers that build trees by hand; ``parse`` never
returns one.

``LIKE``: ``'abc%'`` (one trailing ``%``, no other wildcard) is a ``PrefixLike``, a key
range; a pattern without wildcards is an equality; any other pattern is a ``Like`` leaf,
exact over complete frequencies and otherwise bounded by the rows of its literal prefix.

``normalize(pred)`` is a canonical text (flattened and sorted conjuncts and disjuncts,
sorted distinct IN lists, ``BETWEEN`` as two comparisons, canonical literals), so
equivalent spellings get one key. ``estimate(pred, partitions)`` estimates per partition
(``lakestats.stats.selectivity``) and sums, so skew between partitions is kept.

Combination within one partition (documented in README "Selectivity estimates"):

* conditions on one column are first combined into one set of key ranges (Kleene logic
  per value: true, false or unknown), so ``a > 1 AND a < 5``, ``a = 1 OR a = 2`` and
  ``NOT (a IN (...))`` are single exact-where-possible lookups;
* AND across columns: the point estimate assumes independence (``n * prod(e_i / n)``);
  bounds are Fréchet's: ``max(0, sum(lower_i) - (k-1) n) .. min(upper_i)``;
* OR across columns: inclusion-exclusion under independence
  (``n * (1 - prod(1 - e_i / n))``); bounds ``max(lower_i) .. min(n, sum(upper_i))``.

Over 400 lines because the tree, its parser, its normal form and the estimate over it are one
contract (a node's kinds are matched in each); the text reader (``predicate_text``), SQL
keywords (``sql_keywords``), the per-partition inputs (``index_source``), the survivors'
estimates as arrays (``survivor_sets``, ``survivors``) and the per-term cache
(``term_cache``) are apart.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from lakestats.errors import (
    ColumnNotFoundError,
    InvalidPredicateError,
    LakestatsError,
    PredicateTooLargeError,
    StatisticsNotFoundError,
    UnsupportedPredicateError,
)
from lakestats.query import predicate_text, sql_keywords, term_cache
from lakestats.stats import key_ranges as kr
from lakestats.stats import keys, leaves, literals
from lakestats.stats import selectivity as sel
from lakestats.stats.kinds import Kind, kind_of

# -- the tree ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    """A typed value: ``value`` (Python), ``key`` (its order-preserving key), ``sql``
    (canonical SQL text)."""

    value: object
    key: bytes
    sql: str


@dataclass(frozen=True)
class Compare:
    column: str
    op: str  # = <> < <= > >=
    value: Literal


@dataclass(frozen=True)
class Between:
    column: str
    low: Literal
    high: Literal
    negated: bool = False


@dataclass(frozen=True)
class In:
    column: str
    values: tuple[Literal, ...]
    negated: bool = False
    has_null: bool = False  # a NULL in the list: no value is ever NOT IN it


@dataclass(frozen=True)
class IsNull:
    column: str
    negated: bool = False


@dataclass(frozen=True)
class PrefixLike:
    column: str
    prefix: str
    negated: bool = False


@dataclass(frozen=True)
class Like:
    column: str
    pattern: str
    negated: bool = False
    escape: str | None = None


@dataclass(frozen=True)
class And:
    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Not:
    child: Predicate


Predicate = Compare | Between | In | IsNull | PrefixLike | Like | And | Or | Not
LEAVES = (Compare, Between, In, IsNull, PrefixLike, Like)


# -- parsing -------------------------------------------------------------------------------


def parse(
    text: str,
    columns: Mapping[str, pa.DataType],
    unanalyzed: Container[str] = (),
    parsed: dict[str, Predicate] | None = None,
) -> Predicate:
    """Parse ``text`` against ``columns`` (name -> Arrow type of analyzed columns);
    ``unanalyzed`` names table columns that exist but have no statistics.

    A conjunction of simple comparisons (``a = 1 AND b > 'x'``, see
    ``simple_comparison``; a planner's usual question) is split without tokenizing it:
    the tree is the one the general path (``predicate_text.Skeleton``) builds. Its
    conditions are looked up in and added to ``parsed`` when given (a resident
    estimator's: the same ``columns``; a condition that fails is not added)."""
    if not text or not text.strip():
        raise InvalidPredicateError("the predicate is empty: pass --where 'column = value'")
    parser = _Parser(columns, unanalyzed)
    conditions = simple_conjuncts(text)
    if conditions is not None:
        if parsed is None:
            items = [parser.condition(c, False) for c in conditions]
        else:
            items = []
            for c in conditions:
                found = parsed.get(c)
                if found is None:
                    found = parser.condition(c, False)
                    if len(parsed) >= 4096:
                        parsed.clear()
                    parsed[c] = found
                items.append(found)
        return items[0] if len(items) == 1 else _join("and", items)
    return _parse_general(text, parser)


def _join(kind: str, children: list[Predicate]) -> Predicate:
    node = And if kind == "and" else Or
    flat: list[Predicate] = []
    for child in children:  # (a OR b) OR c is one OR: the tree stays shallow
        flat.extend(child.children if isinstance(child, node) else (child,))
    return node(tuple(flat))


def _parse_general(text: str, parser: _Parser) -> Predicate:
    try:
        return predicate_text.Skeleton(text, parser.condition, _join).parse()
    except RecursionError as exc:  # sqlglot within one condition, e.g. n = ((((1))))
        raise PredicateTooLargeError(
            f"the predicate is nested too deeply to read: at most {predicate_text.MAX_NESTING}"
            " levels of parentheses, fewer inside one condition; remove redundant ones"
        ) from exc


_AND = re.compile(r"AND\s+", re.IGNORECASE)


def simple_conjuncts(text: str) -> list[str] | None:
    """The conditions of ``text`` when it is one or more ``simple_comparison``s joined
    by AND (whitespace around each AND), else None (the general path reads it)."""
    if len(text) > predicate_text.MAX_PREDICATE_CHARS:
        return None
    out: list[str] = []
    pos = 0
    while True:
        match = _SIMPLE.match(text, pos)
        if match is None or _simple_groups(match.group(0)) is None:
            match = _PLAIN.match(text, pos)
            if match is None or _plain_groups(match.group(0)) is None:
                return None
        out.append(match.group(0).strip())
        pos = match.end()
        if pos == len(text):
            break
        joined = _AND.match(text, pos)
        if joined is None or not text[pos - 1].isspace():
            return None
        pos = joined.end()
    return out if len(out) <= predicate_text.MAX_CONDITIONS else None


_SIMPLE = re.compile(
    r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<>|!=|<=|>=|=|<|>)\s*"
    r"(?:(-?)(\d+(?:\.\d+)?)|'((?:[^'\\]|'')*)')\s*"
)


def simple_comparison(text: str):  # noqa: ANN202 - a sqlglot expression or None
    """``column op literal`` (an unquoted name that is no keyword, a comparison, a
    plain decimal number or a string without backslashes) as the tree
    ``sqlglot.parse_one`` returns for it, built without parsing (a planner's predicates
    are mostly these); None for any other text, which sqlglot then parses."""
    groups = _simple_groups(text)
    if groups is None:
        return None
    name, op, minus, number, string = groups
    from sqlglot import exp

    if number is not None:
        value = exp.Literal.number(number)
        value = exp.Neg(this=value) if minus else value
    else:
        value = exp.Literal.string(string.replace("''", "'"))
    kind = {"=": exp.EQ, "<>": exp.NEQ, "!=": exp.NEQ, "<": exp.LT, "<=": exp.LTE,
            ">": exp.GT, ">=": exp.GTE}[op]
    column = exp.Column(this=exp.Identifier(this=name, quoted=False))
    return kind(this=column, expression=value)


def _simple_groups(text: str) -> tuple | None:
    """``simple_comparison``'s parts of ``text`` (name, operator, minus, number, string),
    or None; sqlglot's keywords (``sql_keywords``) are no column name here."""
    match = _SIMPLE.fullmatch(text)
    if match is None or match.group(1).upper() in sql_keywords.KEYWORDS:
        return None
    return match.groups()


_LIT = r"(?:-?\d+(?:\.\d+)?|'(?:[^'\\]|'')*')"
_PLAIN_FORMS = {
    "null": r"\s*([A-Za-z_][A-Za-z0-9_]*)\s+IS\s+(NOT\s+)?NULL\s*",
    "between": rf"\s*([A-Za-z_][A-Za-z0-9_]*)\s+BETWEEN\s+({_LIT})\s+AND\s+({_LIT})\s*",
    "in": rf"\s*([A-Za-z_][A-Za-z0-9_]*)\s+IN\s*\(\s*({_LIT}(?:\s*,\s*{_LIT})*)\s*\)\s*",
    "like": r"\s*([A-Za-z_][A-Za-z0-9_]*)\s+LIKE\s+'((?:[^'\\]|'')*)'\s*",
    "typed": r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<>|!=|<=|>=|=|<|>)\s*(DATE|TIMESTAMP)\s+"
             r"'((?:[^'\\]|'')*)'\s*",
}
_PLAIN_RE = {k: re.compile(v, re.IGNORECASE) for k, v in _PLAIN_FORMS.items()}
_PLAIN = re.compile("|".join(f"(?:{v})" for v in _PLAIN_FORMS.values()), re.IGNORECASE)
_LIT_RE = re.compile(_LIT)


def _plain_groups(text: str) -> tuple[str, tuple] | None:
    """Which other plain condition ``text`` is (``column IS [NOT] NULL``, ``column
    BETWEEN literal AND literal``, ``column IN (literals)``, ``column LIKE 'pattern'``,
    ``column op DATE|TIMESTAMP 'text'``) and its parts, or None."""
    for form, pattern in _PLAIN_RE.items():
        match = pattern.fullmatch(text)
        if match is not None:
            if match.group(1).upper() in sql_keywords.KEYWORDS:
                return None
            return form, match.groups()
    return None


def _literal_text(text: str) -> tuple[str | None, str | None]:
    """A matched ``_LIT``: (number text, None) or (None, string value)."""
    if text.startswith("'"):
        return None, text[1:-1].replace("''", "'")
    return text, None


_FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"=": "<>", "<>": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


class _NotPlain(Exception):
    """A plain condition that ``_Parser.plain`` leaves to sqlglot's path."""


class _Parser:
    def __init__(self, columns: Mapping[str, pa.DataType], unanalyzed: Container[str]) -> None:
        self.columns = columns
        self.unanalyzed = unanalyzed

    def condition(self, text: str, negate: bool) -> Predicate:
        """One condition of the predicate (no top-level AND / OR / NOT), via sqlglot."""
        groups = _simple_groups(text)
        if groups is not None:  # column op literal: what ``node`` makes of its tree
            return self.simple(groups, negate)
        plain = _plain_groups(text)
        if plain is not None:
            try:
                return self.plain(*plain, negate)
            except (LakestatsError, _NotPlain):  # sqlglot's path says what is wrong
                pass
        import sqlglot
        from sqlglot.errors import ParseError, TokenError

        try:
            tree = sqlglot.parse_one(text)
        except (ParseError, TokenError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InvalidPredicateError(
                f"cannot parse predicate {_clip(text)!r}: {first}"
            ) from exc
        return self.node(tree, negate)

    def simple(self, groups: tuple, negate: bool) -> Predicate:
        """``node`` of ``simple_comparison``'s tree, without sqlglot: the same checks in
        the same order, so the same predicate or error."""
        name, op, minus, number, string = groups
        op = "<>" if op == "!=" else op
        column, dtype = self.column_named((name,))
        if number is not None:
            value = self.number(f"-{number}" if minus else number, column, dtype)
        else:
            value = self.literal_value(string.replace("''", "'"), column, dtype)
        return Compare(column, _NEGATE[op] if negate else op, value)

    def _lit(self, text: str, column: str, dtype: pa.DataType) -> Literal:
        number, string = _literal_text(text)
        if number is not None:
            return self.number(number, column, dtype)
        return self.literal_value(string, column, dtype)

    def plain(self, form: str, groups: tuple, negate: bool) -> Predicate:
        """What ``node`` makes of sqlglot's tree of a ``_plain_groups`` condition, when it
        makes a predicate; any refusal raises (the caller then asks sqlglot's path for its
        exact error)."""
        column, dtype = self.column_named((groups[0],))
        if form == "null":
            return IsNull(column, negated=negate != bool(groups[1]))
        if form == "between":
            low, high = self._lit(groups[1], column, dtype), self._lit(groups[2], column, dtype)
            return Between(column, low, high, negated=negate)
        if form == "in":
            items = _LIT_RE.findall(groups[1])
            if len(items) > predicate_text.MAX_IN_VALUES:
                raise _NotPlain
            values = [self._lit(v, column, dtype) for v in items]
            typed = {v.key: v for v in values}
            ordered = tuple(typed[k] for k in sorted(typed))
            return In(column, ordered, negated=negate, has_null=False)
        if form == "like":
            if kind_of(dtype) != Kind.STRING:
                raise _NotPlain
            pattern = groups[1].replace("''", "'")
            head, wildcard_tail = _split_pattern(pattern, None)
            if wildcard_tail is None:
                lit = self.literal_value(head, column, dtype)
                return Compare(column, "<>" if negate else "=", lit)
            if wildcard_tail == "%":
                return PrefixLike(column, head, negated=negate)
            return Like(column, pattern, negated=negate, escape=None)
        # typed: column op DATE|TIMESTAMP 'text'
        _, op, family, text = groups
        if kind_of(dtype) != Kind.TEMPORAL:
            raise _NotPlain
        op = "<>" if op == "!=" else op
        value = self.literal_value(text.replace("''", "'"), column, dtype)
        del family  # both families are allowed for a temporal column
        return Compare(column, _NEGATE[op] if negate else op, value)

    def node(self, e, negate: bool) -> Predicate:  # noqa: ANN001
        from sqlglot import exp

        ops = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
        if isinstance(e, exp.Paren):
            return self.node(e.this, negate)
        if isinstance(e, exp.Not):
            return self.node(e.this, not negate)
        if isinstance(e, exp.And | exp.Or):
            kids = (self.node(e.left, negate), self.node(e.right, negate))
            is_and = isinstance(e, exp.And) != negate  # De Morgan
            return And(kids) if is_and else Or(kids)
        if type(e) in ops:
            op = ops[type(e)]
            left, right = e.left, e.right
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                left, right, op = right, left, _FLIP[op]
            column, dtype = self.column(left, e)
            if isinstance(right, exp.Column):
                raise UnsupportedPredicateError(
                    f"comparing two columns ({e.sql()}) is not supported: compare a column "
                    "with a literal"
                )
            value = self.literal(right, column, dtype)
            if value is None:
                raise InvalidPredicateError(
                    f"{e.sql()} is never true in SQL: write {column} IS NULL instead"
                )
            return Compare(column, _NEGATE[op] if negate else op, value)
        if isinstance(e, exp.Between):
            column, dtype = self.column(e.this, e)
            low, high = self.literal(e.args["low"], column, dtype), self.literal(
                e.args["high"], column, dtype
            )
            if low is None or high is None:
                raise InvalidPredicateError(f"{e.sql()}: BETWEEN needs two non-NULL values")
            return Between(column, low, high, negated=negate)
        if isinstance(e, exp.In):
            if e.args.get("query") is not None or e.args.get("unnest") is not None:
                raise UnsupportedPredicateError(
                    f"a subquery in IN ({e.sql()}) is not supported: list the values"
                )
            column, dtype = self.column(e.this, e)
            if not e.expressions:
                raise InvalidPredicateError(
                    f"cannot parse predicate: {column} IN () lists no value: write "
                    f"{column} IN (1, 2) with at least one value"
                )
            if len(e.expressions) > predicate_text.MAX_IN_VALUES:
                raise PredicateTooLargeError(
                    f"the IN list on {column!r} has {len(e.expressions):,} values, over the "
                    f"limit of {predicate_text.MAX_IN_VALUES:,}: split it into several "
                    "predicates"
                )
            values = [self.literal(v, column, dtype) for v in e.expressions]
            typed = {v.key: v for v in values if v is not None}
            ordered = tuple(typed[k] for k in sorted(typed))
            return In(column, ordered, negated=negate, has_null=None in values)
        if isinstance(e, exp.Is):
            if not isinstance(e.expression, exp.Null):
                raise UnsupportedPredicateError(
                    f"{e.sql()} is not supported: only IS NULL and IS NOT NULL are"
                )
            column, _ = self.column(e.this, e)
            return IsNull(column, negated=negate)
        if isinstance(e, exp.Escape) and isinstance(e.this, exp.Like):
            escape = self.string(e.expression, e)
            if len(escape) != 1:
                raise InvalidPredicateError(f"{e.sql()}: the ESCAPE string must be one character")
            return self.like(e.this, negate, escape)
        if isinstance(e, exp.Like):
            return self.like(e, negate, None)
        raise UnsupportedPredicateError(f"unsupported syntax in predicate: {_describe(e)}")

    def like(self, e, negate: bool, escape: str | None) -> Predicate:  # noqa: ANN001
        column, dtype = self.column(e.this, e)
        if kind_of(dtype) != Kind.STRING:
            raise InvalidPredicateError(
                f"{e.sql()}: LIKE needs a string column; {column!r} is {dtype}"
            )
        pattern = self.string(e.expression, e)
        negate = negate != bool(e.args.get("negate"))
        head, wildcard_tail = _split_pattern(pattern, escape)
        if wildcard_tail is None:  # no wildcard: an equality
            lit = self.literal_value(head, column, dtype)
            return Compare(column, "<>" if negate else "=", lit)
        if wildcard_tail == "%":
            return PrefixLike(column, head, negated=negate)
        return Like(column, pattern, negated=negate, escape=escape)

    def string(self, e, parent) -> str:  # noqa: ANN001
        from sqlglot import exp

        if isinstance(e, exp.Literal) and e.is_string:
            return e.this
        raise UnsupportedPredicateError(
            f"{parent.sql()}: expected a string literal, got {_describe(e)}"
        )

    def column(self, e, parent) -> tuple[str, pa.DataType]:  # noqa: ANN001
        from sqlglot import exp

        if not isinstance(e, exp.Column):
            raise UnsupportedPredicateError(
                f"unsupported syntax in predicate: {_describe(e)} in {parent.sql()} "
                "(only columns compared with literals are supported)"
            )
        return self.column_named(tuple(p.name for p in e.parts))

    def column_named(self, parts: tuple[str, ...]) -> tuple[str, pa.DataType]:
        """The analyzed column a reference's ``parts`` name, and its type."""
        # "x.y" (one quoted part) is the column named x.y, x.y the struct leaf: a column
        # whose name is also a struct leaf's is stored backtick-quoted (stats/leaves.py)
        quoted = leaves.quoted_name(parts)
        known = quoted in self.columns or quoted in self.unanalyzed
        name = quoted if known else ".".join(parts)
        if name not in self.columns:
            if name in self.unanalyzed:
                raise StatisticsNotFoundError(
                    f"column {name!r} has no statistics: analyze it (lakestats analyze "
                    f"--columns ...,{name}) before estimating with it"
                )
            known = ", ".join(list(self.columns)[:20])
            raise ColumnNotFoundError(f"unknown column {name!r} in predicate; columns are: {known}")
        dtype = self.columns[name]
        if kind_of(dtype) in (Kind.NESTED, Kind.NULL, Kind.OTHER):
            raise StatisticsNotFoundError(
                f"column {name!r} ({dtype}) has no value statistics (min, max, frequencies): "
                "predicates can use only scalar columns"
            )
        return name, dtype

    def literal(self, e, column: str, dtype: pa.DataType) -> Literal | None:  # noqa: ANN001
        """A SQL literal as a value of the column's type (None for NULL)."""
        from sqlglot import exp

        if isinstance(e, exp.Null):
            return None
        kind = kind_of(dtype)
        if isinstance(e, exp.Boolean):
            if kind != Kind.BOOLEAN:
                raise _wrong_type(e.sql(), column, dtype)
            return _make_literal(bool(e.this), dtype)
        if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
            return self.number(f"-{e.this.this}", column, dtype)
        if isinstance(e, exp.Literal):
            if e.is_string:
                return self.literal_value(e.this, column, dtype)
            return self.number(e.this, column, dtype)
        if isinstance(e, exp.Cast) and isinstance(e.this, exp.Literal):
            family = _type_family(e.to)
            allowed = {
                Kind.TEMPORAL: ("date", "timestamp", "time"),
                Kind.DECIMAL: ("number",),
                Kind.INTEGER: ("number",),
                Kind.FLOATING: ("number",),
                Kind.STRING: ("string",),
                Kind.BOOLEAN: ("boolean",),
            }.get(kind, ())
            if family not in allowed:
                raise _wrong_type(e.sql(), column, dtype)
            return self.literal_value(str(e.this.this), column, dtype)
        raise UnsupportedPredicateError(
            f"unsupported syntax in predicate: {_describe(e)} (expected a literal)"
        )

    def number(self, text: str, column: str, dtype: pa.DataType) -> Literal:
        kind = kind_of(dtype)
        if kind not in (Kind.INTEGER, Kind.FLOATING, Kind.DECIMAL):
            raise _wrong_type(text, column, dtype)
        if kind == Kind.INTEGER:
            try:
                number = decimal.Decimal(text)
            except decimal.InvalidOperation as exc:
                raise _wrong_type(text, column, dtype) from exc
            _check_integer_range(number, text, column, dtype)
            if number != number.to_integral_value():
                raise _wrong_type(text, column, dtype, "not an integer")
            return _make_literal(int(number), dtype, text)
        return self.literal_value(text, column, dtype)

    def literal_value(self, text: str, column: str, dtype: pa.DataType) -> Literal:
        kind = kind_of(dtype)
        if kind == Kind.FLOATING:
            _check_float_range(text, column, dtype)
        elif kind == Kind.DECIMAL:
            _check_decimal_range(text, column, dtype)
        try:
            if pat.is_timestamp(dtype) and dtype.tz is not None:
                value = _timestamp_with_zone(text, dtype)
            else:
                value = keys.parse_literal(text, dtype)
            return _make_literal(value, dtype, text)
        except (ValueError, TypeError, ArithmeticError, pa.ArrowException) as exc:
            raise _wrong_type(repr(text), column, dtype) from exc


def _check_integer_range(
    number: decimal.Decimal, text: str, column: str, dtype: pa.DataType
) -> None:
    """Refuse a literal outside the column's range from its exponent alone, before
    ``int()`` builds it: ``1e1000000`` would be an integer of a million digits."""
    if not number.is_finite():
        raise _wrong_type(text, column, dtype, "not an integer")
    if literals.outside_integer_range(number, dtype):
        low, high = literals.integer_range(dtype)
        raise InvalidPredicateError(
            f"literal {_clip(text)} is outside the range of column {column!r} ({dtype}: "
            f"{low} .. {high}): write e.g. 42"
        )


def _check_float_range(text: str, column: str, dtype: pa.DataType) -> None:
    """A number literal too large for a float column would become infinity: refuse it
    (write 'Infinity' for infinity)."""
    try:
        number = decimal.Decimal(text)
    except decimal.InvalidOperation:
        return  # not a number: the parser below says so
    largest = literals.largest_float(dtype)
    if number.is_finite() and number.copy_abs() > largest:
        raise InvalidPredicateError(
            f"literal {_clip(text)} is outside the range of column {column!r} ({dtype}: at "
            f"most {largest:.6e} in magnitude): write e.g. 1.5, or 'Infinity'"
        )


def _check_decimal_range(text: str, column: str, dtype: pa.DataType) -> None:
    """A number with more integer digits than ``decimal(p, s)`` holds is refused from its
    exponent, before it is built."""
    try:
        number = decimal.Decimal(text)
    except decimal.InvalidOperation:
        return  # not a number: the parser below says so
    integer_digits = dtype.precision - dtype.scale
    if number.is_finite() and not number.is_zero() and number.adjusted() >= integer_digits:
        raise InvalidPredicateError(
            f"literal {_clip(text)} is outside the range of column {column!r} ({dtype}: "
            f"at most {integer_digits} digits before the point): write e.g. 12.34"
        )


def _clip(text: str) -> str:
    """A literal as messages show it: at most 40 characters."""
    return text if len(text) <= 40 else text[:37] + "..."


def _timestamp_with_zone(text: str, dtype: pa.TimestampType) -> object:
    """A zoned column accepts ISO text with an offset, or without one (read as UTC)."""
    import pyarrow.compute as pc

    try:
        return keys.parse_literal(text, dtype)
    except (pa.ArrowInvalid, ValueError):
        from lakestats.stats.arrays import string_array  # no pa.array: no pandas

        naive = pc.cast(string_array([text]), pa.timestamp(dtype.unit))
        return naive.cast(dtype)[0].as_py()


def _make_literal(value: object, dtype: pa.DataType, text: str | None = None) -> Literal:
    """The typed ``Literal`` of ``value``, remembered per value, type and text (a
    planner repeats literals; a value that does not fit is refused each time)."""
    try:
        key = (type(value), value, dtype, text)
        hash(key)
    except TypeError:
        return _build_literal(value, dtype, text)
    found = _LITERALS.get(key)
    if found is None:
        found = _build_literal(value, dtype, text)
        if len(_LITERALS) >= 4096:
            _LITERALS.clear()
        _LITERALS[key] = found
    return found


_LITERALS: dict[tuple, Literal] = {}


def _build_literal(value: object, dtype: pa.DataType, text: str | None) -> Literal:
    key = keys.plain_key(value, dtype)  # no Arrow array, so no pandas import
    if key is not None:
        decoded = keys.decode(key, dtype)
        return Literal(decoded, key, _sql_literal(decoded, dtype))
    try:
        array = pa.array([value], type=dtype)
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
        raise InvalidPredicateError(
            f"literal {_clip(text or repr(value))} does not fit type {dtype}: "
            f"{_clip(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)}"
        ) from exc
    if kind_of(dtype) == Kind.DECIMAL and text is not None:
        decoded = array[0].as_py()
        if decimal.Decimal(text) != decoded:
            raise InvalidPredicateError(
                f"literal {_clip(text)} does not fit type {dtype} exactly"
            )
    key = keys.encode(array)[0].as_py()
    return Literal(keys.decode(key, dtype), key, _sql_literal(keys.decode(key, dtype), dtype))


def _sql_literal(value: object, dtype: pa.DataType) -> str:
    kind = kind_of(dtype)
    if kind == Kind.BOOLEAN:
        return "TRUE" if value else "FALSE"
    if kind == Kind.STRING:
        return "'" + str(value).replace("'", "''") + "'"
    if kind == Kind.BINARY:
        return "'" + str(keys.to_json(value)) + "'"
    if kind == Kind.FLOATING:
        text = keys.to_json(value)
        return f"'{text}'" if isinstance(text, str) else repr(float(text))
    if kind == Kind.TEMPORAL:
        prefix = "DATE" if pat.is_date(dtype) else "TIMESTAMP" if pat.is_timestamp(dtype) else ""
        return f"{prefix} '{keys.to_json(value)}'".strip()
    return str(keys.to_json(value))


def _wrong_type(text: str, column: str, dtype: pa.DataType, why: str = "") -> Exception:
    hint = f" ({why})" if why else ""
    example = {
        Kind.TEMPORAL: "DATE '2024-01-31' or TIMESTAMP '2024-01-31 12:00:00'",
        Kind.STRING: "'text'",
        Kind.BOOLEAN: "TRUE or FALSE",
        Kind.DECIMAL: "12.34",
        Kind.INTEGER: "42",
        Kind.FLOATING: "1.5",
    }.get(kind_of(dtype), "a literal")
    return InvalidPredicateError(
        f"literal {_clip(text)} is not a value of column {column!r} ({dtype}){hint}: write "
        f"e.g. {example}"
    )


def _type_family(datatype) -> str:  # noqa: ANN001
    name = str(datatype.this).rsplit(".", 1)[-1].upper()
    if name == "DATE":
        return "date"
    if name.startswith("TIMESTAMP") or name.startswith("DATETIME"):
        return "timestamp"
    if name.startswith("TIME"):
        return "time"
    if name in ("VARCHAR", "CHAR", "TEXT", "NCHAR", "NVARCHAR", "STRING"):
        return "string"
    if name in ("BOOLEAN",):
        return "boolean"
    return "number"


def _describe(e) -> str:  # noqa: ANN001
    from sqlglot import exp

    if isinstance(e, exp.Subquery | exp.Select):
        what = "a subquery"
    elif isinstance(e, exp.Func):
        what = f"function call {e.sql_name() if hasattr(e, 'sql_name') else type(e).__name__}"
    else:
        what = type(e).__name__
    return f"{what} ({e.sql()})"


def _split_pattern(pattern: str, escape: str | None) -> tuple[str, str | None]:
    """The literal head of a LIKE pattern, and the rest from the first wildcard on (None
    when there is no wildcard)."""
    head = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape and i + 1 < len(pattern):
            head.append(pattern[i + 1])
            i += 2
            continue
        if ch in "%_":
            return "".join(head), pattern[i:]
        head.append(ch)
        i += 1
    return "".join(head), None


def like_regex(pattern: str, escape: str | None) -> re.Pattern:
    parts = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape and i + 1 < len(pattern):
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(parts), re.DOTALL)


# -- normal form ---------------------------------------------------------------------------


def columns_of(pred: Predicate) -> list[str]:
    """The columns a predicate reads, sorted."""
    if isinstance(pred, And | Or):
        return sorted({c for child in pred.children for c in columns_of(child)})
    if isinstance(pred, Not):
        return columns_of(pred.child)
    return [pred.column]


def push_not(pred: Predicate, negate: bool = False) -> Predicate:
    """The same predicate with every ``Not`` pushed into the leaves (three-valued logic)."""
    if isinstance(pred, Not):
        return push_not(pred.child, not negate)
    if isinstance(pred, And | Or):
        kids = tuple(push_not(c, negate) for c in pred.children)
        return (And if isinstance(pred, And) != negate else Or)(kids)
    if not negate:
        return pred
    if isinstance(pred, Compare):
        return Compare(pred.column, _NEGATE[pred.op], pred.value)
    return type(pred)(**{**pred.__dict__, "negated": not pred.negated})


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def normalize(pred: Predicate) -> str:
    """Canonical SQL text of ``pred``: equivalent spellings give the same text."""
    pred = push_not(pred)
    if isinstance(pred, And | Or):
        glue = " AND " if isinstance(pred, And) else " OR "
        parts = set()
        for child in _flatten(pred):
            text = normalize(child)
            as_or = isinstance(child, Or) or (isinstance(child, Between) and child.negated)
            as_and = isinstance(child, And) or (isinstance(child, Between) and not child.negated)
            if (as_or and isinstance(pred, And)) or (as_and and isinstance(pred, Or)):
                text = f"({text})"
            parts.add(text)
        return glue.join(sorted(parts))
    col = _quote(pred.column)
    if isinstance(pred, Compare):
        return f"{col} {pred.op} {pred.value.sql}"
    if isinstance(pred, Between):
        if pred.negated:
            return f"{col} < {pred.low.sql} OR {col} > {pred.high.sql}"
        return f"{col} <= {pred.high.sql} AND {col} >= {pred.low.sql}"
    if isinstance(pred, In):
        items = [v.sql for v in pred.values] + (["NULL"] if pred.has_null else [])
        return f"{col} {'NOT IN' if pred.negated else 'IN'} ({', '.join(items)})"
    if isinstance(pred, IsNull):
        return f"{col} IS {'NOT NULL' if pred.negated else 'NULL'}"
    if isinstance(pred, PrefixLike):
        escaped = pred.prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        text = "'" + (escaped + "%").replace("'", "''") + "'"
        tail = " ESCAPE '\\'" if escaped != pred.prefix else ""
        return f"{col} {'NOT LIKE' if pred.negated else 'LIKE'} {text}{tail}"
    if isinstance(pred, Like):
        text = "'" + pred.pattern.replace("'", "''") + "'"
        tail = f" ESCAPE '{pred.escape}'" if pred.escape else ""
        return f"{col} {'NOT LIKE' if pred.negated else 'LIKE'} {text}{tail}"
    raise TypeError(pred)


def _flatten(pred: And | Or) -> list[Predicate]:
    out: list[Predicate] = []
    for child in pred.children:
        if type(child) is type(pred):
            out.extend(_flatten(child))
        elif isinstance(child, Between) and child.negated == isinstance(pred, Or):
            c = child.column
            if child.negated:
                out.extend([Compare(c, "<", child.low), Compare(c, ">", child.high)])
            else:
                out.extend([Compare(c, ">=", child.low), Compare(c, "<=", child.high)])
        else:
            out.append(child)
    return out


# -- partitions ---------------------------------------------------------------------------


class PartitionStatistics(Protocol):
    """What an estimate needs of one partition (the table level is one such partition)."""

    name: str
    values: dict[str, object]
    row_count: int

    def summary(self, column: str) -> sel.ColumnSummary: ...


# -- sets of values of one column (Kleene logic) ------------------------------------------


@dataclass(frozen=True)
class ColumnSet:
    """For one column: the keys for which a predicate is TRUE, those for which it is
    FALSE (the rest is UNKNOWN), and its value on NULL (``"T"``, ``"F"`` or ``"U"``)."""

    true: kr.KeySet
    false: kr.KeySet
    null: str

    def negate(self) -> ColumnSet:
        return ColumnSet(self.false, self.true, {"T": "F", "F": "T", "U": "U"}[self.null])

    def both(self, other: ColumnSet) -> ColumnSet:
        pair = (self.null, other.null)
        null = "F" if "F" in pair else "T" if pair == ("T", "T") else "U"
        return ColumnSet(
            kr.intersect(self.true, other.true), kr.union(self.false, other.false), null
        )

    def either(self, other: ColumnSet) -> ColumnSet:
        pair = (self.null, other.null)
        null = "T" if "T" in pair else "F" if pair == ("F", "F") else "U"
        return ColumnSet(
            kr.union(self.true, other.true), kr.intersect(self.false, other.false), null
        )


def _combined(sets: list[ColumnSet], conjunction: bool) -> ColumnSet:
    """``both`` (or ``either``) folded over every child at once: one merge of all the
    children's ranges, so a 400-disjunct OR a planner sends is not 400 growing merges
    (the same sets in the same canonical form as the pairwise fold)."""
    if len(sets) <= 2:
        out = sets[0]
        for s in sets[1:]:
            out = out.both(s) if conjunction else out.either(s)
        return out
    nulls = {s.null for s in sets}
    trues, falses = [s.true for s in sets], [s.false for s in sets]
    if conjunction:
        null = "F" if "F" in nulls else "T" if nulls == {"T"} else "U"
        return ColumnSet(kr.intersect_all(trues), kr.union(*falses), null)
    null = "T" if "T" in nulls else "F" if nulls == {"F"} else "U"
    return ColumnSet(kr.union(*trues), kr.intersect_all(falses), null)


def _is_set(pred: Predicate) -> bool:
    if isinstance(pred, And | Or):
        return all(_is_set(c) for c in pred.children)
    if isinstance(pred, Not):
        return _is_set(pred.child)
    return not isinstance(pred, Like)


def column_set(pred: Predicate) -> ColumnSet:
    """The ColumnSet of a predicate over one column without general LIKE leaves
    (remembered per predicate: an estimate asks it once per partition)."""
    try:
        found = _COLUMN_SETS.get(pred)
    except TypeError:  # an unhashable literal value: computed each time
        return _column_set(pred)
    if found is None:
        found = _column_set(pred)
        if len(_COLUMN_SETS) >= 4096:
            _COLUMN_SETS.clear()
        _COLUMN_SETS[pred] = found
    return found


_COLUMN_SETS: dict[Predicate, ColumnSet] = {}


def _column_set(pred: Predicate) -> ColumnSet:
    if isinstance(pred, Not):
        return column_set(pred.child).negate()
    if isinstance(pred, And | Or):
        return _combined([column_set(c) for c in pred.children], isinstance(pred, And))
    if isinstance(pred, IsNull):
        base = ColumnSet(kr.NOTHING, kr.EVERYTHING, "T")
        return base.negate() if pred.negated else base
    if isinstance(pred, Compare):
        k = pred.value.key
        true = {
            "=": kr.points([k]),
            "<>": kr.complement(kr.points([k])),
            "<": kr.between(None, True, k, False),
            "<=": kr.between(None, True, k, True),
            ">": kr.between(k, False, None, True),
            ">=": kr.between(k, True, None, True),
        }[pred.op]
        return ColumnSet(true, kr.complement(true), "U")
    if isinstance(pred, Between):
        true = kr.between(pred.low.key, True, pred.high.key, True)
        base = ColumnSet(true, kr.complement(true), "U")
    elif isinstance(pred, In):
        true = kr.points([v.key for v in pred.values])
        base = ColumnSet(true, kr.NOTHING if pred.has_null else kr.complement(true), "U")
    elif isinstance(pred, PrefixLike):
        true = kr.prefix_range(pred.prefix.encode("utf-8"))
        base = ColumnSet(true, kr.complement(true), "U")
    else:
        raise TypeError(pred)
    return base.negate() if pred.negated else base


# -- estimates -----------------------------------------------------------------------------


def _leaf_estimate(pred: Predicate, part: PartitionStatistics) -> sel.Estimate:
    column = columns_of(pred)[0]
    summary = part.summary(column)
    if isinstance(pred, Like):
        matcher = like_regex(pred.pattern, pred.escape)
        head, _ = _split_pattern(pred.pattern, pred.escape)
        candidates = kr.prefix_range(head.encode("utf-8")) if head else kr.EVERYTHING
        return sel.like(summary, lambda t: matcher.fullmatch(t) is not None, candidates,
                        pred.negated)
    cs = column_set(pred)
    values = sel.estimate_keys(summary, cs.true)
    if cs.null != "T" or summary.null_count == 0:
        return values
    n = summary.null_count
    return sel.Estimate.of(values.rows + n, values.lower + n, values.upper + n,
                           values.method + " + null count")


def terms(pred: Predicate) -> list[Predicate]:
    """The independent terms of a conjunction or disjunction: children on one column (and
    without general LIKE) merged into one term, others kept as they are."""
    if not isinstance(pred, And | Or):
        return [pred]
    groups: dict[str, list[Predicate]] = {}
    others: list[Predicate] = []
    for child in _flatten(pred):
        cols = columns_of(child)
        if len(cols) == 1 and _is_set(child):
            groups.setdefault(cols[0], []).append(child)
        else:
            others.append(child)
    merged = [g[0] if len(g) == 1 else type(pred)(tuple(g)) for _, g in sorted(groups.items())]
    return merged + others


def _estimate(pred: Predicate, part: PartitionStatistics) -> sel.Estimate:
    cols = columns_of(pred)
    if len(cols) == 1 and (_is_set(pred) or isinstance(pred, LEAVES)):
        return _leaf_estimate(pred, part)
    parts = [_estimate(t, part) for t in terms(pred)]
    n = part.row_count
    return combine_and(n, parts) if isinstance(pred, And) else combine_or(n, parts)


def combine_and(n: int, parts: list[sel.Estimate]) -> sel.Estimate:
    """Independence for the point estimate, Fréchet bounds."""
    if any(p.upper == 0 for p in parts):
        return sel.Estimate.count(0, "and: a term keeps nothing")
    if n <= 0:
        return sel.Estimate.count(0, "empty")
    rows = float(n)
    for p in parts:
        rows *= p.rows / n
    lower = max(0, sum(p.lower for p in parts) - (len(parts) - 1) * n)
    upper = min(p.upper for p in parts)
    return sel.Estimate.of(rows, lower, upper, "and (independence)")


def combine_or(n: int, parts: list[sel.Estimate]) -> sel.Estimate:
    """Inclusion-exclusion under independence; bounds max(lower) .. min(n, sum(upper))."""
    if n <= 0:
        return sel.Estimate.count(0, "empty")
    miss = 1.0
    for p in parts:
        miss *= 1.0 - p.rows / n
    lower = max(p.lower for p in parts)
    upper = min(n, sum(p.upper for p in parts))
    return sel.Estimate.of(n * (1.0 - miss), lower, upper, "or (independence)")


def can_match(pred: Predicate, partition: PartitionStatistics) -> bool:
    """False only when the statistics prove no row of the partition satisfies ``pred``
    (min/max, null counts, complete frequencies, exact histogram bins)."""
    return partition.row_count > 0 and _estimate(push_not(pred), partition).upper > 0


def matching_positions(pred: Predicate, partitions: Sequence[PartitionStatistics]) -> list[int]:
    """Positions of the ``partitions`` that ``can_match`` keeps. When ``partitions`` hands
    out its columns' scalars as vectors (``index_source.IndexPartitions``), every
    single-column conjunct first prunes all partitions at once from the scalars
    (``selectivity_vector``, as ``_estimate_batched`` does), and only the partitions left
    are checked one by one with all their statistics (whose histograms and frequencies it
    is told to expect: one read per column)."""
    pred = push_not(pred)
    if not callable(getattr(partitions, "vectors", None)):
        return [i for i, part in enumerate(partitions) if can_match(pred, part)]
    from lakestats.stats import selectivity_vector as sv

    keep = partitions.row_counts() > 0
    for term in terms(pred) if isinstance(pred, And) else [pred]:
        cols = columns_of(term)
        if len(cols) != 1 or not _is_set(term):
            continue
        vectors = partitions.vectors(cols[0])
        if vectors is None:
            continue
        cs = column_set(term)
        batch = sv.scalar_estimates(vectors, cs.true, cs.null == "T")
        keep &= ~((batch.upper == 0) & ~batch.fallback)
    survivors = np.flatnonzero(keep)
    if callable(getattr(partitions, "expect", None)):
        partitions.expect(columns_of(pred), survivors)
    return [int(i) for i in survivors if can_match(pred, partitions[int(i)])]


def estimate(
    pred: Predicate,
    partitions: Iterable[PartitionStatistics],
    table: PartitionStatistics | None = None,
) -> dict[str, object]:
    """Rows ``pred`` keeps, per partition then summed; see the module docstring.

    ``table`` (the table-level statistics, optional) sets the total of equality and IN
    conjuncts on values a partition does not list: per partition such a value is only
    bounded, and whether it occurs there at all is unknown, so the partitions' point
    estimates are scaled to the table-level estimate (which, as planners do, assumes the
    value occurs), each kept inside its partition's bounds.

    When ``partitions`` hands out its columns' scalars as vectors (``vectors(column)``, as
    ``index_source.IndexPartitions`` does) and ``pred`` has several conjuncts (or is one
    condition on one column), the same
    numbers are computed in a batch: see ``_estimate_batched``."""
    pred = push_not(pred)
    top = terms(pred) if isinstance(pred, And) else [pred]
    batched = len(top) > 1 or (len(columns_of(top[0])) == 1 and _is_set(top[0]))
    if batched and callable(getattr(partitions, "vectors", None)):
        return _estimate_batched(pred, top, partitions, table)
    total_rows = 0
    evaluated: list[tuple[PartitionStatistics, list[sel.Estimate]]] = []
    for part in partitions:
        total_rows += part.row_count
        if part.row_count > 0:
            evaluated.append((part, _conjunct_estimates(top, part)))
    if table is not None:
        for j, term in enumerate(top):
            keys_ = _point_keys(term)
            if keys_ is not None:
                _scale_to_table(evaluated, j, table.summary(columns_of(term)[0]), keys_)
    rows = 0.0
    lower = upper = 0
    exact = True
    matching = []
    detail = [
        {"predicate": normalize(t), "row_count": 0.0, "lower": 0, "upper": 0, "exact": True}
        for t in top
    ]
    for part, conjuncts in evaluated:
        n = part.row_count
        e = combine_and(n, conjuncts) if len(conjuncts) > 1 else conjuncts[0]
        for d, c in zip(detail, conjuncts, strict=True):
            d["row_count"] += c.rows
            d["lower"] += c.lower
            d["upper"] += c.upper
            d["exact"] = d["exact"] and c.exact
        rows += e.rows
        lower += e.lower
        upper += e.upper
        exact = exact and e.exact
        if e.upper > 0:
            matching.append(_matching_entry(part, n, e))
    return _estimate_result(pred, (rows, lower, upper, exact), total_rows, matching, detail)


def _estimate_batched(
    pred: Predicate,
    top: list[Predicate],
    partitions,  # noqa: ANN001 - a Sequence[PartitionStatistics] with vectors(column)
    table: PartitionStatistics | None,
) -> dict[str, object]:
    """``estimate`` for a conjunction over many partitions, with the same numbers.

    1. Every conjunct's scalar-only estimate (``_conjunct_estimates``' first pass) for
       every partition at once (``selectivity_vector``: one pass per conjunct over the
       index vectors); conjuncts or partitions it cannot vectorise (several columns,
       general LIKE, string interpolation) go through the scalar path one by one.
    2. A partition where a conjunct keeps nothing is pruned: it adds 0 rows and its
       scalar estimates to the per-conjunct detail, as before, as array sums.
    3. Only the survivors are estimated with all their statistics, one by one; an
       equality / IN conjunct over complete partition frequencies takes its exact counts
       from the table level's per-partition counts (``point_counts``) when it records
       them, instead of opening each partition's frequencies; the survivors' other
       frequencies and histograms come from the partition histograms (the provider
       is told which partitions to read, ``expect``) or are read ahead on threads from
       their files.
    4. Equality / IN conjuncts are scaled to the table level over all partitions (the
       same arithmetic on arrays)."""
    from lakestats.query import survivor_sets
    from lakestats.stats import selectivity_vector as sv
    from lakestats.threads import parallel, prefetch

    count = len(partitions)
    n = partitions.row_counts()
    live = n > 0
    k = len(top)
    rows = np.zeros((k, count), dtype=np.float64)
    lower = np.zeros((k, count), dtype=np.int64)
    upper = np.zeros((k, count), dtype=np.int64)
    computed = np.zeros((k, count), dtype=bool)
    cache = term_cache.terms_of(partitions) if VECTORISED_SURVIVORS else None
    entries = [cache.of(t) for t in top] if cache is not None else None
    points = [_point_keys(t) for t in top]
    for j, term in enumerate(top):
        kept = entries[j].scalar if entries is not None else None
        if kept is not None:  # this term's scalar pass, from an earlier predicate
            rows[j], lower[j], upper[j] = kept
            computed[j] = True
            continue
        cols = columns_of(term)
        if len(cols) != 1 or not _is_set(term):
            continue
        vectors = partitions.vectors(cols[0])
        if vectors is None:
            continue
        cs = column_set(term)
        batch = sv.scalar_estimates(vectors, cs.true, cs.null == "T")
        rows[j], lower[j], upper[j] = batch.rows, batch.lower, batch.upper
        computed[j] = ~batch.fallback
    for i in np.flatnonzero(live & ~computed.all(axis=0)):
        light = _ScalarView(partitions[int(i)])
        for j in np.flatnonzero(~computed[:, i]):
            e = _estimate(top[j], light)
            rows[j, i], lower[j, i], upper[j, i] = e.rows, e.lower, e.upper
    for j, entry in enumerate(entries or ()):
        if entry.scalar is None:
            entry.scalar = (rows[j].copy(), lower[j].copy(), upper[j].copy())
    survivors = np.flatnonzero(live & ~(upper == 0).any(axis=0))

    # 3. the survivors, with all their statistics
    if callable(getattr(partitions, "expect", None)):
        partitions.expect(columns_of(pred), survivors)
    counted: dict[int, np.ndarray] = {}
    for j, term in enumerate(top):
        point_keys = points[j]
        # one conjunct: its own estimate is the answer's, method included
        if point_keys is not None and len(survivors) and k > 1:
            got = partitions.point_counts(columns_of(term)[0], point_keys)
            if got is not None:
                counted[j] = got

    def full(i: int) -> list[sel.Estimate]:
        part = partitions[i]
        out = []
        for j, term in enumerate(top):
            c = counted[j][i] if j in counted else -1
            out.append(sel.Estimate.count(int(c), "frequencies") if c >= 0
                       else _estimate(term, part))
        return out

    visited = getattr(partitions, "visited", None)
    seen = partitions.visited_mask(columns_of(pred), survivors) if callable(visited) else None
    if entries is not None and all(e.covers(survivors) for e in entries):
        # every term's survivors estimated before (by other predicates): their numbers
        estimates = survivor_sets.vectorised(top, partitions, survivors, counted, entries)
    elif seen is not None and seen.all():
        # a resident estimator visited these before: their statistics are in memory,
        # threads would only add their overhead
        if VECTORISED_SURVIVORS:
            estimates = survivor_sets.vectorised(top, partitions, survivors, counted, entries)
        else:
            estimates = {i: full(i) for i in survivors.tolist()}
    elif (
        VECTORISED_SURVIVORS
        and seen is not None
        and all(len(columns_of(t)) == 1 and _is_set(t) for t in top)
        and all(partitions.held(c) is not None for c in columns_of(pred))
    ):
        # not visited, but the partition histograms hold these columns: their listed
        # values are laid out as NumPy keys from the held rows (``survivors.Fixed``),
        # no Python object per value, and estimated as vectors
        estimates = survivor_sets.vectorised(top, partitions, survivors, counted, entries)
        partitions.mark_visited(columns_of(pred), survivors)
    elif (
        VECTORISED_SURVIVORS
        and seen is not None
        and seen.mean() >= 0.5
        and all(c in partitions.listed_cache for c in columns_of(pred))
    ):
        # mostly visited, the columns' listed values already laid out: the others'
        # statistics read (on threads, as below), then all of them as vectors
        new = survivors[~seen].tolist()
        with parallel():
            for _ in prefetch(full, new):  # read, the numbers come from the vectors
                pass
        partitions.mark_visited(columns_of(pred), survivors)
        estimates = survivor_sets.vectorised(top, partitions, survivors, counted, entries)
    else:
        with parallel():  # the survivors' file reads overlap (Parquet releases the GIL)
            estimates = dict(
                zip(survivors.tolist(), prefetch(full, survivors.tolist()), strict=True)
            )
        if callable(visited):
            partitions.mark_visited(columns_of(pred), survivors)
        for j, entry in enumerate(entries or ()):  # the terms' own estimates, kept
            for i, conjuncts in estimates.items():
                if j not in counted or counted[j][i] < 0:
                    entry.record(i, conjuncts[j])
    if isinstance(estimates, survivor_sets.Survivors):
        rows[:, survivors], lower[:, survivors], upper[:, survivors] = (
            estimates.rows, estimates.lower, estimates.upper
        )
    else:
        for i, conjuncts in estimates.items():
            for j, e in enumerate(conjuncts):
                rows[j, i], lower[j, i], upper[j, i] = e.rows, e.lower, e.upper

    # 4. equality / IN conjuncts scaled to the table level
    if table is not None:
        for j, term in enumerate(top):
            point_keys = points[j]
            if point_keys is None:
                continue
            exact = lower[j] == upper[j]
            loose = live & ~exact
            if not loose.any():
                continue
            def target_of(term: Predicate = term, point_keys: list[bytes] = point_keys) -> float:
                summary = table.summary(columns_of(term)[0])
                return sel.estimate_keys(summary, kr.points(point_keys)).rows

            target = (entries[j].table_target(table, target_of) if entries is not None
                      else target_of())
            fixed = sum(rows[j][live & exact].tolist())
            want = max(0.0, target - fixed)
            have = sum(rows[j][loose].tolist())
            weights = rows[j][loose] if have > 0 else upper[j][loose].astype(np.float64)
            scale = want / (sum(weights.tolist()) or 1.0)
            scaled = sv._of(weights * scale, lower[j][loose], upper[j][loose])[0]
            rows[j][loose] = scaled
            for i in np.flatnonzero(loose):
                if int(i) in estimates:
                    e = estimates[int(i)][j]
                    estimates[int(i)][j] = sel.Estimate.of(
                        rows[j, i], e.lower, e.upper, e.method + " (scaled to table level)"
                    )

    total_rows = int(n.sum())
    detail = []
    for j, t in enumerate(top):
        kept = live
        if entries is not None:
            if entries[j].normalized is None:
                entries[j].normalized = normalize(t)
            text = entries[j].normalized
        else:
            text = normalize(t)
        detail.append(
            {
                "predicate": text,
                "row_count": sum(rows[j][kept].tolist()),
                "lower": int(lower[j][kept].sum()),
                "upper": int(upper[j][kept].sum()),
                "exact": bool(np.all(lower[j][kept] == upper[j][kept])),
                "selectivity": 0.0,
            }
        )
        if not detail[-1]["row_count"]:
            detail[-1]["row_count"] = 0.0
    order = (estimates.survivors if isinstance(estimates, survivor_sets.Survivors)
             else np.fromiter(estimates, dtype=np.int64, count=len(estimates)))
    summed, matching = survivor_sets.combine(partitions, n, order, rows, lower, upper,
                                          estimates if k == 1 else None)
    return _estimate_result(pred, summed, total_rows, matching, detail)


VECTORISED_SURVIVORS = True
"""Whether a resident estimator's survivors are estimated as vectors (the tests compare
both ways)."""


def _matching_entry(part: PartitionStatistics, rows: int, e: sel.Estimate) -> dict[str, object]:
    """One partition that can match, as ``estimate`` lists it."""
    return {
        "partition": part.values,
        "name": part.name,
        "partition_rows": rows,
        "row_count": e.rows,
        "lower": e.lower,
        "upper": e.upper,
        "exact": e.exact,
        "method": e.method,
    }


def _estimate_result(
    pred: Predicate,
    summed: tuple[float, int, int, bool],
    total_rows: int,
    matching: list,
    detail: list,
) -> dict[str, object]:
    """``estimate``'s answer from the summed (rows, lower, upper, exact), the partitions that
    can match and the per-conjunct detail (each given its selectivity here)."""
    rows, lower, upper, exact = summed
    for d in detail:
        d["selectivity"] = d["row_count"] / total_rows if total_rows else 0.0
    return {
        "predicate": normalize(pred),
        "row_count": rows,
        "lower": lower,
        "upper": upper,
        "exact": exact,
        "selectivity": rows / total_rows if total_rows else 0.0,
        "table_rows": total_rows,
        "partitions": matching,
        "detail": detail,
    }


class _ScalarView:
    """A partition's min/max, counts and flags only: frequencies and histograms unread."""

    def __init__(self, part: PartitionStatistics) -> None:
        self.part = part
        self.name, self.values, self.row_count = part.name, part.values, part.row_count

    def summary(self, column: str) -> sel.ColumnSummary:
        full = self.part.summary(column)
        return replace(full, frequencies_source=None, histogram_source=None)


def _conjunct_estimates(top: list[Predicate], part: PartitionStatistics) -> list[sel.Estimate]:
    """Each conjunct's estimate in ``part``. Conjuncts are first estimated from the
    scalars alone: when one of them keeps nothing, the partition is pruned and those
    (sound, coarser) estimates stand, so a pruned partition never loads frequencies or
    a histogram; otherwise every conjunct is estimated with all the statistics."""
    if len(top) > 1:
        light = _ScalarView(part)
        first = [_estimate(t, light) for t in top]
        if any(e.upper == 0 for e in first):
            return first
    return [_estimate(t, part) for t in top]


def _point_keys(term: Predicate) -> list[bytes] | None:
    """The values of an equality / IN term on one column (NULL not kept), else None."""
    if len(columns_of(term)) != 1 or not _is_set(term):
        return None
    cs = column_set(term)
    if cs.null == "T" or not cs.true or any(r.point is None for r in cs.true):
        return None
    return [r.point for r in cs.true]


def _scale_to_table(
    evaluated: list[tuple[PartitionStatistics, list[sel.Estimate]]],
    j: int,
    table_summary: sel.ColumnSummary,
    point_keys: list[bytes],
) -> None:
    loose = [(i, c[j]) for i, (_, c) in enumerate(evaluated) if not c[j].exact]
    if not loose:
        return
    target = sel.estimate_keys(table_summary, kr.points(point_keys)).rows
    fixed = sum(c[j].rows for _, c in evaluated if c[j].exact)
    want = max(0.0, target - fixed)
    have = sum(e.rows for _, e in loose)
    weights = [e.rows for _, e in loose] if have > 0 else [float(e.upper) for _, e in loose]
    scale = want / (sum(weights) or 1.0)
    for (i, e), w in zip(loose, weights, strict=True):
        evaluated[i][1][j] = sel.Estimate.of(
            w * scale, e.lower, e.upper, e.method + " (scaled to table level)"
        )


__all__ = [
    "And",
    "Between",
    "ColumnSet",
    "Compare",
    "In",
    "IsNull",
    "Like",
    "Literal",
    "Not",
    "Or",
    "PartitionStatistics",
    "Predicate",
    "PrefixLike",
    "can_match",
    "column_set",
    "columns_of",
    "combine_and",
    "combine_or",
    "estimate",
    "matching_positions",
    "normalize",
    "parse",
    "push_not",
    "terms",
]
