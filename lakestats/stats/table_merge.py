"""Reduce partition statistics to table statistics, without touching the data.

Three pieces, each mergeable so Spark can compute them in parallel:

* ``ScalarState``: one per column, from the partitions' ``statistics.parquet`` rows:
  counts, min/max (by key bytes: keys are order-preserving), moments (Chan's parallel
  formulas: exact up to floating point), lengths, true count, HLL union, KLL union, the
  global histogram range, and whether every partition's frequencies are complete.
* ``rebin``: a partition's equi-width histogram spread over the table's grid, each source
  bin's count split in proportion to its overlap with the table bins (values are assumed
  uniform inside a source bin; integer bins split by the integers they cover).
* ``finalize_frequencies``: one column's merged frequency rows (value, total, per-partition
  counts). When every partition listed all its values, the distinct count, percentiles,
  histogram and frequencies are exact; otherwise frequencies are the most frequent known
  values with upper bounds, and the rest comes from the sketches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import datasketches as ds
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.stats import histogram as hist
from lakestats.stats import keys
from lakestats.stats.kinds import MOMENT_KINDS, ORDERED_NUMERIC, Kind, kind_of
from lakestats.stats.percentiles import PERCENTILES, nearest_rank_indices, percentile_names
from lakestats.stats.sketches import HLL_LG_K, KLL_K, order_free_hll
from lakestats.stats.top_values import most_frequent

DENSE_FRACTION = 0.25
"""A value present in at least this fraction of partitions gets a dense count vector."""


@dataclass
class Grid:
    """The table histogram's bins: ``lower + i * width`` in the column's storage domain."""

    lower: float | int
    width: float | int
    bins: int
    integral: bool
    bins_requested: int = 1000

    def edges(self) -> np.ndarray:
        cached = self.__dict__.get("_edges")
        if cached is None:
            cached = float(self.lower) + np.arange(self.bins + 1, dtype=np.float64) * float(
                self.width
            )
            self.__dict__["_edges"] = cached
        return cached.copy()


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
    frequency_slack: int = 0  # sum over incomplete partitions of their unseen-value bound
    histogram_lo: float | None = None  # finite range of the partition histograms
    histogram_hi: float | None = None
    custom: dict[str, object] = field(default_factory=dict)
    partitions: int = 0

    # live sketch objects; serialized into ``hll``/``kll`` when pickled or finalized
    def _hll(self) -> ds.hll_union:
        live = self.__dict__.get("_live_hll")
        if live is None:
            live = ds.hll_union(HLL_LG_K)
            if self.hll is not None:
                live.update(ds.hll_sketch.deserialize(self.hll))
            self.__dict__["_live_hll"] = live
        return live

    def _kll(self) -> ds.kll_doubles_sketch:
        live = self.__dict__.get("_live_kll")
        if live is None:
            live = (
                ds.kll_doubles_sketch.deserialize(self.kll)
                if self.kll is not None
                else ds.kll_doubles_sketch(KLL_K)
            )
            self.__dict__["_live_kll"] = live
        return live

    def _freeze(self) -> None:
        live_hll = self.__dict__.pop("_live_hll", None)
        if live_hll is not None:
            self.hll = live_hll.get_result(ds.tgt_hll_type.HLL_8).serialize_compact()
        live_kll = self.__dict__.pop("_live_kll", None)
        if live_kll is not None:
            self.kll = live_kll.serialize()

    def __getstate__(self) -> dict[str, object]:
        self._freeze()
        return dict(self.__dict__)

    def _merge_moments(self, n: float, mean: float, m2: float, total: float) -> None:
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
            self._merge_moments(other.moment_n, other.mean, other.m2, other.sum or 0.0)
        self.min_length = _min(self.min_length, other.min_length)
        self.max_length = _max(self.max_length, other.max_length)
        self.length_total += other.length_total
        self.length_n += other.length_n
        if other.true_count is not None:
            self.true_count = (self.true_count or 0) + other.true_count
        other._freeze()
        if other.hll is not None:
            self._hll().update(ds.hll_sketch.deserialize(other.hll))
        if other.kll is not None:
            self._kll().merge(ds.kll_doubles_sketch.deserialize(other.kll))
        self.frequencies_complete &= other.frequencies_complete
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
        width = max(1, -(-(hi - lo + 1) // bins))
        return Grid(lo, width, (hi - lo) // width + 1, True, bins)

    def row(self, dtype: pa.DataType) -> dict[str, object]:
        """The table-level statistics row (keys as bytes), before frequencies are merged."""
        self._freeze()
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
            "hll_sketch": self.hll,
            "kll_sketch": self.kll,
        }
        if kind in MOMENT_KINDS and self.moment_n:
            variance = self.m2 / (self.moment_n - 1) if self.moment_n > 1 else None
            out.update(
                sum=self.sum,
                mean=self.mean,
                variance=variance,
                stddev=math.sqrt(variance) if variance is not None and variance >= 0 else None,
            )
        if self.hll is not None:
            sketch = order_free_hll(self.hll)  # the same estimate however it was built
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
        if self.kll is not None and kind in ORDERED_NUMERIC:
            sketch = ds.kll_doubles_sketch.deserialize(self.kll)
            if not sketch.is_empty():
                quantiles = [sketch.get_quantile(p / 100) for p in PERCENTILES]
                encoded = keys.encode(_from_doubles(np.array(quantiles), dtype))
                for name, key in zip(percentile_names(), encoded.to_pylist(), strict=True):
                    out[name] = key
                out["percentiles_exact"] = False
                out["percentile_rank_error"] = ds.kll_doubles_sketch.get_normalized_rank_error(
                    KLL_K, False
                )
        return out


def histogram_range(row: dict[str, object], dtype: pa.DataType) -> tuple[float, float]:
    """The finite value range a partition histogram covers, in storage units."""
    kind = kind_of(dtype)
    bins, width = row["histogram_bins"], row["histogram_width"]
    lower = _storage_number(row["histogram_lower"], dtype)
    if kind == Kind.FLOATING:
        upper = lower + bins * width if width else lower
        top = keys.decode(row["max"], dtype)
        if math.isfinite(top):
            upper = min(upper, top) if width else top
        return lower, upper
    # the last bin's nominal end can lie past the partition's max: the table range must not
    return lower, min(lower + bins * int(width) - 1, _storage_number(row["max"], dtype))


def rebin(row: dict[str, object], counts: np.ndarray, grid: Grid, dtype: pa.DataType) -> np.ndarray:
    """A partition histogram's counts spread over ``grid`` in proportion to overlap.

    Values are taken as uniform inside each source bin: the source's piecewise-linear
    cumulative count is interpolated at the grid's edges and differenced.
    """
    bins, width = row["histogram_bins"], row["histogram_width"]
    lower = float(_storage_number(row["histogram_lower"], dtype))
    counts = np.asarray(counts[:bins], dtype=np.float64)
    if grid.width == 0 or width == 0:
        out = np.zeros(grid.bins, dtype=np.float64)
        # one point (or a one-bin grid): the grid bin whose reported edges hold it
        index = int(np.searchsorted(grid.edges()[:-1], lower, side="right")) - 1
        out[min(grid.bins - 1, max(0, index))] += counts.sum()
        return out
    source_edges = lower + np.arange(bins + 1, dtype=np.float64) * float(width)
    # the last source bin holds nothing past the partition's max: spread it only up to there
    top = _storage_number(row["max"], dtype)
    end = float(top) + 1.0 if grid.integral else float(top)
    if math.isfinite(end) and end < source_edges[-1]:
        source_edges[-1] = max(end, np.nextafter(source_edges[-2], np.inf))
    cumulative = np.concatenate([[0.0], np.cumsum(counts)])
    target_edges = grid.edges()
    target_edges[-1] = max(target_edges[-1], source_edges[-1])
    return np.diff(np.interp(target_edges, source_edges, cumulative))


def round_counts(values: np.ndarray, total: int) -> np.ndarray:
    """Integer counts summing to ``total``, from fractional ones.

    The running total is rounded, not each count, so the counts of any run of bins are
    within 1 of their fractional sum (rounding bins one by one could drift by many)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    running = np.floor(np.cumsum(np.asarray(values, dtype=np.float64)) + 0.5)
    running = np.clip(running, 0, total).astype(np.int64)
    running[-1] = total
    return np.diff(running, prepend=0)


@dataclass
class FrequencyResult:
    """Finalized table-level frequencies (and exact extras) of one column."""

    table: pa.Table  # the TABLE_FREQUENCIES_SCHEMA rows of this column
    row: dict[str, object]  # statistics fields that override the scalar row
    histogram: hist.Histogram | None = None  # exact, when every value is known


def finalize_frequencies(
    column_index: int,
    name: str,
    dtype: pa.DataType,
    grouped: pa.Table,
    state: ScalarState,
    partitions: int,
    max_frequencies: int,
    grid: Grid | None,
) -> FrequencyResult:
    """One column's merged frequency rows -> stored frequencies and exact statistics.

    ``grouped`` has ``value`` (key), ``total``, ``bound_present`` (sum of the unseen-value
    bounds of the incomplete partitions that did list this value) and ``holders`` (packed
    partition index and count, for categorical columns), one row per distinct value.
    """
    kind = kind_of(dtype)
    row: dict[str, object] = {}
    complete = state.frequencies_complete
    ceiling = 0
    markers = grouped.column("value").is_null()
    if pc.any(markers).as_py():
        # per-task ceilings of the values a task did not keep (see compute/reduce_steps._prune)
        ceiling = int(pc.sum(grouped.filter(markers).column("bound_present")).as_py() or 0)
        grouped = grouped.filter(pc.invert(markers))
    distinct = grouped.num_rows
    totals = grouped.column("total").to_numpy(zero_copy_only=False).astype(np.int64)
    result_histogram = None
    if complete:
        row.update(
            distinct_count=distinct,
            distinct_count_lower=distinct,
            distinct_count_upper=distinct,
            distinct_count_exact=True,
        )
        non_null = state.row_count - state.null_count
        row["all_distinct"] = distinct == non_null and non_null > 0
        if kind in ORDERED_NUMERIC and distinct:
            row_update, result_histogram = _exact_ordered(grouped, totals, dtype, grid)
            row.update(row_update)
    table = grouped.append_column("_order_total", pa.array(totals))
    if not complete:
        uppers = (
            totals
            + ceiling
            + grouped.column("bound_present").to_numpy(zero_copy_only=False).astype(np.int64)
        )
        table = table.append_column("frequency_upper", pa.array(uppers, pa.int64()))
    else:
        table = table.append_column("frequency_upper", pa.nulls(distinct, pa.int64()))
    if complete and row.get("all_distinct"):
        table = table.slice(0, 0)
    truncated = table.num_rows > max_frequencies
    kept = most_frequent(totals[: table.num_rows], table.column("value"), max_frequencies)
    table = table.take(pa.array(kept))
    row["frequencies_exact"] = complete
    row["frequencies_count"] = table.num_rows
    row["frequencies_truncated"] = truncated or not complete
    if not complete:
        row["frequencies_omitted"] = None  # unknown: some partitions kept only top values
    elif row.get("all_distinct"):
        row["frequencies_omitted"] = 0
    else:
        row["frequencies_omitted"] = distinct - table.num_rows
    dense, ids, id_counts = _partition_vectors(table, partitions)
    n = table.num_rows
    out = pa.table(
        {
            "column": pa.array([name] * n, pa.string()),
            "value": table.column("value").cast(pa.binary()),
            "frequency": table.column("_order_total").cast(pa.int64()),
            "column_index": pa.array(np.full(n, column_index, dtype=np.int32)),
            "frequency_upper": table.column("frequency_upper"),
            "partition_counts": dense,
            "partition_ids": ids,
            "partition_id_counts": id_counts,
        }
    )
    return FrequencyResult(out, row, result_histogram)


HOLDER_SHIFT = 40
"""Holders are packed as ``partition_index << 40 | count`` in one int64."""


def _partition_vectors(table: pa.Table, partitions: int) -> tuple[pa.Array, pa.Array, pa.Array]:
    holders = table.column("holders")
    if (pc.max(pc.list_value_length(holders)).as_py() or 0) == 0:
        # no value records its holders (not categorical, or not exact): all null
        return (
            pa.nulls(table.num_rows, pa.list_(pa.int64())),
            pa.nulls(table.num_rows, pa.list_(pa.int32())),
            pa.nulls(table.num_rows, pa.list_(pa.int64())),
        )
    dense, ids, id_counts = [], [], []
    mask = (1 << HOLDER_SHIFT) - 1
    for packed in table.column("holders").to_pylist():
        if not packed:
            dense.append(None)
            ids.append(None)
            id_counts.append(None)
            continue
        pids = [h >> HOLDER_SHIFT for h in packed]
        pcounts = [h & mask for h in packed]
        if len(pids) >= DENSE_FRACTION * partitions and partitions > 1:
            vector = [0] * partitions
            for p, c in zip(pids, pcounts, strict=True):
                vector[p] = c
            dense.append(vector)
            ids.append(None)
            id_counts.append(None)
        else:
            order = np.argsort(pids, kind="stable")
            dense.append(None)
            ids.append([pids[i] for i in order])
            id_counts.append([pcounts[i] for i in order])
    return (
        pa.array(dense, pa.list_(pa.int64())),
        pa.array(ids, pa.list_(pa.int32())),
        pa.array(id_counts, pa.list_(pa.int64())),
    )


def _exact_ordered(
    grouped: pa.Table, totals: np.ndarray, dtype: pa.DataType, grid: Grid | None
) -> tuple[dict[str, object], hist.Histogram | None]:
    """Exact percentiles and histogram from complete value counts (keys sort like values)."""
    kind = kind_of(dtype)
    order = pc.sort_indices(grouped.column("value")).to_numpy(zero_copy_only=False)
    sorted_keys = grouped.column("value").take(pa.array(order))
    sorted_totals = totals[order]
    values = keys.decode_array(
        sorted_keys.combine_chunks() if isinstance(sorted_keys, pa.ChunkedArray) else sorted_keys,
        dtype,
    )
    if kind == Kind.FLOATING:
        keep = ~pc.is_nan(values.cast(pa.float64())).to_numpy(zero_copy_only=False)
        values, sorted_totals = values.filter(pa.array(keep)), sorted_totals[keep]
        sorted_keys = sorted_keys.filter(pa.array(keep))
    out: dict[str, object] = {}
    if len(values) == 0:
        return out, None
    picks = nearest_rank_indices(sorted_totals, PERCENTILES)
    picked = sorted_keys.take(pa.array(picks, pa.int64())).to_pylist()
    for name, key in zip(percentile_names(), picked, strict=True):
        out[name] = key
    out["percentiles_exact"] = True
    out["percentile_rank_error"] = 0.0
    # the exact histogram is built exactly as a partition's is, over the whole table
    bins = grid.bins_requested if grid is not None else 1000
    if kind == Kind.FLOATING:
        numbers = values.cast(pa.float64()).to_numpy(zero_copy_only=False)
        histogram = hist.float_histogram(numbers, sorted_totals, bins)
    elif kind == Kind.DECIMAL and dtype.precision > 18:
        histogram = hist.wide_integer_histogram(
            [keys.unscaled_of(v, dtype.scale) for v in values.to_pylist()], sorted_totals, bins
        )
    else:
        numbers = keys.unscaled_int64(values) if kind == Kind.DECIMAL else keys.integers(values)
        histogram = hist.integer_histogram(numbers, sorted_totals, bins)
    return out, histogram


def _storage_number(key: bytes, dtype: pa.DataType) -> float | int:
    kind = kind_of(dtype)
    value = keys.decode(key, dtype)
    if kind == Kind.FLOATING:
        return float(value)
    if kind == Kind.DECIMAL:
        return keys.unscaled_of(value, dtype.scale)
    if kind == Kind.TEMPORAL:
        return int.from_bytes(key, "big") - (1 << 63)
    return int(value)


def _from_doubles(values: np.ndarray, dtype: pa.DataType) -> pa.Array:
    """KLL quantiles (doubles) as values of the column type (rounded for integers)."""
    kind = kind_of(dtype)
    if kind == Kind.FLOATING:
        return pa.array(values, pa.float64()).cast(dtype)
    if kind == Kind.DECIMAL:
        import decimal

        exact = decimal.Context(prec=100)
        step = decimal.Decimal(1).scaleb(-dtype.scale)
        return pa.array(
            [decimal.Decimal(repr(float(v))).quantize(step, context=exact) for v in values], dtype
        )
    ints = np.round(values).astype(np.int64)
    if kind == Kind.TEMPORAL:
        storage = keys.physical_int_storage(dtype)
        return pa.array(ints.astype(storage.to_pandas_dtype())).view(dtype)
    return pa.array(ints).cast(dtype)


def table_histogram(
    state: ScalarState,
    grid: Grid | None,
    rebinned: np.ndarray | None,
    exact: hist.Histogram | None,
    dtype: pa.DataType,
) -> tuple[dict, np.ndarray | None]:
    """The histogram fields of the table row and the counts to store."""
    if exact is not None:
        lower = _grid_lower_key(
            Grid(exact.lower, exact.width, len(exact.counts), kind_of(dtype) != Kind.FLOATING),
            dtype,
        )
        return (
            {
                "histogram_lower": lower,
                "histogram_width": float(exact.width),
                "histogram_bins": len(exact.counts),
                "histogram_exact": True,
            },
            exact.counts,
        )
    if grid is None:
        return {}, None
    total = state.row_count - state.null_count - (state.nan_count or 0)
    counts = round_counts(rebinned if rebinned is not None else np.zeros(grid.bins), total)
    lower = _grid_lower_key(grid, dtype)
    return (
        {
            "histogram_lower": lower,
            "histogram_width": float(grid.width),
            "histogram_bins": grid.bins,
            "histogram_exact": False,
        },
        counts,
    )


def _grid_lower_key(grid: Grid, dtype: pa.DataType) -> bytes:
    kind = kind_of(dtype)
    if kind == Kind.FLOATING:
        return keys.encode(pa.array([float(grid.lower)], pa.float64()))[0].as_py()
    if kind == Kind.DECIMAL:
        value = keys.decimal_from_unscaled(int(grid.lower), dtype.scale)
        return keys.encode(pa.array([value], dtype))[0].as_py()
    if kind == Kind.TEMPORAL:
        storage = keys.physical_int_storage(dtype)
        return keys.encode(pa.array([int(grid.lower)], storage).view(dtype))[0].as_py()
    return keys.encode(pa.array([int(grid.lower)], pa.int64()).cast(dtype))[0].as_py()


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


__all__ = [
    "Grid",
    "ScalarState",
    "finalize_frequencies",
    "fold_statistics",
    "rebin",
    "table_histogram",
]


def fold_statistics(
    tables: list[pa.Table], names: list[str], types: list[str], dtypes: list[pa.DataType]
) -> list[ScalarState]:
    """One ``ScalarState`` per column from many partitions' statistics rows at once.

    Counts, bounds, lengths, moments and completeness are aggregated column-wise with
    Arrow and NumPy; only the sketches are merged row by row.
    """
    ncols = len(names)
    data = pa.concat_tables(tables)
    index = np.tile(np.arange(ncols), len(tables))
    data = data.append_column("_c", pa.array(index, pa.int32()))

    def col(name: str, fill: float = 0) -> np.ndarray:
        return (
            data.column(name).to_numpy(zero_copy_only=False)
            if data.column(name).null_count == 0
            else data.column(name).fill_null(fill).to_numpy(zero_copy_only=False)
        )

    def per_column(values: np.ndarray) -> np.ndarray:
        return np.bincount(index, weights=values, minlength=ncols)

    states = [ScalarState(n, t) for n, t in zip(names, types, strict=True)]
    rows, nulls = col("row_count"), col("null_count")
    nans = col("nan_count")
    non_null = rows - nulls
    row_sums, null_sums, nan_sums = per_column(rows), per_column(nulls), per_column(nans)
    has_nan = (
        per_column(
            data.column("nan_count").is_valid().to_numpy(zero_copy_only=False).astype(np.float64)
        )
        > 0
    )
    bounds = data.group_by("_c").aggregate(
        [("min", "min"), ("max", "max"), ("min_length", "min"), ("max_length", "max")]
    )
    bound_of = {c: i for i, c in enumerate(bounds.column("_c").to_pylist())}
    mins, maxs = bounds.column("min_min").to_pylist(), bounds.column("max_max").to_pylist()
    min_len = bounds.column("min_length_min").to_pylist()
    max_len = bounds.column("max_length_max").to_pylist()
    avg_len = col("avg_length")
    len_valid = data.column("avg_length").is_valid().to_numpy(zero_copy_only=False)
    length_total = per_column(np.where(len_valid, avg_len * non_null, 0.0))
    length_n = per_column(np.where(len_valid, non_null, 0).astype(np.float64))
    trues_valid = data.column("true_count").is_valid().to_numpy(zero_copy_only=False)
    trues = per_column(col("true_count").astype(np.float64))
    has_true = per_column(trues_valid.astype(np.float64)) > 0
    distinct_valid = data.column("distinct_count").is_valid().to_numpy(zero_copy_only=False)
    stored = col("frequencies_count")
    distinct = col("distinct_count")
    incomplete = distinct_valid & (non_null > 0) & (stored < distinct)
    all_distinct = data.column("all_distinct").fill_null(False).to_numpy(zero_copy_only=False)
    slack = np.where(
        all_distinct, 1, np.where(col("frequencies_min") > 0, col("frequencies_min"), non_null)
    )
    incomplete_any = per_column(incomplete.astype(np.float64)) > 0
    slack_sums = per_column(np.where(incomplete, slack, 0).astype(np.float64))
    hll = data.column("hll_sketch").to_pylist()
    kll = data.column("kll_sketch").to_pylist()
    mean_valid = data.column("mean").is_valid().to_numpy(zero_copy_only=False)
    means, variances, sums = col("mean"), col("variance"), col("sum")
    moment_n = np.where(mean_valid, non_null - nans, 0).astype(np.float64)
    bins = col("histogram_bins")
    lowers = data.column("histogram_lower")
    for c, state in enumerate(states):
        state.partitions = len(tables)
        state.row_count, state.null_count = int(row_sums[c]), int(null_sums[c])
        state.nan_count = int(nan_sums[c]) if has_nan[c] else None
        b = bound_of.get(c)
        if b is not None:
            state.min_key, state.max_key = mins[b], maxs[b]
            state.min_length, state.max_length = min_len[b], max_len[b]
        state.length_total, state.length_n = float(length_total[c]), int(length_n[c])
        state.true_count = int(trues[c]) if has_true[c] else None
        state.frequencies_complete = not incomplete_any[c]
        state.frequency_slack = int(slack_sums[c])
        rows_of = np.arange(c, len(index), ncols)
        kind = kind_of(dtypes[c])
        if kind in MOMENT_KINDS:
            _fold_moments(
                state,
                moment_n[rows_of],
                means[rows_of],
                variances[rows_of],
                sums[rows_of],
                mean_valid[rows_of],
            )
        for r in rows_of:
            if hll[r] is not None:
                state._hll().update(ds.hll_sketch.deserialize(hll[r]))
            if kll[r] is not None:
                state._kll().merge(ds.kll_doubles_sketch.deserialize(kll[r]))
        with_histogram = rows_of[bins[rows_of] > 0]
        if len(with_histogram):
            for r in with_histogram:
                row = {
                    "histogram_bins": int(bins[r]),
                    "histogram_width": float(data.column("histogram_width")[r].as_py()),
                    "histogram_lower": lowers[r].as_py(),
                    "max": data.column("max")[r].as_py(),
                }
                lo, hi = histogram_range(row, dtypes[c])
                state.histogram_lo = (
                    lo if state.histogram_lo is None else min(state.histogram_lo, lo)
                )
                state.histogram_hi = (
                    hi if state.histogram_hi is None else max(state.histogram_hi, hi)
                )
    return states


def _fold_moments(
    state: ScalarState,
    n: np.ndarray,
    means: np.ndarray,
    variances: np.ndarray,
    sums: np.ndarray,
    valid: np.ndarray,
) -> None:
    keep = valid & (n > 0)
    if not keep.any():
        return
    n, means, variances, sums = n[keep], means[keep], variances[keep], sums[keep]
    if not np.isfinite(means).all():
        for ni, mi, vi, si in zip(n, means, variances, sums, strict=True):
            state._merge_moments(
                float(ni), float(mi), float(vi) * (ni - 1) if ni > 1 else 0.0, float(si)
            )
        return
    total = n.sum()
    mean = float(np.dot(n, means) / total)
    m2 = float(np.sum(np.where(n > 1, variances * (n - 1), 0.0)) + np.dot(n, (means - mean) ** 2))
    state._merge_moments(float(total), mean, m2, float(sums.sum()))
