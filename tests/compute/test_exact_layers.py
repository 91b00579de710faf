"""Incremental ``analyze --exact`` as delta rank layers (issue 27 item 3), against DuckDB.

Each incremental analyze writes only the change of the ranks (a delta layer) while the
deltas stay few and small, and compacts every layer into a new base otherwise. After each
step every exact answer (distinct counts, frequencies, ranks, quantiles, percentiles,
histograms) is checked against DuckDB over the whole table, and an expiry keeping only the
latest version leaves every layer it reads.
"""

from __future__ import annotations

import numpy as np
import pytest

import lakestats.api as ls
from lakestats.compute.exact import job as exact_job
from lakestats.store import expire, manifest, ranks
from tests.compute.test_exact_scenarios import _analyze, _check_against_duckdb, _partition, _write

pytestmark = pytest.mark.spark


def _layers(version: manifest.Version) -> list[str]:
    return ranks.layer_indexes(version.table_files or {}, version.extra["exact"])


def _expire_and_check(handle, root, version: manifest.Version) -> None:
    store = str(handle.stats_root)
    plan = expire.plan_expiry(store, None, retain_last=1, orphan_age_seconds=0)
    kept = set(version.extra["exact"]["files"]) | set(_layers(version))
    assert not kept & set(plan.files_removed)
    expire.apply_expiry(store, plan)
    _check_against_duckdb(root, handle, version.extra["exact"]["scenarios"])


def test_deltas_then_compaction_equal_duckdb(spark, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(exact_job, "DELTA_SHARE", 1.0)
    monkeypatch.setattr(exact_job, "MAX_DELTA_LAYERS", 2)
    root = tmp_path / "t"
    rng = np.random.default_rng(3)
    for p in range(5):  # the data of test_exact_scenarios: only "key" repeats a value
        _write(root, p, _partition(p, rng))
    handle = ls.open_table(str(root))
    version = _analyze(handle, spark, {})
    assert version.extra["exact"]["rank_layers"] == "base" and len(_layers(version)) == 1
    base = _layers(version)[0]

    # a partition rewritten: its old values subtracted, its new ones added, as a delta
    _write(root, 2, _partition(2, np.random.default_rng(99), shift=5))
    version = _analyze(handle, spark, {})
    report = version.extra["exact"]
    assert (report["partitions_added"], report["partitions_removed"]) == (1, 1)
    assert report["rank_layers"] == "delta"
    assert _layers(version)[0] == base and len(_layers(version)) == 2
    assert version.table_files["ranks"] == base  # the base is not rewritten
    _expire_and_check(handle, root, version)

    # a partition added: a second delta
    _write(root, 5, _partition(5, np.random.default_rng(7), shift=100_000))
    version = _analyze(handle, spark, {})
    assert version.extra["exact"]["rank_layers"] == "delta" and len(_layers(version)) == 3
    _expire_and_check(handle, root, version)

    # a partition removed: two deltas already, so every layer is compacted into a new base
    for old in (root / "part=0").glob("*.parquet"):
        old.unlink()
    (root / "part=0").rmdir()
    version = _analyze(handle, spark, {})
    report = version.extra["exact"]
    assert report["rank_layers"] == "base" and report["partitions_removed"] == 1
    assert len(_layers(version)) == 1 and _layers(version)[0] != base
    _expire_and_check(handle, root, version)


def test_a_large_change_compacts_at_once(spark, tmp_path) -> None:
    """Rewriting most partitions would make a delta larger than its base's share: the step
    writes a new base instead (the default thresholds)."""
    root = tmp_path / "t"
    rng = np.random.default_rng(4)
    for p in range(4):
        _write(root, p, _partition(p, rng))
    handle = ls.open_table(str(root))
    first = _analyze(handle, spark, {})
    for p in range(3):
        _write(root, p, _partition(p, np.random.default_rng(50 + p), shift=100_000))
    version = _analyze(handle, spark, {})
    assert version.extra["exact"]["rank_layers"] == "base"
    assert _layers(version) != _layers(first) and len(_layers(version)) == 1
    _check_against_duckdb(root, handle, version.extra["exact"]["scenarios"])
