"""A value typed as text (``rank --value``, ``partitions-containing --value``, the
service's ``?value=``) read as a value of a column's type, or refused in one line that
names the column's type and shows a value it would accept.

Numbers are judged against the type's range from their exponent before they are built,
so ``1e100000`` costs nothing (an ``int`` of it would have a hundred thousand digits);
decimals must fit the column's precision and scale exactly (no silent rounding); binary
values are strict base64.
"""

from __future__ import annotations

import base64
import binascii
import decimal

import pyarrow as pa
import pyarrow.types as pat

from lakestats.errors import InvalidArgumentError
from lakestats.stats.kinds import Kind, kind_of

_LARGEST_FLOAT = {
    16: decimal.Decimal("65504"),
    32: decimal.Decimal("3.4028234663852886e38"),
    64: decimal.Decimal("1.7976931348623157e308"),
}


def example_of(dtype: pa.DataType) -> str:
    """A value of ``dtype`` as it would be typed after ``--value``."""
    if pat.is_dictionary(dtype):
        dtype = dtype.value_type
    kind = kind_of(dtype)
    if kind == Kind.DECIMAL:
        digits = "1" * max(1, min(dtype.precision - dtype.scale, 3))
        return digits + ("." + "5" * min(dtype.scale, 2) if dtype.scale > 0 else "")
    if pat.is_date(dtype):
        return "2024-01-31"
    if pat.is_timestamp(dtype):
        return "2024-01-31T12:00:00+00:00" if dtype.tz else "2024-01-31 12:00:00"
    if pat.is_time(dtype):
        return "12:00:00"
    return {
        Kind.INTEGER: "42",
        Kind.FLOATING: "1.5, inf or -inf",
        Kind.STRING: "text",
        Kind.BINARY: "aGVsbG8= (base64)",
        Kind.BOOLEAN: "true",
    }.get(kind, "a value of that type")


def integer_range(dtype: pa.DataType) -> tuple[int, int]:
    """The smallest and largest value of an integer type."""
    bits = dtype.bit_width
    if pat.is_signed_integer(dtype):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def outside_integer_range(number: decimal.Decimal, dtype: pa.DataType) -> bool:
    """Whether a finite ``number`` lies outside ``dtype``'s range, judged from its exponent
    first so that no huge integer is ever built."""
    if number.is_zero():
        return False
    low, high = integer_range(dtype)
    if number.adjusted() > len(str(high)):
        return True
    return not low <= int(number.to_integral_value(decimal.ROUND_FLOOR)) <= high


def largest_float(dtype: pa.DataType) -> decimal.Decimal:
    """The largest finite magnitude of a float type."""
    return _LARGEST_FLOAT[dtype.bit_width]


def parse_value(text: str, column: str, dtype: pa.DataType) -> object:
    """``text`` as a Python value of ``dtype`` (the column ``column``'s type), or an
    ``InvalidArgumentError`` naming the type and an example."""
    if pat.is_dictionary(dtype):
        dtype = dtype.value_type
    try:
        return _parse(text, dtype)  # no pa.array here: it would import pandas
    except _Refused as exc:
        raise _error(text, column, dtype, str(exc)) from None
    except (ValueError, TypeError, ArithmeticError, pa.ArrowException) as exc:
        raise _error(text, column, dtype, "") from exc


class _Refused(Exception):
    """Why a text is not a value of the type, in a few words."""


def _parse(text: str, dtype: pa.DataType) -> object:
    kind = kind_of(dtype)
    if kind == Kind.STRING:
        return text
    if not text.strip():
        raise _Refused("empty")
    if kind == Kind.BINARY:
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error:
            raise _Refused("not base64") from None
    if kind == Kind.INTEGER:
        number = _decimal(text)
        if not number.is_finite():
            raise _Refused("not an integer")
        if outside_integer_range(number, dtype):
            low, high = integer_range(dtype)
            raise _Refused(f"outside its range {low} .. {high}")
        if number != number.to_integral_value():
            raise _Refused("not an integer")
        return int(number)
    if kind == Kind.FLOATING:
        number = _decimal(text)
        if number.is_finite() and number.copy_abs() > largest_float(dtype):
            raise _Refused(f"outside its range, at most {largest_float(dtype):.6e} in magnitude")
        return float(number) if number.is_finite() else float(text.strip().lower()
                                                              .replace("infinity", "inf"))
    if kind == Kind.DECIMAL:
        number = _decimal(text)
        if not number.is_finite():
            raise _Refused("not a finite number")
        if number.adjusted() >= dtype.precision - dtype.scale and not number.is_zero():
            raise _Refused(f"over {dtype.precision - dtype.scale} digits before the point")
        if number.as_tuple().exponent < -dtype.scale and number != round(number, dtype.scale):
            raise _Refused(f"over {dtype.scale} digits after the point")
        return number
    from lakestats.stats import keys

    return keys.parse_literal(text, dtype)


def _decimal(text: str) -> decimal.Decimal:
    try:
        return decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        raise _Refused("not a number") from None


def _error(text: str, column: str, dtype: pa.DataType, why: str) -> InvalidArgumentError:
    shown = text if len(text) <= 40 else text[:37] + "..."
    hint = f" ({why})" if why else ""
    return InvalidArgumentError(
        f"{shown!r} is not a value of column {column!r} ({dtype}){hint}: write e.g. "
        f"{example_of(dtype)}"
    )


__all__ = ["example_of", "integer_range", "largest_float", "outside_integer_range", "parse_value"]
