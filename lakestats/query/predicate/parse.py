"""SQL text to the predicate tree: sqlglot reads a condition, the parser types its literals
by the column's Arrow type and refuses what the estimator cannot answer, with a message that
says what to write instead. Plain conditions (``plain``) skip sqlglot."""

from __future__ import annotations

from collections.abc import Container, Mapping

import pyarrow as pa

from lakestats.errors import (
    ColumnNotFoundError,
    InvalidPredicateError,
    LakestatsError,
    PredicateTooLargeError,
    StatisticsNotFoundError,
    UnsupportedPredicateError,
)
from lakestats.query.predicate import in_list, plain, typed
from lakestats.query.predicate import keywords as sql_keywords
from lakestats.query.predicate import literal as lit
from lakestats.query.predicate import text as predicate_text
from lakestats.query.predicate import tree as t
from lakestats.query.predicate.typed_many import typed_many
from lakestats.stats import leaves
from lakestats.stats.kinds import Kind, kind_of


def parse(
    text: str,
    columns: Mapping[str, pa.DataType],
    unanalyzed: Container[str] = (),
    parsed: dict[str, t.Predicate] | None = None,
) -> t.Predicate:
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
    conditions = plain.simple_conjuncts(text)
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


def _join(kind: str, children: list[t.Predicate]) -> t.Predicate:
    node = t.And if kind == "and" else t.Or
    flat: list[t.Predicate] = []
    for child in children:  # (a OR b) OR c is one OR: the tree stays shallow
        flat.extend(child.children if isinstance(child, node) else (child,))
    return node(tuple(flat))


def _parse_general(text: str, parser: _Parser) -> t.Predicate:
    try:
        return predicate_text.Skeleton(text, parser.condition, _join).parse()
    except RecursionError as exc:  # sqlglot within one condition, e.g. n = ((((1))))
        raise PredicateTooLargeError(
            f"the predicate is nested too deeply to read: at most {predicate_text.MAX_NESTING}"
            " levels of parentheses, fewer inside one condition; remove redundant ones"
        ) from exc





class _NotPlain(Exception):
    """A plain condition that ``_Parser.plain`` leaves to sqlglot's path."""


class _Parser:
    def __init__(self, columns: Mapping[str, pa.DataType], unanalyzed: Container[str]) -> None:
        self.columns = columns
        self.unanalyzed = unanalyzed
        self.in_values = 0  # values of the IN lists read so far
        self.in_limit: int | None = None

    def count_in_values(self, count: int, column: str) -> None:
        """Add an IN list's ``count`` values to the predicate's; over the setting
        ``max_in_values``, refuse it before its values are typed."""
        self.in_values += count
        if self.in_limit is None:
            self.in_limit = predicate_text.max_in_values()
        predicate_text.check_in_values(self.in_values, column, self.in_limit)

    def condition(self, text: str, negate: bool) -> t.Predicate:
        """One condition of the predicate (no top-level AND / OR / NOT), via sqlglot."""
        groups = plain.simple_groups(text)
        if groups is not None:  # column op literal: what ``node`` makes of its tree
            return self.simple(groups, negate)
        counted = self.in_values  # a condition left to sqlglot's path counts its own
        listed = in_list.read_whole(text)
        if listed is not None:
            try:
                return self.in_list(listed, negate)
            except _NotPlain:  # a value sqlglot's path words the error of
                self.in_values = counted
        form = plain.plain_groups(text)
        if form is not None:
            try:
                return self.plain(*form, negate)
            except (LakestatsError, _NotPlain):  # sqlglot's path says what is wrong
                self.in_values = counted
        import sqlglot
        from sqlglot.errors import ParseError, TokenError

        try:
            tree = sqlglot.parse_one(text)
        except (ParseError, TokenError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InvalidPredicateError(
                f"cannot parse predicate {lit.clip(text)!r}: {first}"
            ) from exc
        return self.node(tree, negate)

    def simple(self, groups: tuple, negate: bool) -> t.Predicate:
        """``node`` of ``simple_comparison``'s tree, without sqlglot: the same checks in
        the same order, so the same predicate or error."""
        name, op, minus, number, string = groups
        op = "<>" if op == "!=" else op
        column, dtype = self.column_named(sql_keywords.name_parts(name))
        if number is not None:
            value = typed.number(f"-{number}" if minus else number, column, dtype)
        else:
            value = typed.literal_value(string.replace("''", "'"), column, dtype)
        return t.Compare(column, t.NEGATE[op] if negate else op, value)

    def in_list(self, found: in_list.InList, negate: bool) -> t.Predicate:
        """``node`` of sqlglot's tree of an IN list of literals (``in_list``), without
        sqlglot: the same checks in the same order, its values typed together."""
        column, dtype = self.column_named(found.parts)
        self.count_in_values(len(found.values), column)

        def one(kind: str, text: str) -> t.Literal | None:
            return self.written(kind, text, column, dtype)

        by_key: dict[bytes, t.Literal] = {}
        has_null = False
        for value in typed_many(found.values, dtype, one):
            if value is None:
                has_null = True
            else:
                by_key[value.key] = value
        ordered = tuple(map(by_key.__getitem__, sorted(by_key)))
        return t.In(column, ordered, negated=negate != found.negated, has_null=has_null)

    def written(self, kind: str, text: str, column: str, dtype: pa.DataType) -> t.Literal | None:
        """``literal`` of one value as ``in_list`` read it (kind, text); a refusal that
        ``literal`` words from sqlglot's tree (a boolean or a DATE / TIMESTAMP literal in
        a column of another type) raises ``_NotPlain``."""
        if kind == "null":
            return None
        if kind == "string":
            return typed.literal_value(text, column, dtype)
        if kind == "number":
            return typed.number(text, column, dtype)
        if kind in ("true", "false"):
            if kind_of(dtype) != Kind.BOOLEAN:
                raise _NotPlain
            return lit.make_literal(kind == "true", dtype)
        if kind_of(dtype) != Kind.TEMPORAL:  # DATE '...', TIMESTAMP '...'
            raise _NotPlain
        return typed.literal_value(text, column, dtype)

    def _lit(self, text: str, column: str, dtype: pa.DataType) -> t.Literal:
        number, string = plain.literal_text(text)
        if number is not None:
            return typed.number(number, column, dtype)
        return typed.literal_value(string, column, dtype)

    def plain(self, form: str, groups: tuple, negate: bool) -> t.Predicate:
        """What ``node`` makes of sqlglot's tree of a ``_plain_groups`` condition, when it
        makes a predicate; any refusal raises (the caller then asks sqlglot's path for its
        exact error)."""
        column, dtype = self.column_named(sql_keywords.name_parts(groups[0]))
        if form == "null":
            return t.IsNull(column, negated=negate != bool(groups[1]))
        if form == "between":
            low, high = self._lit(groups[1], column, dtype), self._lit(groups[2], column, dtype)
            return t.Between(column, low, high, negated=negate)
        if form == "in":
            items = plain.LIT_RE.findall(groups[1])
            self.count_in_values(len(items), column)
            values = [self._lit(v, column, dtype) for v in items]
            by_key = {v.key: v for v in values}
            ordered = tuple(by_key[k] for k in sorted(by_key))
            return t.In(column, ordered, negated=negate, has_null=False)
        if form == "like":
            if kind_of(dtype) != Kind.STRING:
                raise _NotPlain
            pattern = groups[1].replace("''", "'")
            head, wildcard_tail = t.split_pattern(pattern, None)
            if wildcard_tail is None:
                lit = typed.literal_value(head, column, dtype)
                return t.Compare(column, "<>" if negate else "=", lit)
            if wildcard_tail == "%":
                return t.PrefixLike(column, head, negated=negate)
            return t.Like(column, pattern, negated=negate, escape=None)
        # typed: column op DATE|TIMESTAMP 'text'
        _, op, family, text = groups
        if kind_of(dtype) != Kind.TEMPORAL:
            raise _NotPlain
        op = "<>" if op == "!=" else op
        value = typed.literal_value(text.replace("''", "'"), column, dtype)
        del family  # both families are allowed for a temporal column
        return t.Compare(column, t.NEGATE[op] if negate else op, value)

    def node(self, e, negate: bool) -> t.Predicate:  # noqa: ANN001
        from sqlglot import exp

        ops = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
        if isinstance(e, exp.Paren):
            return self.node(e.this, negate)
        if isinstance(e, exp.Not):
            return self.node(e.this, not negate)
        if isinstance(e, exp.And | exp.Or):
            kids = (self.node(e.left, negate), self.node(e.right, negate))
            is_and = isinstance(e, exp.And) != negate  # De Morgan
            return t.And(kids) if is_and else t.Or(kids)
        if type(e) in ops:
            op = ops[type(e)]
            left, right = e.left, e.right
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                left, right, op = right, left, t.FLIP[op]
            column, dtype = self.column(left, e)
            if isinstance(right, exp.Column):
                raise UnsupportedPredicateError(
                    f"comparing two columns ({e.sql()}) is not supported: compare a column "
                    "with a literal"
                )
            value = typed.sql_literal(right, column, dtype)
            if value is None:
                raise InvalidPredicateError(
                    f"{e.sql()} is never true in SQL: write {column} IS NULL instead"
                )
            return t.Compare(column, t.NEGATE[op] if negate else op, value)
        if isinstance(e, exp.Between):
            column, dtype = self.column(e.this, e)
            low, high = typed.sql_literal(e.args["low"], column, dtype), typed.sql_literal(
                e.args["high"], column, dtype
            )
            if low is None or high is None:
                raise InvalidPredicateError(f"{e.sql()}: BETWEEN needs two non-NULL values")
            return t.Between(column, low, high, negated=negate)
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
            self.count_in_values(len(e.expressions), column)
            values = [typed.sql_literal(v, column, dtype) for v in e.expressions]
            by_key = {v.key: v for v in values if v is not None}
            ordered = tuple(by_key[k] for k in sorted(by_key))
            return t.In(column, ordered, negated=negate, has_null=None in values)
        if isinstance(e, exp.Is):
            if not isinstance(e.expression, exp.Null):
                raise UnsupportedPredicateError(
                    f"{e.sql()} is not supported: only IS NULL and IS NOT NULL are"
                )
            column, _ = self.column(e.this, e)
            return t.IsNull(column, negated=negate)
        if isinstance(e, exp.Escape) and isinstance(e.this, exp.Like):
            escape = self.string(e.expression, e)
            if len(escape) != 1:
                raise InvalidPredicateError(f"{e.sql()}: the ESCAPE string must be one character")
            return self.like(e.this, negate, escape)
        if isinstance(e, exp.Like):
            return self.like(e, negate, None)
        raise UnsupportedPredicateError(f"unsupported syntax in predicate: {typed.describe(e)}")

    def like(self, e, negate: bool, escape: str | None) -> t.Predicate:  # noqa: ANN001
        column, dtype = self.column(e.this, e)
        if kind_of(dtype) != Kind.STRING:
            raise InvalidPredicateError(
                f"{e.sql()}: LIKE needs a string column; {column!r} is {dtype}"
            )
        pattern = self.string(e.expression, e)
        negate = negate != bool(e.args.get("negate"))
        head, wildcard_tail = t.split_pattern(pattern, escape)
        if wildcard_tail is None:  # no wildcard: an equality
            lit = typed.literal_value(head, column, dtype)
            return t.Compare(column, "<>" if negate else "=", lit)
        if wildcard_tail == "%":
            return t.PrefixLike(column, head, negated=negate)
        return t.Like(column, pattern, negated=negate, escape=escape)

    def string(self, e, parent) -> str:  # noqa: ANN001
        from sqlglot import exp

        if isinstance(e, exp.Literal) and e.is_string:
            return e.this
        raise UnsupportedPredicateError(
            f"{parent.sql()}: expected a string literal, got {typed.describe(e)}"
        )

    def column(self, e, parent) -> tuple[str, pa.DataType]:  # noqa: ANN001
        from sqlglot import exp

        if not isinstance(e, exp.Column):
            raise UnsupportedPredicateError(
                f"unsupported syntax in predicate: {typed.describe(e)} in {parent.sql()} "
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
