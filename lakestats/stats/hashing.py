"""A stable, vectorized 64-bit hash of strings and binary values.

The HLL sketch hashes what it is given; feeding it millions of Python ``str`` objects
costs more than the rest of a column's statistics. Instead, variable-length values are
hashed here in NumPy and the sketch receives 64-bit integers. Each value is consumed
8 bytes at a time (little-endian words, the last one zero-padded) with a
multiply-xorshift step, then finished with the SplitMix64 mixer and its length. The
function is defined here, not taken from a library, so sketches written by any
lakestats version merge with sketches of any other.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakestats.stats.arrays import CHUNK_ROWS, byte_words

_STEP = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(29)
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + _STEP
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _mix(state: np.ndarray, word: np.ndarray, scratch: np.ndarray | None = None) -> None:
    """One word into each value's state, in place (``scratch``: a buffer it may overwrite)."""
    np.bitwise_xor(state, word, out=state)
    np.multiply(state, _STEP, out=state)
    np.bitwise_xor(state, np.right_shift(state, _SHIFT, out=scratch), out=state)


def hash_binary(values: pa.Array) -> np.ndarray:
    """uint64 hash of each value of a string or binary array without nulls."""
    n = len(values)
    words, starts, lengths = byte_words(values, "<u8")
    out = np.empty(n, dtype=np.uint64)
    for begin in range(0, n, CHUNK_ROWS):
        end = min(n, begin + CHUNK_ROWS)
        out[begin:end] = _hash_rows(words, starts[begin:end], lengths[begin:end])
    return out


def _hash_rows(words: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``hash_binary`` of the values at ``starts`` (``lengths`` bytes) in ``words``."""
    n = len(starts)
    all_words = (lengths + 7) // 8
    longest_words = int(all_words.max()) if n else 0
    # longest first, so the values still being consumed at step k are a prefix;
    # 16-bit keys make NumPy's stable sort a radix sort
    narrow = np.uint16 if longest_words < (1 << 16) else np.int64
    order = np.argsort((longest_words - all_words).astype(narrow), kind="stable")
    sorted_starts, sorted_lengths = starts[order], lengths[order]
    word_counts = all_words[order]
    state = np.zeros(n, dtype=np.uint64)
    longest = int(word_counts[0]) if n else 0
    # the values still consumed at step k are a prefix ([:active]); of those, the ones
    # whose last word it is are its tail ([full:active]), the only words that need a mask
    active_at = np.searchsorted(-word_counts, -np.arange(longest + 1), side="left")
    at = sorted_starts  # where each value's next word starts (a copy: fancy-indexed)
    with np.errstate(over="ignore"):
        for k in range(longest):
            active, full = int(active_at[k]), int(active_at[k + 1])
            word = words[at[:active]]  # fancy indexing: np.take is slower on this view
            if full < active:
                tail = sorted_lengths[full:active] - 8 * k
                word[full:active] &= _MASKS[tail]
            _mix(state[:active], word, scratch=word)
            at[:full] += 8
        out = np.empty(n, dtype=np.uint64)
        out[order] = _splitmix64(state ^ (sorted_lengths.astype(np.uint64) * _STEP))
    return out


def hash_fixed_words(words: list[np.ndarray], length: int) -> np.ndarray:
    """``hash_binary`` of values of ``length`` bytes each, given as their little-endian 8-byte
    words (the last one zero-padded): the same hashes without building the bytes."""
    state = np.zeros(len(words[0]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for word in words:
            _mix(state, word)
        return _splitmix64(state ^ (np.uint64(length) * _STEP))
