"""The vectorised fold: many partitions' statistics rows -> one ``ScalarState`` per column.

Contract: ``fold_statistics`` takes the ``statistics.parquet`` tables of some partitions
(the same columns in the same order, the fields ``compute/reduce/fold.py`` reads) and
returns, per column, the state that merging one state per partition would give. Counts,
bounds, lengths, moments and completeness are aggregated column-wise with Arrow and NumPy;
only the sketches are merged row by row.
"""

from __future__ import annotations

import datasketches as ds
import numpy as np
import pyarrow as pa

from lakestats.stats.derived_sketches import listed_all
from lakestats.stats.kinds import MOMENT_KINDS, Kind, kind_of
from lakestats.stats.quantile_sketch import QuantileSketch
from lakestats.stats.rebin import range_of_numbers, storage_numbers
from lakestats.stats.scalar_state import ScalarState


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
    incomplete = ~listed_all(data)
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
                state.hll_union().update(ds.hll_sketch.deserialize(hll[r]))
            if kll[r] is not None:
                state.kll_union().merge(QuantileSketch.deserialize(kll[r]))
        with_histogram = rows_of[bins[rows_of] > 0]
        if len(with_histogram):
            taken = pa.array(with_histogram)
            widths = data.column("histogram_width").take(taken).to_pylist()
            lows = storage_numbers(lowers.take(taken), dtypes[c])
            tops = storage_numbers(data.column("max").take(taken), dtypes[c])
            floating = kind == Kind.FLOATING
            for r, width, low, top in zip(with_histogram, widths, lows, tops, strict=True):
                lo, hi = range_of_numbers(low, float(width), int(bins[r]), top, floating)
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
            state.merge_moments(
                float(ni), float(mi), float(vi) * (ni - 1) if ni > 1 else 0.0, float(si)
            )
        return
    total = n.sum()
    mean = float(np.dot(n, means) / total)
    m2 = float(np.sum(np.where(n > 1, variances * (n - 1), 0.0)) + np.dot(n, (means - mean) ** 2))
    state.merge_moments(float(total), mean, m2, float(sums.sum()))
