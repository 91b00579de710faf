"""``most_frequent`` against a plain sort on (count descending, value ascending)."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakestats.stats.top_values import kth_largest, most_frequent, top_set


def _reference(counts: np.ndarray, values: pa.Array, k: int) -> list:
    table = pa.table({"c": pa.array(counts), "v": values})
    order = pc.sort_indices(table, sort_keys=[("c", "descending"), ("v", "ascending")])
    return order.to_numpy()[:k].tolist()


@pytest.mark.parametrize("k", [0, 1, 7, 50, 199, 200, 500])
@pytest.mark.parametrize("kind", ["int", "string", "binary_chunked"])
def test_most_frequent_matches_a_full_sort(kind: str, k: int) -> None:
    rng = np.random.default_rng(k)
    n = 200
    counts = rng.integers(1, 4, n)  # mostly ties, as in near-unique columns
    distinct = rng.permutation(10 * n)[:n]
    if kind == "int":
        values: pa.Array | pa.ChunkedArray = pa.array(distinct, pa.int64())
    elif kind == "string":
        values = pa.array([f"v{x}" for x in distinct])
    else:
        raw = [int(x).to_bytes(3, "big") for x in distinct]
        values = pa.chunked_array([raw[:77], raw[77:]], pa.binary())
    assert most_frequent(counts, values, k).tolist() == _reference(counts, values, k)


@pytest.mark.parametrize("k", [0, 1, 7, 50, 199, 200, 500])
@pytest.mark.parametrize("kind", ["int", "float", "decimal", "date"])
def test_most_frequent_of_ascending_values_matches_a_full_sort(kind: str, k: int) -> None:
    """Values in ascending order (a partition's counted numbers) are ordered by position
    alone, with the ties and the ones kept exactly as Arrow's sort on the values puts them
    (floats: NaN last, as both sort it)."""
    rng = np.random.default_rng(k + 11)
    n = 200
    counts = rng.integers(1, 4, n)
    distinct = np.sort(rng.permutation(10 * n)[:n]) - 5 * n
    if kind == "int":
        values = pa.array(distinct, pa.int64())
    elif kind == "float":
        values = pa.array(np.append(distinct[:-1] / 7.0, np.nan), pa.float64())
    elif kind == "decimal":
        values = pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in distinct],
                          pa.decimal128(12, 2))
    else:
        values = pa.array(distinct.astype(np.int32)).view(pa.date32())
    got = most_frequent(counts, values, k, ascending=True).tolist()
    assert got == _reference(counts, values, k)
    assert got == most_frequent(counts, values, k).tolist()


@pytest.mark.parametrize("need_fraction", [0.02, 0.5, 0.99])
def test_top_set_is_the_first_k_of_the_sort_with_either_tie_strategy(need_fraction: float) -> None:
    """``top_set`` keeps the sort's first ``k`` rows, whether it selects among the ties with a
    heap (few kept) or sorts them (most kept)."""
    rng = np.random.default_rng(7)
    n = 5000
    counts = np.where(rng.random(n) < 0.1, rng.integers(2, 50, n), 1)  # 90 % tied at 1
    values = pa.array([f"value-{x}" for x in rng.permutation(n)])
    above = int((counts > 1).sum())
    k = above + int(need_fraction * (n - above))
    got = top_set(counts, values, k)
    assert len(got) == k
    assert sorted(got.tolist()) == sorted(_reference(counts, values, k))


def test_kth_largest_is_numpys_selection() -> None:
    """The tally path (small counts) and the selection path agree with ``np.partition``."""
    rng = np.random.default_rng(5)
    for trial in range(2_000):
        n = int(rng.integers(1, 400))
        if trial % 3 == 0:
            counts = rng.zipf(1.3, n).astype(np.int64)  # a wide range: np.partition
        else:
            counts = rng.integers(1, int(rng.integers(2, 40)), n)
        k = int(rng.integers(1, n + 1))
        assert kth_largest(counts, k) == np.partition(counts, n - k)[n - k]


def _random_bytes(rng: np.random.Generator, n: int) -> list[bytes]:
    """Distinct byte strings built to stress an 8-byte prefix cut: empty and short values,
    zero bytes (``b"ab"`` against ``b"ab\\0"``), long shared prefixes, high bytes."""
    alphabet = np.array([0, 1, ord("a"), ord("b"), 0x7F, 0x80, 0xFF], dtype=np.uint8)
    out: set[bytes] = set()
    while len(out) < n:
        shared = b"prefix-0" * int(rng.integers(0, 3))
        tail = bytes(rng.choice(alphabet, int(rng.integers(0, 12))).tolist())
        out.add(shared[: int(rng.integers(0, len(shared) + 1))] + tail)
    return sorted(out, key=lambda _: rng.random())


@pytest.mark.parametrize("dtype", [pa.binary(), pa.large_binary(), pa.string(), "sliced"])
def test_smallest_by_prefix_is_arrows_selection(dtype: object) -> None:
    """``smallest`` (NumPy prefix cut, then Arrow among the values sharing the cut's prefix)
    keeps exactly the values Arrow's sort puts first."""
    from lakestats.stats.top_values import smallest

    rng = np.random.default_rng(11)
    for n in (70, 300, 3000):
        raw = _random_bytes(rng, n + 5)
        if dtype == pa.string():
            raw = [r.replace(b"\x80", b"c").replace(b"\xff", b"d") for r in raw]
            values: pa.Array = pa.array([r.decode() for r in dict.fromkeys(raw)], pa.string())
        elif dtype == "sliced":
            values = pa.array(raw, pa.binary()).slice(5)
        else:
            values = pa.array(raw, dtype)  # type: ignore[arg-type]
        for need in (64, 65, len(values) // 2, len(values) - 1):
            if not 64 <= need < len(values):
                continue
            got = smallest(values, need)
            want = pc.sort_indices(values).to_numpy()[:need]
            assert sorted(got.tolist()) == sorted(want.tolist())
