"""Choose a distinct-value estimator per column from the shape of its sample.

The rule (calibrated on generated duplication and Zipf families; ``bench/ndv_accuracy.py``
measures it on TPC-H, TPC-DS and Zipf tables it was not tuned on): the squared coefficient
of variation of the class sizes, ``gamma^2`` of Haas & Stokes (1998, Eq. 16, from Duj1), says
how skewed the column is.

* ``gamma^2 < 0.9`` (near-uniform class sizes): the geometric mean of Duj2 and Chao-Lee.
  On every near-uniform family we generated, Duj2 under-estimated (by ~0.8x) and Chao-Lee
  over-estimated (up to ~1.5x), so their geometric mean cancels most of both biases.
* ``0.9 <= gamma^2 < 30``: Duj2a (Haas & Stokes's choice for moderate skew).
* ``gamma^2 >= 30``: Sh3 (Haas & Stokes's choice for high skew).

The last two are Haas & Stokes's hybrid (Eq. 33) unchanged. The interval is a Poisson
bootstrap of the sample (each sampled row kept Poisson(1) times, 200 replicates, seeded),
a normal interval on the log scale with the bootstrap's standard error,
``estimate * exp(+-1.96 se)`` (resampling a sample lowers its distinct count, so the
bootstrap's percentiles are biased low; only its spread is used), widened to cover the
estimates of Chao, Chao-Lee, Duj2a and AE (and Sh3 when chosen), clamped to ``[d, N]``. The
bootstrap measures how much the estimate moves with the sample; the spread of the models is
a heuristic for the estimators' bias, which no bootstrap sees. ``bench/ndv_accuracy.py``
reports how often the interval holds the true count.
"""

from __future__ import annotations

import math

import numpy as np

from lakestats.stats.ndv.estimators import (
    HS_ALPHA1,
    HS_ALPHA2,
    Z95,
    _duj1,
    _gamma2,
    _prepare,
    ae,
    chao,
    chao_lee,
    duj2,
    duj2a,
    sh3,
)
from lakestats.stats.ndv.profile import FrequencyProfile, Profile

BOOTSTRAP_REPLICATES = 200


def _choose(p: Profile, n: int, N: int) -> tuple[str, float]:
    g2 = _gamma2(_duj1(p.d, p.f(1), n, n / N), p, n, N)
    if g2 < HS_ALPHA1:
        value = math.sqrt(duj2(p, n, N).value * chao_lee(p, n, N).value)
        return "duj2*chao_lee", value
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
    p, done = _prepare(f, n, N)
    if done:
        return "exact" if n == N else "empty", done.value, (done.lower, done.upper)
    name, value = _choose(p, n, N)
    if replicates <= 0:
        return name, value, (value, value)
    rng = np.random.default_rng(seed)
    class_sizes = np.repeat(p.freqs, p.counts.astype(np.int64))
    logs = np.empty(replicates)
    for r in range(replicates):
        drawn = rng.poisson(class_sizes)
        drawn = drawn[drawn > 0]
        n_r = int(drawn.sum())
        if n_r == 0:
            logs[r] = math.log(max(value, 1.0))
            continue
        f_r = np.bincount(drawn)[1:]
        _, v = _choose(_profile(f_r), n_r, max(N, n_r))
        logs[r] = math.log(max(v, 1.0))
    spread = Z95 * float(np.std(logs, ddof=1)) if replicates > 1 else 0.0
    models = [e(p, n, N).value for e in (chao, chao_lee, duj2a, ae)]
    if name == "sh3":
        models.append(value)
    lower = min(max(min(value * math.exp(-spread), *models), p.d), N)
    upper = min(max(max(value * math.exp(spread), *models), p.d), N)
    return name, value, (float(lower), float(upper))


def _profile(dense: np.ndarray) -> Profile:
    freqs = np.flatnonzero(dense) + 1
    return Profile(freqs.astype(np.int64), dense[freqs - 1].astype(np.float64))
