"""Small Arrow arrays and scalars built without pyarrow's pandas probe.

``pa.array``, ``pa.scalar``, ``Array.to_numpy`` and compute calls given Python or NumPy
values ask pyarrow's pandas shim whether the input is a pandas object, which imports
pandas (~1 s on a cold process). The lookup path (``lakestats.store.reader``, the CLI's
read commands) builds its few arrays from buffers instead, so a lookup process never
imports pandas (``tests/cli/test_lean_imports.py``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa


def int64_array(values: list[int] | np.ndarray) -> pa.Array:
    """An int64 array without nulls."""
    data = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def bool_array(values: np.ndarray) -> pa.Array:
    """A boolean array without nulls."""
    data = np.packbits(np.asarray(values, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(data)])


def integer_array(values: list[int], dtype: pa.DataType) -> pa.Array:
    """Integers as a fixed-width integer-backed ``dtype`` (int32/int64 storage, viewed)."""
    width = dtype.bit_width
    storage = pa.int32() if width == 32 else pa.int64()
    data = np.ascontiguousarray(values, dtype=np.int32 if width == 32 else np.int64)
    array = pa.Array.from_buffers(storage, len(data), [None, pa.py_buffer(data)])
    return array if storage == dtype else array.view(dtype)


def binary_scalar(value: bytes) -> pa.Scalar:
    """``value`` as an Arrow binary scalar."""
    offsets = np.array([0, len(value)], dtype=np.int32)
    array = pa.Array.from_buffers(
        pa.binary(), 1, [None, pa.py_buffer(offsets), pa.py_buffer(value)]
    )
    return array[0]


def int64_scalar(value: int) -> pa.Scalar:
    """``value`` as an Arrow int64 scalar."""
    return int64_array([value])[0]


def _variable_width(
    dtype: pa.DataType, encoded: list[bytes], validity: pa.Buffer | None = None, nulls: int = 0
) -> pa.Array:
    """Byte strings (b"" where null) as a binary or string array."""
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(v) for v in encoded], out=offsets[1:])
    buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(dtype, len(encoded), buffers, null_count=nulls)


def string_array(values: list[str]) -> pa.Array:
    """Non-null strings as an Arrow string array."""
    return _variable_width(pa.string(), [v.encode("utf-8") for v in values])


def binary_array(values: list[bytes]) -> pa.Array:
    """Non-null byte strings as an Arrow binary array."""
    return _variable_width(pa.binary(), values)


def binary_values(array: pa.Array) -> list:
    """``array.to_pylist()`` of a binary array, sliced from its buffers (no Arrow scalar
    per value: about 5x faster on 3,500 8-byte values); other arrays, or with nulls, by
    ``to_pylist``."""
    if array.null_count or array.type != pa.binary():
        return array.to_pylist()
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[
        array.offset : array.offset + len(array) + 1
    ]
    if not len(array):
        return []
    start = int(offsets[0])
    if buffers[2] is None or offsets[-1] == start:
        return [b""] * len(array)
    blob = buffers[2].slice(start, int(offsets[-1]) - start).to_pybytes()
    ends = (offsets - start).tolist()
    return [blob[a:b] for a, b in itertools.pairwise(ends)]


def int_values(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The values of a null-free integer column as NumPy (``to_numpy`` without pandas)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = []
    for chunk in chunks:
        dtype = np.dtype(f"<i{chunk.type.bit_width // 8}")
        data = np.frombuffer(chunk.buffers()[1], dtype=dtype)
        parts.append(data[chunk.offset : chunk.offset + len(chunk)])
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    """``length`` bits of an Arrow bitmap from bit ``offset`` (least significant first)."""
    start = offset // 8  # only the bytes that hold them: a slice of a long array is short
    packed = np.frombuffer(buffer, dtype=np.uint8)[start : (offset + length + 7) // 8]
    skip = offset - 8 * start
    return np.unpackbits(packed, bitorder="little")[skip : skip + length].astype(bool)


def _numpy_dtype(dtype: pa.DataType) -> np.dtype:
    if pa.types.is_signed_integer(dtype):
        return np.dtype(f"<i{dtype.bit_width // 8}")
    if pa.types.is_unsigned_integer(dtype):
        return np.dtype(f"<u{dtype.bit_width // 8}")
    if pa.types.is_floating(dtype):
        return np.dtype(f"<f{dtype.bit_width // 8}")
    raise TypeError(f"not a fixed-width number type: {dtype}")


def numbers(
    column: pa.ChunkedArray | pa.Array, fill: object = 0, dtype: object = None
) -> np.ndarray:
    """An integer, floating or boolean column as NumPy, nulls replaced by ``fill``, then
    ``astype(dtype)`` when given: ``fill_null(fill).to_numpy(zero_copy_only=False)``
    read from the buffers, without pyarrow's pandas probe."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = []
    for chunk in chunks:
        length, offset = len(chunk), chunk.offset
        validity, data = chunk.buffers()[:2]
        if pa.types.is_boolean(chunk.type):
            values = (
                _bits(data, offset, length) if length else np.zeros(0, dtype=bool)
            )
        else:
            kind = _numpy_dtype(chunk.type)
            values = np.frombuffer(data, dtype=kind)[offset : offset + length] if length else (
                np.zeros(0, dtype=kind)
            )
        if chunk.null_count:
            values = values.copy()
            values[~_bits(validity, offset, length)] = fill
        parts.append(values)
    if len(parts) == 1:
        out = parts[0]
    elif parts:
        out = np.concatenate(parts)
    else:
        out = np.zeros(0, dtype=_numpy_dtype(column.type) if not pa.types.is_boolean(
            column.type) else bool)
    return out if dtype is None else out.astype(dtype, copy=False)


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()`` without the pandas probe."""
    return pa.Table.from_batches([], schema=schema)


def column_array(values: list, dtype: pa.DataType) -> pa.Array:
    """Python values (None: null) as an Arrow array of a fixed-width number, boolean,
    binary or string ``dtype``."""
    n = len(values)
    valid = np.fromiter((v is not None for v in values), dtype=bool, count=n)
    nulls = n - int(valid.sum())
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    if pa.types.is_binary(dtype) or pa.types.is_string(dtype):
        encoded = [
            b"" if v is None else v.encode("utf-8") if isinstance(v, str) else bytes(v)
            for v in values
        ]
        return _variable_width(dtype, encoded, validity, nulls)
    if not (pa.types.is_boolean(dtype) or pa.types.is_integer(dtype)
            or pa.types.is_floating(dtype)):
        return pa.array(values, dtype)  # other types: pyarrow's own conversion
    if pa.types.is_boolean(dtype):
        bits = np.fromiter((bool(v) for v in values), dtype=bool, count=n)
        data = np.packbits(bits, bitorder="little")
    else:
        data = np.array([0 if v is None else v for v in values], dtype=_numpy_dtype(dtype))
    return pa.Array.from_buffers(dtype, n, [validity, pa.py_buffer(data)], null_count=nulls)


_DDL_TYPES = {
    "int": pa.int32(),
    "long": pa.int64(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
    "binary": pa.binary(),
}


def ddl_schema(ddl: str) -> pa.Schema:
    """The Arrow schema of a flat Spark DDL string (``"name type, ..."``): what a task
    yields for ``mapInArrow(..., ddl)``, so the two are written once."""
    return pa.schema(
        [(name, _DDL_TYPES[kind]) for name, kind in (c.split() for c in ddl.split(","))]
    )


def record_batch(rows: list[dict], schema: pa.Schema) -> pa.RecordBatch:
    """``pa.RecordBatch.from_pylist(rows, schema=schema)`` (a missing key: null) without
    the pandas probe (what a Spark task yields: importing pandas costs each Python worker
    ~1 s)."""
    return pa.RecordBatch.from_arrays(
        [column_array([row.get(f.name) for row in rows], f.type) for f in schema], schema=schema
    )


def unique(values: object) -> np.ndarray:
    """``np.unique`` of integers (sorted, distinct) without importing ``numpy.ma``, which
    ``np.unique`` does on first use (~30 ms of a lookup process)."""
    ordered = np.sort(np.asarray(values).ravel())
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


CHUNK_ROWS = 8192
"""Values an element-wise NumPy kernel (``hashing.hash_binary``, ``hll_image.registers_of``)
takes at a time: its passes then stay in the CPU's caches, and its temporary arrays (64 KiB)
below the size from which the C allocator maps fresh pages for each (774,721 ``l_comment``
values at scale 10 hashed in 25 ms, 72 ms at once; 700,000 integers' HLL registers 5.3 ms,
10.5 ms at once)."""


def byte_words(values: pa.Array, order: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A string or binary array's bytes for word-at-a-time kernels: a uint64 view (``order``
    ``"<u8"`` or ``">u8"``) starting at every byte offset of the values' data, zero-padded
    by 8 bytes so a read at any value's start stays inside; and each value's start in it
    and its length."""
    values = values.cast(pa.large_binary())
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)
    offsets = offsets[values.offset : values.offset + n + 1]
    data = values.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    padded = np.concatenate([raw[int(offsets[0]) : int(offsets[-1])], np.zeros(8, np.uint8)])
    # unaligned views are fine in NumPy
    words = np.ndarray((len(padded) - 7,), dtype=order, buffer=padded, strides=(1,))
    return words, offsets[:-1] - offsets[0], np.diff(offsets)


# _PREFIX_MASKS[n]: the leading n bytes of a big-endian word
_PREFIX_MASKS = np.array(
    [((1 << (8 * n)) - 1) << (8 * (8 - n)) for n in range(9)], dtype=np.uint64
)


def leading_words(values: pa.Array) -> np.ndarray:
    """The first 8 bytes of each value (zero-padded) as a big-endian uint64: an order
    consistent with the byte order Arrow sorts text and binary by (a < b implies
    word(a) <= word(b)), so a cut on the words never separates values wrongly."""
    words, starts, lengths = byte_words(values, ">u8")
    return words[starts].astype(np.uint64) & _PREFIX_MASKS[np.minimum(lengths, 8)]
