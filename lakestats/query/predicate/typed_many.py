"""Many literals of one column typed at once (an IN list of 100,000 values): the values
of one kind go through the same conversions as one literal does (``_Parser.literal``),
on one Arrow array or in one loop, and become the same ``Literal`` objects
(``literal.literal_of_key``). Whatever the batch cannot decide (a value out of range, a
text Arrow does not read, a kind the column does not take) makes it give up: every value
is then typed one by one in order, so an error is the one the first bad value raises."""

from __future__ import annotations

import decimal
import re
from collections.abc import Callable

import pyarrow as pa
import pyarrow.types as pat

from lakestats.query.predicate import literal as lit
from lakestats.query.predicate.tree import Literal
from lakestats.stats import keys, literals
from lakestats.stats.kinds import Kind, kind_of

One = Callable[[str, str], "Literal | None"]
"""Types one value (kind, text) as ``_Parser`` does; None for NULL; raises its error."""

_INTEGER = re.compile(r"-?\d{1,18}")


class _GiveUp(Exception):
    """The batch cannot type these values exactly as one by one would."""


def typed_many(values: list[tuple[str, str]], dtype: pa.DataType, one: One) -> list:
    """``[one(kind, text) for kind, text in values]``, the batchable values typed
    together (see the module docstring)."""
    batch = _BATCHES.get(kind_of(dtype)) if not pat.is_dictionary(dtype) else None
    if batch is None or len(values) < 16:
        return [one(kind, text) for kind, text in values]
    accepts = batch[0]
    at = [i for i, (kind, _) in enumerate(values) if kind in accepts]
    try:
        typed = batch[1]([values[i][1] for i in at], dtype)
    except (_GiveUp, ValueError, TypeError, ArithmeticError, pa.ArrowException):
        return [one(kind, text) for kind, text in values]
    out: list = [None] * len(values)
    for i, value in zip(at, typed, strict=True):
        out[i] = value
    taken = set(at) if len(at) < len(values) else None
    if taken is not None:
        for i, (kind, text) in enumerate(values):
            if i not in taken:
                out[i] = one(kind, text)
    return out


def _strings(texts: list[str], dtype: pa.DataType) -> list[Literal]:
    if not (pat.is_string(dtype) or pat.is_large_string(dtype)):
        raise _GiveUp
    return lit.literals_of_keys([t.encode("utf-8") for t in texts], dtype)


def _integers(texts: list[str], dtype: pa.DataType) -> list[Literal]:
    low, high = literals.integer_range(dtype)
    offset = 0 if pat.is_uint64(dtype) else 1 << 63  # as keys.plain_key stores them
    fullmatch = _INTEGER.fullmatch
    out = []
    for text in texts:
        if fullmatch(text) is None:
            raise _GiveUp  # 1.0, 1e3, 20 digits: the one-by-one path decides
        value = int(text)
        if not low <= value <= high:
            raise _GiveUp
        out.append((value + offset).to_bytes(8, "big"))
    return lit.literals_of_keys(out, dtype)


def _decimals(texts: list[str], dtype: pa.DataType) -> list[Literal]:
    numbers = [decimal.Decimal(t) for t in texts]
    integer_digits = dtype.precision - dtype.scale
    for number in numbers:  # lit.check_decimal_range, without raising
        if not number.is_finite() or (not number.is_zero() and number.adjusted() >= integer_digits):
            raise _GiveUp
    array = pa.array(numbers, type=dtype)
    if array.to_pylist() != numbers:  # inexact: the one-by-one path says so
        raise _GiveUp
    return lit.literals_of_keys(keys.encode(array).to_pylist(), dtype)


def _temporals(texts: list[str], dtype: pa.DataType) -> list[Literal]:
    naive = pat.is_timestamp(dtype) and dtype.tz is None and dtype.unit in ("s", "ms", "us")
    if not (pat.is_date32(dtype) or naive):
        raise _GiveUp
    from lakestats.stats.arrays import string_array

    array = string_array(texts).cast(dtype)
    return lit.literals_of_keys(keys.encode(array).to_pylist(), dtype)


def _floats(texts: list[str], dtype: pa.DataType) -> list[Literal]:
    if dtype.bit_width not in (32, 64):
        raise _GiveUp
    largest = literals.largest_float(dtype)
    for text in texts:  # lit.check_float_range, without raising
        number = decimal.Decimal(text)
        if number.is_finite() and number.copy_abs() > largest:
            raise _GiveUp
    from lakestats.stats.arrays import string_array

    array = string_array(texts).cast(dtype)
    return lit.literals_of_keys(keys.encode(array).to_pylist(), dtype)


_BATCHES: dict[Kind, tuple[frozenset[str], Callable[[list[str], pa.DataType], list]]] = {
    Kind.STRING: (frozenset({"string"}), _strings),
    Kind.INTEGER: (frozenset({"number"}), _integers),
    Kind.DECIMAL: (frozenset({"number", "string"}), _decimals),
    Kind.TEMPORAL: (frozenset({"date", "timestamp", "string"}), _temporals),
    Kind.FLOATING: (frozenset({"number"}), _floats),
}

__all__ = ["typed_many"]
