"""Conditions read without sqlglot: ``column op literal`` and the other plain forms a
planner sends (IS [NOT] NULL, BETWEEN, IN, LIKE, typed DATE/TIMESTAMP literals; IN lists
of any length through ``in_list``) are recognised by regular expressions, so a simple
conjunction is split without tokenizing it. A column may be double-quoted and a condition
parenthesized, as lakestats' Spark component writes every question (``("k" >= 3) AND ("k"
IS NOT NULL)``)."""

from __future__ import annotations

import re

from lakestats.query.predicate import in_list
from lakestats.query.predicate import keywords as sql_keywords
from lakestats.query.predicate import text as predicate_text

_AND = re.compile(r"AND\s+", re.IGNORECASE)
_OPEN = re.compile(r"\s*\(")
_CLOSE = re.compile(r"\s*\)\s*")


def simple_conjuncts(text: str) -> list[str] | None:
    """The conditions of ``text`` when it is one or more ``simple_comparison``s or other
    plain conditions joined by AND (whitespace around each AND), each in one pair of
    parentheses or none, else None (the general path reads it). An IN list of literals
    (``in_list``) is one such condition, however long."""
    out: list[str] = []
    pos = 0
    while True:
        opened = _OPEN.match(text, pos)
        start = opened.end() if opened is not None else pos
        listed = in_list.read(text, start)
        if listed is not None:
            out.append(text[start:listed[1]].strip())
            if len(out[-1]) > 4096:  # its values are not read again
                in_list.remember(out[-1], listed[0])
            pos = listed[1]
        else:
            match = _SIMPLE.match(text, start)
            if match is None or simple_groups(match.group(0)) is None:
                match = _PLAIN.match(text, start)
                if match is None or plain_groups(match.group(0)) is None:
                    return None
            out.append(match.group(0).strip())
            pos = match.end()
        if opened is not None:
            closed = _CLOSE.match(text, pos)
            if closed is None:
                return None
            pos = closed.end()
        if pos == len(text):
            break
        joined = _AND.match(text, pos)
        if joined is None or not text[pos - 1].isspace():
            return None
        pos = joined.end()
    return out if len(out) <= predicate_text.MAX_CONDITIONS else None


_SIMPLE = re.compile(
    rf"\s*{sql_keywords.NAME}\s*(<>|!=|<=|>=|=|<|>)\s*"
    r"(?:(-?)(\d+(?:\.\d+)?)|'((?:[^'\\]|'')*)')\s*"
)


def simple_comparison(text: str):  # noqa: ANN201 - a sqlglot expression or None
    """``column op literal`` (a quoted name or an unquoted one that is no keyword, a
    comparison, a plain decimal number or a string without backslashes) as the tree
    ``sqlglot.parse_one`` returns for it, built without parsing (a planner's predicates
    are mostly these); None for any other text, which sqlglot then parses."""
    groups = simple_groups(text)
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
    (part,) = sql_keywords.name_parts(name)
    column = exp.Column(this=exp.Identifier(this=part, quoted=name.startswith('"')))
    return kind(this=column, expression=value)


def simple_groups(text: str) -> tuple | None:
    """``simple_comparison``'s parts of ``text`` (name as written, operator, minus,
    number, string), or None; sqlglot's keywords (``sql_keywords``) unquoted are no column
    name here."""
    match = _SIMPLE.fullmatch(text)
    if match is None or sql_keywords.is_keyword(match.group(1)):
        return None
    return match.groups()


_LIT = r"(?:-?\d+(?:\.\d+)?|'(?:[^'\\]|'')*')"
_PLAIN_FORMS = {
    "null": rf"\s*{sql_keywords.NAME}\s+IS\s+(NOT\s+)?NULL\s*",
    "between": rf"\s*{sql_keywords.NAME}\s+BETWEEN\s+({_LIT})\s+AND\s+({_LIT})\s*",
    "in": rf"\s*{sql_keywords.NAME}\s+IN\s*\(\s*({_LIT}(?:\s*,\s*{_LIT})*)\s*\)\s*",
    "like": rf"\s*{sql_keywords.NAME}\s+LIKE\s+'((?:[^'\\]|'')*)'\s*",
    "typed": rf"\s*{sql_keywords.NAME}\s*(<>|!=|<=|>=|=|<|>)\s*(DATE|TIMESTAMP)\s+"
             r"'((?:[^'\\]|'')*)'\s*",
}
_PLAIN_RE = {k: re.compile(v, re.IGNORECASE) for k, v in _PLAIN_FORMS.items()}
_PLAIN = re.compile("|".join(f"(?:{v})" for v in _PLAIN_FORMS.values()), re.IGNORECASE)
LIT_RE = re.compile(_LIT)


def plain_groups(text: str) -> tuple[str, tuple] | None:
    """Which other plain condition ``text`` is (``column IS [NOT] NULL``, ``column
    BETWEEN literal AND literal``, ``column IN (literals)``, ``column LIKE 'pattern'``,
    ``column op DATE|TIMESTAMP 'text'``) and its parts, or None."""
    for form, pattern in _PLAIN_RE.items():
        match = pattern.fullmatch(text)
        if match is not None:
            if sql_keywords.is_keyword(match.group(1)):
                return None
            return form, match.groups()
    return None


def literal_text(text: str) -> tuple[str | None, str | None]:
    """A matched ``_LIT``: (number text, None) or (None, string value)."""
    if text.startswith("'"):
        return None, text[1:-1].replace("''", "'")
    return text, None
