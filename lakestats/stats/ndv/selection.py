"""Choose a distinct-value estimator per column from the shape of its sample.

The rule (calibrated on generated duplication and Zipf families; ``bench/ndv_accuracy.py``
measures it on TPC-H, TPC-DS and Zipf tables it was not tuned on): the squared coefficient
of variation of the class sizes, ``gamma^2`` of Haas & Stokes (1998, Eq. 16, from Duj1), says
how skewed the column is.

* ``gamma^2 < 0.9`` (near-uniform class sizes): the geometric mean of Duj2 and Chao-Lee.
  On most near-uniform families we generated (Poisson, fixed and uniform class sizes, Zipf
  z <= 0.5; 1 % and 10 % samples) Duj2 under-estimated (0.7-0.85x) while Chao-Lee
  over-estimated (up to 1.8x); their geometric mean had the lowest mean |log error| over
  those families (0.135, against Duj2 0.167, Chao 0.214, Chao-Lee 0.22, AE 0.245).
* ``0.9 <= gamma^2 < 30``: Duj2a (Haas & Stokes's choice for moderate skew).
* ``gamma^2 >= 30``: Sh3 (Haas & Stokes's choice for high skew).

The last two branches are Haas & Stokes's hybrid (Eq. 33) unchanged. The interval is a Poisson
bootstrap of the sample (each sampled row kept Poisson(1) times, 200 replicates, seeded,
drawn on the profile so it costs O(distinct frequencies) per replicate),
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
    logs = np.empty(replicates)
    for r in range(replicates):
        f_r = _poisson_resample(p, rng)
        n_r = int((np.arange(1, f_r.size + 1) * f_r).sum())
        if n_r == 0:
            logs[r] = math.log(max(value, 1.0))
            continue
        _, v = _choose(_profile(f_r), n_r, max(N, n_r))
        logs[r] = math.log(max(v, 1.0))
    spread = Z95 * float(np.std(logs, ddof=1)) if replicates > 1 else 0.0
    models = [e(p, n, N).value for e in (chao, chao_lee, duj2a, ae)]
    if name == "sh3":
        models.append(value)
    lower = min(max(min(value * math.exp(-spread), *models), p.d), N)
    upper = min(max(max(value * math.exp(spread), *models), p.d), N)
    return name, value, (float(lower), float(upper))


def _poisson_resample(p: Profile, rng: np.random.Generator) -> np.ndarray:
    """One Poisson bootstrap of the sample, drawn on the profile: the ``f_i`` values seen
    ``i`` times get new counts ~ Poisson(i) each; where ``f_i`` is large, how many of them get
    each count is one multinomial draw over Poisson(i)'s support (O(distinct frequencies),
    not O(distinct values)). Returns the dense profile (index 0 = seen once)."""
    out: dict[int, int] = {}
    many = p.counts >= 64
    for i, c in zip(p.freqs[many].tolist(), p.counts[many].astype(np.int64).tolist(), strict=True):
        top = int(i + 12 * math.sqrt(i) + 12)
        k = np.arange(top + 1)
        log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, top + 1)))))
        pmf = np.exp(k * math.log(i) - i - log_fact)
        drawn = rng.multinomial(c, pmf / pmf.sum())
        for kk in np.flatnonzero(drawn[1:]) + 1:
            out[int(kk)] = out.get(int(kk), 0) + int(drawn[kk])
    few = np.repeat(p.freqs[~many], p.counts[~many].astype(np.int64))
    if few.size:
        got = rng.poisson(few)
        got = got[got > 0]
        for kk, cc in zip(*np.unique(got, return_counts=True), strict=True):
            out[int(kk)] = out.get(int(kk), 0) + int(cc)
    dense = np.zeros(max(out, default=0), dtype=np.int64)
    for kk, cc in out.items():
        dense[kk - 1] = cc
    return dense


def _profile(dense: np.ndarray) -> Profile:
    freqs = np.flatnonzero(dense) + 1
    return Profile(freqs.astype(np.int64), dense[freqs - 1].astype(np.float64))
