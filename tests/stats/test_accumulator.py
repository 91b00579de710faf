"""Partition statistics computed in-process (no Spark) against DuckDB."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest

from lakestats.stats.accumulator import ColumnAccumulator, unique_counts
from lakestats.stats.histogram import bin_edges
from lakestats.stats.keys import decode
from lakestats.stats.leaves import leaf_array, leaves_of
from lakestats.stats.percentiles import percentile_names
from tests.conftest import mixed_table
from tests.reference import check_partition


def _compute(table: pa.Table, slices: int = 1, bins: int = 50, max_frequencies: int = 10_000):
    leaves = leaves_of(table.schema)
    accumulators = [ColumnAccumulator(leaf) for leaf in leaves]
    bounds = np.linspace(0, table.num_rows, slices + 1).astype(int)
    parts = []
    for lo, hi in itertools.pairwise(bounds):
        part = [ColumnAccumulator(leaf) for leaf in leaves]
        for acc in part:
            acc.observe(leaf_array(table.slice(lo, hi - lo), acc.leaf))
        parts.append(part)
    accumulators = parts[0]
    for other in parts[1:]:
        for mine, theirs in zip(accumulators, other, strict=True):
            mine.merge(theirs)
    results = [a.finalize(bins, max_frequencies) for a in accumulators]
    rows = []
    freqs, hists = {}, {}
    for leaf, result in zip(leaves, results, strict=True):
        row = dict(result.row)
        for name in ("min", "max", *percentile_names(), "histogram_lower"):
            row[name] = decode(row.get(name), leaf.type) if row.get(name) is not None else None
        rows.append(row)
        keys = result.frequency_keys.to_pylist() if result.frequency_keys is not None else []
        counts = result.frequency_counts.tolist() if result.frequency_counts is not None else []
        freqs[leaf.name] = [(decode(k, leaf.type), c) for k, c in zip(keys, counts, strict=True)]
        if result.histogram is not None:
            raw = result.row
            edges = bin_edges(
                str(leaf.type),
                raw["histogram_lower"],
                raw["histogram_width"],
                raw["histogram_bins"],
                raw["max"],
                0,
                raw["histogram_bins"],
            )
            hists[leaf.name] = [
                {"lower": lo, "upper": hi, "count": int(c)}
                for (lo, hi), c in zip(edges, result.histogram, strict=True)
            ]
        else:
            hists[leaf.name] = []
    return rows, freqs, hists


@pytest.mark.parametrize("n", [0, 1, 2, 997])
def test_statistics_match_duckdb(n: int) -> None:
    table = mixed_table(n, seed=n)
    rows, freqs, hists = _compute(table)
    check_partition(table, rows, freqs.__getitem__, hists.__getitem__)


@pytest.mark.parametrize("slices", [2, 5])
def test_slices_merge_exactly(slices: int) -> None:
    table = mixed_table(800, seed=3)
    whole = _compute(table, 1)
    split = _compute(table, slices)
    check_partition(table, split[0], split[1].__getitem__, split[2].__getitem__)
    for a, b in zip(whole[0], split[0], strict=True):
        for key in a:
            if key in ("sum", "mean", "variance", "stddev", "avg_length"):
                assert a[key] == pytest.approx(b[key], rel=1e-9, nan_ok=True)
            elif key not in ("hll_sketch", "kll_sketch"):
                assert a[key] == b[key], key
    assert _nan_safe(whole[1]) == _nan_safe(split[1])
    assert whole[2] == split[2]


def _nan_safe(freqs: dict[str, list]) -> dict[str, list]:
    return {k: [("NaN" if v != v else v, c) for v, c in pairs] for k, pairs in freqs.items()}


def test_frequencies_truncate_to_the_most_frequent() -> None:
    values = np.repeat(np.arange(100), np.arange(100, 0, -1))
    table = pa.table({"v": pa.array(values)})
    rows, freqs, hists = _compute(table, max_frequencies=10)
    row = rows[0]
    assert row["frequencies_truncated"] is True
    assert row["frequencies_omitted"] == 90
    assert freqs["v"] == [(i, 100 - i) for i in range(10)]
    check_partition(table, rows, freqs.__getitem__, hists.__getitem__, max_frequencies=10)


def test_all_distinct_column_stores_no_frequencies() -> None:
    table = pa.table({"k": pa.array(np.arange(1000)), "s": pa.array([str(i) for i in range(1000)])})
    rows, freqs, _ = _compute(table)
    assert all(r["all_distinct"] for r in rows)
    assert freqs == {"k": [], "s": []}


def test_integer_histogram_uses_one_bin_per_value_when_few() -> None:
    table = pa.table({"v": pa.array([1, 2, 2, 3, 3, 3, 7], pa.int32())})
    rows, _, hists = _compute(table, bins=1000)
    assert [(b["lower"], b["count"]) for b in hists["v"]] == [
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 0),
        (5, 0),
        (6, 0),
        (7, 1),
    ]


def test_ties_in_frequencies_break_by_value() -> None:
    table = pa.table({"s": pa.array(["b", "a", "c", "a", "b", "c", "d"])})
    _, freqs, _ = _compute(table)
    assert freqs["s"] == [("a", 2), ("b", 2), ("c", 2), ("d", 1)]


@pytest.mark.parametrize("bins", [1000, 50, 7])
def test_real_data_like_columns_match_duckdb(bins: int) -> None:
    """Values on round edges, as real data has them: prices with 2 decimals,
    integers stored as doubles (delays, air times), integer keys and dates; every bin
    holds exactly the values DuckDB finds between its reported edges."""
    rng = np.random.default_rng(bins)
    n = 4000
    table = pa.table(
        {
            "price": pa.array(rng.integers(0, 100_000, n) / 100),
            "dep_delay": pa.array(rng.integers(-40, 1300, n).astype(np.float64)),
            "air_time": pa.array(rng.integers(20, 357, n).astype(np.float64)),
            "carat": pa.array(np.round(rng.gamma(2.0, 0.4, n), 2).astype(np.float32)),
            "sold_time_sk": pa.array(rng.integers(28_800, 75_600, n), pa.int64()),
            "ship_day": pa.array(
                np.datetime64("1992-01-02") + rng.integers(0, 2526, n).astype("timedelta64[D]")
            ),
        }
    )
    rows, freqs, hists = _compute(table, slices=2, bins=bins)
    check_partition(table, rows, freqs.__getitem__, hists.__getitem__)


def test_unique_counts_is_numpys_unique() -> None:
    """The tally (narrow ranges) and the sort (wide ones) both give ``np.unique``'s answer,
    at the int64 extremes too."""
    rng = np.random.default_rng(11)
    for trial in range(1_000):
        n = int(rng.integers(0, 600))
        if trial % 4 == 0:
            numbers = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
        else:
            low = int(rng.integers(-(2**62), 2**62))
            numbers = low + rng.integers(0, int(rng.integers(1, 5_000)), n)
        got, expected = unique_counts(numbers), np.unique(numbers, return_counts=True)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
        assert got[0].dtype == np.int64 and got[1].dtype == np.int64
