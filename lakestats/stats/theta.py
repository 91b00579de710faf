"""Theta sketches as Apache Iceberg writes them, hashed in NumPy.

Iceberg's standard Puffin blob ``apache-datasketches-theta-v1`` is a compact DataSketches
theta sketch (default seed 9001) fed with each value's **Iceberg single-value
serialization** (``org.apache.iceberg.types.Conversions.toByteBuffer``: int and date 4
bytes little-endian, long, time and timestamp 8 bytes little-endian, float 4 and double 8
bytes little-endian IEEE, string UTF-8, boolean one byte, decimal the unscaled value's
minimal big-endian two's-complement bytes, binary and fixed their bytes, uuid 16 bytes
big-endian). ``UpdateSketch.update(ByteBuffer)`` hashes those bytes with
MurmurHash3_x64_128 and keeps ``h1 >>> 1``; empty values (an empty string) are not
counted. Iceberg's Spark aggregate builds its sketches with the default nominal entries,
k = 4096 (``K``).

Here each column's values are hashed at once: ``murmur3_h1`` runs MurmurHash3's 16-byte
block loop over all values together (variable-length values through their Arrow offsets,
the values still consuming blocks being a prefix once sorted longest first), so there is
no Python loop per value. A sketch is the set of hashes below theta: ``sketch_of`` keeps
the k smallest (theta the next one), ``union`` merges serialized sketches the way a theta
union does (the smallest theta, then the k smallest hashes below it), and ``serialize``
writes the compact serial-version-3 layout Java and C++ DataSketches read.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from lakestats.errors import LakestatsError

SEED = 9001
LG_K = 12
K = 1 << LG_K
"""Nominal entries: DataSketches' default, what Iceberg's ``ThetaSketchAgg`` uses."""
MAX_THETA = (1 << 63) - 1
SEED_HASH = 0x93CC  # DataSketches' 16-bit hash of the default seed 9001

_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)

_FAMILY_COMPACT = 3
_SERIAL_VERSION = 3
_FLAGS_READ_ONLY, _FLAGS_EMPTY, _FLAGS_COMPACT, _FLAGS_ORDERED = 2, 4, 8, 16


class ThetaSketchError(LakestatsError):
    """A serialized theta sketch that is not one lakestats can merge."""


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _fmix(k: np.ndarray) -> np.ndarray:
    k = k ^ (k >> np.uint64(33))
    k = k * _M1
    k = k ^ (k >> np.uint64(33))
    k = k * _M2
    return k ^ (k >> np.uint64(33))


def _mix_k1(k1: np.ndarray) -> np.ndarray:
    return _rotl(k1 * _C1, 31) * _C2


def _mix_k2(k2: np.ndarray) -> np.ndarray:
    return _rotl(k2 * _C2, 33) * _C1


def murmur3_h1(data: np.ndarray, offsets: np.ndarray, seed: int = SEED) -> np.ndarray:
    """The first 64-bit half of MurmurHash3_x64_128 of each value ``data[o[i]:o[i+1]]``
    (``offsets`` int64, one more than there are values), as uint64."""
    n = len(offsets) - 1
    starts = offsets[:-1].astype(np.int64)
    lengths = np.diff(offsets).astype(np.int64)
    padded = np.concatenate([np.asarray(data, dtype=np.uint8), np.zeros(16, np.uint8)])
    # a little-endian uint64 read at every byte offset (unaligned strided view)
    words = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    blocks = lengths // 16
    h1 = np.full(n, seed, dtype=np.uint64)
    h2 = np.full(n, seed, dtype=np.uint64)
    with np.errstate(over="ignore"):
        most = int(blocks.max()) if n else 0
        if most:
            order = np.argsort(-blocks, kind="stable")  # longest first: active = a prefix
            sorted_blocks = blocks[order]
            s_starts = starts[order]
            a1, a2 = h1[order], h2[order]
            for b in range(most):
                active = int(np.searchsorted(-sorted_blocks, -b, side="left"))
                at = s_starts[:active] + 16 * b
                x1 = a1[:active] ^ _mix_k1(words[at])
                x1 = _rotl(x1, 27) + a2[:active]
                x1 = x1 * np.uint64(5) + np.uint64(0x52DCE729)
                x2 = a2[:active] ^ _mix_k2(words[at + 8])
                x2 = _rotl(x2, 31) + x1
                a2[:active] = x2 * np.uint64(5) + np.uint64(0x38495AB5)
                a1[:active] = x1
            h1[order], h2[order] = a1, a2
        tail = lengths - 16 * blocks
        at = starts + 16 * blocks
        k1 = words[at] & _MASKS[np.minimum(tail, 8)]
        k2 = words[at + 8] & _MASKS[np.clip(tail - 8, 0, 8)]
        h2 = h2 ^ _mix_k2(k2)  # a zero word mixes to zero: the same as no tail
        h1 = h1 ^ _mix_k1(k1)
        size = lengths.astype(np.uint64)
        h1 = h1 ^ size
        h2 = h2 ^ size
        h1 = h1 + h2
        h2 = h2 + h1
        h1 = _fmix(h1)
        h2 = _fmix(h2)
        return h1 + h2


def murmur3_h1_short(words: np.ndarray, width: int, seed: int = SEED) -> np.ndarray:
    """``murmur3_h1`` of values of ``width`` ≤ 8 bytes given as little-endian words
    (zero-extended): no block, only the first tail word; the same hashes, fewer passes."""
    with np.errstate(over="ignore"):
        h1 = np.uint64(seed) ^ _mix_k1(words.astype(np.uint64, copy=False))
        size = np.uint64(width)
        h2 = np.uint64(seed) ^ size
        h1 = (h1 ^ size) + h2
        h2 = h2 + h1
        return _fmix(h1) + _fmix(h2)


def _fixed(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytes and offsets of a fixed-width little-endian NumPy array."""
    width = values.dtype.itemsize
    data = np.ascontiguousarray(values).view(np.uint8)
    return data, np.arange(len(values) + 1, dtype=np.int64) * width


def _variable(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    values = values.cast(pa.large_binary())
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[values.offset :][: n + 1]
    buffer = values.buffers()[2]
    data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    return data, offsets


def _minimal_big_endian(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Java ``BigInteger.toByteArray`` of each decimal's unscaled value: its minimal
    two's-complement big-endian bytes, from the 16-byte little-endian decimal128 words."""
    values = values.cast(pa.decimal128(38, values.type.scale)) if not pat.is_decimal128(
        values.type
    ) else values
    n = len(values)
    raw = np.frombuffer(values.buffers()[1], dtype=np.uint8)[16 * values.offset :][: 16 * n]
    big = raw.reshape(n, 16)[:, ::-1]
    negative = big[:, 0] >= 0x80
    fill = np.where(negative, 0xFF, 0x00).astype(np.uint8)
    # a leading byte is redundant when it only repeats the sign the next byte carries
    redundant = (big[:, :15] == fill[:, None]) & ((big[:, 1:] >= 0x80) == negative[:, None])
    skip = np.cumprod(redundant, axis=1).sum(axis=1)
    keep = np.arange(16)[None, :] >= skip[:, None]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(16 - skip, out=offsets[1:])
    return np.ascontiguousarray(big[keep]), offsets


def iceberg_bytes(values: pa.Array, iceberg_type: str) -> tuple[np.ndarray, np.ndarray]:
    """The Iceberg single-value serialization of each non-null value, as (bytes, offsets).

    ``iceberg_type`` is the Iceberg type's name (``int``, ``long``, ``date``,
    ``timestamp``, ``timestamptz``, ``time``, ``float``, ``double``, ``string``,
    ``boolean``, ``binary``, ``fixed[n]``, ``uuid``, ``decimal(p, s)``): the Arrow values
    are converted to it (an ``int`` read as int64 is serialized in 4 bytes, timestamps in
    microseconds whatever their Arrow unit)."""
    dtype = values.type
    if pat.is_dictionary(dtype):
        values = values.dictionary_decode()
        dtype = values.type
    name = iceberg_type.split("(")[0].split("[")[0].strip()
    if name in ("int", "date"):
        if pat.is_date(dtype):
            values = values.cast(pa.date32()).view(pa.int32())
        return _fixed(values.cast(pa.int32()).to_numpy(zero_copy_only=False).astype("<i4"))
    if name in ("long", "time", "timestamp", "timestamptz"):
        if pat.is_timestamp(dtype):
            values = values.cast(pa.timestamp("us", dtype.tz)).view(pa.int64())
        elif pat.is_time(dtype):
            values = values.cast(pa.time64("us")).view(pa.int64())
        return _fixed(values.cast(pa.int64()).to_numpy(zero_copy_only=False).astype("<i8"))
    if name == "float":
        return _fixed(values.cast(pa.float32()).to_numpy(zero_copy_only=False).astype("<f4"))
    if name == "double":
        return _fixed(values.cast(pa.float64()).to_numpy(zero_copy_only=False).astype("<f8"))
    if name == "boolean":
        return _fixed(values.to_numpy(zero_copy_only=False).astype(np.uint8))
    if name in ("string", "binary", "fixed", "uuid"):
        if pat.is_fixed_size_binary(dtype) or pat.is_string(dtype) or pat.is_large_string(dtype):
            values = values.cast(pa.binary()) if not pat.is_large_string(dtype) else values
        if pat.is_string_view(dtype) or pat.is_binary_view(dtype):
            values = values.cast(pa.large_binary())
        return _variable(values)
    if name == "decimal":
        return _minimal_big_endian(values)
    raise ThetaSketchError(f"no Iceberg single-value serialization for type {iceberg_type}")


SUPPORTED = frozenset(
    {"int", "date", "long", "time", "timestamp", "timestamptz", "float", "double", "boolean",
     "string", "binary", "fixed", "uuid", "decimal"}
)
"""Iceberg types whose single-value serialization is defined here (not ``timestamp_ns``,
``variant``, nested types)."""


def supported(iceberg_type: str | None) -> bool:
    return iceberg_type is not None and (
        iceberg_type.split("(")[0].split("[")[0].strip() in SUPPORTED
    )


def hashes_of(values: pa.Array, iceberg_type: str) -> np.ndarray:
    """The theta hashes (63-bit, as uint64) of the non-null, non-empty values, as Java's
    ``UpdateSketch.update(ByteBuffer)`` computes them; zero (rejected by Java) left out."""
    if values.null_count:
        values = values.drop_null()
    data, offsets = iceberg_bytes(values, iceberg_type)
    width = int(offsets[1] - offsets[0]) if len(offsets) > 1 else 0
    if width in (4, 8) and len(data) == width * (len(offsets) - 1):  # fixed width
        words = data.view("<u4" if width == 4 else "<u8")
        hashes = murmur3_h1_short(words, width) >> np.uint64(1)
        return hashes[hashes != 0]
    hashes = murmur3_h1(data, offsets) >> np.uint64(1)
    keep = (np.diff(offsets) > 0) & (hashes != 0)
    return hashes if keep.all() else hashes[keep]


def _sorted_distinct(hashes: np.ndarray) -> np.ndarray:
    ordered = np.sort(hashes)  # (np.unique of uint64 is many times slower)
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _canonical(hashes: np.ndarray, theta: int, k: int) -> tuple[np.ndarray, int]:
    """The distinct hashes below ``theta``, at most the ``k`` smallest (theta lowered to
    the next one when more), sorted."""
    hashes = hashes[hashes < np.uint64(theta)]
    if len(hashes) > 4 * (k + 1):
        # every value up to the (k+1)-th smallest (counted with repeats): when they hold
        # k+1 distinct ones, they hold the k+1 smallest distinct ones
        cutoff = np.partition(hashes, k)[k]
        few = _sorted_distinct(hashes[hashes <= cutoff])
        hashes = few if len(few) > k else _sorted_distinct(hashes)
    else:
        hashes = _sorted_distinct(hashes)
    if len(hashes) > k:
        theta = int(hashes[k])
        hashes = hashes[:k]
    return hashes, theta


def sketch_of(hashes: np.ndarray, k: int = K) -> bytes:
    """A compact theta sketch (serialized) of these hashes: exact up to ``k`` distinct."""
    kept, theta = _canonical(hashes.astype(np.uint64, copy=False), MAX_THETA, k)
    return serialize(kept, theta)


def serialize(hashes: np.ndarray, theta: int) -> bytes:
    """The compact, ordered serial-version-3 layout (DataSketches Java and C++)."""
    count = len(hashes)
    if count == 0 and theta == MAX_THETA:
        flags = _FLAGS_READ_ONLY | _FLAGS_EMPTY | _FLAGS_COMPACT | _FLAGS_ORDERED
        return struct.pack("<BBBBBBH", 1, _SERIAL_VERSION, _FAMILY_COMPACT, 0, 0, flags,
                           SEED_HASH)
    flags = _FLAGS_READ_ONLY | _FLAGS_COMPACT | _FLAGS_ORDERED
    estimating = theta < MAX_THETA
    if count == 1 and not estimating:
        head = struct.pack("<BBBBBBH", 1, _SERIAL_VERSION, _FAMILY_COMPACT, 0, 0, flags,
                           SEED_HASH)
    else:
        longs = 3 if estimating else 2
        head = struct.pack("<BBBBBBHII", longs, _SERIAL_VERSION, _FAMILY_COMPACT, 0, 0,
                           flags, SEED_HASH, count, 0)
        if estimating:
            head += struct.pack("<q", theta)
    return head + np.sort(hashes).astype("<u8").tobytes()


def parse(data: bytes) -> tuple[np.ndarray, int]:
    """The hashes and theta of a serialized compact sketch (serial version 3)."""
    if len(data) < 8:
        raise ThetaSketchError(f"a theta sketch of {len(data)} bytes is too short")
    longs, version, family, _, _, flags, seed_hash = struct.unpack_from("<BBBBBBH", data)
    if version != _SERIAL_VERSION or family != _FAMILY_COMPACT or seed_hash != SEED_HASH:
        raise ThetaSketchError(
            f"not a compact theta sketch of the default seed (serial version {version}, "
            f"family {family}, seed hash {seed_hash:#x})"
        )
    if flags & _FLAGS_EMPTY:
        return np.zeros(0, np.uint64), MAX_THETA
    if longs == 1:
        return np.frombuffer(data, "<u8", 1, 8).astype(np.uint64), MAX_THETA
    (count,) = struct.unpack_from("<I", data, 8)
    theta = struct.unpack_from("<q", data, 16)[0] if longs >= 3 else MAX_THETA
    hashes = np.frombuffer(data, "<u8", count, 8 * longs).astype(np.uint64)
    return hashes, theta


def union(sketches: list[bytes], k: int = K) -> bytes:
    """The theta union of serialized sketches: the smallest theta, then the ``k``
    smallest distinct hashes below it."""
    parsed = [parse(s) for s in sketches]
    theta = min((t for _, t in parsed), default=MAX_THETA)
    every = np.concatenate([h for h, _ in parsed]) if parsed else np.zeros(0, np.uint64)
    kept, theta = _canonical(every, theta, k)
    return serialize(kept, theta)


def estimate(data: bytes) -> float:
    hashes, theta = parse(data)
    return len(hashes) if theta == MAX_THETA else len(hashes) / (theta / MAX_THETA)


def column_sketch(values: pa.Array, iceberg_type: str, k: int = K) -> bytes:
    """The sketch of one column's values (nulls ignored; the values may repeat)."""
    return sketch_of(hashes_of(values, iceberg_type), k)
