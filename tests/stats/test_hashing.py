"""``hash_binary`` against a plain-Python reading of the hash its docstring defines."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakestats.stats import hashing
from lakestats.stats.hashing import hash_binary

_M = (1 << 64) - 1
_STEP = 0x9E3779B97F4A7C15


def _splitmix64(x: int) -> int:
    x = (x + _STEP) & _M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M
    return x ^ (x >> 31)


def _reference(value: bytes) -> int:
    """8 bytes at a time (little-endian words, the last zero-padded), a multiply-xorshift
    step each, then SplitMix64 of the state mixed with the length."""
    state = 0
    for start in range(0, len(value), 8):
        word = int.from_bytes(value[start : start + 8], "little")
        mixed = ((state ^ word) * _STEP) & _M
        state = mixed ^ (mixed >> 29)
    return _splitmix64(state ^ ((len(value) * _STEP) & _M))


@pytest.mark.parametrize("chunk_rows", [7, hashing.CHUNK_ROWS])
@pytest.mark.parametrize("dtype", [pa.binary(), pa.large_binary(), "sliced", "string"])
def test_hash_binary_matches_the_reference(
    dtype: object, chunk_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hashing, "CHUNK_ROWS", chunk_rows)  # 7: values hashed in many chunks
    rng = np.random.default_rng(3)
    for n in (0, 1, 17, 400):
        raw = [
            bytes(rng.integers(0, 256, int(rng.integers(0, 41))).tolist()) for _ in range(n)
        ]
        if dtype == "string":
            raw = [bytes(b % 128 for b in r) for r in raw]
            values = pa.array([r.decode() for r in raw], pa.string())
        elif dtype == "sliced":
            values = pa.array([b"skipped", *raw, b"also skipped"], pa.binary()).slice(1, n)
        else:
            values = pa.array(raw, dtype)  # type: ignore[arg-type]
        got = hash_binary(values).tolist()
        assert got == [_reference(r) for r in raw]
