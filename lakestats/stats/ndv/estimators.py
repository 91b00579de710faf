"""Sample distinct-value estimators: pure NumPy functions of the frequency of frequencies.

Every estimator is ``name(f, n, N) -> Estimate`` where ``f`` is the sample's frequency of
frequencies (``profile.py``: dense ``f[i]`` = values seen ``i + 1`` times, or ``{i: f_i}``),
``n`` the sample rows and ``N`` the population rows (both non-null). Notation as in Haas et
al. (VLDB 1995): ``d`` distinct values in the sample, ``f_i`` values seen ``i`` times,
``q = n / N``. Every estimate is clamped to ``[d, N]``; ``n == N`` returns ``d`` exactly and an
empty sample returns 0. ``Estimate.lower/upper`` carry the interval where the literature gives
one (Chao 1987's log-normal 95 % interval, Charikar et al.'s GEE bounds), else ``None``.

Over 400 lines on purpose: one short function per published estimator, side by side with its
reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lakestats.stats.ndv.profile import FrequencyProfile, Profile, check_sizes, to_profile

Z95 = 1.959963984540054
DUJ2A_CUTOFF = 50  # Haas & Stokes 1998: classes seen more than c = 50 times are set aside
HS_ALPHA1, HS_ALPHA2 = 0.9, 30.0  # Haas & Stokes 1998 Eq. 33 thresholds on gamma^2
CHI2_LEVEL_Z = 1.959963984540054  # the 1995 hybrid's skew test at the 0.975 quantile


@dataclass(frozen=True)
class Estimate:
    """A distinct-count estimate and, where the estimator has one, its interval."""

    value: float
    lower: float | None = None
    upper: float | None = None


def prepare(f: FrequencyProfile, n: int, N: int) -> tuple[Profile, Estimate | None]:
    """Validate; answer the cases every estimator shares (empty sample, full scan)."""
    p = to_profile(f)
    check_sizes(p, n, N)
    if n == 0:
        return p, Estimate(0.0, 0.0, 0.0)
    if n == N:
        return p, Estimate(float(p.d), float(p.d), float(p.d))
    return p, None


def _clamp(x: float, p: Profile, N: int) -> float:
    if not math.isfinite(x):
        return float(N)
    return float(min(max(x, p.d), N))


def _finish(
    p: Profile, N: int, value: float, lower: float | None = None, upper: float | None = None
) -> Estimate:
    value = _clamp(value, p, N)
    if lower is None or upper is None:
        return Estimate(value)
    return Estimate(value, _clamp(lower, p, N), _clamp(upper, p, N))


def chao(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """Chao (1984), Presto's choice: ``d + f1^2 / (2 f2)``; with ``f2 = 0`` the bias-corrected
    ``d + f1 (f1 - 1) / 2``. Interval: Chao (1987) variance, log-normal 95 % interval."""
    p, done = prepare(f, n, N)
    if done:
        return done
    d, f1, f2 = p.d, p.f(1), p.f(2)
    if f2 > 0:
        value = d + f1 * f1 / (2 * f2)
        r = f1 / f2
        var = f2 * (r**4 / 4 + r**3 + r**2 / 2)
    else:
        value = d + f1 * (f1 - 1) / 2
        var = f1 * (f1 - 1) / 2 + f1 * (2 * f1 - 1) ** 2 / 4
    lower, upper = _lognormal_interval(d, value, var)
    return _finish(p, N, value, lower, upper)


def chao_wor(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """Chao & Lin (2012, Biometrics 68(3)), Chao's lower bound for sampling **without
    replacement** at fraction ``q = n/N``: ``d + f1^2 / (2 f2 n/(n-1) + f1 q/(1-q))``. With
    ``f2 = 0`` lakestats uses Chao's bias-corrected form in the same denominator,
    ``f1 (f1-1) / (2 (f2+1) n/(n-1) + f1 q/(1-q))`` (by analogy with Chao's; not the paper's). The
    ``q/(1-q)`` term is what Chao (1984) lacks: a class of ``k`` rows can be seen at most ``k``
    times, so for equal classes of any size ``k`` the expected profile gives ``D`` exactly
    (``f1^2 / (2 f2 + f1 q/(1-q)) = D (1-q)^k``) where Chao over-counts by ``k/(k-1)`` (2x for
    pairs; an all-distinct key with one default value sends Chao to ``N``)."""
    p, done = prepare(f, n, N)
    if done:
        return done
    return _finish(p, N, p.d + _chao_wor_unseen(p, n, N))


def _chao_wor_unseen(p: Profile, n: int, N: int) -> float:
    f1, f2 = p.f(1), p.f(2)
    if f1 == 0:
        return 0.0
    q = n / N
    a = n / (n - 1) if n > 1 else 1.0
    if f2 > 0:
        return f1 * f1 / (2 * f2 * a + f1 * q / (1 - q))
    return f1 * (f1 - 1) / (2 * a + f1 * q / (1 - q))


def chao_katz(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """Chao's estimator generalised to the Katz family, with Poisson (Chao) as the default.

    Chao (1984) reads the unseen count off ``f1`` and ``f2`` assuming a value's sample count is
    Poisson; Chao & Lin's :func:`chao_wor` assumes instead that every value has the same number
    of rows (binomial counts, the least dispersed a sample without replacement can be). Both are
    members of the Katz (Panjer ``(a, b, 0)``) family of count laws, ``p_j / p_(j-1) = a + b/j``
    (Katz 1965): ``a < 0`` binomial, ``a = 0`` Poisson, ``a > 0`` negative binomial (class sizes
    that vary, where Chao is only a lower bound). From ``f2/f1 = a + b/2`` the unseen count is
    ``f0 = f1 / (a + b) = f1 / (2 f2/f1 - a)``; ``f3/f2 = a + b/3`` gives
    ``a^ = 3 f3/f2 - 2 f2/f1`` with a delta-method standard error ``se`` (counts as Poisson).

    Sample counts past ``f2`` are sparse at a 1 % sample, so ``a^`` is noisy: it is used only as
    far as it departs from 0 by more than two standard errors, ``a = sign(a^) max(|a^| - 2 se,
    0)`` (soft thresholding; ``a = 0`` is Chao exactly), then bounded to ``[-q/(1-q), f2/f1]``:
    no less dispersed than equal class sizes (``a = -q/(1-q)`` is :func:`chao_wor`) and at most
    twice Chao's unseen count. ``f2 = 0`` falls back to :func:`chao_wor`. The construction is
    lakestats' (``selection.py`` says why); its parts are Chao's, Chao & Lin's and Katz's."""
    p, done = prepare(f, n, N)
    if done:
        return done
    f1, f2, f3 = p.f(1), p.f(2), p.f(3)
    if f1 == 0:
        return _finish(p, N, float(p.d))
    if f2 == 0:
        return _finish(p, N, p.d + _chao_wor_unseen(p, n, N))
    r = n / N / (1 - n / N)
    r2 = f2 / f1
    a_hat = 3 * f3 / f2 - 2 * r2
    var = (3 / f2) ** 2 * f3 + (3 * f3 / f2**2 + 2 / f1) ** 2 * f2 + (2 * f2 / f1**2) ** 2 * f1
    a = math.copysign(max(abs(a_hat) - 2 * math.sqrt(var), 0.0), a_hat)
    a = min(max(a, -r), r2)
    return _finish(p, N, p.d + f1 / (2 * r2 - a))


def _lognormal_interval(d: float, value: float, var: float) -> tuple[float, float]:
    """Chao (1987): the unseen count ``T = D - d`` is log-normal; 95 % interval for ``D``."""
    t = value - d
    if t <= 0 or var <= 0:
        return d, value
    k = math.exp(Z95 * math.sqrt(math.log(1 + var / (t * t))))
    return d + t / k, d + t * k


def chao_lee(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """Chao & Lee (1992), sample coverage ``C = 1 - f1/n`` with the skew correction
    ``D = d/C + n (1 - C)/C * gamma^2``. No coverage (all singletons) gives ``N``."""
    p, done = prepare(f, n, N)
    if done:
        return done
    f1 = p.f(1)
    if f1 >= n:
        return _finish(p, N, float(N))
    c = 1 - f1 / n
    s = float((p.freqs * (p.freqs - 1) * p.counts).sum())
    gamma2 = max(0.0, (p.d / c) * s / (n * (n - 1)) - 1) if n > 1 else 0.0
    return _finish(p, N, p.d / c + n * (1 - c) / c * gamma2)


def shlosser(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """Shlosser (1981): ``d + f1 * sum (1-q)^i f_i / sum i q (1-q)^(i-1) f_i``."""
    p, done = prepare(f, n, N)
    if done:
        return done
    if p.f(1) == 0:  # no singletons: no unseen values (also avoids 0/0 when (1-q)^i underflows)
        return _finish(p, N, float(p.d))
    q = n / N
    i, fi = p.freqs.astype(np.float64), p.counts
    num = float(((1 - q) ** i * fi).sum())
    den = float((i * q * (1 - q) ** (i - 1) * fi).sum())
    return _finish(p, N, p.d + p.f(1) * num / den if den > 0 else float(N))


def duj1(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """Duj1, the unsmoothed first-order jackknife (Haas et al. 1995, Eq. 11), PostgreSQL's
    ``n d / (n - f1 + f1 n / N)`` (analyze.c)."""
    p, done = prepare(f, n, N)
    if done:
        return done
    return _finish(p, N, duj1_value(p.d, p.f(1), n, n / N))


def duj1_value(d: float, f1: float, n: float, q: float) -> float:
    return d / (1 - (1 - q) * f1 / n)


def gamma2(D: float, p: Profile, n: float, N: float) -> float:
    """Haas & Stokes (1998) Eq. 16: squared coefficient of variation of class sizes given D."""
    s = float((p.freqs * (p.freqs - 1) * p.counts).sum())
    return max(0.0, D / (n * n) * s + D / N - 1)


def _duj2(d: float, f1: float, n: float, q: float, gamma2: float) -> float:
    """Haas & Stokes (1998) Eq. 18b, the unsmoothed second-order jackknife."""
    return (d - (1 - q) * f1 * math.log(1 - q) * gamma2 / q) / (1 - (1 - q) * f1 / n)


def duj2(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """Duj2 (Haas & Stokes 1998, Eq. 18b) with gamma^2 estimated from Duj1 (Eq. 16)."""
    p, done = prepare(f, n, N)
    if done:
        return done
    q, f1 = n / N, p.f(1)
    g2 = gamma2(duj1_value(p.d, f1, n, q), p, n, N)
    return _finish(p, N, _duj2(p.d, f1, n, q, g2))


def population_size(
    i: np.ndarray, q: float | np.ndarray, N: int | np.ndarray
) -> np.ndarray:
    """Method of moments: the class size ``x`` with ``E[i | seen] = q x / (1 - (1-q)^x) = i``
    (Haas & Stokes 1998, Duj2a), vectorised (``q`` and ``N`` per element or shared:
    ``bootstrap.py`` solves every replicate's classes at once). ``q x <= E <= 1 + q x``
    brackets the root in ``[(i-1)/q, i/q]``, so a few safeguarded Newton steps from
    ``i/q`` reach it (the classes set aside are seen > 50 times, where ``(1-q)^x`` is
    ~e^-i and the first step already lands); elements still off after them are bisected."""
    i = np.asarray(i, dtype=np.float64)
    q = np.broadcast_to(np.asarray(q, dtype=np.float64), i.shape)
    big_n = np.broadcast_to(np.asarray(N, dtype=np.float64), i.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log1q = np.log1p(-q)
        lo = np.clip((i - 1) / q, 1.0, big_n)
        hi = np.clip(i / q, 1.0, big_n)
        x = hi.copy()
        for _ in range(8):
            unseen = -np.expm1(x * log1q)  # 1 - (1-q)^x
            value = q * x / unseen - i
            slope = q / unseen + q * x * np.exp(x * log1q) * log1q / unseen**2
            step = np.where(slope != 0, value / slope, 0.0)
            step = np.where(np.isfinite(step), step, 0.0)
            x = np.clip(x - step, lo, hi)
            if np.all(np.abs(step) <= 1e-12 * x):
                break
        off = ~(np.abs(q * x / -np.expm1(x * log1q) - i) <= 1e-9 * i)
    if off.any():
        x[off] = _bisected(i[off], q[off], big_n[off])
    return x


def _bisected(i: np.ndarray, q: np.ndarray, big_n: np.ndarray) -> np.ndarray:
    """``population_size`` by bisection on ``[1, N]`` (where Newton did not settle)."""
    lo = np.ones_like(i)
    hi = big_n.copy()
    with np.errstate(divide="ignore"):
        log1q = np.log1p(-q)
    for _ in range(200):
        mid = (lo + hi) / 2
        val = q * mid / -np.expm1(mid * log1q) - i
        lo = np.where(val < 0, mid, lo)
        hi = np.where(val < 0, hi, mid)
        if np.all(hi - lo <= 1e-9 * hi):
            break
    return (lo + hi) / 2


def split_heavy(p: Profile, n: int, N: int) -> tuple[Profile, int, float, float]:
    """Haas & Stokes (1998, Duj2a): set aside the classes seen more than c = 50 times. Returns
    the light classes' profile, their sample rows, their population rows (``N`` less the heavy
    classes' sizes by the method of moments, at least the light sample rows) and the number of
    heavy classes (all of which the sample has seen)."""
    heavy = p.freqs > DUJ2A_CUTOFF
    if not heavy.any():
        return p, n, float(N), 0.0
    card_b = float(p.counts[heavy].sum())
    n_b = int((p.freqs[heavy] * p.counts[heavy]).sum())
    light = Profile(p.freqs[~heavy], p.counts[~heavy])
    n_rest = n - n_b
    big_b = float((population_size(p.freqs[heavy], n / N, N) * p.counts[heavy]).sum())
    return light, n_rest, max(N - big_b, float(n_rest)), card_b


def duj2a(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """Duj2a (Haas & Stokes 1998): set aside the classes seen more than c = 50 times (their
    population sizes by the method of moments), Duj2 on the rest, add the set-aside back."""
    p, done = prepare(f, n, N)
    if done:
        return done
    q = n / N
    light, n_rest, N_rest, card_b = split_heavy(p, n, N)
    if card_b == 0:
        return duj2(p, n, N)
    if n_rest == 0:
        return _finish(p, N, card_b)
    f1 = light.f(1)
    g2 = gamma2(duj1_value(light.d, f1, n_rest, q), light, n_rest, N_rest)
    return _finish(p, N, _duj2(light.d, f1, n_rest, q, g2) + card_b)


def sh3(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """Sh3, Shlosser's third-order estimator (Haas & Stokes 1998, Eq. 30b)."""
    p, done = prepare(f, n, N)
    if done:
        return done
    if p.f(1) == 0:
        return _finish(p, N, float(p.d))
    q = n / N
    i, fi = p.freqs.astype(np.float64), p.counts
    a = float((i * q * q * (1 - q * q) ** (i - 1) * fi).sum())
    b = float((((1 - q * q) ** i - (1 - q) ** i) * fi).sum())
    c = float(((1 - q) ** i * fi).sum())
    e = float((i * q * (1 - q) ** (i - 1) * fi).sum())
    if b <= 0 or e <= 0:
        return _finish(p, N, float(N))
    return _finish(p, N, p.d + p.f(1) * a / b * (c / e) ** 2)


def haas_stokes(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """The Haas & Stokes (1998) hybrid, Eq. 33: gamma^2 (from Duj1) below 0.9 -> Duj2,
    below 30 -> Duj2a, else Sh3."""
    p, done = prepare(f, n, N)
    if done:
        return done
    g2 = gamma2(duj1_value(p.d, p.f(1), n, n / N), p, n, N)
    if g2 < HS_ALPHA1:
        return duj2(p, n, N)
    if g2 < HS_ALPHA2:
        return duj2a(p, n, N)
    return sh3(p, n, N)


def gee(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """GEE (Charikar et al., PODS 2000): ``sqrt(N/n) f1 + sum_{j>=2} f_j``, the geometric mean
    of their bounds ``[d, (N/n) f1 + sum_{j>=2} f_j]``, which are its interval."""
    p, done = prepare(f, n, N)
    if done:
        return done
    f1, rest = p.f(1), p.d - p.f(1)
    return _finish(p, N, math.sqrt(N / n) * f1 + rest, p.d, N / n * f1 + rest)


def ae(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """AE, the adaptive estimator (Charikar et al., PODS 2000): ``D = d + m - f1 - f2`` where
    ``m`` solves ``m - f1 - f2 = f1 (A + m e^{-s/m}) / (B + s e^{-s/m})``, ``s = f1 + 2 f2``,
    ``A = sum_{i>=3} e^{-i} f_i``, ``B = sum_{i>=3} i e^{-i} f_i``. The smallest root in
    ``[f1 + f2, N - d + f1 + f2]`` is bracketed on a log grid and bisected; none -> ``N``."""
    p, done = prepare(f, n, N)
    if done:
        return done
    f1, f2 = p.f(1), p.f(2)
    if f1 == 0:
        return _finish(p, N, float(p.d))
    s = f1 + 2 * f2
    tail = p.freqs >= 3
    i = p.freqs[tail].astype(np.float64)
    a = float((np.exp(-i) * p.counts[tail]).sum())
    b = float((i * np.exp(-i) * p.counts[tail]).sum())

    def g(m: np.ndarray) -> np.ndarray:
        e = np.exp(-s / m)
        return (m - f1 - f2) - f1 * (a + m * e) / (b + s * e)

    def g_at(m: float) -> float:  # one point of ``g`` in floats: the bisection's 100 steps
        e = math.exp(-s / m)
        return (m - f1 - f2) - f1 * (a + m * e) / (b + s * e)

    lo, hi = f1 + f2, float(N - p.d + f1 + f2)
    if hi <= lo:
        return _finish(p, N, float(p.d))
    grid = np.geomspace(lo, hi, 400)
    vals = g(grid)
    sign = np.flatnonzero(vals >= 0)
    if sign.size == 0:
        return _finish(p, N, float(N))
    k = int(sign[0])
    if k == 0:
        return _finish(p, N, float(p.d))
    left, right = float(grid[k - 1]), float(grid[k])
    for _ in range(100):
        mid = (left + right) / 2
        if g_at(mid) < 0:
            left = mid
        else:
            right = mid
    return _finish(p, N, p.d + (left + right) / 2 - f1 - f2)


def smoothed_jackknife(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """The smoothed jackknife (Haas et al., VLDB 1995, Section 4.3): first-order jackknife
    with ``d_{n-1}`` replaced by its expectation when all classes have size ``N~ = N / D0``:
    ``D = (d + N h(N~) g(N~) gamma^2) / (1 - (N - N~ - n + 1) f1 / (n N))`` with
    ``h(x) = G(N-x+1) G(N-n+1) / (G(N-n-x+1) G(N+1))``, ``g(x) = sum_{k=1..n}
    1/(N - x - n + k)``, ``D0 = (d - f1/n) / (1 - (N - n + 1) f1 / (n N))``."""
    p, done = prepare(f, n, N)
    if done:
        return done
    d, f1 = p.d, p.f(1)
    den0 = 1 - (N - n + 1) * f1 / (n * N)
    if den0 <= 0:
        return _finish(p, N, float(N))
    d0 = (d - f1 / n) / den0
    if d0 <= 0:
        return _finish(p, N, float(d))
    nt = N / d0
    if N - n - nt + 1 > 0:
        log_h = (
            math.lgamma(N - nt + 1)
            + math.lgamma(N - n + 1)
            - math.lgamma(N - n - nt + 1)
            - math.lgamma(N + 1)
        )
        h = math.exp(log_h)
    else:
        h = 0.0
    g = float((1.0 / (N - nt - n + np.arange(1, n + 1, dtype=np.float64))).sum()) if h else 0.0
    s = float((p.freqs * (p.freqs - 1) * p.counts).sum())
    gamma2 = (N - 1) * d0 / (N * n * (n - 1)) * s + d0 / N - 1 if n > 1 else 0.0
    den = 1 - (N - nt - n + 1) * f1 / (n * N)
    if den <= 0:
        return _finish(p, N, float(N))
    return _finish(p, N, (d + N * h * g * gamma2) / den)


def chi2_quantile_975(dof: float) -> float:
    """0.975 quantile of chi-square(dof), Wilson-Hilferty (relative error < 1e-3 for dof >= 3)."""
    if dof <= 0:
        return 0.0
    c = 2 / (9 * dof)
    return dof * (1 - c + CHI2_LEVEL_Z * math.sqrt(c)) ** 3


def skew_statistic(p: Profile, n: int) -> float:
    """Haas et al. (1995)'s chi-square uniformity statistic over the sample's classes:
    ``u = sum_j (n_j - n/d)^2 / (n/d)`` (``d - 1`` degrees of freedom)."""
    nbar = n / p.d
    return float((p.counts * (p.freqs - nbar) ** 2).sum() / nbar)


def hybskew(f: FrequencyProfile, n: int, N: int) -> Estimate:
    """The Haas et al. (1995) hybrid: the chi-square test at 0.975 says uniform -> smoothed
    jackknife, skewed -> Shlosser."""
    p, done = prepare(f, n, N)
    if done:
        return done
    if p.d <= 1 or skew_statistic(p, n) < chi2_quantile_975(p.d - 1):
        return smoothed_jackknife(p, n, N)
    return shlosser(p, n, N)


ESTIMATORS = {
    "chao": chao,
    "chao_wor": chao_wor,
    "chao_katz": chao_katz,
    "chao_lee": chao_lee,
    "shlosser": shlosser,
    "duj1": duj1,
    "duj2": duj2,
    "duj2a": duj2a,
    "sh3": sh3,
    "haas_stokes": haas_stokes,
    "gee": gee,
    "ae": ae,
    "smoothed_jackknife": smoothed_jackknife,
    "hybskew": hybskew,
}
