"""The selection rule's bootstrap, vectorised over replicates.

``select_estimator``'s interval re-runs the rule (``selection._choose``) on ``R`` Poisson
bootstraps of the sample. One replicate at a time that cost ~1.5 ms (most of it the
method-of-moments bisection of ``split_heavy``), and ``analyze --from-sample`` runs it for
every column of every partition. Here all replicates are one matrix: ``resample_many`` draws
them (``counts[r, j]`` = values seen ``support[j]`` times in replicate ``r``) and
``choose_many`` evaluates the rule on every row at once with the same formulas as the
scalar path (``estimators.py``): the same branches, chosen per row by ``np.where``, and one
bisection for every heavy class of every replicate. Rows the vector path does not cover
(``n_r >= N``: a replicate as large as the population) are flagged for the scalar rule.
"""

from __future__ import annotations

import math

import numpy as np

from lakestats.stats.ndv.estimators import DUJ2A_CUTOFF, HS_ALPHA1, HS_ALPHA2, population_size
from lakestats.stats.ndv.profile import Profile


def resample_many(
    p: Profile, rng: np.random.Generator, replicates: int
) -> tuple[np.ndarray, np.ndarray]:
    """``replicates`` Poisson bootstraps of the sample drawn on its profile: each of the
    ``f_i`` values seen ``i`` times gets a new count ~ Poisson(i); where ``f_i`` is large, how
    many get each count is one multinomial draw over Poisson(i)'s support. Returns the
    support (frequencies >= 1, ascending) and the ``replicates x len(support)`` counts."""
    blocks: list[tuple[np.ndarray, np.ndarray]] = []  # (counts k, replicates x len(k))
    many = p.counts >= 64
    for i, c in zip(p.freqs[many].tolist(), p.counts[many].astype(np.int64).tolist(), strict=True):
        top = int(i + 12 * math.sqrt(i) + 12)
        k = np.arange(top + 1)
        log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, top + 1)))))
        pmf = np.exp(k * math.log(i) - i - log_fact)
        blocks.append((k, rng.multinomial(c, pmf / pmf.sum(), size=replicates)))
    few = np.repeat(p.freqs[~many], p.counts[~many].astype(np.int64))
    if few.size:
        got = rng.poisson(few, size=(replicates, few.size))
        values, inverse = np.unique(got, return_inverse=True)
        rows = np.repeat(np.arange(replicates), few.size)
        flat = np.bincount(rows * values.size + inverse.ravel(), minlength=replicates * values.size)
        blocks.append((values, flat.reshape(replicates, values.size)))
    # one replicates x (every count drawn) table; a block's counts k are distinct
    drawn = np.unique(np.concatenate([k for k, _ in blocks])) if blocks else np.zeros(0, np.int64)
    table = np.zeros((replicates, drawn.size), dtype=np.float64)
    for k, block in blocks:
        table[:, np.searchsorted(drawn, k)] += block
    keep = (drawn > 0) & table.any(axis=0)  # 0: values a replicate did not draw
    support = drawn[keep].astype(np.int64)
    counts = table[:, keep]
    return support, counts


def choose_many(
    support: np.ndarray, counts: np.ndarray, N: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rule's estimate for every replicate row: ``(values, n_r, scalar)``; rows where
    ``scalar`` is true (``0 < n_r >= N``) are left for ``selection._choose``."""
    k = support.astype(np.float64)
    n = counts @ k
    big_n = np.full_like(n, float(N))
    scalar = (n > 0) & (n >= big_n)
    with np.errstate(all="ignore"):
        values = _rule(k, counts, n, big_n)
    return values, n, scalar


def _column(k: np.ndarray, counts: np.ndarray, i: int) -> np.ndarray:
    hit = np.flatnonzero(k == i)
    return counts[:, hit[0]] if hit.size else np.zeros(counts.shape[0])


def _clamp(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(x), np.minimum(np.maximum(x, low), high), high)


def _duj1(d: np.ndarray, f1: np.ndarray, n: np.ndarray, q: np.ndarray) -> np.ndarray:
    return d / (1 - (1 - q) * f1 / n)


def _gamma2(D: np.ndarray, s: np.ndarray, n: np.ndarray, N: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, D / (n * n) * s + D / N - 1)


def _duj2(d, f1, n, q, g2):  # noqa: ANN001, ANN202 - arrays, estimators._duj2 per row
    return (d - (1 - q) * f1 * np.log(1 - q) * g2 / q) / (1 - (1 - q) * f1 / n)


def _rule(k: np.ndarray, C: np.ndarray, n: np.ndarray, N: np.ndarray) -> np.ndarray:
    """``selection._choose`` per row (``n < N``); rows with ``n == 0`` are garbage."""
    d = C.sum(axis=1)
    f1, f2, f3 = (_column(k, C, i) for i in (1, 2, 3))
    heavy = k > DUJ2A_CUTOFF
    light = ~heavy
    # split_heavy: the heavy classes' population sizes, one bisection for all replicates
    card_b = C[:, heavy].sum(axis=1)
    n_b = C[:, heavy] @ k[heavy]
    rows, cols = np.nonzero(C[:, heavy])
    sizes = population_size(k[heavy][cols], (n / N)[rows], N[rows])
    big_b = np.bincount(rows, weights=sizes * C[:, heavy][rows, cols], minlength=C.shape[0])
    n_l = n - n_b
    has_heavy = card_b > 0
    big_n_l = np.where(has_heavy, np.maximum(N - big_b, n_l), N)
    d_l = C[:, light].sum(axis=1)
    s_l = C[:, light] @ (k[light] * (k[light] - 1))
    # light classes nearly equal: chao_katz on them (N' = max(round(N_l), n_l)) + heavy count
    q_l = n_l / big_n_l
    g2_light = _gamma2(_duj1(d_l, f1, n_l, q_l), s_l, n_l, big_n_l)
    n_prime = np.maximum(np.round(big_n_l), n_l)
    katz = _chao_katz(d_l, f1, f2, f3, n_l, n_prime) + card_b
    katz = np.minimum(np.maximum(katz, d), N)
    # skewed: the Haas-Stokes hybrid on the whole profile
    q = n / N
    s = C @ (k * (k - 1))
    g2 = _gamma2(_duj1(d, f1, n, q), s, n, N)
    duj2 = _clamp(_duj2(d, f1, n, q, g2), d, N)
    g2a = _gamma2(_duj1(d_l, f1, n_l, q), s_l, n_l, big_n_l)
    duj2a = np.where(has_heavy, _clamp(_duj2(d_l, f1, n_l, q, g2a) + card_b, d, N), duj2)
    sh3 = _sh3(k, C, d, f1, q, N)
    skewed = np.where(g2 < HS_ALPHA1, duj2, np.where(g2 < HS_ALPHA2, duj2a, sh3))
    value = np.where(g2_light < HS_ALPHA1, katz, skewed)
    return np.where(d_l == 0, d, value)


def _chao_katz(d, f1, f2, f3, n, N):  # noqa: ANN001, ANN202 - estimators.chao_katz per row
    q = n / N
    a_n = np.where(n > 1, n / (n - 1), 1.0)
    wor = d + f1 * (f1 - 1) / (2 * a_n + f1 * q / (1 - q))
    r = q / (1 - q)
    r2 = f2 / f1
    a_hat = 3 * f3 / f2 - 2 * r2
    var = (3 / f2) ** 2 * f3 + (3 * f3 / f2**2 + 2 / f1) ** 2 * f2 + (2 * f2 / f1**2) ** 2 * f1
    a = np.copysign(np.maximum(np.abs(a_hat) - 2 * np.sqrt(var), 0.0), a_hat)
    a = np.minimum(np.maximum(a, -r), r2)
    katz = d + f1 / (2 * r2 - a)
    value = np.where(f1 == 0, d, np.where(f2 == 0, wor, katz))
    return np.where(n == N, d, _clamp(value, d, N))


def _sh3(k, C, d, f1, q, N):  # noqa: ANN001, ANN202 - estimators.sh3 per row
    q_ = q[:, None]
    a = (k * q_ * q_ * (1 - q_ * q_) ** (k - 1) * C).sum(axis=1)
    b = (((1 - q_ * q_) ** k - (1 - q_) ** k) * C).sum(axis=1)
    c = ((1 - q_) ** k * C).sum(axis=1)
    e = (k * q_ * (1 - q_) ** (k - 1) * C).sum(axis=1)
    value = np.where((b <= 0) | (e <= 0), N, _clamp(d + f1 * a / b * (c / e) ** 2, d, N))
    return np.where(f1 == 0, d, value)
