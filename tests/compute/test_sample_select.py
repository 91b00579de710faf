"""The sample's selection rule (hash, bottom-k, allocation) and its estimates, without Spark.

References: NumPy sorts, exact fractions, chi-square critical values, and the true
statistics of generated tables computed in the test.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from lakestats.compute.sample.scale import frequency_interval, scale_row
from lakestats.compute.sample.select import (
    allocate,
    bottom_k,
    merge_candidates,
    reserve_size,
    row_hashes,
    size_for_fraction,
)
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.leaves import leaf_array, leaves_of
from lakestats.stats.ndv import frequency_of_frequencies
from lakestats.store.writer import statistics_table

CHI2_999_DF9 = 27.877  # chi-square 0.999 quantile, 9 degrees of freedom


def _hamilton(populations: list[int], total: int) -> list[int]:
    """Largest remainders with exact fractions (the reference)."""
    whole = sum(populations)
    quotas = [Fraction(total * p, whole) for p in populations]
    sizes = [int(q) for q in quotas]
    order = sorted(range(len(quotas)), key=lambda i: (-(quotas[i] - sizes[i]), i))
    for i in order[: total - sum(sizes)]:
        sizes[i] += 1
    return sizes


@pytest.mark.parametrize("seed", range(20))
def test_allocation_is_exact_and_proportional(seed: int) -> None:
    rng = np.random.default_rng(seed)
    populations = [int(p) for p in rng.integers(1, 100_000, rng.integers(1, 40))]
    total = int(rng.integers(1, sum(populations)))
    sizes = allocate(populations, total)
    assert sum(sizes) == total
    assert sizes == _hamilton(populations, total)
    for size, p in zip(sizes, populations, strict=True):
        assert abs(size - total * p / sum(populations)) < 1


def test_allocation_never_exceeds_a_stratum_and_fraction_rounds_half_up() -> None:
    assert allocate([3, 5], 100) == [3, 5]
    assert allocate([0, 0], 10) == [0, 0]
    assert [size_for_fraction(0.5, n) for n in (1, 2, 3, 7)] == [1, 1, 2, 4]
    assert size_for_fraction(1.0, 9) == 9


def test_bottom_k_is_the_k_smallest_hashes_in_order() -> None:
    hashes = row_hashes(7, "part", 10_000)
    chosen = bottom_k(hashes, 123)
    assert np.array_equal(chosen, np.argsort(hashes, kind="stable")[:123])
    assert bottom_k(hashes, 0).size == 0
    assert np.array_equal(np.sort(bottom_k(hashes, 20_000)), np.arange(10_000))


def test_hashes_are_stable_distinct_and_seeded() -> None:
    a = row_hashes(1, "s", 50_000)
    assert np.array_equal(a, row_hashes(1, "s", 50_000))
    assert np.array_equal(a[100:200], row_hashes(1, "s", 100, start=100))
    assert np.unique(a).size == a.size
    assert not np.array_equal(a, row_hashes(2, "s", 50_000))
    assert not np.array_equal(a, row_hashes(1, "t", 50_000))


def test_bottom_k_merges_like_a_sketch() -> None:
    """The bottom-k of a union is the bottom-k of the parts' bottom-ks."""
    parts = [row_hashes(3, f"file-{i}", n) for i, n in enumerate((500, 2_000, 37))]
    union = np.concatenate(parts)
    merged = np.concatenate([p[bottom_k(p, 100)] for p in parts])
    assert np.array_equal(merged[bottom_k(merged, 100)], union[bottom_k(union, 100)])


def _chi2(counts: np.ndarray) -> float:
    expected = counts.sum() / counts.size
    return float(((counts - expected) ** 2 / expected).sum())


def test_uniform_over_seeds_by_key_bucket() -> None:
    """Over 400 seeds, a 5 % sample of 2,000 rows hits each tenth of the key range equally
    often (chi-square, 9 degrees of freedom, p = 0.001), and every row about equally."""
    buckets = np.zeros(10)
    per_row = np.zeros(2_000)
    for seed in range(400):
        chosen = bottom_k(row_hashes(seed, "region=a|0|f.parquet", 2_000), 100)
        buckets += np.bincount(chosen // 200, minlength=10)
        per_row[chosen] += 1
    assert _chi2(buckets) < CHI2_999_DF9
    # 1,999 degrees of freedom: the 0.999 quantile is ~2,218
    assert _chi2(per_row) < 2_218


def test_uniform_after_inserts_and_deletes() -> None:
    """A changed partition is resampled from its current rows (its files changed, so its
    rows' identities did): surviving old rows and inserted rows are equally likely."""
    rng = np.random.default_rng(0)
    old = np.arange(2_000)
    survivors = np.sort(rng.choice(old, 1_600, replace=False))  # 400 deleted
    current = np.concatenate([survivors, np.arange(2_000, 2_400)])  # 400 inserted
    buckets = np.zeros(10)
    for seed in range(400):
        hashes = row_hashes(seed, "region=a|0|f2.parquet,f3.parquet", current.size)
        chosen = current[bottom_k(hashes, 100)]
        assert not np.isin(chosen, np.setdiff1d(old, survivors)).any()  # no deleted row
        # 10 buckets of the current rows, 200 rows each (ranks of the key)
        buckets += np.bincount(np.searchsorted(current, chosen) // 200, minlength=10)
    assert _chi2(buckets) < CHI2_999_DF9


def _draw_units(seed: int, units: dict[str, np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray,
                                                                           int | None]:
    """A fresh draw over read units (ids per unit): the candidates' ids and hashes in hash
    order and the threshold, as a sampling task computes them."""
    ids = np.concatenate(list(units.values()))
    hashes = np.concatenate([row_hashes(seed, key, rows.size) for key, rows in units.items()])
    merged = merge_candidates(hashes, None, k)
    return ids[merged.order], hashes[merged.order], merged.threshold


def test_refresh_merge_equals_a_fresh_draw_and_stays_uniform() -> None:
    """Refresh from the candidates (sample + reserve): rows of a removed unit and of a
    rewritten one leave, a rewritten and a new unit are read (rows at or below the
    threshold join). Over 300 seeds the result is exactly a fresh draw of the current
    units, and it is uniform over the current rows (chi-square over ten buckets of them)."""
    rng = np.random.default_rng(5)
    old = {f"f{i}.parquet": np.arange(i * 300, (i + 1) * 300) for i in range(10)}
    rewritten = np.sort(rng.choice(old["f4.parquet"], 250, replace=False))  # 50 rows deleted
    current = {k: v for k, v in old.items() if k not in ("f4.parquet", "f7.parquet")}
    current |= {"f4b.parquet": rewritten, "f10.parquet": np.arange(3_000, 3_300)}  # inserted
    everything = np.sort(np.concatenate(list(current.values())))
    rate = 0.05
    buckets = np.zeros(10)
    exhausted = 0
    for seed in range(300):
        k_old = size_for_fraction(rate, sum(v.size for v in old.values()))
        ids, hashes, threshold = _draw_units(seed, old, k_old)
        keep = ~np.isin(ids, np.concatenate([old["f4.parquet"], old["f7.parquet"]]))
        new = {"f4b.parquet": rewritten, "f10.parquet": current["f10.parquet"]}
        new_ids = np.concatenate(list(new.values()))
        new_hashes = np.concatenate([row_hashes(seed, key, v.size) for key, v in new.items()])
        pool_ids = np.concatenate([ids[keep], new_ids])
        pool_hashes = np.concatenate([hashes[keep], new_hashes])
        k = size_for_fraction(rate, everything.size)
        merged = merge_candidates(pool_hashes, threshold, k)
        if merged.exhausted:  # too few candidates: the task reads every unit
            exhausted += 1
            chosen = _draw_units(seed, current, k)[0][:k]
        else:
            chosen = pool_ids[merged.order][:k]
        fresh = _draw_units(seed, current, k)[0][:k]
        assert np.array_equal(chosen, fresh)
        assert not np.isin(chosen, old["f7.parquet"]).any()
        buckets += np.bincount(np.searchsorted(everything, chosen) * 10 // everything.size,
                               minlength=10)
    assert exhausted < 30  # the reserve covers a 1/6 loss of candidates nearly always
    assert _chi2(buckets) < CHI2_999_DF9


def test_merge_candidates_threshold_and_exhaustion() -> None:
    hashes = np.array([50, 10, 40, 30, 20], dtype=np.uint64)
    merged = merge_candidates(hashes, None, 2)  # reserve_size(2) = 8: every row kept
    assert merged.order.tolist() == [1, 4, 3, 2, 0] and merged.threshold is None
    assert merge_candidates(hashes, 25, 3).exhausted  # only 10 and 20 are at or below 25
    many = row_hashes(1, "u", 1_000)
    merged = merge_candidates(many, None, 100)
    assert merged.order.size == 100 + reserve_size(100) == 140  # 4·√100 beats 10 % of 100
    assert merged.threshold == int(np.sort(many)[139])


def test_reserve_survives_a_rewritten_file() -> None:
    """The case that made a refresh read a whole partition (CI, 2026-11-26): three
    1,000-row files, a 10 % sample; one file rewritten without 10 rows (its rows get new
    hashes) and 100 rows appended. Over 500 seeds the reserve never runs out (with a 10 %
    reserve it ran out for 10 of them)."""
    exhausted = 0
    for seed in range(500):
        units = {f"f{i}": row_hashes(seed, f"f{i}", 1_000) for i in range(3)}
        k_old = size_for_fraction(0.1, 3_000)
        merged = merge_candidates(np.concatenate(list(units.values())), None, k_old)
        threshold = merged.threshold
        pool = np.concatenate([units["f1"], units["f2"],
                               row_hashes(seed, "f0b", 990), row_hashes(seed, "f3", 100)])
        pool = pool[pool <= np.uint64(threshold)]
        exhausted += merge_candidates(pool, threshold, size_for_fraction(0.1, 3_090)).exhausted
    assert exhausted == 0


def _statistics_row(table: pa.Table, name: str) -> dict:
    leaf = next(leaf for leaf in leaves_of(table.schema) if leaf.name == name)
    accumulator = ColumnAccumulator(leaf, [])
    accumulator.observe(leaf_array(table, leaf))
    return statistics_table([accumulator.finalize(100, 10_000)], []).to_pylist()[0]


def test_intervals_cover_the_truth_at_least_90_percent() -> None:
    """Seeded coverage: 1 % samples of generated tables (uniform, Zipf and normal columns),
    estimated exactly as `analyze --from-sample` does (the accumulator on the sample, then
    `scale_row`); >= 90 % of the 95 % intervals for the mean and the distinct count hold
    the true value computed on the whole table."""
    N = 200_000
    mean_hits = distinct_hits = trials = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        table = pa.table(
            {
                "uniform": rng.integers(0, 5_000, N),
                "zipf": np.minimum(rng.zipf(1.6, N), 1_000_000),
                "normal": rng.normal(50, 10, N),
                "few": rng.integers(0, 40, N),
            }
        )
        chosen = bottom_k(row_hashes(seed, "t", N), N // 100)
        sample = table.take(pa.array(chosen))
        for name in ("uniform", "zipf", "few"):
            truth = np.unique(table.column(name).to_numpy()).size
            f = frequency_of_frequencies(sample.column(name))
            row = scale_row(_statistics_row(sample, name), N, sample.num_rows, f)
            assert row["row_count"] == N and row["distinct_estimator"]
            distinct_hits += row["distinct_count_lower"] <= truth <= row["distinct_count_upper"]
        for name in ("uniform", "normal", "few"):
            truth = float(np.mean(table.column(name).to_numpy()))
            row = scale_row(_statistics_row(sample, name), N, sample.num_rows, None)
            mean_hits += row["mean_lower"] <= truth <= row["mean_upper"]
        trials += 3
    assert mean_hits >= 0.9 * trials, (mean_hits, trials)
    assert distinct_hits >= 0.9 * trials, (distinct_hits, trials)


def test_scaled_counts_and_frequency_interval() -> None:
    rng = np.random.default_rng(5)
    N = 100_000
    values = np.where(rng.random(N) < 0.2, None, rng.integers(0, 10, N).astype(object))
    table = pa.table({"v": pa.array(list(values), pa.int64())})
    chosen = bottom_k(row_hashes(0, "t", N), 5_000)
    sample = table.take(pa.array(chosen))
    row = scale_row(_statistics_row(sample, "v"), N, 5_000, None)
    true_nulls = int(table.column("v").null_count)
    assert row["row_count"] == N
    assert abs(row["null_count"] - true_nulls) < 0.05 * N
    assert row["percentiles_exact"] is False and 0 < row["percentile_rank_error"] < 0.02
    assert row["hll_sketch"] is None and row["all_distinct"] is None
    estimate, lower, upper = frequency_interval(500, 5_000, N)
    assert estimate == 10_000 and lower < 10_000 < upper
    # the same row when the sample is the whole table: exact
    whole = scale_row(_statistics_row(table, "v"), N, N, frequency_of_frequencies(table["v"]))
    assert whole["distinct_count"] == 10 and whole["distinct_count_exact"] is True
    assert whole["null_count"] == true_nulls
