"""An HLL_8 sketch image built in NumPy from many values at once.

The DataSketches binding updates a sketch one Python value at a time (60-150 ns each:
0.2 s for the 900,000 distinct values of one lineitem partition's column, with the list
built for it). Here all values are hashed at once with the function the library uses
(MurmurHash3_x64_128, seed 9001, of the same 8 bytes the library hashes for an integer or
a canonical double), turned into the same coupons and registers, and written in the
library's compact HLL-mode layout. The registers are the library's, byte for byte. The
estimator fields are what the library's rebuild computes from registers (slot order); the
image is marked out of order, so its estimate is the composite estimator, a function of
the registers alone: what lakestats reads anyway (``sketches.order_free_hll``).
"""

from __future__ import annotations

import struct

import numpy as np

from lakestats.stats.arrays import CHUNK_ROWS

SEED = np.uint64(9001)  # DataSketches' DEFAULT_SEED
_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)
_KEY_BITS = 26
_MAX_VALUE = 63  # 62 leading zeros and more give 63
_HLL_PREINTS, _SER_VER, _FAMILY = 10, 1, 7
_COMPACT, _OUT_OF_ORDER = 8, 16
_MODE_HLL8 = 2 | (2 << 2)  # current mode HLL, target type HLL_8


def _fmix64(k: np.ndarray, scratch: np.ndarray) -> None:
    """MurmurHash3's finalizer, in place (``scratch``: an array of ``k``'s shape)."""
    np.right_shift(k, np.uint64(33), out=scratch)
    k ^= scratch
    k *= np.uint64(0xFF51AFD7ED558CCD)
    np.right_shift(k, np.uint64(33), out=scratch)
    k ^= scratch
    k *= np.uint64(0xC4CEB9FE1A85EC53)
    np.right_shift(k, np.uint64(33), out=scratch)
    k ^= scratch


def murmur3_words(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MurmurHash3_x64_128 (seed 9001) of each uint64 taken as 8 little-endian bytes
    (computed in place on three arrays: a million values in a few milliseconds)."""
    with np.errstate(over="ignore"):
        h1 = words.astype(np.uint64, copy=True)
        scratch = np.empty_like(h1)
        h1 *= _C1
        np.right_shift(h1, np.uint64(33), out=scratch)
        h1 <<= np.uint64(31)
        h1 |= scratch  # rotl64(k1, 31)
        h1 *= _C2
        start = SEED ^ np.uint64(8)  # h2 before mixing; h1 = seed ^ k1 ^ length
        h1 ^= start
        h1 += start  # h1 += h2
        h2 = h1 + start  # h2 += h1
        _fmix64(h1, scratch)
        _fmix64(h2, scratch)
        h1 += h2
        h2 += h1
    return h1, h2


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Each value's bit length (0 for 0): the exponent of its top 53 bits as a double,
    exact, and the few values below 2**11 apart."""
    top = (x >> np.uint64(11)).astype(np.float64)  # below 2**53: exact
    length = (top.view(np.uint64) >> np.uint64(52)).astype(np.int64)
    length -= 1023 - 12  # bit length of the top bits (a double's exponent + 1), + 11
    small = np.flatnonzero(top == 0)
    if len(small):
        rest = (x[small] & np.uint64(0x7FF)).astype(np.float64)
        length[small] = np.where(rest > 0, np.frexp(rest)[1], 0)
    return length


def words_of(values: np.ndarray) -> np.ndarray:
    """The 8 bytes the library hashes: an int64 as it is, a double canonical (-0.0 as 0.0,
    every NaN as Java's 0x7ff8000000000000)."""
    if values.dtype.kind == "f":
        doubles = values.astype(np.float64) + 0.0  # -0.0 + 0.0 is 0.0
        words = doubles.view(np.uint64).copy()
        words[np.isnan(doubles)] = np.uint64(0x7FF8000000000000)
        return words
    return values.astype(np.int64, copy=False).view(np.uint64)


def registers_of(values: np.ndarray, lg_k: int) -> np.ndarray:
    """The HLL registers (one uint8 per slot) after updating with every value: each slot's
    largest coupon (``np.maximum.at``, a fifth of the time of marking a slot-by-coupon grid
    and finding each row's highest mark), ``CHUNK_ROWS`` values at a time."""
    registers = np.zeros(1 << lg_k, dtype=np.uint8)
    for begin in range(0, len(values), CHUNK_ROWS):
        _update(registers, values[begin : begin + CHUNK_ROWS], lg_k)
    return registers


def _update(registers: np.ndarray, values: np.ndarray, lg_k: int) -> None:
    """``registers`` updated with ``values``, in place."""
    h1, h2 = murmur3_words(words_of(values))
    h1 &= np.uint64((1 << lg_k) - 1)
    slots = h1.view(np.int64)
    coupons = 64 - _bit_length(h2)  # leading zeros
    np.minimum(coupons, _MAX_VALUE - 1, out=coupons)
    coupons += 1  # 1..63
    np.maximum.at(registers, slots, coupons.astype(np.uint8))


def hll8_image(values: np.ndarray, lg_k: int) -> bytes:
    """The compact serialized HLL_8 sketch (HLL mode, out of order) of ``values``."""
    registers = registers_of(values, lg_k)
    inverse = np.ldexp(1.0, -registers.astype(np.int64))
    low = registers < 32
    kxq0 = float(np.cumsum(np.where(low, inverse, 0.0))[-1])  # in slot order, as the
    kxq1 = float(np.cumsum(np.where(low, 0.0, inverse))[-1])  # library's rebuild sums
    header = bytes(
        [_HLL_PREINTS, _SER_VER, _FAMILY, lg_k, 0, _COMPACT | _OUT_OF_ORDER, 0, _MODE_HLL8]
    )
    zeros = int(np.count_nonzero(registers == 0))
    return header + struct.pack("<dddII", 0.0, kxq0, kxq1, zeros, 0) + registers.tobytes()
