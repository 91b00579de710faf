"""The mergeable table-level state of one column, and its sketches.

Contract: a ``ScalarState`` is built from partitions' ``statistics.parquet`` rows (see
``stats/table_fold.py``) and merged with another of the same column (``merge``): counts,
min/max (by key bytes: keys are order-preserving), moments (Chan's parallel formulas: exact
up to floating point), lengths, true count, HLL union, quantile sketch union (a function of
the merge order: callers merge in a canonical order), the global histogram range
and whether every partition's frequencies are complete. ``grid`` plans the table histogram
grid; ``row`` gives the table statistics row before frequencies are merged. Live sketch
objects are serialized into ``hll``/``kll`` when the state is pickled or finalized.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import datasketches as ds
import numpy as np
import pyarrow as pa

from lakestats.stats import keys
from lakestats.stats.histogram import exact_width
from lakestats.stats.kinds import MOMENT_KINDS, ORDERED_NUMERIC, Kind, kind_of
from lakestats.stats.percentiles import PERCENTILES, percentile_names
from lakestats.stats.quantile_sketch import QuantileSketch, normalized_rank_error
from lakestats.stats.rebin import Grid
from lakestats.stats.sketches import HLL_LG_K, KLL_K, order_free_hll


@dataclass
class ScalarState:
    """Mergeable table-level state of one column built from partition statistics rows."""

    name: str
    type: str
    row_count: int = 0
    null_count: int = 0
    nan_count: int | None = None
    moment_n: float = 0.0
    mean: float = 0.0
    m2: float = 0.0
    sum: float | None = None
    min_key: bytes | None = None
    max_key: bytes | None = None
    min_length: int | None = None
    max_length: int | None = None
    length_total: float = 0.0
    length_n: int = 0
    true_count: int | None = None
    hll: bytes | None = None
    kll: bytes | None = None
    frequencies_complete: bool = True
    # some partition's sketches were left out (its frequencies determine them) and not
    # rebuilt, because every partition of this state listed all its values: exact without
    # them. Merged into an incomplete state, ``compute/reduce`` rebuilds them.
    sketches_deferred: bool = False
    frequency_slack: int = 0  # sum over incomplete partitions of their unseen-value bound
    histogram_lo: float | None = None  # finite range of the partition histograms
    histogram_hi: float | None = None
    custom: dict[str, object] = field(default_factory=dict)
    partitions: int = 0

    # live sketch objects; serialized into ``hll``/``kll`` when pickled or finalized
    def hll_union(self) -> ds.hll_union:
        live = self.__dict__.get("_live_hll")
        if live is None:
            live = ds.hll_union(HLL_LG_K)
            if self.hll is not None:
                live.update(ds.hll_sketch.deserialize(self.hll))
            self.__dict__["_live_hll"] = live
        return live

    def kll_union(self) -> QuantileSketch:
        live = self.__dict__.get("_live_kll")
        if live is None:
            live = (
                QuantileSketch.deserialize(self.kll)
                if self.kll is not None
                else QuantileSketch(KLL_K)
            )
            self.__dict__["_live_kll"] = live
        return live

    def freeze(self) -> None:
        """Serialize the live sketches into ``hll``/``kll`` (before pickling or reading)."""
        live_hll = self.__dict__.pop("_live_hll", None)
        if live_hll is not None:
            self.hll = live_hll.get_result(ds.tgt_hll_type.HLL_8).serialize_compact()
        live_kll = self.__dict__.pop("_live_kll", None)
        if live_kll is not None:
            self.kll = live_kll.serialize()

    def __getstate__(self) -> dict[str, object]:
        self.freeze()
        return dict(self.__dict__)

    def merge_moments(self, n: float, mean: float, m2: float, total: float) -> None:
        """Fold ``n`` values of mean ``mean``, squared deviations ``m2`` and sum ``total``."""
        if n <= 0:
            return
        combined = self.moment_n + n
        if self.moment_n and not (math.isfinite(mean) and math.isfinite(self.mean)):
            # infinities: the mean is their weighted sum (inf, -inf or NaN), variance NaN
            with np.errstate(invalid="ignore", over="ignore"):
                self.mean = float(
                    np.float64(self.mean) * (self.moment_n / combined)
                    + np.float64(mean) * (n / combined)
                )
            self.m2 = math.nan
            self.sum = (self.sum or 0.0) + total
            self.moment_n = combined
            return
        with np.errstate(invalid="ignore", over="ignore"):
            delta = mean - self.mean
            self.mean = self.mean + delta * n / combined if self.moment_n else mean
            self.m2 = (
                self.m2 + m2 + delta * delta * self.moment_n * n / combined if self.moment_n else m2
            )
        self.sum = (self.sum or 0.0) + total
        self.moment_n = combined

    def merge(self, other: ScalarState) -> None:
        """Fold another partial state of the same column."""
        self.partitions += other.partitions
        self.row_count += other.row_count
        self.null_count += other.null_count
        if other.nan_count is not None:
            self.nan_count = (self.nan_count or 0) + other.nan_count
        if other.min_key is not None:
            self.min_key = (
                other.min_key if self.min_key is None else min(self.min_key, other.min_key)
            )
        if other.max_key is not None:
            self.max_key = (
                other.max_key if self.max_key is None else max(self.max_key, other.max_key)
            )
        if other.moment_n:
            self.merge_moments(other.moment_n, other.mean, other.m2, other.sum or 0.0)
        self.min_length = _min(self.min_length, other.min_length)
        self.max_length = _max(self.max_length, other.max_length)
        self.length_total += other.length_total
        self.length_n += other.length_n
        if other.true_count is not None:
            self.true_count = (self.true_count or 0) + other.true_count
        other.freeze()
        if other.hll is not None:
            self.hll_union().update(ds.hll_sketch.deserialize(other.hll))
        if other.kll is not None:
            self.kll_union().merge(QuantileSketch.deserialize(other.kll))
        self.frequencies_complete &= other.frequencies_complete
        self.sketches_deferred |= other.sketches_deferred
        self.frequency_slack += other.frequency_slack
        for bound in ("histogram_lo", "histogram_hi"):
            mine, theirs = getattr(self, bound), getattr(other, bound)
            if theirs is not None:
                pick = min if bound == "histogram_lo" else max
                setattr(self, bound, theirs if mine is None else pick(mine, theirs))

    def grid(self, dtype: pa.DataType, bins: int) -> Grid | None:
        """The table histogram grid over the union of the partitions' histogram ranges."""
        if self.histogram_lo is None:
            return None
        kind = kind_of(dtype)
        lo, hi = self.histogram_lo, self.histogram_hi
        if kind == Kind.FLOATING:
            width = (hi - lo) / bins
            if width == 0 or not math.isfinite(width):
                return Grid(lo, 0.0, 1, False, bins)
            return Grid(lo, width, bins, False, bins)
        lo, hi = int(lo), int(hi)  # integer storage; hi is inclusive
        width = exact_width(max(1, -(-(hi - lo + 1) // bins)))
        return Grid(lo, width, (hi - lo) // width + 1, True, bins)

    def row(self, dtype: pa.DataType) -> dict[str, object]:
        """The table-level statistics row (keys as bytes), before frequencies are merged.

        With complete frequencies the sketches are left out (null, as in a partition
        file): the merged frequency rows give the exact distinct count and percentiles."""
        self.freeze()
        hll, kll = (None, None) if self.frequencies_complete else (self.hll, self.kll)
        kind = kind_of(dtype)
        out: dict[str, object] = {
            "column": self.name,
            "type": self.type,
            "row_count": self.row_count,
            "null_count": self.null_count,
            "nan_count": self.nan_count,
            "min": self.min_key,
            "max": self.max_key,
            "true_count": self.true_count,
            "min_length": self.min_length,
            "max_length": self.max_length,
            "avg_length": self.length_total / self.length_n if self.length_n else None,
            "hll_sketch": hll,
            "kll_sketch": kll,
        }
        if kind in MOMENT_KINDS and self.moment_n:
            variance = self.m2 / (self.moment_n - 1) if self.moment_n > 1 else None
            out.update(
                sum=self.sum,
                mean=self.mean,
                variance=variance,
                stddev=math.sqrt(variance) if variance is not None and variance >= 0 else None,
            )
        if hll is not None:
            sketch = order_free_hll(hll)  # the same estimate however it was built
            # no more distinct values than non-null values (or integers in [min, max])
            ceiling = (
                self.row_count
                - self.null_count
                - (self.nan_count or 0)
                + (1 if self.nan_count else 0)
            )
            if kind == Kind.INTEGER and self.min_key is not None and self.max_key is not None:
                span = (
                    int(keys.decode(self.max_key, dtype))
                    - int(keys.decode(self.min_key, dtype))
                    + 1
                )
                ceiling = min(ceiling, span)
            # partition sketches hold the non-NaN values; NaN, like a partition, counts once
            nan = 1 if self.nan_count else 0
            out.update(
                distinct_count=min(round(sketch.get_estimate()) + nan, ceiling),
                distinct_count_lower=min(math.floor(sketch.get_lower_bound(2)) + nan, ceiling),
                distinct_count_upper=min(math.ceil(sketch.get_upper_bound(2)) + nan, ceiling),
                distinct_count_exact=False,
            )
        if kll is not None and kind in ORDERED_NUMERIC:
            quantile_sketch = QuantileSketch.deserialize(kll)
            if not quantile_sketch.is_empty():
                quantiles = quantile_sketch.quantiles([p / 100 for p in PERCENTILES])
                bounds = (self.min_key, self.max_key)
                encoded = keys.encode(_from_doubles(quantiles, dtype, bounds))
                for name, key in zip(percentile_names(), encoded.to_pylist(), strict=True):
                    out[name] = _within(key, self.min_key, self.max_key)
                out["percentiles_exact"] = False
                out["percentile_rank_error"] = normalized_rank_error(KLL_K)
        return out


def _from_doubles(
    values: np.ndarray, dtype: pa.DataType, bounds: tuple[bytes | None, bytes | None]
) -> pa.Array:
    """KLL quantiles (doubles) as values of the column type (rounded for integers).

    A double has 53 bits: 9999999999999999999999999999.9999999999, the largest
    ``decimal(38, 10)``, is 1e28 as a double, which has 39 digits at scale 10 and fits no
    ``decimal(38, 10)``. So decimal quantiles are kept inside the column's ``bounds`` (its
    min and max keys) before they are built; other types are clamped by key afterwards."""
    kind = kind_of(dtype)
    if kind == Kind.FLOATING:
        return pa.array(values, pa.float64()).cast(dtype)
    if kind == Kind.DECIMAL:
        import decimal

        exact = decimal.Context(prec=100)
        step = decimal.Decimal(1).scaleb(-dtype.scale)
        low, high = (None if b is None else keys.decode(b, dtype) for b in bounds)
        out = []
        for v in values:
            number = decimal.Decimal(repr(float(v))).quantize(step, context=exact)
            if low is not None and number < low:
                number = low
            if high is not None and number > high:
                number = high
            out.append(number)
        return pa.array(out, dtype)
    # the largest doubles inside int64: a quantile near 2**63 must not wrap around
    ints = np.round(np.clip(values, -(2.0**63), 9223372036854774784.0)).astype(np.int64)
    if kind == Kind.TEMPORAL:
        storage = keys.physical_int_storage(dtype)
        return pa.array(ints.astype(storage.to_pandas_dtype())).view(dtype)
    return pa.array(ints).cast(dtype)


def _within(key: bytes | None, low: bytes | None, high: bytes | None) -> bytes | None:
    """A sketch's quantile kept inside the column's [min, max]: a double rounds a
    microsecond timestamp at 9999-12-31 23:59:59.999999 one microsecond past the largest
    value a date or timestamp can hold, which nothing could then decode."""
    if key is None:
        return None
    if low is not None and key < low:
        return low
    if high is not None and key > high:
        return high
    return key


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)
