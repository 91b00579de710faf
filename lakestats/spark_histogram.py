"""Spark's equi-height histogram of a column, cut from lakestats' statistics of one
version (``lakestats.spark.register`` sets it as the catalog statistics' ``Histogram``).

A column's distribution is read as ``Pieces`` from the best source there is: every value
with its exact count (``frequencies``), the stored equi-width histogram, or the
percentiles; ``equi_height`` then cuts it into Spark's bins, edges and ndvs as Spark's own
``ANALYZE`` computes them. Plain Python and NumPy: no Spark here.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lakestats.answers import Bin

INTEGRAL = {"byte": 1, "short": 2, "int": 4, "long": 8}
LATTICE = {*INTEGRAL, "date", "timestamp", "timestamp_ntz"}
MAX_FREQUENCY_POINTS = 200_000  # beyond, the stored histogram is the source (decoding cost)
EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)


@dataclass(frozen=True)
class VersionLookups:
    """One statistics version's frequencies and histograms, through the facade."""

    table: object  # lakestats.api.LakestatsTable
    version: int

    def frequencies(self, column: str) -> list[tuple[object, int]]:
        return list(self.table.frequencies(column, version=self.version))  # type: ignore[attr-defined]

    def histogram(self, column: str) -> list[Bin]:
        return list(self.table.histogram(column, version=self.version))  # type: ignore[attr-defined]

    def configured_bins(self) -> int:
        options = self.table.analyze_options(self.version)  # type: ignore[attr-defined]
        return int(options.bins or 0) if options is not None else 0

    def data_bytes(self) -> int:
        for info in self.table.history():  # type: ignore[attr-defined]
            if info.version == self.version:
                return int(info.merged_record_size or 0)
        return 0


def _double(value: object, spark_type: str) -> float:
    """A value as Spark's histogram holds it (``EstimationUtils.toDouble`` of the internal
    value): days for dates, microseconds for timestamps."""
    if spark_type == "date":
        return float((value - EPOCH_DATE).days)
    if spark_type == "timestamp":
        return float((value - EPOCH_UTC) // dt.timedelta(microseconds=1))
    if spark_type == "timestamp_ntz":
        return float((value - EPOCH_NAIVE) // dt.timedelta(microseconds=1))
    return float(value)


@dataclass
class Pieces:
    """A column's value distribution: rows uniform over ``[lo, hi]`` per piece (a point mass
    when ``lo == hi``), with an ndv per piece; in increasing order."""

    lo: np.ndarray
    hi: np.ndarray
    count: np.ndarray
    ndv: np.ndarray


def pieces_of(
    row: dict, floating: bool, spark_type: str, reader: VersionLookups
) -> tuple[Pieces | None, str | None]:
    column = row["column"]
    distinct = row.get("distinct_count") or 1
    complete = bool(row.get("frequencies_exact")) and not row.get("frequencies_truncated")
    complete = complete and distinct <= MAX_FREQUENCY_POINTS
    if complete and not row.get("all_distinct"):
        pairs = [
            (_double(v, spark_type), c)
            for v, c in reader.frequencies(column)
            if not (isinstance(v, float) and math.isnan(v))
        ]
        if pairs:
            pairs.sort()
            values = np.array([p[0] for p in pairs])
            counts = np.array([p[1] for p in pairs], dtype=np.float64)
            return Pieces(values, values, counts, np.ones(len(values))), "frequencies"
    bins = reader.histogram(column) if row.get("histogram_bins") else []
    if bins:
        top = _double(row["max"], spark_type)
        lo = np.array([_double(b.lower, spark_type) for b in bins])
        hi = np.minimum(np.array([_double(b.upper, spark_type) for b in bins]), top)
        counts = np.array([b.count for b in bins], dtype=np.float64)
        lo, hi = np.minimum(lo, hi), hi
        # one lattice point per bin (integer widths, fewer points than bins): a point mass
        configured = reader.configured_bins()
        if not floating and row.get("histogram_exact") and len(bins) < configured:
            hi = lo.copy()
        if spark_type in LATTICE:
            # a bin [v, v + 1) of whole numbers holds v alone, exact counts or not: spread
            # over the interval, Spark's join estimate met fractions of keys that cannot be
            # (TPC-H Q7's nation keys: 21,101 estimated, 4.8 million rows; 14x slower)
            single = (hi - lo <= 1) & (lo == np.floor(lo))
            hi = np.where(single, lo, hi)
        total = counts.sum()
        ndv = np.where(hi == lo, 1.0, np.minimum(counts, distinct * counts / max(total, 1)))
        keep = counts > 0
        return Pieces(lo[keep], hi[keep], counts[keep], ndv[keep]), "histogram"
    names = ("min", "p01", "p05", "p25", "p50", "p75", "p95", "p99", "max")
    ranks = (0, 1, 5, 25, 50, 75, 95, 99, 100)
    marks = [(q, row.get(n)) for q, n in zip(ranks, names, strict=True)]
    marks = [(q, _double(v, spark_type)) for q, v in marks if v is not None]
    if len(marks) < 2:
        return None, None
    non_null = row["row_count"] - row["null_count"] - (row.get("nan_count") or 0)
    qs = np.array([q for q, _ in marks], dtype=np.float64)
    xs = np.array([x for _, x in marks])
    counts = np.diff(qs) / 100.0 * non_null
    ndv = np.maximum(1.0, distinct * np.diff(qs) / 100.0)
    return Pieces(xs[:-1], xs[1:], counts, ndv), "percentiles"


def infinities_as_points(pieces: Pieces) -> Pieces:
    """±infinity (a float column's, or a bin or percentile reaching it) as point masses at
    ±infinity: rows cannot be spread over an infinite range (its arithmetic is NaN)."""
    infinite = ~np.isfinite(pieces.lo) | ~np.isfinite(pieces.hi)
    if not infinite.any():
        return pieces
    lo, hi, ndv = pieces.lo.copy(), pieces.hi.copy(), pieces.ndv.copy()
    at = np.where(np.isfinite(lo), hi, lo)  # the infinite end (-inf first)
    lo[infinite], hi[infinite], ndv[infinite] = at[infinite], at[infinite], 1.0
    return Pieces(lo, hi, pieces.count, ndv)


def equi_height(pieces: Pieces, num_bins: int) -> tuple[float, list[tuple[float, float, int]]]:
    """Spark's equi-height histogram of a distribution: ``num_bins`` bins of ``height`` rows,
    edges at the ``i / num_bins`` quantiles (nearest rank on point masses, linear inside a
    piece), ``ndv`` of bin ``i`` counted over ``(edge i, edge i+1]`` (the first bin includes
    its lower edge; a bin with equal edges has ndv 1), as Spark's ANALYZE computes them."""
    total = float(pieces.count.sum())
    cum = np.cumsum(pieces.count)
    before = cum - pieces.count
    targets = np.arange(1, num_bins) * (total / num_bins)
    index = np.minimum(np.searchsorted(cum, targets - 1e-9 * total, side="left"), len(cum) - 1)
    share = np.clip((targets - before[index]) / pieces.count[index], 0.0, 1.0)
    low, high = pieces.lo[index], pieces.hi[index]
    with np.errstate(invalid="ignore"):  # point masses (±inf among them) take no share
        inner = np.where(low == high, low, low + share * (high - low))
    edges = np.concatenate([[pieces.lo[0]], inner, [pieces.hi[-1]]])
    edges = np.maximum.accumulate(edges)
    bins = []
    for i in range(num_bins):
        lo, hi = float(edges[i]), float(edges[i + 1])
        ndv = 1 if lo == hi else _ndv_between(pieces, lo, hi, first=i == 0)
        bins.append((lo, hi, ndv))
    return total / num_bins, bins


def _ndv_between(pieces: Pieces, lo: float, hi: float, first: bool) -> int:
    """Distinct values in ``(lo, hi]`` (``[lo, hi]`` for the first bin)."""
    points = pieces.lo == pieces.hi
    at = pieces.lo
    inside = (at > lo) | (first & (at == lo))
    exact = float(pieces.ndv[points & inside & (at <= hi)].sum())
    spread = ~points  # finite (``infinities_as_points``); the points' NaNs are dropped
    with np.errstate(invalid="ignore"):
        width = np.where(spread, pieces.hi - pieces.lo, 1.0)
        cover = np.minimum(hi, pieces.hi) - np.maximum(lo, pieces.lo)
        overlap = np.clip(cover, 0.0, None) / width
    estimated = float((pieces.ndv * overlap)[spread].sum())
    return max(1, round(exact + estimated))
