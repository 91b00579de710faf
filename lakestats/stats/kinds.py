"""Classify Arrow types into the kinds that decide which statistics a column gets."""

from __future__ import annotations

from enum import StrEnum

import pyarrow as pa
import pyarrow.types as pat


class Kind(StrEnum):
    INTEGER = "integer"  # signed and unsigned ints
    FLOATING = "floating"
    DECIMAL = "decimal"
    TEMPORAL = "temporal"  # date, time, timestamp, duration: integers underneath
    BOOLEAN = "boolean"
    STRING = "string"
    BINARY = "binary"
    NESTED = "nested"  # list, map: counts and lengths only
    NULL = "null"  # the Arrow null type: every value is null
    OTHER = "other"


def kind_of(dtype: pa.DataType) -> Kind:
    """The kind of ``dtype`` (remembered per Arrow type: estimates ask it per partition)."""
    same = _BY_ID.get(id(dtype))  # hashing an Arrow type costs microseconds
    if same is not None and same[0] is dtype:
        return same[1]
    if isinstance(dtype, pa.DataType):
        found = _KINDS.get(dtype)
        if found is None:
            found = _kind_of(dtype)
            if len(_KINDS) >= 4096:
                _KINDS.clear()
            _KINDS[dtype] = found
        if len(_BY_ID) >= 4096:
            _BY_ID.clear()
        _BY_ID[id(dtype)] = (dtype, found)  # the type kept: its id is not reused
        return found
    return _kind_of(dtype)


_KINDS: dict[pa.DataType, Kind] = {}
_BY_ID: dict[int, tuple[pa.DataType, Kind]] = {}


def _kind_of(dtype: pa.DataType) -> Kind:
    if not isinstance(dtype, pa.DataType):  # a type known only by name (nested types)
        text = str(dtype)
        nested = text.startswith(("list", "large_list", "fixed_size_list", "map"))
        return Kind.NESTED if nested else Kind.OTHER
    if pat.is_dictionary(dtype):
        return kind_of(dtype.value_type)
    if pat.is_integer(dtype):
        return Kind.INTEGER
    if pat.is_floating(dtype):
        return Kind.FLOATING
    if pat.is_decimal(dtype):
        return Kind.DECIMAL
    if pat.is_temporal(dtype):
        return Kind.TEMPORAL
    if pat.is_boolean(dtype):
        return Kind.BOOLEAN
    if pat.is_string(dtype) or pat.is_large_string(dtype) or pat.is_string_view(dtype):
        return Kind.STRING
    if (
        pat.is_binary(dtype)
        or pat.is_large_binary(dtype)
        or pat.is_fixed_size_binary(dtype)
        or pat.is_binary_view(dtype)
    ):
        return Kind.BINARY
    if pat.is_list(dtype) or pat.is_large_list(dtype) or pat.is_fixed_size_list(dtype):
        return Kind.NESTED
    if pat.is_map(dtype) or pat.is_list_view(dtype) or pat.is_large_list_view(dtype):
        return Kind.NESTED
    if pat.is_null(dtype):
        return Kind.NULL
    return Kind.OTHER


ORDERED_NUMERIC = (Kind.INTEGER, Kind.FLOATING, Kind.DECIMAL, Kind.TEMPORAL)
"""Kinds that get percentiles, histograms and a KLL sketch."""

MOMENT_KINDS = (Kind.INTEGER, Kind.FLOATING, Kind.DECIMAL)
"""Kinds that get sum, mean, variance and standard deviation."""

VALUE_KINDS = (*ORDERED_NUMERIC, Kind.BOOLEAN, Kind.STRING, Kind.BINARY)
"""Kinds whose values are counted exactly (distinct count, frequencies, min/max)."""
