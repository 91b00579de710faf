"""Statistics of a uniform sample scaled to its population, with 95 % intervals.

Pure Python/NumPy (no Spark). One statistics row (a dict of ``statistics.parquet``'s
columns computed on the sample of a partition or of the table) becomes an estimate for the
``N`` rows it was drawn from:

* ``row_count`` is ``N`` (exact: from the table's metadata, never the sample); null, NaN
  and true counts, sums, frequencies and histogram counts are scaled by ``N / n``;
* mean: the sample mean, interval ``mean ± 1.96 s / √m · √(1 − m/M)`` (``m`` non-null
  sampled values, ``M`` their estimated population; finite-population correction);
* variance: the sample variance, interval from the χ² distribution with ``m − 1`` degrees
  of freedom (Wilson–Hilferty quantiles; it assumes roughly normal values);
* percentiles: the sample's, ``percentiles_exact`` false and ``percentile_rank_error`` the
  95 % normalized rank error of the median, ``1.96 · 0.5 / √m · √(1 − m/M)`` (largest of
  all percentiles);
* distinct count: ``select_estimator`` on the sample's frequency of frequencies, with the
  estimator's name in ``distinct_estimator`` and its interval in ``distinct_count_lower`` /
  ``distinct_count_upper``;
* sketches are dropped (they describe the sample), ``all_distinct`` is unknown (null).

A frequency ``c`` seen in the sample estimates ``c · N/n`` with the binomial interval
``frequency_interval``.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from lakestats.stats.ndv import select_estimator

Z95 = 1.959963984540054

SAMPLED_FIELDS = [
    pa.field("sample_row_count", pa.int64()),
    pa.field("distinct_estimator", pa.string()),
    pa.field("mean_lower", pa.float64()),
    pa.field("mean_upper", pa.float64()),
    pa.field("variance_lower", pa.float64()),
    pa.field("variance_upper", pa.float64()),
    # where null_count, min and max come from: "metadata" (data files' footers: the null
    # count exact, min/max exact unless bounds_exact is false) or "sample"
    pa.field("bounds_from", pa.string()),
    pa.field("bounds_exact", pa.bool_()),
]
"""Columns a sampled version's ``statistics.parquet`` adds after the usual ones."""


def _chi2_quantile(q: float, df: int) -> float:
    """Wilson–Hilferty approximation of the χ² quantile."""
    z = _normal_quantile(q)
    a = 2.0 / (9.0 * df)
    return df * max(1.0 - a + z * math.sqrt(a), 1e-9) ** 3


def _normal_quantile(q: float) -> float:
    return {0.975: Z95, 0.025: -Z95}[q]


def frequency_intervals(
    counts: np.ndarray, n: int, N: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(estimates, lowers, uppers)`` of values' frequencies in ``N`` rows from their
    ``counts`` in a uniform sample of ``n`` rows (Wald interval on the proportion with
    finite-population correction, ``p(1 − p)`` floored at ``1/(4n)`` so a value seen once or
    in every row still gets a width, clamped to ``[count, N]``)."""
    counts = np.asarray(counts, dtype=np.float64)
    if n <= 0:
        zeros = np.zeros(len(counts))
        return zeros, zeros, np.full(len(counts), float(N))
    p = counts / n
    fpc = max(0.0, 1.0 - n / N) if N else 0.0
    half = Z95 * np.sqrt(np.maximum(p * (1 - p), 0.25 / n) / n * fpc)
    return p * N, np.maximum(counts, (p - half) * N), np.minimum(float(N), (p + half) * N)


def frequency_interval(count: int, n: int, N: int) -> tuple[float, float, float]:
    """``frequency_intervals`` of one count."""
    estimate, lower, upper = frequency_intervals(np.array([count]), n, N)
    return float(estimate[0]), float(lower[0]), float(upper[0])


PARTITION_REPLICATES = 20
"""Bootstrap replicates of a partition's distinct-count interval (the table's use
``select_estimator``'s default, 200): the replicates are evaluated at once
(``stats/ndv/bootstrap.py``), but a table has partitions × columns of them."""


def scale_row(
    row: dict, N: int, n: int, f: np.ndarray | None, replicates: int | None = None
) -> dict:
    """The estimate of one statistics row of a sample of ``n`` of ``N`` rows; ``f`` is the
    column's frequency of frequencies in the sample (None: no distinct estimate);
    ``replicates``: of the distinct count's bootstrap interval (default: the rule's)."""
    out = dict(row)
    out["sample_row_count"] = n
    r = N / n if n else 0.0
    exact = n == N

    def scaled(value: int | None) -> int | None:
        return None if value is None else round(value * r)

    nulls = scaled(row.get("null_count")) or 0
    nans = scaled(row.get("nan_count"))
    out.update(row_count=N, null_count=nulls, nan_count=nans)
    out["true_count"] = scaled(row.get("true_count"))
    if row.get("sum") is not None:
        out["sum"] = row["sum"] * r
    sampled_nonnull = n - (row.get("null_count") or 0)
    population_nonnull = max(N - nulls, sampled_nonnull)
    m = sampled_nonnull - (row.get("nan_count") or 0)
    big_m = max(population_nonnull - (nans or 0), m)
    fpc = max(0.0, 1.0 - m / big_m) if big_m else 0.0
    mean, variance = row.get("mean"), row.get("variance")
    if mean is not None and variance is not None and m > 1 and math.isfinite(variance):
        half = Z95 * math.sqrt(variance / m * fpc)
        out["mean_lower"], out["mean_upper"] = mean - half, mean + half
        df = m - 1
        if exact:
            out["variance_lower"] = out["variance_upper"] = variance
        else:
            out["variance_lower"] = df * variance / _chi2_quantile(0.975, df)
            out["variance_upper"] = df * variance / _chi2_quantile(0.025, df)
    else:
        for name in ("mean_lower", "mean_upper", "variance_lower", "variance_upper"):
            out[name] = mean if name.startswith("mean") else variance
    if m > 0 and row.get("p50") is not None:
        out["percentiles_exact"] = exact
        out["percentile_rank_error"] = Z95 * 0.5 / math.sqrt(m) * math.sqrt(fpc)
    if f is not None:
        extra = {} if replicates is None else {"replicates": replicates}
        name, estimate, (lower, upper) = select_estimator(
            f, sampled_nonnull, population_nonnull, **extra
        )
        out["distinct_count"] = round(estimate)
        out["distinct_count_lower"] = math.floor(lower)
        out["distinct_count_upper"] = math.ceil(upper)
        out["distinct_estimator"] = name
        out["distinct_count_exact"] = exact
    elif not exact and row.get("distinct_count") is not None:
        out["distinct_count_exact"] = False  # the sample's own count: a lower bound
    out["all_distinct"] = row.get("all_distinct") if exact else None
    stored = row.get("frequencies_count")
    if stored is not None:
        out["frequencies_min"] = scaled(row.get("frequencies_min"))
        estimate_d = out.get("distinct_count") or stored
        out["frequencies_truncated"] = bool(row.get("frequencies_truncated")) or (
            not exact and estimate_d > stored
        )
        out["frequencies_omitted"] = max(0, int(estimate_d) - int(stored))
    if row.get("histogram_bins") is not None:
        out["histogram_exact"] = exact
    if "frequencies_exact" in out:
        out["frequencies_exact"] = exact if out.get("frequencies_exact") is not None else None
    out["hll_sketch"] = None
    out["kll_sketch"] = None
    out["theta_sketch"] = None
    out["bounds_from"], out["bounds_exact"] = "sample", exact
    return out


def apply_bounds(row: dict, bounds: dict[str, object] | None) -> dict:
    """Replace a scaled row's null count, min and max by what the metadata knows."""
    if bounds is None:
        return row
    nans = row.get("nan_count") or 0
    only_nan = bounds["min"] is None and nans > 0  # footers skip NaN: keep the sample's
    row.update(null_count=bounds["null_count"], bounds_from="metadata")
    if not only_nan:
        row.update(min=bounds["min"], max=bounds["max"], bounds_exact=bounds["exact"])
    return row


def scale_counts(counts: np.ndarray, N: int, n: int) -> np.ndarray:
    """Sample counts (frequencies, histogram bins) scaled to the population."""
    return np.rint(counts.astype(np.float64) * (N / n if n else 0.0)).astype(np.int64)
