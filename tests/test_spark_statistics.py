"""The statistics every analyze writes for lakestats' Spark component
(``lakestats/interop/spark_statistics.py``), from the CLI or from Python alike: one file per
version under ``<root>/spark/``, named by the version and the snapshot it describes, with
Spark's own property maps; a Parquet directory (no snapshots) gets none. The JVM side is
tested in tests/formats/test_spark_component.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.interop.spark_statistics import build, uniform
from lakestats.store import manifest

pytestmark = pytest.mark.spark


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"k": rng.integers(0, 50, n), "x": rng.normal(size=n),
                     "s": [f"v{i}" for i in rng.integers(0, 7, n)]})  # fmt: skip


def test_analyze_writes_the_versions_statistics_for_spark(spark, tmp_path: Path, capsys) -> None:
    from deltalake import write_deltalake

    path = tmp_path / "delta"
    rows = _rows(3_000, 1)
    write_deltalake(str(path), rows)
    assert cli.main(["analyze", str(path), "--exact", "--json"]) == 0
    capsys.readouterr()
    files = sorted((path / "_lakestats" / "spark").iterdir())
    assert [f.name for f in files] == ["v00000001_0.json"]  # version 1, Delta version 0
    content = json.loads(files[0].read_text())
    assert (content["snapshot_id"], content["version"], content["row_count"]) == (0, 1, 3_000)
    k = content["columns"]["k"]
    assert k["type"] == "long"
    assert k["stats"]["k.distinctCount"] == str(pc.count_distinct(rows["k"]).as_py())
    assert k["stats"]["k.min"] == str(pc.min(rows["k"]).as_py())
    assert "histogram" not in k  # 50 evenly common whole numbers: no more than min/max say
    x = content["columns"]["x"]["histogram"]["bins"]  # normal: kept, Spark's 254 bins
    assert len(x) == 254 and all(b[2] >= 1 for b in x)
    assert x[0][0] == pc.min(rows["x"]).as_py() and x[-1][1] == pc.max(rows["x"]).as_py()
    assert "histogram" not in content["columns"]["s"]  # Spark keeps none for strings
    assert content["columns"]["s"]["stats"]["s.maxLen"] == "2"

    # a new snapshot, analyzed again: a second file, the first one left for its snapshot
    write_deltalake(str(path), _rows(500, 2), mode="append")
    assert cli.main(["analyze", str(path), "--json"]) == 0
    names = sorted(f.name for f in (path / "_lakestats" / "spark").iterdir())
    assert names == ["v00000001_0.json", "v00000002_1.json"]
    table = ls.open_table(str(path))
    latest = manifest.load_version(table.store, None)
    assert build(table.format, table.store, latest)["row_count"] == 3_500


def test_an_analyze_from_python_writes_the_same_file(spark, tmp_path: Path) -> None:
    """No CLI: ``open_table(...).analyze()`` (a notebook, a scheduler) publishes the file
    too, with the same content; a failure to write it is a warning, not a failed analyze."""
    from deltalake import write_deltalake

    path = tmp_path / "delta"
    write_deltalake(str(path), _rows(1_000, 4))
    result = ls.open_table(str(path)).analyze(spark=spark, exact=True)
    [file] = (path / "_lakestats" / "spark").iterdir()
    assert file.name == f"v{result.version:08d}_{result.snapshot_id}.json"
    content = json.loads(file.read_text())
    assert (content["row_count"], content["version"]) == (1_000, result.version)
    file.unlink()  # analyzed again, nothing changed: the missing file is written again
    assert ls.open_table(str(path)).analyze(spark=spark, exact=True).unchanged
    assert json.loads(file.read_text()) == content


def test_a_parquet_directory_gets_none(spark, tmp_path: Path, capsys) -> None:
    (tmp_path / "t").mkdir()
    pq.write_table(_rows(100, 3), tmp_path / "t" / "part-0.parquet")
    assert cli.main(["analyze", str(tmp_path / "t"), "--json"]) == 0
    assert not (tmp_path / "t" / "_lakestats" / "spark").exists()


def test_a_histogram_of_evenly_spread_values_is_left_out(spark, tmp_path: Path, capsys) -> None:
    """An id column's equi-height bins are as wide as each other: the histogram says no more
    than min and max, and Spark would estimate joins on it from unscaled bins (q-error 10
    on TPC-H's self-join, bench/interop.py); a skewed column keeps its histogram."""
    from deltalake import write_deltalake

    rng = np.random.default_rng(5)
    path = tmp_path / "delta"
    write_deltalake(str(path), pa.table({"id": np.arange(20_000),
                                         "skewed": rng.exponential(size=20_000)}))
    assert cli.main(["analyze", str(path), "--exact", "--json"]) == 0
    capsys.readouterr()
    [file] = (path / "_lakestats" / "spark").iterdir()
    columns = json.loads(file.read_text())["columns"]
    assert "histogram" not in columns["id"]
    assert columns["id"]["stats"]["id.distinctCount"] == "20000"
    assert len(columns["skewed"]["histogram"]["bins"]) == 254
    assert uniform([(i, i + 1.0, 5) for i in range(10)])
    assert not uniform([(0, 1, 5), (1, 1.5, 5), (1.5, 4, 5), (4, 5, 5), (5, 9, 5)])
    # 25 evenly common whole numbers (TPC-H's nation keys) in 254 bins: points and steps
    edges = np.minimum(np.floor(np.arange(255) * 25 / 254), 24)
    assert uniform([(edges[i], edges[i + 1], 1) for i in range(254)])
    skewed = np.quantile(rng.exponential(size=50_000), np.linspace(0, 1, 255))
    assert not uniform([(skewed[i], skewed[i + 1], 1) for i in range(254)])


def test_a_small_key_domain_is_kept_as_its_values(spark, tmp_path: Path, capsys) -> None:
    """A key of 25 whole numbers analyzed without --exact: its stored
    bins [v, v + 1) each hold the one value v, so Spark's histogram is 25 point masses,
    never fractions of a key between two whole numbers (with those, Spark estimated the
    join of TPC-H Q7's nations and customers at 21,101 rows for 4.8 million)."""
    from deltalake import write_deltalake

    rng = np.random.default_rng(9)
    weights = 1 / np.arange(1, 26)  # skewed, so the histogram is kept (see below)
    keys = rng.choice(25, size=30_000, p=weights / weights.sum())
    path = tmp_path / "delta"
    write_deltalake(str(path), pa.table({"key": keys, "x": rng.exponential(size=30_000)}))
    assert cli.main(["analyze", str(path), "--json"]) == 0
    capsys.readouterr()
    [file] = (path / "_lakestats" / "spark").iterdir()
    bins = json.loads(file.read_text())["columns"]["key"]["histogram"]["bins"]
    # every edge a whole number: a bin is one value [v, v] or the step (v, w] up to the next
    assert all(float(lo).is_integer() and float(hi).is_integer() for lo, hi, _ in bins)
    assert {int(hi) for _, hi, _ in bins} <= set(np.unique(keys).tolist())
    # each value takes bins in proportion to its rows, as Spark's own ANALYZE gives them
    counts = dict(zip(*np.unique(keys, return_counts=True), strict=True))
    shares = {v: sum(1 for _, hi, _ in bins if int(hi) == v) / len(bins) for v in counts}
    assert all(abs(shares[v] - c / len(keys)) <= 2 / len(bins) for v, c in counts.items())


def test_a_one_partition_table_cuts_its_histogram_from_its_exact_frequencies(
    spark, tmp_path: Path, capsys
) -> None:
    """An unpartitioned table's level is its one partition: every value with its own count.
    A Zipf-skewed key's histogram is cut from those counts (bin edges at the exact
    nearest-rank quantiles), not interpolated inside equi-width bins, where half the rows
    at 1 and 2 would be spread up to 4,000 (Spark estimated ``k < 3`` at 0.2 % of the rows
    for 36 %)."""
    from deltalake import write_deltalake

    rng = np.random.default_rng(13)
    keys = np.minimum(rng.zipf(1.3, size=20_000), 1_000_000)
    path = tmp_path / "delta"
    write_deltalake(str(path), pa.table({"k": keys}))
    assert cli.main(["analyze", str(path), "--json"]) == 0
    capsys.readouterr()
    [file] = (path / "_lakestats" / "spark").iterdir()
    histogram = json.loads(file.read_text())["columns"]["k"]["histogram"]
    assert histogram["source"] == "frequencies"
    bins = histogram["bins"]
    ordered = np.sort(keys)
    # Spark's estimate of k < 3 from these bins: the share of bins wholly below 3
    below = sum(1 for _, hi, _ in bins if hi < 3) / len(bins)
    assert abs(below - np.mean(keys < 3)) <= 1 / len(bins)
    # every upper edge is a value of the column at its nearest rank
    height = len(keys) / len(bins)
    for i, (_, hi, _) in enumerate(bins):
        assert hi == ordered[min(len(keys) - 1, int(np.ceil((i + 1) * height)) - 1)]
