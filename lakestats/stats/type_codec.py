"""The Arrow type codec: a column's ``type`` text (``str(pa.DataType)``) and back.

Contract: ``parse_type(str(t))`` gives ``t`` back for every type statistics keep values of
(integers, floats, decimals, temporal, strings, binary, booleans, dictionaries by their
value type); nested or exotic types come back as an ``Opaque`` holding the text (their
statistics keep counts and lengths only). ``decode_value`` turns a stored order-preserving
key into a Python value of the column's type. Used by the store's reader, the reduction,
the estimators and the facade: it sits in ``stats/`` so each can import it downwards.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import pyarrow as pa

from lakestats.stats import keys
from lakestats.stats.kinds import Kind, kind_of


@lru_cache(maxsize=64)
def parse_type(text: str) -> pa.DataType:
    """Rebuild an Arrow type from its ``str()`` (the ``type`` column)."""
    simple = {
        "int8": pa.int8(),
        "int16": pa.int16(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "uint8": pa.uint8(),
        "uint16": pa.uint16(),
        "uint32": pa.uint32(),
        "uint64": pa.uint64(),
        "halffloat": pa.float16(),
        "float": pa.float32(),
        "double": pa.float64(),
        "bool": pa.bool_(),
        "string": pa.string(),
        "large_string": pa.large_string(),
        "binary": pa.binary(),
        "large_binary": pa.large_binary(),
        "date32[day]": pa.date32(),
        "date64[ms]": pa.date64(),
        "null": pa.null(),
        "string_view": pa.string_view(),
        "binary_view": pa.binary_view(),
    }
    if text in simple:
        return simple[text]
    if m := re.fullmatch(r"decimal(32|64|128|256)\((\d+), (-?\d+)\)", text):
        factory = {
            "32": pa.decimal32,
            "64": pa.decimal64,
            "128": pa.decimal128,
            "256": pa.decimal256,
        }[m.group(1)]
        return factory(int(m.group(2)), int(m.group(3)))
    if m := re.fullmatch(r"timestamp\[(\w+)(?:, tz=(.+))?\]", text):
        return pa.timestamp(m.group(1), tz=m.group(2))
    if m := re.fullmatch(r"time(32|64)\[(\w+)\]", text):
        return (pa.time32 if m.group(1) == "32" else pa.time64)(m.group(2))
    if m := re.fullmatch(r"duration\[(\w+)\]", text):
        return pa.duration(m.group(1))
    if m := re.fullmatch(r"fixed_size_binary\[(\d+)\]", text):
        return pa.binary(int(m.group(1)))
    if m := re.fullmatch(r"dictionary<values=(.+), indices=.*", text):
        return parse_type(m.group(1).rsplit(",", 1)[0] if "ordered" in text else m.group(1))
    return pa.null() if text == "null" else Opaque(text)


class Opaque:
    """A nested or exotic type: statistics keep counts and lengths only."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def column_kind(type_text: str) -> Kind:
    return kind_of(parse_type(type_text))


def decode_value(key: bytes | None, type_text: str) -> object:
    if key is None:
        return None
    return _decoder(type_text)(key)


@lru_cache(maxsize=256)
def _decoder(type_text: str) -> Callable[[bytes], object]:
    """The key decoder of a type's text (an opaque type decodes to None)."""
    dtype = parse_type(type_text)
    if isinstance(dtype, Opaque):
        return lambda key: None
    return keys.decoder(dtype)
