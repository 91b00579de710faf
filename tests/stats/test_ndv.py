"""Sample distinct-value estimators against their published formulas, written out again
here in plain Python over ``{i: f_i}`` dicts (no code shared with lakestats.stats.ndv), and
against published worked examples where the papers or their reference implementations give
them; edge cases; and a statistical check on uniform data."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from lakestats.errors import LakestatsError
from lakestats.stats import ndv
from lakestats.stats.ndv import NdvInputError, frequency_of_frequencies, select_estimator

# small hand-checkable profiles {times seen: number of values}, with N
SKBIO = {1: 3, 2: 3, 4: 2, 5: 1}  # scikit-bio's chao1 test counts [0,1,1,4,2,5,2,4,1,2]
A = {1: 9, 2: 4, 3: 2, 5: 1}
HEAVY = {1: 30, 2: 10, 3: 4, 60: 2, 120: 1}  # two classes seen more than c = 50 times
PROFILES = [(SKBIO, 500), (A, 1000), (A, 40), (HEAVY, 10_000), (HEAVY, 400)]


def sizes(f: dict) -> tuple[int, int]:
    return sum(i * c for i, c in f.items()), sum(f.values())


def dense(f: dict) -> list[int]:
    out = [0] * max(f)
    for i, c in f.items():
        out[i - 1] = c
    return out


def clamp(x: float, d: int, big_n: int) -> float:
    return min(max(x, d), big_n)


# ---- the published formulas, written out independently ------------------------------


def ref_chao(f, N):
    n, d = sizes(f)
    f1, f2 = f.get(1, 0), f.get(2, 0)
    est = d + f1**2 / (2 * f2) if f2 else d + f1 * (f1 - 1) / 2
    return clamp(est, d, N)


def ref_chao_lee(f, N):
    n, d = sizes(f)
    cover = 1 - f.get(1, 0) / n
    s = sum(i * (i - 1) * c for i, c in f.items())
    g2 = max(d / cover * s / (n * (n - 1)) - 1, 0)
    return clamp(d / cover + n * (1 - cover) / cover * g2, d, N)


def ref_shlosser(f, N):
    n, d = sizes(f)
    q = n / N
    top = sum((1 - q) ** i * c for i, c in f.items())
    bottom = sum(i * q * (1 - q) ** (i - 1) * c for i, c in f.items())
    return clamp(d + f.get(1, 0) * top / bottom, d, N)


def ref_duj1(f, N):
    n, d = sizes(f)
    f1 = f.get(1, 0)
    return clamp(n * d / (n - f1 + f1 * n / N), d, N)


def ref_duj2_parts(f, n, d, N):
    q, f1 = n / N, f.get(1, 0)
    duj1 = d / (1 - (1 - q) * f1 / n)
    g2 = max(duj1 / n**2 * sum(i * (i - 1) * c for i, c in f.items()) + duj1 / N - 1, 0)
    return (d - (1 - q) * f1 * math.log(1 - q) * g2 / q) / (1 - (1 - q) * f1 / n), g2


def ref_duj2a(f, N):
    n, d = sizes(f)
    q = n / N
    heavy = {i: c for i, c in f.items() if i > 50}
    light = {i: c for i, c in f.items() if i <= 50}
    n_light, d_light = sizes(light)
    big_n_light = N
    for i, c in heavy.items():  # method of moments: q x / (1 - (1-q)^x) = i, by bisection
        lo, hi = 1.0, float(N)
        for _ in range(300):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if q * mid / (1 - (1 - q) ** mid) < i else (lo, mid)
        big_n_light -= c * (lo + hi) / 2
    est, _ = ref_duj2_parts(light, n_light, d_light, big_n_light)
    return clamp(est + sum(heavy.values()), d, N)


def ref_sh3(f, N):
    n, d = sizes(f)
    q = n / N
    a = sum(i * q * q * (1 - q * q) ** (i - 1) * c for i, c in f.items())
    b = sum(((1 - q * q) ** i - (1 - q) ** i) * c for i, c in f.items())
    e = sum((1 - q) ** i * c for i, c in f.items())
    g = sum(i * q * (1 - q) ** (i - 1) * c for i, c in f.items())
    return clamp(d + f.get(1, 0) * a / b * (e / g) ** 2, d, N)


def ref_gee(f, N):
    n, d = sizes(f)
    return clamp(math.sqrt(N / n) * f.get(1, 0) + d - f.get(1, 0), d, N)


def ref_sjack(f, N):
    n, d = sizes(f)
    f1 = f.get(1, 0)
    d0 = (d - f1 / n) / (1 - (N - n + 1) * f1 / (n * N))
    nt = N / d0
    h = math.exp(math.lgamma(N - nt + 1) + math.lgamma(N - n + 1)
                 - math.lgamma(N - n - nt + 1) - math.lgamma(N + 1))  # fmt: skip
    g = sum(1 / (N - nt - n + k) for k in range(1, n + 1))
    s = sum(i * (i - 1) * c for i, c in f.items())
    gamma2 = (N - 1) * d0 / (N * n * (n - 1)) * s + d0 / N - 1
    return clamp((d + N * h * g * gamma2) / (1 - (N - nt - n + 1) * f1 / (n * N)), d, N)


def ae_residual(f, m):
    f1, f2 = f.get(1, 0), f.get(2, 0)
    s = f1 + 2 * f2
    a = sum(math.exp(-i) * c for i, c in f.items() if i >= 3)
    b = sum(i * math.exp(-i) * c for i, c in f.items() if i >= 3)
    e = math.exp(-s / m)
    return (m - f1 - f2) - f1 * (a + m * e) / (b + s * e)


REFERENCES = {
    "chao": ref_chao,
    "chao_lee": ref_chao_lee,
    "shlosser": ref_shlosser,
    "duj1": ref_duj1,
    "duj2a": ref_duj2a,
    "sh3": ref_sh3,
    "gee": ref_gee,
    "smoothed_jackknife": ref_sjack,
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("f,N", PROFILES)
def test_estimator_equals_published_formula(name, f, N):
    n, _ = sizes(f)
    expected = REFERENCES[name](f, N)
    got_dense = ndv.ESTIMATORS[name](dense(f), n, N).value
    got_dict = ndv.ESTIMATORS[name](f, n, N).value
    assert got_dense == pytest.approx(expected, rel=1e-9)
    assert got_dict == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("f,N", PROFILES)
def test_duj2_and_haas_stokes_hybrid(f, N):
    n, d = sizes(f)
    duj2, g2 = ref_duj2_parts(f, n, d, N)
    assert ndv.duj2(f, n, N).value == pytest.approx(clamp(duj2, d, N), rel=1e-9)
    hybrid = ndv.haas_stokes(f, n, N).value
    expected = clamp(duj2, d, N) if g2 < 0.9 else ref_duj2a(f, N) if g2 < 30 else ref_sh3(f, N)
    assert hybrid == pytest.approx(expected, rel=1e-9)


def test_haas_stokes_takes_each_branch():
    """gamma^2 below 0.9, between 0.9 and 30, above 30: Duj2, Duj2a, Sh3."""
    low, mid, high = ({1: 40, 2: 10}, 10_000), (HEAVY, 10_000), ({1: 200, 2: 5, 500: 2}, 20_000)
    got = []
    for f, N in (low, mid, high):
        n, d = sizes(f)
        _, g2 = ref_duj2_parts(f, n, d, N)
        got.append(g2)
        value = ndv.haas_stokes(f, n, N).value
        ref = clamp(ref_duj2_parts(f, n, d, N)[0], d, N) if g2 < 0.9 else (
            ref_duj2a(f, N) if g2 < 30 else ref_sh3(f, N))  # fmt: skip
        assert value == pytest.approx(ref, rel=1e-9)
    assert got[0] < 0.9 <= got[1] < 30 <= got[2]


@pytest.mark.parametrize("f,N", PROFILES)
def test_ae_solves_its_fixed_point_equation(f, N):
    n, d = sizes(f)
    est = ndv.ae(f, n, N).value
    m = est - d + f.get(1, 0) + f.get(2, 0)
    if est < N:
        assert abs(ae_residual(f, m)) < 1e-6 * m
        # the smallest root: the residual is negative everywhere below it
        grid = np.linspace(f.get(1, 0) + f.get(2, 0) + 1e-9, m * (1 - 1e-6), 500)
        assert all(ae_residual(f, x) < 0 for x in grid)
    else:
        top = N - d + f.get(1, 0) + f.get(2, 0)
        assert ae_residual(f, top) < 0


def test_chao_worked_example_and_interval():
    """scikit-bio's chao1 test: counts [0,1,1,4,2,5,2,4,1,2] -> 10.5 (f2 > 0); Chao 1987's
    log-normal interval from the variance f2 (r^4/4 + r^3 + r^2/2), r = f1/f2."""
    est = ndv.chao(SKBIO, 22, 10_000)
    assert est.value == 10.5
    var = 3 * (1 / 4 + 1 + 1 / 2)
    k = math.exp(1.959963984540054 * math.sqrt(math.log(1 + var / 1.5**2)))
    assert (est.lower, est.upper) == pytest.approx((9 + 1.5 / k, 9 + 1.5 * k))
    # no doubletons: the bias-corrected form d + f1 (f1 - 1) / 2
    assert ndv.chao({1: 4, 3: 2}, 10, 1000).value == 6 + 4 * 3 / 2


def test_gee_value_and_charikar_bounds():
    """N/n = 100: GEE = sqrt(100) f1 + (d - f1); bounds [d, (N/n) f1 + d - f1]."""
    est = ndv.gee(A, 28, 2800)
    assert (est.lower, est.upper) == (16, 100 * 9 + 7)
    assert est.value == pytest.approx(10 * 9 + 7)


ALL = sorted(ndv.ESTIMATORS)


@pytest.mark.parametrize("name", ALL)
def test_edge_cases(name):
    estimator = ndv.ESTIMATORS[name]
    assert estimator([], 0, 1000).value == 0  # empty sample
    assert estimator([5, 2, 1], 12, 12).value == 8  # n == N: the exact distinct count
    # all singletons: nothing says any value repeats; every estimate stays within [d, N]
    all_single = estimator([100], 100, 10_000).value
    assert 100 <= all_single <= 10_000
    # no singletons: every value seen at least twice; the sample has probably seen them all
    no_single = estimator({2: 50, 3: 30}, 190, 1900).value
    assert 80 <= no_single <= 1900
    assert no_single < 80 * 1.3
    for f, N in PROFILES:
        n, d = sizes(f)
        assert d <= estimator(f, n, N).value <= N
    # five values seen 60,000 times each at q = 0.1: (1-q)^i underflows; the answer is d
    assert estimator({60_000: 5}, 300_000, 3_000_000).value == pytest.approx(5)


def test_all_singletons_go_to_n_for_the_coverage_estimators():
    for name in ("chao_lee", "duj1", "ae"):
        assert ndv.ESTIMATORS[name]([100], 100, 10_000).value == pytest.approx(10_000)


def test_bad_input_is_one_clear_error():
    with pytest.raises(NdvInputError, match=r"describes 28 sample rows but n=30"):
        ndv.chao(A, 30, 1000)
    with pytest.raises(NdvInputError, match=r"N=20 is smaller than the sample size n=28"):
        ndv.duj1(A, 28, 20)
    with pytest.raises(NdvInputError, match=r"counts must be finite and >= 0"):
        ndv.gee([3, -1], 1, 100)
    with pytest.raises(NdvInputError, match=r"keys must be frequencies >= 1"):
        ndv.gee({0: 3}, 0, 100)
    assert issubclass(NdvInputError, LakestatsError)


def test_frequency_of_frequencies_matches_counter():
    rng = np.random.default_rng(7)
    values = rng.zipf(1.6, 5000) % 700
    counts = Counter(Counter(values.tolist()).values())
    expected = [counts.get(i, 0) for i in range(1, max(counts) + 1)]
    assert frequency_of_frequencies(values).tolist() == expected
    strings = pa.chunked_array([["a", "b", None, "a"], ["c", "a", None, "b"]])
    assert frequency_of_frequencies(strings).tolist() == [1, 1, 1]  # c once, b twice, a 3x
    floats = np.array([np.nan, np.nan, 1.0, 2.0, 2.0])
    assert frequency_of_frequencies(floats).tolist() == [1, 2]  # NaN is one value
    assert frequency_of_frequencies(pa.array([None, None], pa.int64())).tolist() == []


def test_uniform_data_all_estimators_near_truth_at_ten_percent():
    """20,000 values x 50 copies, a 10 % sample: every estimator within 10 % of 20,000."""
    rng = np.random.default_rng(2026)
    population = np.repeat(np.arange(20_000), 50)
    sample = rng.choice(population, population.size // 10, replace=False)
    f = frequency_of_frequencies(sample)
    n, N = sample.size, population.size
    for name, estimator in ndv.ESTIMATORS.items():
        assert estimator(f, n, N).value == pytest.approx(20_000, rel=0.10), name
    _, value, (lower, upper) = select_estimator(f, n, N)
    assert value == pytest.approx(20_000, rel=0.10)


def test_selection_rule_branches_and_interval():
    rng = np.random.default_rng(11)
    N = 200_000
    uniform = rng.integers(0, 50_000, N)
    skewed = rng.zipf(1.3, N)
    for column, want in ((uniform, "duj2*chao_lee"), (skewed, "sh3")):
        sample = column[rng.choice(N, N // 100, replace=False)]
        f = frequency_of_frequencies(sample)
        n = sample.size
        p_d = int(f.sum())
        name, value, (lower, upper) = select_estimator(f, n, N, replicates=50, seed=3)
        assert name == want
        if want == "sh3":
            assert value == ndv.sh3(f, n, N).value
        else:
            assert value == pytest.approx(
                math.sqrt(ndv.duj2(f, n, N).value * ndv.chao_lee(f, n, N).value)
            )
        assert p_d <= lower <= value <= upper <= N
        assert lower < upper
    assert select_estimator([4, 1], 6, 6) == ("exact", 5.0, (5.0, 5.0))
    assert select_estimator([], 0, 10)[1] == 0


def test_profile_level_poisson_bootstrap_matches_row_level():
    """The bootstrap draws on the profile (a multinomial per frequency with many values);
    its mean profile equals the row-level Poisson(1) bootstrap's, computed here directly."""
    from lakestats.stats.ndv.profile import to_profile
    from lakestats.stats.ndv.selection import _poisson_resample

    profile = to_profile({1: 1000, 2: 300, 5: 100, 40: 3})
    rng = np.random.default_rng(5)
    reps, width = 400, 12
    on_profile = np.zeros(width)
    row_level = np.zeros(width)
    sizes = np.repeat(profile.freqs, profile.counts.astype(np.int64))
    for _ in range(reps):
        drawn = _poisson_resample(profile, rng)[:width]
        on_profile[: drawn.size] += drawn
        counts = rng.poisson(sizes)
        direct = np.bincount(counts[counts > 0], minlength=width + 1)[1 : width + 1]
        row_level += direct
    # expected count of values seen k times, from the Poisson pmf written out
    expected = np.array([
        sum(c * math.exp(-i) * i**k / math.factorial(k) for i, c in {1: 1000, 2: 300, 5: 100,
            40: 3}.items())
        for k in range(1, width + 1)
    ])  # fmt: skip
    assert on_profile / reps == pytest.approx(expected, rel=0.05, abs=0.5)
    assert row_level / reps == pytest.approx(expected, rel=0.05, abs=0.5)
