"""Choose a distinct-value estimator per column from the shape of its sample.

The rule reads only the sample's frequency of frequencies and the sampling fraction
``q = n/N``; its thresholds are Haas & Stokes's (1998), not fitted to any benchmark:

1. **Set aside the heavy values** (seen more than c = 50 times), as Duj2a does: the sample
   has seen all of them, and one default value (zeros of a discount column) must not make an
   otherwise flat column look skewed.
2. **Skew test**: ``gamma^2`` of the remaining (light) classes, Haas & Stokes's estimate of
   the squared coefficient of variation of the class sizes (Eq. 16, from Duj1).
3. ``gamma^2 < 0.9`` (class sizes nearly equal): **``chao_katz``** on the light classes,
   plus the heavy count. Chao's estimator is exact in expectation when a value's sample count
   is Poisson - values whose rows were drawn independently, like most generated keys - which
   is why it is hard to beat on uniform columns. A table sample departs from that in two
   directions, and the sample's f1, f2, f3 show which: values with a fixed small number of
   rows (pairs, a unique key with one default value) are under-dispersed and Chao over-counts
   them (2x for pairs, ``N`` for the key; Chao & Lin 2012 correct this for sampling without
   replacement), values whose row counts vary are over-dispersed and Chao is only a lower
   bound (Chao 1984; Chiu et al. 2014). ``chao_katz`` fits the dispersion ``a`` of the
   Katz family, of which Chao (``a = 0``) and Chao & Lin (the binomial bound) are members,
   and moves off Chao only as far as ``a`` is more than two standard errors from 0.
4. Otherwise (skewed): **the Haas & Stokes hybrid** on the whole profile (Eq. 33, by the
   whole profile's ``gamma^2``): Duj2 below 0.9, Duj2a below 30, Sh3 above. Their study
   (and Haas et al. 1995 before it) found the jackknife and Shlosser families best there; a
   Chao-type estimator is 2-10x low on Zipf columns.

Chosen on generated samples (equal, uniform, geometric, Poisson and log-normal class sizes,
Zipf z = 0.3-1.5, heavy hitters with a unique or uniform tail; fractions 0.5-20 %) and checked
on held-out ones with another seed (``tests/stats/test_ndv_selection.py``: no worse than Chao on
most columns, lower mean |log error| at 1, 5 and 10 %). ``bench/ndv_accuracy.py`` measures it
on TPC-H, TPC-DS and Zipf columns (BENCHMARKS.md).

The interval is a Poisson bootstrap of the sample (each sampled row kept Poisson(1) times,
200 replicates, seeded, drawn on the profile so it costs O(distinct frequencies) per
replicate; all replicates at once, ``bootstrap.py``), a normal interval on the log scale
with the bootstrap's standard error, ``estimate * exp(+-1.96 se)`` (resampling a sample
lowers its distinct count, so the bootstrap's percentiles are biased low; only its spread is
used), widened to cover the
estimates of Chao, Chao-Lee, Duj2a and AE (and Sh3 when chosen), clamped to ``[d, N]``. The
bootstrap measures how much the estimate moves with the sample; the spread of the models is
a heuristic for the estimators' bias, which no bootstrap sees. ``bench/ndv_accuracy.py``
reports how often the interval holds the true count.
"""

from __future__ import annotations

import math

import numpy as np

from lakestats.stats.ndv.bootstrap import choose_many, resample_many
from lakestats.stats.ndv.estimators import (
    DUJ2A_CUTOFF,
    HS_ALPHA1,
    HS_ALPHA2,
    Z95,
    ae,
    chao,
    chao_katz,
    chao_lee,
    duj1_value,
    duj2,
    duj2a,
    gamma2,
    prepare,
    sh3,
    split_heavy,
)
from lakestats.stats.ndv.profile import FrequencyProfile, Profile

BOOTSTRAP_REPLICATES = 200


def _choose(p: Profile, n: int, N: int) -> tuple[str, float]:
    light, n_light, big_n_light, heavy = split_heavy(p, n, N)
    if light.d == 0:
        return "chao_katz", float(p.d)  # every value seen > 50 times: nothing unseen
    q_light = n_light / big_n_light
    d_light = duj1_value(light.d, light.f(1), n_light, q_light)
    g2_light = gamma2(d_light, light, n_light, big_n_light)
    if g2_light < HS_ALPHA1:
        value = chao_katz(light, n_light, max(round(big_n_light), n_light)).value + heavy
        return "chao_katz", min(max(value, float(p.d)), float(N))
    g2 = gamma2(duj1_value(p.d, p.f(1), n, n / N), p, n, N)
    if g2 < HS_ALPHA1:
        return "duj2", duj2(p, n, N).value
    if g2 < HS_ALPHA2:
        return "duj2a", duj2a(p, n, N).value
    return "sh3", sh3(p, n, N).value


def select_estimator(
    f: FrequencyProfile,
    n: int,
    N: int,
    *,
    replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
) -> tuple[str, float, tuple[float, float]]:
    """``(estimator name, estimate, (lower, upper))`` for one column's sample profile."""
    p, done = prepare(f, n, N)
    if done:
        return "exact" if n == N else "empty", done.value, (done.lower, done.upper)
    name, value = _choose(p, n, N)
    if replicates <= 0 or p.freqs[0] > DUJ2A_CUTOFF:
        # every value seen more than c times: nothing unseen, and no Poisson(> c) replicate
        # leaves a value seen 1-3 times (P < 1e-19), so every replicate and model gives d
        return name, value, (value, value)
    rng = np.random.default_rng(seed)
    support, counts = resample_many(p, rng, replicates)
    values, sizes, scalar = choose_many(support, counts, N)
    for r in np.flatnonzero(scalar).tolist():  # a replicate as large as the population
        f_r = _dense(support, counts[r])
        values[r] = _choose(_profile(f_r), int(sizes[r]), max(N, int(sizes[r])))[1]
    values = np.where(sizes == 0, value, values)
    logs = np.log(np.maximum(values, 1.0))
    spread = Z95 * float(np.std(logs, ddof=1)) if replicates > 1 else 0.0
    models = [e(p, n, N).value for e in (chao, chao_lee, duj2a, ae)]
    if name == "sh3":
        models.append(value)
    lower = min(max(min(value * math.exp(-spread), *models), p.d), N)
    upper = min(max(max(value * math.exp(spread), *models), p.d), N)
    return name, value, (float(lower), float(upper))


def _poisson_resample(p: Profile, rng: np.random.Generator) -> np.ndarray:
    """One Poisson bootstrap of the sample (``bootstrap.resample_many``), as a dense profile
    (index 0 = seen once)."""
    support, counts = resample_many(p, rng, 1)
    return _dense(support, counts[0])


def _dense(support: np.ndarray, counts: np.ndarray) -> np.ndarray:
    keep = counts > 0
    dense = np.zeros(int(support[keep].max()) if keep.any() else 0, dtype=np.int64)
    dense[support[keep] - 1] = counts[keep]
    return dense


def _profile(dense: np.ndarray) -> Profile:
    freqs = np.flatnonzero(dense) + 1
    return Profile(freqs.astype(np.int64), dense[freqs - 1].astype(np.float64))
