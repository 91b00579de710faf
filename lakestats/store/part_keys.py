"""How a part of the partition histograms (``partition_histograms``) stores a column's
keys as ints, and back: apart from that module so a partition lookup (``partition_rows``)
decodes them without importing pyarrow.compute."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakestats.stats.kinds import Kind, kind_of

EIGHT_BYTE_KINDS = (Kind.INTEGER, Kind.FLOATING, Kind.TEMPORAL)
"""Kinds whose keys are 8 bytes: their frequency values are stored as ``frequency_ints``
(int64 decodes ~8x faster than binary keys; the estimator reads them by the million)."""
SIGN = np.uint64(1 << 63)


def ints_as_keys(ints: np.ndarray, width: int = 8) -> list[bytes]:
    """``keys_as_ints`` (``width`` 8) or ``decimal_keys_as_ints`` (16, 32) undone: the
    keys, as bytes."""
    data = int_keys(ints, width).tobytes()
    return [data[i : i + width] for i in range(0, len(data), width)]


def int_keys(ints: np.ndarray, width: int = 8) -> np.ndarray:
    """``ints_as_keys`` as one NumPy ``S{width}`` array (compared as ``memcmp``)."""
    ints = np.asarray(ints, np.int64)
    low = ints.view(np.uint64)
    if width == 8:
        return (low ^ SIGN).astype(">u8").view("S8")
    # a decimal key of an int64 value v: 2**(8 * width - 1) + v, big-endian
    words = np.empty((len(ints), width // 8), ">u8")
    negative = ints < 0
    words[:, 0] = np.where(negative, SIGN - np.uint64(1), SIGN)
    words[:, 1:-1] = np.where(negative, np.uint64(2**64 - 1), np.uint64(0))[:, None]
    words[:, -1] = low
    return words.view(f"S{width}").ravel()


def key_width(dtype: pa.DataType) -> int:
    """The width of the column's keys the parts may store as ints: 8 (integer, floating,
    temporal), 16 or 32 (decimals: those whose values fit in an int64), else 0."""
    kind = kind_of(dtype)
    if kind in EIGHT_BYTE_KINDS:
        return 8
    if kind == Kind.DECIMAL:
        return 32 if dtype.bit_width == 256 else 16  # decimal32/64 keys are 16 bytes wide
    return 0
