"""The boolean skeleton of a predicate's text (AND, OR, NOT, parentheses), read without
recursion on its length, and the limits every predicate is held to.

sqlglot's parser recurses about twenty Python frames per parenthesis and nine per
``NOT``, so 50 nested parentheses or 500 ``NOT``s exhaust Python's recursion limit, and
its left-deep ``OR`` chains make every tree walk recurse once per disjunct. Planners
generate exactly such text. So the text is tokenized (sqlglot's tokenizer is a loop),
checked against the limits below, and split here into conditions joined by AND / OR /
NOT: chains of one operator become one n-ary node, runs of ``NOT`` cancel pairwise, and
redundant parentheses vanish. Only each condition (``n IN (1, 2)``, ``d BETWEEN 1 AND
5``) is handed to sqlglot, whose depth is then bounded by ``MAX_NESTING``.

The limits (documented in docs/limits.md) bound the work of one predicate before any of
it is done: the depth of nested parentheses, the number of conditions, the values of its
IN lists in all (``check_in_values``, a setting), and the length of the text this
general path tokenizes (a conjunction of plain conditions and IN lists of literals, what
planners send, is read without it: ``plain`` and ``in_list``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from lakestats.errors import InvalidPredicateError, PredicateTooLargeError

MAX_PREDICATE_CHARS = 65_536
"""Characters of a predicate read by the general path (OR, NOT, parentheses, functions)."""
MAX_NESTING = 100
MAX_CONDITIONS = 10_000

T = TypeVar("T")


def check_length(text: str) -> None:
    """Refuse a predicate longer than ``MAX_PREDICATE_CHARS`` before tokenizing it."""
    if len(text) > MAX_PREDICATE_CHARS:
        raise PredicateTooLargeError(
            f"the predicate is {len(text):,} characters long, over the limit of "
            f"{MAX_PREDICATE_CHARS:,} for predicates with OR, NOT, parentheses or other "
            "than plain conditions: write it as conditions joined by AND (long value "
            "lists as column IN (...), which have no length limit), or split it"
        )


def max_in_values() -> int:
    """The setting ``max_in_values``: the values a predicate's IN lists hold in all."""
    from lakestats.config import settings

    return settings().max_in_values


def check_in_values(total: int, column: str, limit: int) -> None:
    """Refuse IN lists holding ``total`` values in all (the last on ``column``) when
    that is over ``limit``, before their values are typed."""
    if total > limit:
        raise PredicateTooLargeError(
            f"the predicate's IN lists hold {total:,} values (the list on {column!r} "
            f"reached it), over the limit of {limit:,}: raise the setting max_in_values "
            "(LAKESTATS_MAX_IN_VALUES, or [query] max_in_values in the config file), or "
            "split the list over several estimates"
        )


def tokenize(text: str) -> list:
    """sqlglot's tokens of ``text`` (a loop, no recursion), after the length check."""
    from sqlglot import tokenize as sqlglot_tokenize
    from sqlglot.errors import TokenError

    check_length(text)
    try:
        return sqlglot_tokenize(text)
    except TokenError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidPredicateError(f"cannot parse predicate {text!r}: {first}") from exc


def _check_nesting(text: str, tokens: list) -> None:
    from sqlglot.tokens import TokenType

    depth = deepest = 0
    for tok in tokens:
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
            deepest = max(deepest, depth)
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth < 0:
                raise InvalidPredicateError(
                    f"cannot parse predicate {_short(text)}: a ')' at character "
                    f"{tok.start + 1} closes no '('"
                )
    if depth > 0:
        raise InvalidPredicateError(
            f"cannot parse predicate {_short(text)}: {depth} '(' never closed"
        )
    if deepest > MAX_NESTING:
        raise PredicateTooLargeError(
            f"the predicate nests parentheses {deepest} deep, over the limit of "
            f"{MAX_NESTING}: remove redundant parentheses or flatten it"
        )


def _short(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:77] + "...")


class _Kind:
    AND = "and"
    OR = "or"


class Skeleton(Generic[T]):
    """Recursive descent over the boolean operators only; its depth is the depth of
    nested parentheses, checked against ``MAX_NESTING`` first. ``leaf(text, negate)``
    builds a condition, ``join(kind, children)`` an n-ary AND or OR (kind "and"/"or")."""

    def __init__(
        self,
        text: str,
        leaf: Callable[[str, bool], T],
        join: Callable[[str, list[T]], T],
    ) -> None:
        from sqlglot.tokens import TokenType

        self.text = text
        self.tokens = tokenize(text)
        _check_nesting(text, self.tokens)
        self.leaf, self.join = leaf, join
        self.pos = 0
        self.conditions = 0
        self.T = TokenType
        self.match = self._matching_parens()

    def _matching_parens(self) -> dict[int, int]:
        match: dict[int, int] = {}
        opened: list[int] = []
        for i, tok in enumerate(self.tokens):
            if tok.token_type == self.T.L_PAREN:
                opened.append(i)
            elif tok.token_type == self.T.R_PAREN:
                match[opened.pop()] = i
        return match

    def parse(self) -> T:
        if not self.tokens:
            raise InvalidPredicateError("the predicate is empty: pass --where 'column = value'")
        out = self._expr(False, len(self.tokens))
        if self.pos != len(self.tokens):
            tok = self.tokens[self.pos]
            raise InvalidPredicateError(
                f"cannot parse predicate {_short(self.text)}: unexpected {tok.text!r} at "
                f"character {tok.start + 1}"
            )
        return out

    def _expr(self, negate: bool, stop: int) -> T:
        """OR of ANDs up to token ``stop`` (exclusive); under ``negate``, De Morgan."""
        groups = [self._conjunction(negate, stop)]
        while self.pos < stop and self.tokens[self.pos].token_type == self.T.OR:
            self.pos += 1
            groups.append(self._conjunction(negate, stop))
        return self._joined(_Kind.AND if negate else _Kind.OR, groups)

    def _conjunction(self, negate: bool, stop: int) -> T:
        items = [self._unary(negate, stop)]
        while self.pos < stop and self.tokens[self.pos].token_type == self.T.AND:
            self.pos += 1
            items.append(self._unary(negate, stop))
        return self._joined(_Kind.OR if negate else _Kind.AND, items)

    def _joined(self, kind: str, items: list[T]) -> T:
        if len(items) == 1:
            return items[0]
        return self.join(kind, items)

    def _unary(self, negate: bool, stop: int) -> T:
        while self.pos < stop and self.tokens[self.pos].token_type == self.T.NOT:
            negate = not negate
            self.pos += 1
        if self.pos >= stop:
            raise self._missing()
        tok = self.tokens[self.pos]
        if tok.token_type == self.T.L_PAREN:
            close = self.match[self.pos]
            after = self.tokens[close + 1].token_type if close + 1 < len(self.tokens) else None
            if after in (None, self.T.AND, self.T.OR, self.T.R_PAREN):  # a group
                if close == self.pos + 1:
                    raise InvalidPredicateError(
                        f"cannot parse predicate {_short(self.text)}: empty parentheses at "
                        f"character {tok.start + 1}"
                    )
                self.pos += 1
                inner = self._expr(negate, close)
                if self.pos != close:
                    bad = self.tokens[self.pos]
                    raise InvalidPredicateError(
                        f"cannot parse predicate {_short(self.text)}: unexpected "
                        f"{bad.text!r} at character {bad.start + 1}"
                    )
                self.pos = close + 1
                return inner
        return self._condition(negate, stop)

    def _condition(self, negate: bool, stop: int) -> T:
        """Tokens up to the next AND / OR / ')' outside parentheses (a BETWEEN's AND and
        a CASE's inside belong to the condition)."""
        first = self.pos
        pending_between = 0
        cases = 0
        while self.pos < stop:
            kind = self.tokens[self.pos].token_type
            if kind == self.T.L_PAREN:
                self.pos = self.match[self.pos] + 1
                continue
            if kind == self.T.R_PAREN:
                break
            if kind == self.T.CASE:
                cases += 1
            elif kind == self.T.END and cases:
                cases -= 1
            elif kind == self.T.BETWEEN:
                pending_between += 1
            elif kind == self.T.AND and pending_between and not cases:
                pending_between -= 1
            elif kind in (self.T.AND, self.T.OR) and not cases:
                break
            self.pos += 1
        if self.pos == first:
            raise self._missing()
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise PredicateTooLargeError(
                f"the predicate has over {MAX_CONDITIONS:,} conditions: use IN lists for "
                "many values of one column"
            )
        start = self.tokens[first].start
        end = self.tokens[self.pos - 1].end + 1
        return self.leaf(self.text[start:end], negate)

    def _missing(self) -> InvalidPredicateError:
        if self.pos < len(self.tokens):
            tok = self.tokens[self.pos]
            where = f"before {tok.text!r} at character {tok.start + 1}"
        else:
            where = "at its end"
        return InvalidPredicateError(
            f"cannot parse predicate {_short(self.text)}: a condition is missing {where}"
        )


__all__ = [
    "MAX_CONDITIONS",
    "MAX_NESTING",
    "MAX_PREDICATE_CHARS",
    "Skeleton",
    "check_in_values",
    "check_length",
    "max_in_values",
    "tokenize",
]
