"""Order-preserving binary keys: how typed values are stored in the statistics files.

Min, max, percentiles and frequency values of columns of every type share one Parquet
column of type ``binary``. Each value is encoded so that comparing two keys byte by byte
(unsigned, shorter-prefix first) orders them exactly as the typed values order:

* integers, dates, times, timestamps, durations: 8 bytes, big-endian, sign bit flipped
  (unsigned 64-bit integers: 8 bytes big-endian, no flip);
* floating point: the IEEE-754 double, big-endian, with the sign bit flipped for
  positive numbers and all bits flipped for negative ones; ``-0.0`` is stored as ``0.0``
  and every NaN as the one canonical NaN, which sorts above ``+inf``;
* decimals: the 128- or 256-bit two's-complement unscaled integer, big-endian, sign
  bit flipped (comparable within one column, whose scale is fixed);
* booleans: one byte, 0 or 1;
* strings: their UTF-8 bytes (byte order is code-point order); binary: the bytes.

The column's Arrow type (``type`` in ``statistics.parquet``) says how to decode a key;
``decode`` returns Python values and ``to_json`` the JSON form the CLI prints.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import struct
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from lakestats.stats.kinds import Kind, kind_of

_SIGN64 = np.uint64(1 << 63)
_CANONICAL_NAN = np.float64("nan")


def canonical_floats(values: pa.Array) -> pa.Array:
    """Float64 values with ``-0.0`` folded into ``0.0`` and every NaN made identical."""
    as_double = values.cast(pa.float64()) if values.type != pa.float64() else values
    array = as_double.to_numpy(zero_copy_only=False)
    array = array + 0.0  # -0.0 + 0.0 == +0.0
    array[np.isnan(array)] = _CANONICAL_NAN
    mask = None if as_double.null_count == 0 else as_double.is_null().to_numpy(zero_copy_only=False)
    return pa.array(array, type=pa.float64(), mask=mask)


def _fixed_to_binary(raw: np.ndarray, width: int) -> pa.Array:
    fixed = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), raw.nbytes // width, [None, pa.py_buffer(raw.tobytes())]
    )
    return fixed.cast(pa.binary())


def int64_keys(ints: np.ndarray) -> pa.Array:
    """The keys of int64 values (integers, temporals): big-endian with the sign bit flipped."""
    return _fixed_to_binary((ints.view(np.uint64) ^ _SIGN64).astype(">u8"), 8)


def encode(values: pa.Array) -> pa.Array:
    """Encode a non-null Arrow array into order-preserving binary keys."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    dtype = values.type
    if pat.is_dictionary(dtype):
        values = values.dictionary_decode()
        dtype = values.type
    kind = kind_of(dtype)
    n = len(values)
    if kind in (Kind.INTEGER, Kind.TEMPORAL):
        if pat.is_uint64(dtype):
            ints = values.to_numpy(zero_copy_only=False).astype(np.uint64)
            return _fixed_to_binary(ints.astype(">u8"), 8)
        return int64_keys(integers(values))
    if kind == Kind.FLOATING:
        floats = canonical_floats(values).to_numpy(zero_copy_only=False)
        bits = floats.view(np.uint64)
        negative = (bits >> np.uint64(63)).astype(bool)
        keyed = np.where(negative, ~bits, bits | _SIGN64)
        return _fixed_to_binary(keyed.astype(">u8"), 8)
    if kind == Kind.DECIMAL:
        width = 16 if pat.is_decimal128(dtype) or dtype.bit_width == 128 else 32
        if dtype.bit_width not in (128, 256):  # decimal32/64: widen first
            values = values.cast(pa.decimal128(dtype.precision, dtype.scale))
            width = 16
        words = np.frombuffer(values.buffers()[1], dtype="<u8")
        words = words[values.offset * (width // 8) : (values.offset + n) * (width // 8)]
        words = words.reshape(n, width // 8)[:, ::-1].copy()  # most significant word first
        words[:, 0] ^= _SIGN64
        return _fixed_to_binary(words.astype(">u8"), width)
    if kind == Kind.BOOLEAN:
        return _fixed_to_binary(values.to_numpy(zero_copy_only=False).astype(np.uint8), 1)
    if kind == Kind.STRING:
        return values.cast(pa.large_string()).cast(pa.large_binary()).cast(pa.binary())
    if kind == Kind.BINARY:
        return values.cast(pa.binary())
    raise TypeError(f"no key encoding for type {dtype}")


def plain_key(value: object, dtype: pa.DataType) -> bytes | None:
    """``encode`` of one Python value that needs no Arrow array to be checked and encoded
    (text, variable-width binary, booleans, integers in the type's range, float32/64), or
    None: building an Arrow array would import pandas (see ``lakestats.stats.arrays``), and
    a lookup or an estimate process never needs one for these."""
    plain = dtype.value_type if pat.is_dictionary(dtype) else dtype
    kind = kind_of(plain)
    if kind == Kind.STRING and isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: Arrow says what is wrong
            return None
    if kind == Kind.BINARY and isinstance(value, bytes | bytearray):
        return None if pat.is_fixed_size_binary(plain) else bytes(value)
    if kind == Kind.BOOLEAN and isinstance(value, bool):
        return b"\x01" if value else b"\x00"
    if kind == Kind.INTEGER and isinstance(value, int) and not isinstance(value, bool):
        width = plain.bit_width
        unsigned = pat.is_unsigned_integer(plain)
        low, high = (0, 1 << width) if unsigned else (-(1 << (width - 1)), 1 << (width - 1))
        if not low <= value < high:
            return None  # out of the type's range: Arrow refuses it
        stored = value if pat.is_uint64(plain) else value + (1 << 63)
        return stored.to_bytes(8, "big")
    if kind == Kind.FLOATING and isinstance(value, float) and plain.bit_width in (32, 64):
        # as canonical_floats + encode: stored at the column's width, keyed as a double
        stored = np.array([value], dtype=np.float32 if plain.bit_width == 32 else np.float64)
        double = stored.astype(np.float64) + 0.0  # folds -0.0 into 0.0
        double[np.isnan(double)] = _CANONICAL_NAN
        bits = double.view(np.uint64)
        keyed = np.where(bits >> np.uint64(63), ~bits, bits | _SIGN64)
        return keyed.astype(">u8").tobytes()
    if kind == Kind.TEMPORAL:
        number = _plain_temporal(value, plain)
        if number is not None and -(1 << 63) <= number < (1 << 63):
            return (number + (1 << 63)).to_bytes(8, "big")
    return None


_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _plain_temporal(value: object, dtype: pa.DataType) -> int | None:
    """The integer Arrow stores for a ``datetime.date`` in a date column or a
    ``datetime.datetime`` in a timestamp column (aware in a zoned column, naive in a naive
    one, a whole number of the unit), as ``pa.array([value], dtype)`` does; else None."""
    if type(value) is dt.date and pat.is_date(dtype):
        days = value.toordinal() - _EPOCH_DAY
        return days if pat.is_date32(dtype) else days * 86_400_000
    if type(value) is dt.datetime and pat.is_timestamp(dtype):
        if (value.tzinfo is None) != (dtype.tz is None):
            return None
        if value.tzinfo is not None and value.utcoffset() is None:
            return None
        delta = value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        per_second = _PER_SECOND[dtype.unit]
        if per_second >= 1_000_000:
            return micros * (per_second // 1_000_000)
        step = 1_000_000 // per_second
        return micros // step if micros % step == 0 else None
    return None


def encode_value(value: object, dtype: pa.DataType) -> bytes:
    """``encode`` of one Python value (bytes equal to ``encode(pa.array([value]))[0]``),
    through ``plain_key`` when it can."""
    key = plain_key(value, dtype)
    return key if key is not None else encode(pa.array([value], dtype))[0].as_py()


def integers(values: pa.Array) -> np.ndarray:
    """The int64 view of integer and temporal values (dates as days, timestamps in unit)."""
    dtype = values.type
    if pat.is_temporal(dtype):
        storage = pa.int32() if (pat.is_date32(dtype) or pat.is_time32(dtype)) else pa.int64()
        values = values.view(storage)
    return values.to_numpy(zero_copy_only=False).astype(np.int64)


def unscaled_int64(values: pa.Array) -> np.ndarray:
    """Unscaled int64 of decimals of precision ≤ 18 (the low word of each value)."""
    width = values.type.bit_width // 64
    words = np.frombuffer(values.buffers()[1], dtype="<i8")
    words = words[values.offset * width : (values.offset + len(values)) * width]
    return words.reshape(len(values), width)[:, 0].copy()


def decimals_from_unscaled(unscaled: pa.Array, dtype: pa.DataType) -> pa.Array:
    """Decimal values from their unscaled int64 (the inverse of ``unscaled_int64``)."""
    ints = unscaled.to_numpy(zero_copy_only=False).astype(np.int64)
    width = dtype.bit_width // 64
    words = np.empty((len(ints), width), dtype=np.int64)
    words[:, 0] = ints
    words[:, 1:] = (ints >> 63)[:, None]
    return pa.Array.from_buffers(dtype, len(ints), [None, pa.py_buffer(words.tobytes())])


def decode(key: bytes | None, dtype: pa.DataType) -> object:
    """Decode one key into the Python value of ``dtype`` (``None`` stays ``None``)."""
    if key is None:
        return None
    return decoder(dtype)(key)


def decoder(dtype: pa.DataType) -> Callable[[bytes], object]:
    """The function that decodes one (non-null) key of ``dtype``: the type's kind resolved
    once, for callers that decode many keys of one type (a wide table's statistics)."""
    kind = kind_of(dtype)
    if pat.is_dictionary(dtype):
        dtype = dtype.value_type
    if kind in (Kind.INTEGER, Kind.TEMPORAL):
        offset = 0 if pat.is_uint64(dtype) else 1 << 63
        if kind == Kind.INTEGER:
            return lambda key: int.from_bytes(key, "big") - offset
        return lambda key: from_integer(int.from_bytes(key, "big") - offset, dtype)
    if kind == Kind.FLOATING:
        return _float_of_key
    if kind == Kind.DECIMAL:
        scale = dtype.scale
        return lambda key: decimal_from_unscaled(
            int.from_bytes(key, "big") - (1 << (len(key) * 8 - 1)), scale
        )
    if kind == Kind.BOOLEAN:
        return lambda key: key != b"\x00"
    if kind == Kind.STRING:
        return lambda key: key.decode("utf-8")
    return bytes


_ALL_BITS = (1 << 64) - 1
_SIGN = 1 << 63
_DOUBLE = struct.Struct(">d")


def _float_of_key(key: bytes) -> float:
    bits = int.from_bytes(key, "big")
    bits = bits ^ _SIGN if bits >> 63 else ~bits & _ALL_BITS
    return _DOUBLE.unpack(bits.to_bytes(8, "big"))[0]


_EXACT = decimal.Context(prec=100)


def decimal_from_unscaled(unscaled: int, scale: int) -> decimal.Decimal:
    """The exact decimal ``unscaled * 10**-scale`` (no rounding to 28 digits)."""
    return decimal.Decimal(unscaled).scaleb(-scale, context=_EXACT)


def unscaled_of(value: decimal.Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale``."""
    return int(value.scaleb(scale, context=_EXACT))


def from_integer(value: int, dtype: pa.DataType) -> object:
    """The Python value of a temporal type from its integer storage."""
    from lakestats.stats.arrays import integer_array

    scalar = integer_array([value], dtype)[0]
    try:
        return scalar.as_py()
    except OverflowError:
        # 0001-01-01 UTC is year 0 in New York: Python's datetime cannot hold it in the
        # column's zone, so it is given in UTC (the same instant)
        if not (pat.is_timestamp(dtype) and dtype.tz is not None):
            raise
        return scalar.cast(pa.timestamp(dtype.unit, tz="UTC")).as_py()


def physical_int_storage(dtype: pa.DataType) -> pa.DataType:
    if pat.is_date32(dtype) or pat.is_time32(dtype):
        return pa.int32()
    return pa.int64()


def to_json(value: object) -> object:
    """The JSON form of a decoded value (the CLI's and the HTTP API's convention).

    Numbers stay numbers; NaN and infinities become "NaN", "Infinity", "-Infinity";
    dates, times and timestamps ISO-8601; decimals strings; binary base64.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, np.generic):
        return to_json(value.item())
    return str(value)


def parse_literal(text: str, dtype: pa.DataType) -> object:
    """Parse a user-typed literal (``--value``) into a value of ``dtype``."""
    if pat.is_dictionary(dtype):
        dtype = dtype.value_type
    kind = kind_of(dtype)
    if kind == Kind.STRING:
        return text
    if kind == Kind.BINARY:
        return base64.b64decode(text, validate=True)  # not "!!" silently read as b""
    if kind == Kind.BOOLEAN:
        word = text.strip().lower()
        if word not in ("true", "1", "yes", "false", "0", "no"):
            raise ValueError("expected true or false")
        return word in ("true", "1", "yes")
    if kind == Kind.DECIMAL:
        return decimal.Decimal(text)
    from lakestats.stats.arrays import string_array

    return string_array([text]).cast(dtype)[0].as_py()


def decode_array(encoded: pa.Array, dtype: pa.DataType) -> pa.Array:
    """Vectorized ``decode``: binary keys back to an Arrow array of ``dtype``."""
    if pat.is_dictionary(dtype):
        dtype = dtype.value_type
    kind = kind_of(dtype)
    if kind == Kind.STRING:
        return encoded.cast(pa.string())
    if kind == Kind.BINARY:
        return (
            encoded.cast(pa.binary())
            if not pat.is_fixed_size_binary(dtype)
            else encoded.cast(dtype)
        )
    n = len(encoded)
    raw = _fixed_bytes(encoded)
    if kind == Kind.BOOLEAN:
        return pa.array(raw.reshape(n, 1)[:, 0] != 0)
    if kind in (Kind.INTEGER, Kind.TEMPORAL, Kind.FLOATING):
        words = raw.view(">u8").astype(np.uint64)
        if kind == Kind.FLOATING:
            negative = (words >> np.uint64(63)) == 0
            bits = np.where(negative, ~words, words ^ _SIGN64)
            floats = bits.view(np.float64)
            return (
                pa.array(floats, pa.float64()).cast(dtype)
                if dtype != pa.float64()
                else pa.array(floats, pa.float64())
            )
        if pat.is_uint64(dtype):
            return pa.array(words, pa.uint64())
        ints = (words ^ _SIGN64).view(np.int64)
        if kind == Kind.INTEGER:
            return pa.array(ints).cast(dtype)
        storage = physical_int_storage(dtype)
        return pa.array(ints.astype(storage.to_pandas_dtype())).view(dtype)
    if kind == Kind.DECIMAL:
        width = len(raw) // n if n else 16
        words = raw.view(">u8").astype(np.uint64).reshape(n, width // 8)
        words[:, 0] ^= _SIGN64
        little = words[:, ::-1].astype("<u8").tobytes()
        storage = (
            dtype if dtype.bit_width in (128, 256) else pa.decimal128(dtype.precision, dtype.scale)
        )
        out = pa.Array.from_buffers(storage, n, [None, pa.py_buffer(little)])
        return out if storage == dtype else out.cast(dtype)
    raise TypeError(f"no key decoding for type {dtype}")


def _fixed_bytes(encoded: pa.Array) -> np.ndarray:
    """The concatenated bytes of fixed-width keys."""
    binary = encoded.cast(pa.large_binary())
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int64)
    offsets = offsets[binary.offset : binary.offset + len(binary) + 1]
    data = binary.buffers()[2]
    if data is None:
        return np.zeros(0, dtype=np.uint8)
    return np.frombuffer(data, dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])].copy()
