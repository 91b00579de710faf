"""The vectorised bootstrap (``stats/ndv/bootstrap.py``) against the scalar rule: every
replicate's estimate equals ``selection._choose`` run on that replicate's profile alone."""

from __future__ import annotations

import numpy as np
import pytest

from lakestats.stats.ndv import frequency_of_frequencies
from lakestats.stats.ndv.bootstrap import choose_many, resample_many
from lakestats.stats.ndv.profile import to_profile
from lakestats.stats.ndv.selection import _choose, _dense, _profile


def _class_sizes(rng: np.random.Generator, size: int) -> np.ndarray:
    return np.maximum(rng.lognormal(0.5, 2, size), 1).astype(np.int64)


def _columns(rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
    uniform = rng.integers(0, size // 4, size)
    return {
        "uniform": uniform,
        "default": np.where(rng.random(size) < 0.3, -1, uniform),  # one heavy value
        "zipf13": rng.zipf(1.3, size),
        "zipf2": rng.zipf(2.0, size),
        "lognormal": np.repeat(np.arange(size), _class_sizes(rng, size))[:size],
        "pairs": np.repeat(np.arange(size // 2), 2),
        "few": rng.integers(0, 40, size),
        "key": np.arange(size),
    }


@pytest.mark.parametrize("fraction", [0.01, 0.1])
def test_every_replicate_equals_the_scalar_rule(fraction):
    rng = np.random.default_rng(13)
    size = 200_000
    for name, column in _columns(rng, size).items():
        sample = column[rng.choice(size, int(size * fraction), replace=False)]
        p = to_profile(frequency_of_frequencies(sample))
        support, counts = resample_many(p, np.random.default_rng(1), 40)
        values, sizes, scalar = choose_many(support, counts, size)
        assert not scalar.any()
        for r in range(counts.shape[0]):
            dense = _dense(support, counts[r])
            assert int(sizes[r]) == int((np.arange(1, dense.size + 1) * dense).sum())
            want = _choose(_profile(dense), int(sizes[r]), size)[1]
            assert values[r] == pytest.approx(want, rel=1e-6), (name, r)


def test_replicates_are_poisson_bootstraps_of_the_profile():
    """Each replicate's total equals its rows' counts; over many replicates the mean number
    of values seen k times is the Poisson mixture's (computed here from the pmf)."""
    from math import exp, factorial, lgamma, log

    profile = to_profile({1: 1000, 2: 300, 5: 100, 40: 3, 70: 80})
    support, counts = resample_many(profile, np.random.default_rng(9), 2000)
    mean = counts.mean(axis=0)
    for k in (1, 2, 3, 5, 8):
        expected = sum(c * exp(-i) * i**k / factorial(k)
                       for i, c in {1: 1000, 2: 300, 5: 100, 40: 3, 70: 80}.items())
        got = mean[support == k][0]
        assert got == pytest.approx(expected, rel=0.03)
    # values drawn more than 40 times: the 80 seen 70 times (a multinomial draw) nearly all,
    # the 3 seen 40 times about half
    def above_40(i: int) -> float:
        return sum(exp(k * log(i) - i - lgamma(k + 1)) for k in range(41, 400))

    heavy = counts[:, support > 40].sum(axis=1)
    assert heavy.mean() == pytest.approx(80 * above_40(70) + 3 * above_40(40), rel=0.02)


def test_a_profile_of_heavy_values_only_has_the_interval_every_replicate_gives():
    """Every value seen more than 50 times: ``select_estimator`` answers ``[d, d]`` without
    resampling; the bootstrap it skips gives ``d`` in every replicate (and no float noise
    above it, which the stored upper bound would round up to ``d + 1``)."""
    from lakestats.stats.ndv import select_estimator

    rng = np.random.default_rng(21)
    for _ in range(40):
        freqs = np.unique(rng.integers(51, int(rng.choice([60, 300, 5_000])), rng.integers(1, 25)))
        counts = rng.integers(1, 80, freqs.size)
        p = to_profile({int(f): int(c) for f, c in zip(freqs, counts, strict=True)})
        n = int((freqs * counts).sum())
        big_n = n * int(rng.choice([2, 10, 100, 1_000]))
        support, replicated = resample_many(p, np.random.default_rng(0), 200)
        values, _, scalar = choose_many(support, replicated, big_n)
        assert not scalar.any() and (values == p.d).all()
        assert select_estimator(p, n, big_n, replicates=20) == (
            "chao_katz", float(p.d), (float(p.d), float(p.d))
        )


def test_one_value_seen_millions_of_times_costs_no_more_than_its_draws():
    """A default value seen 5 million times beside singletons: the replicates' table has a
    column per count drawn, not one per count up to 5 million."""
    profile = to_profile({1: 1_000, 2: 50, 5_000_000: 1})
    support, counts = resample_many(profile, np.random.default_rng(3), 200)
    assert support.size < 300 and counts.shape == (200, support.size)
    heavy = support > 4_000_000
    assert (counts[:, heavy].sum(axis=1) == 1).all()  # the default value in every replicate
    assert counts[:, ~heavy] @ support[~heavy] == pytest.approx(1_100, rel=0.2)
