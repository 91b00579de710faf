"""A literal of the predicate's text as a value of its column's Arrow type: numbers,
quoted text and sqlglot's literal nodes typed, checked (range, exactness) and refused in one
line saying what to write; the plain readers and sqlglot's path type literals alike here."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pyarrow.types as pat

from lakestats.errors import UnsupportedPredicateError
from lakestats.query.predicate import literal as lit
from lakestats.query.predicate import tree as t
from lakestats.stats import keys
from lakestats.stats.kinds import Kind, kind_of


def sql_literal(e, column: str, dtype: pa.DataType) -> t.Literal | None:  # noqa: ANN001
    """A SQL literal as a value of the column's type (None for NULL)."""
    from sqlglot import exp

    if isinstance(e, exp.Null):
        return None
    kind = kind_of(dtype)
    if isinstance(e, exp.Boolean):
        if kind != Kind.BOOLEAN:
            raise lit.wrong_type(e.sql(), column, dtype)
        return lit.make_literal(bool(e.this), dtype)
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        return number(f"-{e.this.this}", column, dtype)
    if isinstance(e, exp.Literal):
        if e.is_string:
            return literal_value(e.this, column, dtype)
        return number(e.this, column, dtype)
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
            raise lit.wrong_type(e.sql(), column, dtype)
        return literal_value(str(e.this.this), column, dtype)
    raise UnsupportedPredicateError(
        f"unsupported syntax in predicate: {describe(e)} (expected a literal)"
    )


def number(text: str, column: str, dtype: pa.DataType) -> t.Literal:
    """A number literal (``42``, ``-1.5``, ``1e3``) as a value of the column's type."""
    kind = kind_of(dtype)
    if kind not in (Kind.INTEGER, Kind.FLOATING, Kind.DECIMAL):
        raise lit.wrong_type(text, column, dtype)
    if kind == Kind.INTEGER:
        try:
            value = decimal.Decimal(text)
        except decimal.InvalidOperation as exc:
            raise lit.wrong_type(text, column, dtype) from exc
        lit.check_integer_range(value, text, column, dtype)
        if value != value.to_integral_value():
            raise lit.wrong_type(text, column, dtype, "not an integer")
        return lit.make_literal(int(value), dtype, text)
    return literal_value(text, column, dtype)


def literal_value(text: str, column: str, dtype: pa.DataType) -> t.Literal:
    """Unquoted literal text as a value of the column's type."""
    kind = kind_of(dtype)
    if kind == Kind.FLOATING:
        lit.check_float_range(text, column, dtype)
    elif kind == Kind.DECIMAL:
        lit.check_decimal_range(text, column, dtype)
    try:
        if pat.is_timestamp(dtype) and dtype.tz is not None:
            value = lit.timestamp_with_zone(text, dtype)
        else:
            value = keys.parse_literal(text, dtype)
        return lit.make_literal(value, dtype, text)
    except (ValueError, TypeError, ArithmeticError, pa.ArrowException) as exc:
        raise lit.wrong_type(repr(text), column, dtype) from exc


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


def describe(e) -> str:  # noqa: ANN001
    """A sqlglot node as a message names it."""
    from sqlglot import exp

    if isinstance(e, exp.Subquery | exp.Select):
        what = "a subquery"
    elif isinstance(e, exp.Func):
        what = f"function call {e.sql_name() if hasattr(e, 'sql_name') else type(e).__name__}"
    else:
        what = type(e).__name__
    return f"{what} ({e.sql()})"
