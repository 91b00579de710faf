"""One column's merged frequency rows finalized into stored table-level frequencies.

Contract: ``finalize_frequencies`` takes one row per distinct value (``value`` key,
``total``, ``bound_present`` and packed ``holders``, plus null-valued marker rows carrying
the ceilings of values a group pruned) and returns the ``TABLE_FREQUENCIES_SCHEMA`` rows and
the statistics fields they settle. When every partition listed all its values, the distinct
count, percentiles, histogram and frequencies are exact; otherwise frequencies are the most
frequent known values with sound upper bounds, and the rest comes from the sketches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.stats import histogram as hist
from lakestats.stats import keys
from lakestats.stats.holders import partition_vectors
from lakestats.stats.kinds import ORDERED_NUMERIC, Kind, kind_of
from lakestats.stats.percentiles import PERCENTILES, nearest_rank_indices, percentile_names
from lakestats.stats.rebin import Grid
from lakestats.stats.scalar_state import ScalarState
from lakestats.stats.top_values import most_frequent


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
        # per-task ceilings of the values a task did not keep (see compute/reduce/prune.py)
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
    dense, ids, id_counts = partition_vectors(table, partitions)
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
    histogram = hist.of_values(values, sorted_totals, bins)
    return out, histogram
