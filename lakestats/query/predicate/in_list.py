"""``column [NOT] IN (literal, ...)`` read without sqlglot, as planners send it: a
semi-join's keys pushed down as one list of 100,000 values or more.

sqlglot tokenizes and builds a node per value (seconds for 100,000 values); here one
regular expression finds the column and the list's end, another reads the values, and
the values of one kind (strings, integers, decimals, dates) are typed together
(``typed_many``). The tree is the one the general path makes of the same text
(``_Parser.node`` of sqlglot's tree): the same ``In`` with the same literals, or the same
error; tests/query/test_in_lists.py compares the two on a corpus. Any other form (an
expression among the values, a keyword as the column, backslashes in a string) is left
to the general path (``read`` answers None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lakestats.query.predicate import keywords as sql_keywords

_HEAD = re.compile(rf"\s*{sql_keywords.NAME}\s+(NOT\s+)?IN\s*\(", re.IGNORECASE)
_STRING = r"'(?:[^'\\]|'')*'"
_VALUE = (rf"(?:{_STRING}|-?\d+(?:\.\d+)?(?![\w.])|(?:DATE|TIMESTAMP)\s+{_STRING}"
          r"|(?:NULL|TRUE|FALSE)(?!\w))")
_LIST = re.compile(rf"\s*{_VALUE}(?:\s*,\s*{_VALUE})*\s*\)\s*", re.IGNORECASE)
_ITEM = re.compile(
    r"'((?:[^'\\]|'')*)'|(-?\d+(?:\.\d+)?)|(DATE|TIMESTAMP)\s+'((?:[^'\\]|'')*)'|(NULL|TRUE|FALSE)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class InList:
    """An IN list's parts as written: the column reference (``parts`` as sqlglot names
    them), NOT, and each value as (kind, text): ``"string"`` (unescaped), ``"number"``
    (with its minus sign), ``"date"`` / ``"timestamp"`` (the quoted text), ``"null"``,
    ``"true"``, ``"false"``."""

    parts: tuple[str, ...]
    negated: bool
    values: list[tuple[str, str]]


def read(text: str, pos: int = 0) -> tuple[InList, int] | None:
    """The IN list starting at ``pos`` of ``text`` (whitespace before it skipped) and
    where it ends (after the closing parenthesis and any whitespace), or None when the
    text there is no IN list of literals this reader knows."""
    head = _HEAD.match(text, pos)
    if head is None:
        return None
    name, negated = head.group(1), head.group(2)
    if sql_keywords.is_keyword(name):
        return None
    parts = sql_keywords.name_parts(name)
    whole = _LIST.match(text, head.end())
    if whole is None:
        return None
    values = [_value(*groups) for groups in _ITEM.findall(text, head.end(), whole.end())]
    return InList(parts, negated is not None, values), whole.end()


def _value(string: str, number: str, family: str, typed: str, word: str) -> tuple[str, str]:
    """One value as ``InList.values`` holds it, from ``_ITEM``'s groups."""
    if number:
        return "number", number
    if family:
        return family.lower(), typed.replace("''", "'")
    if word:
        return word.lower(), word
    return "string", string.replace("''", "'")


def read_whole(text: str) -> InList | None:
    """``read`` when the whole ``text`` is one IN list, else None; the list a
    conjunction's split (``plain.simple_conjuncts``) just read is not read again."""
    kept = _READ.get(text)
    if kept is not None:
        return kept
    found = read(text)
    if found is None or found[1] != len(text):
        return None
    return found[0]


def remember(condition: str, found: InList) -> None:
    """Keep ``found``, read from ``condition``, for the next ``read_whole`` of it."""
    if len(_READ) >= 8:
        _READ.clear()
    _READ[condition] = found


_READ: dict[str, InList] = {}


__all__ = ["InList", "read", "read_whole", "remember"]
