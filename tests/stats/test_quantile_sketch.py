"""The deterministic quantile sketch: a pure function of its inputs and merge order, exact
while nothing is compacted, and at least as accurate as DataSketches' KLL at the same k.

Accuracy is the largest normalized rank error over 999 ranks: the distance from each rank
to the exact rank interval of the returned item (duplicates have an interval, not a
point). DataSketches' KLL is randomised, so it is measured over a few runs and ours must be
no worse than their mean (with a quarter's margin and ``SLACK`` for their spread) and
within the bound.
"""

from __future__ import annotations

import datasketches as ds
import numpy as np
import pytest

from lakestats.errors import CorruptStatisticsError
from lakestats.stats.quantile_sketch import (
    DEFAULT_K,
    QuantileSketch,
    from_datasketches,
    normalized_rank_error,
)

RANKS = np.linspace(0.001, 0.999, 999)
SLACK = 1e-3
"""Absolute rank slack (under a tenth of the bound): where both err by a few thousandths
(few distinct values), DataSketches' random runs spread by about that much."""


def rank_error(data: np.ndarray, quantiles: np.ndarray) -> float:
    exact = np.sort(data)
    low = np.searchsorted(exact, quantiles, "left") / len(exact)
    high = np.searchsorted(exact, quantiles, "right") / len(exact)
    return float(np.max(np.maximum(0.0, np.maximum(low - RANKS, RANKS - high))))


def ours(parts: list[np.ndarray]) -> QuantileSketch:
    sketch = QuantileSketch()
    for part in parts:
        sketch.merge(QuantileSketch.build(part))
    return sketch


def theirs(parts: list[np.ndarray]) -> np.ndarray:
    sketch = ds.kll_doubles_sketch(DEFAULT_K)
    for part in parts:
        one = ds.kll_doubles_sketch(DEFAULT_K)
        one.update(np.ascontiguousarray(part))
        sketch.merge(one)
    return np.array([sketch.get_quantile(r) for r in RANKS])


def _cases() -> dict[str, tuple[list[np.ndarray], int]]:
    rng = np.random.default_rng(7)
    return {
        "uniform 10^5": ([rng.random(10**5)], 4),
        "uniform 10^7": ([rng.random(10**7)], 2),
        "zipf 10^6": ([rng.zipf(1.3, 10**6).astype(np.float64)], 4),
        "duplicates 10^6": ([rng.integers(0, 20, 10**6).astype(np.float64)], 4),
        "1,000 partitions uniform": ([rng.random(1000) for _ in range(1000)], 4),
        "1,000 partitions zipf": (
            [rng.zipf(1.5, 2000).astype(np.float64) for _ in range(1000)],
            4,
        ),
        "1,000 partitions shifted lognormal": (
            [rng.lognormal(i / 100, 1.0, 500) for i in range(1000)],
            4,
        ),
        "1,000 partitions in order": (list(np.array_split(np.arange(10.0**6), 1000)), 4),
        "1,000 partitions of few values": (
            [rng.integers(0, 5, 300).astype(np.float64) for _ in range(1000)],
            4,
        ),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_accuracy_against_datasketches(name: str) -> None:
    parts, runs = _cases()[name]
    data = np.concatenate(parts)
    mine = rank_error(data, ours(parts).quantiles(RANKS))
    library = [rank_error(data, theirs(parts)) for _ in range(runs)]
    assert mine <= normalized_rank_error()
    assert mine <= 1.25 * float(np.mean(library)) + SLACK, (mine, library)


@pytest.mark.parametrize("n", [1, 2, 7, 100, DEFAULT_K])
def test_exact_until_compacted_as_datasketches(n: int) -> None:
    values = np.random.default_rng(n).normal(size=n)
    library = ds.kll_doubles_sketch(DEFAULT_K)
    library.update(values)
    sketch = QuantileSketch.build(values)
    ranks = [0.0, 0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99, 1.0]
    assert sketch.quantiles(ranks).tolist() == [library.get_quantile(r) for r in ranks]
    assert sketch.retained == n


def test_same_inputs_same_bytes() -> None:
    rng = np.random.default_rng(3)
    parts = [rng.exponential(size=int(rng.integers(1, 5000))) for _ in range(200)]
    first, second = ours(parts).serialize(), ours(parts).serialize()
    assert first == second
    assert QuantileSketch.deserialize(first).serialize() == first
    # a merged state that was serialized on the way merges on the same
    half = ours(parts[:100])
    again = QuantileSketch.deserialize(half.serialize())
    for part in parts[100:]:
        again.merge(QuantileSketch.build(part))
    assert again.serialize() == first


def test_counts_nan_and_signed_zero() -> None:
    repeated = QuantileSketch.build(np.array([1.0, 2.0, np.nan]), np.array([3, 1, 5]))
    assert repeated.n == 4
    assert repeated.quantiles([0.0, 0.5, 1.0]).tolist() == [1.0, 1.0, 2.0]
    zeros = QuantileSketch.build(np.array([-0.0, 0.0] * 500))
    assert zeros.serialize() == QuantileSketch.build(np.array([0.0, -0.0] * 500)).serialize()
    assert QuantileSketch.build(np.array([np.nan])).is_empty()


def test_rank_error_bound_matches_datasketches() -> None:
    assert normalized_rank_error(DEFAULT_K) == pytest.approx(
        ds.kll_doubles_sketch.get_normalized_rank_error(DEFAULT_K, False), rel=1e-3
    )


def test_datasketches_bytes_convert() -> None:
    values = np.random.default_rng(5).gamma(2.0, size=50_000)
    library = ds.kll_doubles_sketch(DEFAULT_K)
    library.update(values)
    converted = QuantileSketch.deserialize(library.serialize())
    assert converted.n == library.n and converted.retained == library.num_retained
    ranks = np.linspace(0.01, 0.99, 99)
    assert converted.quantiles(ranks).tolist() == [library.get_quantile(r) for r in ranks]
    assert converted.min == values.min() and converted.max == values.max()
    converted.merge(QuantileSketch.build(values))
    assert rank_error(np.concatenate([values, values]), converted.quantiles(RANKS)) <= (
        normalized_rank_error()
    )
    assert from_datasketches(ds.kll_doubles_sketch(DEFAULT_K).serialize()).is_empty()


def test_unreadable_bytes() -> None:
    sketch = QuantileSketch.build(np.arange(1000.0)).serialize()
    with pytest.raises(CorruptStatisticsError):
        QuantileSketch.deserialize(sketch[:-3])
    with pytest.raises(CorruptStatisticsError):
        QuantileSketch.deserialize(b"\x05garbage")
