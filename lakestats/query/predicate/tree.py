"""The predicate tree: frozen nodes whose literals are typed and carry their order-preserving
key (``lakestats.stats.keys``), so comparisons against stored min, max and frequency values
are byte comparisons. ``Not`` exists for callers that build trees by hand; the parser pushes
NOT into the leaves with SQL's three-valued logic (``push_not``)."""

from __future__ import annotations

import re
from dataclasses import dataclass


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

    def __hash__(self) -> int:
        """The fields' hash; a long list's remembered per object (an estimate looks a
        term up in several caches: 100,000 values hashed each time add up)."""
        if len(self.values) < 64:
            return hash((self.column, self.values, self.negated, self.has_null))
        found = _HASHES.get(id(self))
        if found is None or found[0] is not self:
            if len(_HASHES) >= 64:
                _HASHES.clear()
            found = _HASHES[id(self)] = (
                self, hash((self.column, self.values, self.negated, self.has_null))
            )
        return found[1]


_HASHES: dict[int, tuple[In, int]] = {}


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

FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
NEGATE = {"=": "<>", "<>": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


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
        return Compare(pred.column, NEGATE[pred.op], pred.value)
    return type(pred)(**{**pred.__dict__, "negated": not pred.negated})



def split_pattern(pattern: str, escape: str | None) -> tuple[str, str | None]:
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

