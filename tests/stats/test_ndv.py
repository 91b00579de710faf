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


def ref_chao_wor(f, N):
    n, d = sizes(f)
    q, f1, f2 = n / N, f.get(1, 0), f.get(2, 0)
    if f1 == 0:
        return d
    if f2:
        unseen = f1**2 / (n / (n - 1) * 2 * f2 + q / (1 - q) * f1)
    else:
        unseen = f1 * (f1 - 1) / (n / (n - 1) * 2 + q / (1 - q) * f1)
    return clamp(d + unseen, d, N)


def ref_chao_katz(f, N):
    n, d = sizes(f)
    f1, f2, f3 = (f.get(i, 0) for i in (1, 2, 3))
    if f1 == 0:
        return d
    if f2 == 0:
        return ref_chao_wor(f, N)
    a_hat = 3 * f3 / f2 - 2 * f2 / f1
    grad = (2 * f2 / f1**2, -3 * f3 / f2**2 - 2 / f1, 3 / f2)  # d a_hat / d(f1, f2, f3)
    se = math.sqrt(sum(g * g * v for g, v in zip(grad, (f1, f2, f3), strict=True)))
    a = math.copysign(max(abs(a_hat) - 2 * se, 0), a_hat)
    a = min(max(a, -n / (N - n)), f2 / f1)
    b = 2 * (f2 / f1 - a)
    return clamp(d + f1 / (a + b), d, N)


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
    "chao_wor": ref_chao_wor,
    "chao_katz": ref_chao_katz,
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


@pytest.mark.parametrize("q", [0.5, 0.25])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_chao_wor_exact_on_equal_classes(k, q):
    """D classes of k rows each, sampled without replacement at fraction q: the expected
    profile is binomial, f_j = D C(k,j) q^j (1-q)^(k-j) (integers here). Chao & Lin's bound
    returns D (up to its small-sample factors); Chao (1984)
    over-counts the unseen D (1-q)^k by k/(k-1) (to N for k = 1)."""
    big_d = round(1000 / q**k)
    f = {j: round(big_d * math.comb(k, j) * q**j * (1 - q) ** (k - j)) for j in range(1, k + 1)}
    n, d = sizes(f)
    N = big_d * k
    assert n == N * q
    assert ndv.chao_wor(f, n, N).value == pytest.approx(big_d, rel=1e-2)  # (f1-1), n/(n-1)
    unseen = big_d - d
    chao_unseen = ndv.chao(f, n, N).value - d
    if k > 1:
        assert chao_unseen == pytest.approx(unseen * k / (k - 1), rel=5e-3)
    else:
        assert ndv.chao(f, n, N).value == N


def katz_profile(big_d: float, pmf) -> dict:
    """Expected frequency of frequencies of ``big_d`` values whose sample counts follow pmf."""
    return {j: round(big_d * pmf(j)) for j in range(1, 60) if round(big_d * pmf(j)) > 0}


def test_chao_katz_is_chao_on_poisson_counts_and_corrects_both_sides():
    """Poisson counts (values of many rows each, drawn independently): a = 0, Chao exactly.
    Equal classes of k rows (binomial counts): Chao over-counts, chao_katz finds D. Negative
    binomial counts (class sizes that vary): Chao is a lower bound, chao_katz finds D."""
    lam, big_d = 0.5, 40_000_000
    f = katz_profile(big_d, lambda j: math.exp(-lam) * lam**j / math.factorial(j))
    n, _ = sizes(f)
    assert ndv.chao_katz(f, n, 400 * n).value == ndv.chao(f, n, 400 * n).value
    k, q = 3, 0.1
    f = katz_profile(big_d, lambda j: math.comb(k, j) * q**j * (1 - q) ** (k - j) if j <= k else 0)
    n, _ = sizes(f)
    # within 1 %: the soft threshold keeps 2 standard errors of shrinkage towards Chao
    assert ndv.chao_katz(f, n, round(n / q)).value == pytest.approx(big_d, rel=1e-2)
    assert ndv.chao(f, n, round(n / q)).value > 1.3 * big_d
    shape, mean = 2.0, 0.5  # NB: p_j / p_(j-1) = a + b/j with a = mean / (mean + shape) = 0.2
    p = shape / (shape + mean)
    f = katz_profile(
        big_d, lambda j: math.comb(j + 1, j) * p**shape * (1 - p) ** j
    )  # shape 2: C(j + 1, j)
    n, _ = sizes(f)
    assert ndv.chao_katz(f, n, 1000 * n).value == pytest.approx(big_d, rel=1e-2)
    assert ndv.chao(f, n, 1000 * n).value < 0.9 * big_d


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
    """Uniform keys: chao_katz; a default value (set aside as heavy) does not change that;
    Zipf 1.3: skewed, Sh3; log-normal class sizes: moderately skewed, Duj2a."""
    from lakestats.stats.ndv.estimators import split_heavy
    from lakestats.stats.ndv.profile import to_profile

    rng = np.random.default_rng(11)
    N = 200_000
    uniform = rng.integers(0, 50_000, N)
    with_default = np.where(rng.random(N) < 0.3, -1, uniform)
    skewed = rng.zipf(1.3, N)
    lognormal = np.repeat(np.arange(40_000), np.maximum(rng.lognormal(0.5, 2, 40_000), 1)
                          .astype(np.int64))[:N]  # fmt: skip
    cases = ((uniform, "chao_katz"), (with_default, "chao_katz"), (skewed, "sh3"),
             (lognormal, "duj2a"))  # fmt: skip
    for column, want in cases:
        size = column.size
        sample = column[rng.choice(size, size // 100, replace=False)]
        f = frequency_of_frequencies(sample)
        n = sample.size
        p_d = int(f.sum())
        name, value, (lower, upper) = select_estimator(f, n, size, replicates=50, seed=3)
        assert name == want
        if want == "chao_katz":
            light, n_light, big_n_light, heavy = split_heavy(to_profile(f), n, size)
            expected = ndv.chao_katz(light, n_light, round(big_n_light)).value + heavy
            assert heavy == (1 if column is with_default else 0)
            assert value == pytest.approx(min(max(expected, p_d), size))
        else:
            assert value == ndv.ESTIMATORS[want](f, n, size).value
        assert p_d <= lower <= value <= upper <= size
        assert lower < upper
    assert select_estimator([4, 1], 6, 6) == ("exact", 5.0, (5.0, 5.0))
    assert select_estimator([], 0, 10)[1] == 0
    assert select_estimator({60: 3}, 180, 1800, replicates=0)[:2] == ("chao_katz", 3.0)


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
