"""Stored samples end to end on Spark: create, show, refresh, analyze --from-sample, errors.

References: the table's rows read back with pyarrow (populations, membership), the
allocation recomputed in the test with exact fractions, NumPy's statistics of the table.
"""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.errors import InvalidArgumentError
from lakestats.store.sample import HASH_COLUMN, SampleNotFoundError


def _write(root: Path, region: str, name: str, ids: np.ndarray, seed: int) -> None:
    rng = np.random.default_rng(seed)
    (root / f"region={region}").mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "amount": rng.normal(100, 15, ids.size),
            "item": pa.array([f"i{v}" for v in rng.integers(0, 300, ids.size)]),
            "score": pa.array(
                rng.integers(-1_000, 1_000, ids.size), mask=rng.random(ids.size) < 0.3
            ),
        }
    )
    pq.write_table(table, root / f"region={region}" / name)


def _table_rows(root: Path) -> dict[str, pa.Table]:
    return {
        d.name: pa.concat_tables([pq.ParquetFile(f).read() for f in sorted(d.glob("*.parquet"))])
        for d in sorted(root.glob("region=*"))
    }


def _sample_rows(table: ls.LakestatsTable) -> dict[str, pa.Table]:
    data = table.sample.manifest().to_json()
    base = Path(table.stats_root) / "sample"
    return {
        p["path"]: pq.ParquetFile(base / p["file"]).read() for p in data["partitions"] if p["file"]
    }


def _hamilton(populations: list[int], total: int) -> list[int]:
    whole = sum(populations)
    quotas = [Fraction(total * p, whole) for p in populations]
    sizes = [int(q) for q in quotas]
    order = sorted(range(len(quotas)), key=lambda i: (-(quotas[i] - sizes[i]), i))
    for i in order[: total - sum(sizes)]:
        sizes[i] += 1
    return sizes


@pytest.fixture
def sales(tmp_path: Path) -> Path:
    root = tmp_path / "sales"
    _write(root, "a", "p0.parquet", np.arange(0, 4_000), 1)
    _write(root, "b", "p0.parquet", np.arange(4_000, 10_000), 2)
    _write(root, "c", "p0.parquet", np.arange(10_000, 10_333), 3)
    return root


def test_create_sizes_membership_and_refresh(sales: Path, spark) -> None:
    table = ls.open_table(str(sales))
    result = table.sample.create(rows=1_000, seed=11, spark=spark)
    rows = _table_rows(sales)
    populations = [rows[k].num_rows for k in sorted(rows)]
    expected = dict(zip(sorted(rows), _hamilton(populations, 1_000), strict=True))
    data = table.sample.manifest().to_json()
    assert (result.population, result.sample_rows) == (sum(populations), 1_000)
    assert {p["path"]: p["sample_rows"] for p in data["partitions"]} == expected
    assert {p["path"]: p["population"] for p in data["partitions"]} == {
        k: v.num_rows for k, v in rows.items()
    }
    assert data["seed"] == 11 and data["rows"] == 1_000 and data["snapshot_id"] is None
    first = _sample_rows(table)
    for path, sample in first.items():
        assert sample.num_rows == expected[path]
        ids = sample.column("id").to_numpy()
        assert np.unique(ids).size == ids.size
        assert np.isin(ids, rows[path].column("id").to_numpy()).all()
        hashes = sample.column(HASH_COLUMN).to_numpy()
        assert (np.diff(hashes.astype(np.float64)) >= 0).all()  # bottom-k, in hash order
    # the same seed draws the same sample; another seed another one
    table.sample.create(rows=1_000, seed=11, spark=spark)
    again = _sample_rows(table)
    assert all(again[k].column("id").equals(first[k].column("id")) for k in first)
    old_files = {p["path"]: p["file"] for p in table.sample.manifest().to_json()["partitions"]}

    # inserts into a, deletes from b (rewritten), c dropped, d new
    _write(sales, "a", "p1.parquet", np.arange(20_000, 20_400), 4)
    kept_b = rows["region=b"].filter(pa.compute.greater(rows["region=b"]["id"], 5_000))
    (sales / "region=b" / "p0.parquet").unlink()
    pq.write_table(kept_b, sales / "region=b" / "p1.parquet")
    shutil.rmtree(sales / "region=c")
    _write(sales, "d", "p0.parquet", np.arange(30_000, 32_000), 5)
    refreshed = table.sample.refresh(spark=spark)
    assert (refreshed.partitions_sampled, refreshed.partitions_kept) == (3, 0)
    assert refreshed.partitions_removed == 1
    data = table.sample.manifest().to_json()
    rows = _table_rows(sales)
    rate = 1_000 / sum(populations)
    by_path = {p["path"]: p for p in data["partitions"]}
    assert set(by_path) == {"region=a", "region=b", "region=d"}
    for path, p in by_path.items():
        assert p["population"] == rows[path].num_rows
        assert p["sample_rows"] == int(np.floor(rate * rows[path].num_rows + 0.5))
    samples = _sample_rows(table)
    for path, sample in samples.items():
        assert np.isin(sample["id"].to_numpy(), rows[path]["id"].to_numpy()).all()
    assert not (sales / "_lakestats" / "sample" / old_files["region=c"]).exists()

    # nothing changed: every partition kept, files untouched
    before = {p["path"]: p["file"] for p in data["partitions"]}
    again = table.sample.refresh(spark=spark)
    assert (again.partitions_sampled, again.partitions_kept, again.bytes_read) == (0, 3, 0)
    assert {p["path"]: p["file"] for p in table.sample.manifest().to_json()["partitions"]} == before


def test_analyze_from_sample(sales: Path, spark, capsys, monkeypatch) -> None:
    table = ls.open_table(str(sales))
    table.sample.create(fraction=0.2, seed=3, spark=spark)
    result = table.analyze(from_sample=True, spark=spark)
    rows = _table_rows(sales)
    everything = pa.concat_tables(rows.values())
    assert result.row_count == everything.num_rows
    stats = table.table_statistics()
    assert stats.kind == "sampled" and stats.sample["fraction"] == 0.2
    assert stats.row_count == everything.num_rows
    by_name = {c["column"]: c for c in stats.columns}
    amount = by_name["amount"]
    truth = float(np.mean(everything["amount"].to_numpy()))
    drawn_amounts = np.concatenate([t["amount"].to_numpy() for t in _sample_rows(table).values()])
    m, big_m = drawn_amounts.size, everything.num_rows
    half = 1.959964 * np.std(drawn_amounts, ddof=1) / np.sqrt(m) * np.sqrt(1 - m / big_m)
    assert amount["mean_lower"] == pytest.approx(np.mean(drawn_amounts) - half)
    assert amount["mean_upper"] == pytest.approx(np.mean(drawn_amounts) + half)
    assert abs(truth - np.mean(drawn_amounts)) < 1.7 * half  # 3.3 sigma (coverage: elsewhere)
    assert amount["row_count"] == everything.num_rows
    assert amount["sample_row_count"] == table.sample.manifest().to_json()["sample_rows"]
    item = by_name["item"]
    true_items = len(set(everything["item"].to_pylist()))
    assert item["distinct_estimator"] and item["distinct_count_exact"] is False
    assert item["distinct_count_lower"] <= true_items <= item["distinct_count_upper"]
    # null counts, min and max exact from the files' footers, never from the sample
    score = by_name["score"]
    values = everything["score"]
    assert score["null_count"] == values.null_count and score["bounds_from"] == "metadata"
    assert (score["min"], score["max"]) == (pa.compute.min(values).as_py(),
                                            pa.compute.max(values).as_py())
    assert score["bounds_exact"] is True and item["bounds_exact"] is False
    assert item["min"] == min(everything["item"].to_pylist())
    # partitions: row counts exact; frequencies and histograms scaled to the partition
    for partition in table.partitions():
        name = partition.path
        assert partition.row_count == rows[name].num_rows
        [p_item] = table.statistics(name, columns=["item"])
        assert p_item["row_count"] == rows[name].num_rows
        total = sum(b["count"] for b in table.histogram("amount", name).rows())
        assert abs(total - rows[name].num_rows) <= 3  # rounding per bin
        freq = sum(f for _, f in table.frequencies("item", name))
        assert abs(freq - rows[name].num_rows) <= len(table.frequencies("item", name))
    capsys.readouterr()
    assert cli.main(["show", str(sales), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    drawn = sum(int(np.floor(0.2 * t.num_rows + 0.5)) for t in rows.values())
    assert shown["kind"] == "sampled" and shown["sample"]["sample_rows"] == drawn
    monkeypatch.setenv("COLUMNS", "400")
    assert cli.main(["show", str(sales)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the title may wrap
    assert f"[sampled: {drawn:,} rows of snapshot None]" in text
    # a later full analyze reuses nothing from the sampled version and is exact again
    full = table.analyze(spark=spark)
    assert full.partitions_reused == 0
    [exact] = table.table_statistics(columns=["item"]).columns
    assert exact["distinct_count"] == true_items


def test_bad_input_one_line(tmp_path: Path, sales: Path, spark, capsys) -> None:
    table = ls.open_table(str(sales))
    for kwargs, message in (
        ({"fraction": 0.0}, "--fraction must be in (0, 1]"),
        ({"fraction": 1.5}, "--fraction must be in (0, 1]"),
        ({"rows": 0}, "--rows must be a positive number of rows, got 0"),
        ({"rows": -3}, "--rows must be a positive number of rows, got -3"),
    ):
        with pytest.raises(InvalidArgumentError, match=message.replace("(", r"\(").replace(
            ")", r"\)").replace("]", r"\]")):
            table.sample.create(spark=spark, **kwargs)
    assert cli.main(["sample", "create", str(sales), "--fraction", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["lakestats: error: --fraction must be in (0, 1] (0.01 is a 1 % sample), got 2.0"]

    # no sample yet / deleted by hand: refresh and analyze --from-sample say what to do
    expected = f"no sample of {sales}; run `lakestats sample create {sales}`"
    with pytest.raises(SampleNotFoundError, match="no sample of") as info:
        table.sample.refresh(spark=spark)
    assert str(info.value) == expected
    table.sample.create(rows=50, spark=spark)
    shutil.rmtree(sales / "_lakestats" / "sample")
    for call in (
        lambda: table.sample.refresh(spark=spark),
        lambda: table.analyze(from_sample=True, spark=spark),
    ):
        with pytest.raises(SampleNotFoundError) as info:
            call()
        assert str(info.value) == expected
    assert cli.main(["analyze", str(sales), "--from-sample"]) == 2
    assert capsys.readouterr().err.strip() == f"lakestats: error: {expected}"
    # a sample file deleted by hand
    table.sample.create(rows=50, spark=spark)
    data = table.sample.manifest().to_json()
    (sales / "_lakestats" / "sample" / data["partitions"][0]["file"]).unlink()
    with pytest.raises(SampleNotFoundError, match="was deleted\\); run `lakestats sample"):
        table.sample.refresh(spark=spark)

    # a table with no rows
    empty = tmp_path / "empty"
    (empty / "region=a").mkdir(parents=True)
    pq.write_table(pa.table({"id": pa.array([], pa.int64())}), empty / "region=a" / "p.parquet")
    with pytest.raises(InvalidArgumentError, match="has no rows: there is nothing to sample"):
        ls.open_table(str(empty)).sample.create(spark=spark)
    assert not (empty / "_lakestats" / "sample" / "sample.json").exists()


def test_refresh_after_the_base_snapshot_expired(tmp_path: Path, spark) -> None:
    """A Delta table: a sample of version 0, then versions 1 and 2 with version 0's log
    expired (its commit file removed after a checkpoint): refresh resamples and says why."""
    from deltalake import DeltaTable, write_deltalake

    uri = tmp_path / "delta"
    for i in range(3):
        write_deltalake(
            str(uri),
            pa.table({"id": pa.array(np.arange(i * 100, i * 100 + 100), pa.int64())}),
            mode="append",
        )
        if i == 0:
            table = ls.open_table(str(uri))
            table.sample.create(rows=30, spark=spark)
            assert table.sample.manifest().to_json()["snapshot_id"] == 0
    DeltaTable(str(uri)).create_checkpoint()
    (uri / "_delta_log" / "00000000000000000000.json").unlink()
    snapshots = [s.snapshot_id for s in ls.open_table(str(uri)).format.snapshots()]
    if 0 in snapshots:
        pytest.skip("this deltalake still lists version 0 after its commit file is gone")
    result = table.sample.refresh(spark=spark)
    assert result.resampled_because == (
        "the sample's snapshot 0 was expired from the table; resampled the current snapshot"
    )
    data = table.sample.manifest().to_json()
    assert data["snapshot_id"] == 2 and data["sample_rows"] == 30
    assert json.loads(json.dumps(data))["population"] == 300


def _profile(values: list) -> np.ndarray:
    """Frequency of frequencies computed here: f[i] values seen i + 1 times."""
    _, counts = np.unique(np.asarray(values), return_counts=True)
    return np.bincount(counts)[1:]


def test_from_sample_reads_the_sample_once_in_the_tasks(sales: Path, spark, monkeypatch) -> None:
    """The driver never reads the sample (its reader raises in this process; the Spark
    workers are other processes); every partition's and the table's distinct estimates
    equal ``select_estimator`` on the profiles computed here from the sample's rows, so the
    tasks' profiles and the Spark aggregation of their value hashes are the sample's."""
    from lakestats.compute.sample.scale import PARTITION_REPLICATES
    from lakestats.formats.sample import SampleReader
    from lakestats.stats.ndv import select_estimator

    table = ls.open_table(str(sales))
    table.sample.create(fraction=0.1, seed=5, spark=spark)

    def no_driver_read(*_args, **_kwargs):
        raise AssertionError("the driver read the sample")

    monkeypatch.setattr(SampleReader, "read", no_driver_read)
    table.analyze(from_sample=True, spark=spark)
    drawn = _sample_rows(table)
    listed = table.sample.manifest().to_json()["partitions"]
    populations = {p["path"]: p["population"] for p in listed}
    for column in ("id", "item", "amount"):
        values = [v for t in drawn.values() for v in t[column].to_pylist()]
        n, big_n = len(values), sum(populations.values())
        name, estimate, (lower, upper) = select_estimator(_profile(values), n, big_n)
        [stats] = table.table_statistics(columns=[column]).columns
        assert stats["distinct_estimator"] == name, column
        assert stats["distinct_count"] == round(estimate), column
        assert (stats["distinct_count_lower"], stats["distinct_count_upper"]) == (
            int(np.floor(lower)), int(np.ceil(upper))), column
        for path, rows in drawn.items():
            part = rows[column].to_pylist()
            want = select_estimator(_profile(part), len(part), populations[path],
                                    replicates=PARTITION_REPLICATES)
            [got] = table.statistics(path, columns=[column])
            assert (got["distinct_estimator"], got["distinct_count"]) == (want[0], round(want[1]))
            assert got["distinct_count_upper"] == int(np.ceil(want[2][1])), (column, path)


def test_the_samples_own_analysis_keeps_no_lookup_files(sales: Path, spark, monkeypatch) -> None:
    """The sample's analysis is only scaled: its table level has its three files and no
    partition index, partition histogram parts or group cache (which only a version later
    analyses build on, or lookups read, needs), its manifest names no file that is gone
    (the partitions' hand-off rows are deleted when it is published), and its root is
    deleted when the run ends: a second run leaves nothing more behind than the first."""
    from lakestats.compute.sample import analyze as from_sample
    from lakestats.store import manifest

    seen = []

    def analyze_and_look(table, root, *args, **kwargs):
        result = real(table, root, *args, **kwargs)
        scratch = Path(root.uri)
        version = manifest.load_version(root, result.version)
        named = [f for e in version.partitions for f in e.files.values()]
        named += list(version.table_files.values())
        [run_dir] = (scratch / "table").iterdir()
        present = bool(named) and all((scratch / f).is_file() for f in named)
        seen.append((sorted(p.name for p in run_dir.iterdir()), version, present, scratch))
        return result

    real = from_sample.analyze
    monkeypatch.setattr(from_sample, "analyze", analyze_and_look)
    table = ls.open_table(str(sales))
    table.sample.create(fraction=0.5, seed=2, spark=spark)
    table.analyze(from_sample=True, spark=spark)
    [(files, version, present, scratch)] = seen
    assert files == ["frequencies.parquet", "histograms.parquet", "statistics.parquet"]
    assert version.partition_index is None and version.partition_histogram_parts is None
    assert present
    assert not scratch.exists()
    # the sampled version itself is whole: every partition answers its frequencies
    for partition in table.partitions():
        assert table.frequencies("item", partition.path)
    root = Path(table.stats_root)
    before = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    table.analyze(from_sample=True, spark=spark)
    after = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    assert not any(p.parts[:2] == ("sample", "analysis") for p in after)
    assert [p for p in after if p.parts[0] == "sample"] == [
        p for p in before if p.parts[0] == "sample"]  # the sample itself, nothing more
