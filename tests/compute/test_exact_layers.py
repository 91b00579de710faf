"""Incremental ``analyze --exact`` as delta rank layers, against DuckDB.

Each incremental analyze writes only the change of the ranks (a delta layer) while the
deltas stay few and small, and compacts every layer into a new base otherwise. After each
step every exact answer (distinct counts, frequencies, ranks, quantiles, percentiles,
histograms) is checked against DuckDB over the whole table, and an expiry keeping only the
latest version leaves every layer it reads.
"""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

import lakestats.api as ls
from lakestats import cli
from lakestats.compute.exact import layers as exact_layers
from lakestats.service.app import create_app
from lakestats.service.config import TableConfig
from lakestats.store import expire, manifest, ranks
from lakestats.store.frequency_layers import FrequencyLayers
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader
from tests.compute.test_exact_scenarios import _analyze, _check_against_duckdb, _partition, _write

pytestmark = pytest.mark.spark


def _layers(version: manifest.Version) -> list[str]:
    return ranks.layer_indexes(version.table_files or {}, version.extra["exact"])


def _expire_and_check(handle, root, version: manifest.Version) -> None:
    store = handle.store
    plan = expire.plan_expiry(store, None, retain_last=1, orphan_age_seconds=0)
    kept = set(version.extra["exact"]["files"]) | set(_layers(version))
    assert not kept & set(plan.files_removed)
    expire.apply_expiry(store, plan)
    _check_against_duckdb(root, handle, version.extra["exact"]["scenarios"])


def test_deltas_then_compaction_equal_duckdb(spark, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(exact_layers, "DELTA_SHARE", 1.0)
    monkeypatch.setattr(exact_layers, "MAX_DELTA_LAYERS", 2)
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
    _check_frequency_layers(root, handle, version)

    # a partition added: a second delta
    _write(root, 5, _partition(5, np.random.default_rng(7), shift=100_000))
    version = _analyze(handle, spark, {})
    assert version.extra["exact"]["rank_layers"] == "delta" and len(_layers(version)) == 3
    _expire_and_check(handle, root, version)
    _check_frequency_layers(root, handle, version)
    assert len(FrequencyLayers.of(version).files) == 3
    _check_faces(root, handle, capsys)

    # a partition removed: two deltas already, so every layer is compacted into a new base
    for old in (root / "part=0").glob("*.parquet"):
        old.unlink()
    (root / "part=0").rmdir()
    version = _analyze(handle, spark, {})
    report = version.extra["exact"]
    assert report["rank_layers"] == "base" and report["partitions_removed"] == 1
    assert len(_layers(version)) == 1 and _layers(version)[0] != base
    assert FrequencyLayers.of(version) is None  # rewritten whole
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


def _check_frequency_layers(root, handle, version: manifest.Version) -> None:
    """The rewritten columns' repeated values are read over the frequency layers: listings
    (with their counts and smallest count), most frequent values, holders and table-level
    equality estimates equal DuckDB's, and the version's own table file keeps none of
    their rows."""
    layers = FrequencyLayers.of(version)
    names = [c["name"] for c in version.columns]
    rewritten = {c for c, s in version.extra["exact"]["scenarios"].items() if s != "exact"}
    assert {"seq", "key", "f", "s"} <= rewritten
    assert layers is not None and {names[i] for i in layers.columns} == rewritten
    assert len(layers.files) >= 2 and layers.files[0] != version.table_files["frequencies"]
    own = pq.read_table(f"{handle.stats_root}/{version.table_files['frequencies']}")
    assert not set(own.column("column_index").to_pylist()) & layers.columns
    con = duckdb.connect()
    con.register("t", pads.dataset(root, format="parquet", partitioning="hive").to_table())
    reader = StatisticsReader(StatisticsStore(str(handle.stats_root)))
    top = reader.most_frequent(None)
    rows = {r["column"]: r for r in reader.column_statistics(None)}
    for column in sorted(rewritten):
        counts = dict(con.execute(
            f"SELECT {column}, count(*) FROM t WHERE {column} IS NOT NULL GROUP BY 1"
        ).fetchall())
        repeated = {v: c for v, c in counts.items() if c > 1}
        row = rows[column]
        assert row["duplicates_only"] is True, column
        assert row["frequencies_count"] == len(repeated), column
        assert row["frequencies_omitted"] == (len(counts) - len(repeated) if repeated else 0)
        assert row["frequencies_min"] == (
            min(repeated.values()) if repeated and len(repeated) < len(counts) else None
        ), column
        if not repeated:
            assert column not in top, column
            continue
        value, count = top[column]
        assert count == max(counts.values()) and counts[value] == count, column
    probes = [v for v, _ in con.execute(
        "SELECT s, count(*) FROM t WHERE s IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 4"
    ).fetchall()]
    for value in [*probes, "never-there"]:
        holders = dict(con.execute(
            "SELECT part, count(*) FROM t WHERE s = $1 GROUP BY 1", [value]
        ).fetchall())
        got = {int(h["partition"]["part"]): h["frequency"]
               for h in reader.partitions_containing("s", value)}
        assert got == holders, value
        (truth,) = con.execute("SELECT count(*) FROM t WHERE s = $1", [value]).fetchone()
        estimate = handle.estimate(f"s = '{value}'", table_level=True).to_json()
        assert estimate["lower"] == estimate["upper"] == truth, (value, estimate)


def _check_faces(root, handle, capsys) -> None:
    """The CLI, the HTTP API and the table page answer a layered column as the facade does."""
    expected = handle.frequencies("s", top=3).to_json()
    assert cli.main(["frequencies", str(root), "--column", "s", "--top", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    with TestClient(create_app([TableConfig(name="t", table=str(root))])) as client:
        got = client.get("/api/tables/t/columns/s/frequencies", params={"top": 3})
        assert got.status_code == 200 and got.json() == expected
        top = expected["frequencies"][0]["value"]
        holders = client.get("/api/tables/t/columns/s/partitions-containing",
                             params={"value": top})
        assert holders.status_code == 200
        assert holders.json() == handle.partitions_containing("s", top).to_json()
        page = client.get("/tables/t")
        assert page.status_code == 200 and top in page.text


def test_a_version_listing_every_value_is_rewritten_whole_once(spark, tmp_path) -> None:
    """A version whose table frequencies list every value of a rewritten column (format 6
    listed only #0's and #1's repeated values) cannot take a delta of repeated values: the
    next incremental analyze writes a new base, and the one after it layers again."""
    root = tmp_path / "t"
    rng = np.random.default_rng(6)
    for p in range(5):
        _write(root, p, _partition(p, rng))
    handle = ls.open_table(str(root))
    version = _analyze(handle, spark, {})
    path = f"{handle.stats_root}/{version.table_files['statistics']}"
    table = pq.read_table(path)
    flags = table.column("duplicates_only").to_pylist()
    flags[[c["name"] for c in version.columns].index("s")] = False
    at = table.column_names.index("duplicates_only")
    pq.write_table(table.set_column(at, "duplicates_only", pa.array(flags)), path)

    _write(root, 2, _partition(2, np.random.default_rng(99), shift=5))
    version = _analyze(handle, spark, {})
    assert version.extra["exact"]["rank_layers"] == "base"
    _check_against_duckdb(root, handle, version.extra["exact"]["scenarios"])

    _write(root, 5, _partition(5, np.random.default_rng(7), shift=100_000))
    version = _analyze(handle, spark, {})
    assert version.extra["exact"]["rank_layers"] == "delta"
    _check_against_duckdb(root, handle, version.extra["exact"]["scenarios"])
    _check_frequency_layers(root, handle, version)
