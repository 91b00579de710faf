"""Order-preserving keys (``stats/keys.py``) of integers, temporals and decimals read as
int64 straight from their bytes, in the keys' order: what the exact histogram bins and the
partition-histogram parts' int lists need, without building the typed Arrow array."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_SIGN64 = np.uint64(1 << 63)


def keys_as_ints(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """8-byte order-preserving keys as int64 in the same order: the big-endian word with
    its top bit flipped (so signed int64 order is the keys' byte order)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    binary = keys.cast(pa.large_binary())
    if not len(binary):
        return np.zeros(0, np.int64)
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int64)
    offsets = offsets[binary.offset : binary.offset + len(binary) + 1]
    raw = np.frombuffer(binary.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    return (raw.view(">u8").astype(np.uint64) ^ _SIGN64).view(np.int64)


def decimal_keys_as_ints(keys: pa.Array, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Decimal keys of ``width`` bytes (all of that width) as the int64 unscaled values, in
    the same order, and which of them fit in an int64 (the others' ints are meaningless):
    a decimal key is ``2**(8 * width - 1) + v`` big-endian (``keys.encode``), so
    ``v`` is its low word when the words above it are only its sign."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    binary = keys.cast(pa.large_binary())
    if not len(binary):
        return np.zeros(0, np.int64), np.zeros(0, bool)
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int64)
    offsets = offsets[binary.offset : binary.offset + len(binary) + 1]
    raw = np.frombuffer(binary.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    words = raw.view(">u8").reshape(len(binary), width // 8).astype(np.uint64)
    ints = words[:, -1].view(np.int64)
    negative = ints < 0
    fits = words[:, 0] == np.where(negative, _SIGN64 - np.uint64(1), _SIGN64)
    if width > 16:
        middle = np.where(negative, np.uint64(2**64 - 1), np.uint64(0))[:, None]
        fits &= (words[:, 1:-1] == middle).all(axis=1)
    return ints, fits
