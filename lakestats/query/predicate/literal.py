"""Typed literals: a SQL literal checked against its column's Arrow type (range, exactness)
and made a ``Literal`` with its key and canonical SQL text; the messages that refuse one."""

from __future__ import annotations

import decimal
from collections.abc import Callable

import pyarrow as pa
import pyarrow.types as pat

from lakestats.errors import InvalidPredicateError
from lakestats.query.predicate.tree import Literal
from lakestats.stats import keys, literals
from lakestats.stats.kinds import Kind, kind_of


def check_integer_range(
    number: decimal.Decimal, text: str, column: str, dtype: pa.DataType
) -> None:
    """Refuse a literal outside the column's range from its exponent alone, before
    ``int()`` builds it: ``1e1000000`` would be an integer of a million digits."""
    if not number.is_finite():
        raise wrong_type(text, column, dtype, "not an integer")
    if literals.outside_integer_range(number, dtype):
        low, high = literals.integer_range(dtype)
        raise InvalidPredicateError(
            f"literal {clip(text)} is outside the range of column {column!r} ({dtype}: "
            f"{low} .. {high}): write e.g. 42"
        )


def check_float_range(text: str, column: str, dtype: pa.DataType) -> None:
    """A number literal too large for a float column would become infinity: refuse it
    (write 'Infinity' for infinity)."""
    try:
        number = decimal.Decimal(text)
    except decimal.InvalidOperation:
        return  # not a number: the parser below says so
    largest = literals.largest_float(dtype)
    if number.is_finite() and number.copy_abs() > largest:
        raise InvalidPredicateError(
            f"literal {clip(text)} is outside the range of column {column!r} ({dtype}: at "
            f"most {largest:.6e} in magnitude): write e.g. 1.5, or 'Infinity'"
        )


def check_decimal_range(text: str, column: str, dtype: pa.DataType) -> None:
    """A number with more integer digits than ``decimal(p, s)`` holds is refused from its
    exponent, before it is built."""
    try:
        number = decimal.Decimal(text)
    except decimal.InvalidOperation:
        return  # not a number: the parser below says so
    integer_digits = dtype.precision - dtype.scale
    if number.is_finite() and not number.is_zero() and number.adjusted() >= integer_digits:
        raise InvalidPredicateError(
            f"literal {clip(text)} is outside the range of column {column!r} ({dtype}: "
            f"at most {integer_digits} digits before the point): write e.g. 12.34"
        )
    if number.is_finite() and number.as_tuple().exponent < -dtype.scale:  # type: ignore[operator]
        step = decimal.Decimal(1).scaleb(-dtype.scale)
        context = decimal.Context(prec=dtype.precision + 2)
        low = number.quantize(step, rounding=decimal.ROUND_FLOOR, context=context)
        if low != number:  # 1.500 in a decimal(p, 2) column is 1.50 exactly
            high = low + step
            raise InvalidPredicateError(
                f"literal {clip(text)} has more digits after the point than column {column!r} "
                f"({dtype}: {dtype.scale}), so no value equals it: compare with {low} or "
                f"{high} (< {clip(text)} is <= {low}, > {clip(text)} is >= {high})"
            )


def clip(text: str) -> str:
    """A literal as messages show it: at most 40 characters."""
    return text if len(text) <= 40 else text[:37] + "..."


def timestamp_with_zone(text: str, dtype: pa.TimestampType) -> object:
    """A zoned column accepts ISO text with an offset, or without one (read as UTC)."""
    import pyarrow.compute as pc

    try:
        return keys.parse_literal(text, dtype)
    except (pa.ArrowInvalid, ValueError):
        from lakestats.stats.arrays import string_array  # no pa.array: no pandas

        naive = pc.cast(string_array([text]), pa.timestamp(dtype.unit))
        return naive.cast(dtype)[0].as_py()


def make_literal(value: object, dtype: pa.DataType, text: str | None = None) -> Literal:
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


def literal_of_key(key: bytes, dtype: pa.DataType) -> Literal:
    """The ``Literal`` of a checked value's key: its value and SQL text decoded from the
    key, so every way of typing a value ends in the same object."""
    return literals_of_keys([key], dtype)[0]


def literals_of_keys(keys_: list[bytes], dtype: pa.DataType) -> list[Literal]:
    """``literal_of_key`` of each key, the type's decoder and writer resolved once."""
    write = sql_writer(dtype)
    naive = pat.is_timestamp(dtype) and dtype.tz is None
    if len(keys_) > 1 and (pat.is_date32(dtype) or naive):  # as from_integer, at once
        from lakestats.stats.arrays import binary_array

        values = keys.decode_array(binary_array(list(keys_)), dtype).to_pylist()
        return [Literal(v, k, write(v)) for v, k in zip(values, keys_, strict=True)]
    decode = keys.decoder(dtype)
    out = []
    for key in keys_:
        value = decode(key)
        out.append(Literal(value, key, write(value)))
    return out


def _build_literal(value: object, dtype: pa.DataType, text: str | None) -> Literal:
    key = keys.plain_key(value, dtype)  # no Arrow array, so no pandas import
    if key is not None:
        return literal_of_key(key, dtype)
    try:
        array = pa.array([value], type=dtype)
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
        raise InvalidPredicateError(
            f"literal {clip(text or repr(value))} does not fit type {dtype}: "
            f"{clip(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)}"
        ) from exc
    if kind_of(dtype) == Kind.DECIMAL and text is not None:
        decoded = array[0].as_py()
        if decimal.Decimal(text) != decoded:
            raise InvalidPredicateError(
                f"literal {clip(text)} does not fit type {dtype} exactly"
            )
    return literal_of_key(keys.encode(array)[0].as_py(), dtype)


def _sql_literal(value: object, dtype: pa.DataType) -> str:
    return sql_writer(dtype)(value)


def sql_writer(dtype: pa.DataType) -> Callable[[object], str]:
    """The canonical SQL text of a decoded value of ``dtype``, the kind resolved once."""
    kind = kind_of(dtype)
    if kind == Kind.BOOLEAN:
        return lambda value: "TRUE" if value else "FALSE"
    if kind == Kind.STRING:
        return lambda value: "'" + str(value).replace("'", "''") + "'"
    if kind == Kind.BINARY:
        return lambda value: "'" + str(keys.to_json(value)) + "'"
    if kind == Kind.FLOATING:
        def floating(value: object) -> str:
            text = keys.to_json(value)
            return f"'{text}'" if isinstance(text, str) else repr(float(text))  # type: ignore[arg-type]

        return floating
    if kind == Kind.TEMPORAL:
        prefix = "DATE" if pat.is_date(dtype) else "TIMESTAMP" if pat.is_timestamp(dtype) else ""
        return lambda value: f"{prefix} '{keys.to_json(value)}'".strip()
    if kind in (Kind.INTEGER, Kind.DECIMAL):  # keys.to_json keeps an int, strs a Decimal
        return str
    return lambda value: str(keys.to_json(value))


def wrong_type(text: str, column: str, dtype: pa.DataType, why: str = "") -> Exception:
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
        f"literal {clip(text)} is not a value of column {column!r} ({dtype}){hint}: write "
        f"e.g. {example}"
    )

