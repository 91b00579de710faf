"""A failed analyze, publish or sample create leaves the root as it was.

Each case lists the statistics root (every file and directory, files by content) before
the command and after it failed: a data file cut in half, a file whose column type
conflicts with the others', a disk that fills up while the version manifest or the
sample's manifest is written. Also on a root that did not exist: it still does not.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.errors import LakestatsError, StorageError
from tests.store.test_store_reliability import _disk_full_under

pytestmark = pytest.mark.spark


def _listing(root: Path) -> dict[str, str]:
    """Every path under ``root``: directories as ``dir``, files by their SHA-256."""
    out = {}
    for directory, names, files in os.walk(root):
        for name in names:
            out[os.path.relpath(os.path.join(directory, name), root)] = "dir"
        for name in files:
            path = os.path.join(directory, name)
            out[os.path.relpath(path, root)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return out


def _table(base: Path) -> Path:
    table = base / "t"
    for part, values in {"p=a": range(50), "p=b": range(50, 120), "p=c": range(5)}.items():
        (table / part).mkdir(parents=True)
        pq.write_table(pa.table({"n": list(values), "s": [str(v) for v in values]}),
                       table / part / "0.parquet")
    return table


@pytest.fixture
def analyzed(tmp_path: Path, spark) -> tuple[ls.LakestatsTable, Path]:
    table = _table(tmp_path)
    handle = ls.open_table(str(table))
    handle.analyze(spark=spark, exact=True)
    return handle, table / "_lakestats"


def _fails_and_leaves(root: Path, run, error: type, text: str) -> None:
    before = _listing(root) if root.exists() else None
    with pytest.raises(error) as info:
        run()
    assert text in str(info.value), info.value
    if before is None:
        assert not root.exists(), sorted(_listing(root))
    else:
        after = _listing(root)
        assert after == before, sorted(set(after) ^ set(before))


def test_a_truncated_data_file_leaves_the_root_as_it_was(analyzed, spark) -> None:
    handle, root = analyzed
    table = Path(handle.format.location.removeprefix("file://"))
    pq.write_table(pa.table({"n": [7] * 40, "s": ["x"] * 40}), table / "p=a" / "1.parquet")
    data = (table / "p=b" / "0.parquet").read_bytes()
    (table / "p=b" / "1.parquet").write_bytes(data[: len(data) // 2])
    _fails_and_leaves(root, lambda: handle.analyze(spark=spark, exact=True), LakestatsError,
                      "p=b/1.parquet")
    # and a root that did not exist is not created
    fresh = table.parent / "fresh-root"
    other = ls.open_table(str(table), stats_root=str(fresh))
    _fails_and_leaves(fresh, lambda: other.analyze(spark=spark), LakestatsError, "1.parquet")


def test_a_schema_conflict_leaves_the_root_as_it_was(analyzed, spark) -> None:
    handle, root = analyzed
    table = Path(handle.format.location.removeprefix("file://"))
    pq.write_table(pa.table({"n": [1.5, 2.5], "s": ["x", "y"]}).cast(
        pa.schema([("n", pa.string()), ("s", pa.string())])), table / "p=c" / "1.parquet")
    pq.write_table(pa.table({"n": [1, 2], "s": ["x", "y"]}), table / "p=a" / "1.parquet")
    _fails_and_leaves(root, lambda: handle.analyze(spark=spark), LakestatsError, "1.parquet")


def test_a_full_disk_while_publishing_leaves_the_root_as_it_was(
    analyzed, spark, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Partition, table-level and exact files are written, then the manifest does not fit:
    every file of the run goes again, the previous version stands."""
    handle, root = analyzed
    table = Path(handle.format.location.removeprefix("file://"))
    pq.write_table(pa.table({"n": [1, 2], "s": ["x", "y"]}), table / "p=a" / "1.parquet")
    _disk_full_under(monkeypatch, "versions")
    _fails_and_leaves(root, lambda: handle.analyze(spark=spark, exact=True), StorageError,
                      "no space left on device")
    monkeypatch.undo()
    assert handle.analyze(spark=spark, exact=True).version == 2


def test_a_failed_sample_create_leaves_the_root_as_it_was(
    analyzed, spark, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample's data files are written by the tasks, then its manifest does not fit."""
    handle, root = analyzed
    _disk_full_under(monkeypatch, "sample.json")
    _fails_and_leaves(root, lambda: handle.sample.create(spark=spark, rows=20), StorageError,
                      "no space left on device")


@pytest.mark.parametrize("make", ["iceberg", "delta", "paimon"])
def test_a_failed_sample_refresh_rolls_the_sibling_table_back(
    make: str, spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample's sibling table (the table's own format) gets its new commit, then the
    sample's manifest does not fit: the root, sibling table included, is as it was, and
    the format's own reader sees the sibling's previous snapshot as its latest."""
    from tests.compute import test_sample_formats as formats

    uri, options = getattr(formats, f"_{make}_table")(tmp_path)
    handle = ls.open_table(uri, str(tmp_path / "stats"), **options)
    handle.sample.create(fraction=0.2, seed=3, spark=spark)
    sibling = handle.sample.manifest().to_json()["sibling"]
    root = tmp_path / "stats"
    _more_rows(make, uri, options)
    handle = ls.open_table(uri, str(root), **options)
    before = _listing(root)
    latest = _latest_sibling_snapshot(make, sibling)
    _disk_full_under(monkeypatch, "sample.json")
    with pytest.raises(StorageError, match="no space left on device"):
        handle.sample.refresh(spark=spark)
    monkeypatch.undo()
    after = _listing(root)
    assert after == before, sorted(set(after) ^ set(before))
    assert _latest_sibling_snapshot(make, sibling) == latest
    # and the next refresh commits as if the failed one never ran
    handle.sample.refresh(spark=spark)
    assert _latest_sibling_snapshot(make, handle.sample.manifest().to_json()["sibling"]) != latest


def _more_rows(make: str, uri: str, options: dict) -> None:
    from tests.compute import test_sample_formats as formats

    rows = formats._rows(5_000, 600, 7)
    if make == "delta":
        from deltalake import write_deltalake

        write_deltalake(uri, rows, mode="append", partition_by=["region"])
    elif make == "iceberg":
        from lakestats.formats.iceberg import load_catalog

        load_catalog(warehouse=options["warehouse"]).load_table(uri).append(rows)
    else:
        from pypaimon import CatalogFactory

        warehouse = str(Path(uri).parent.parent)
        table = CatalogFactory.create({"warehouse": warehouse}).get_table("default.sales")
        formats._paimon_commit(table, rows)


def _latest_sibling_snapshot(make: str, sibling: dict) -> object:
    """The sibling's latest snapshot as the format's own reader finds it by itself."""
    if make == "delta":
        from deltalake import DeltaTable

        return DeltaTable(sibling["location"]).version()
    if make == "iceberg":
        metadata = sorted(Path(sibling["location"].removeprefix("file://"), "metadata")
                          .glob("*.metadata.json"))
        return [m.name for m in metadata]
    from pypaimon import CatalogFactory

    location = Path(sibling["location"])
    table = CatalogFactory.create({"warehouse": str(location.parent.parent)}).get_table(
        "lakestats.sample")
    return table.snapshot_manager().get_latest_snapshot().id


def test_expire_leaves_only_what_kept_versions_name(spark, tmp_path: Path) -> None:
    """Three exact analyses of an Iceberg table (each after an append), its old snapshots
    expired, then ``expire``: every file left under the statistics root (besides the
    version manifests, the latest pointer and the sample) is named by a kept version,
    rank parts, partition-histogram parts and reduce caches included; of the Spark
    component's files only the kept version's stays."""
    import numpy as np
    from pyiceberg.transforms import IdentityTransform

    from lakestats.formats.iceberg import load_catalog
    from lakestats.store import manifest, partition_histograms
    from lakestats.store.handle import StatisticsStore

    def rows(start: int, count: int) -> pa.Table:
        ids = np.arange(start, start + count)
        return pa.table({"id": ids, "r": pa.array([f"r{i % 3}" for i in ids]),
                         "x": np.random.default_rng(start).normal(size=count)})

    warehouse = str(tmp_path / "warehouse")
    catalog = load_catalog(warehouse=warehouse)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=rows(0, 1).schema)
    with table.update_spec() as spec:
        spec.add_field("r", IdentityTransform(), "r")
    table.append(rows(0, 3_000))
    for k in range(3):
        if k:
            catalog.load_table("db.t").append(rows(3_000 * k, 500))
        analyzed = ls.open_table("db.t", warehouse=warehouse)
        analyzed.analyze(spark=spark, exact=True)  # writes the Spark component's file too
    table = catalog.load_table("db.t")
    current = table.current_snapshot().snapshot_id
    table.maintenance.expire_snapshots().by_ids(
        [s.snapshot_id for s in table.metadata.snapshots if s.snapshot_id != current]).commit()
    handle = ls.open_table("db.t", warehouse=warehouse)
    report = handle.expire(retain_last=1, orphan_age_minutes=0)
    assert report.versions_removed == (1, 2) and report.files_removed > 0
    root = Path(handle.stats_root.removeprefix("file://"))
    named: set[str] = set()
    for number in manifest.version_numbers(StatisticsStore(str(root))):
        version = manifest.load_version(StatisticsStore(str(root)), number)
        named |= {str(p) for p in version.named_paths()}
        if version.partition_histogram_parts:
            named |= set(partition_histograms.part_paths(
                StatisticsStore(str(root)), version.partition_histogram_parts))
    left = {
        rel for rel, kind in _listing(root).items()
        if kind != "dir" and not rel.startswith(("versions/", "sample/")) and rel != "latest.json"
    }
    spark_files = {rel for rel in left if rel.startswith("spark/")}
    assert spark_files == {f"spark/v00000003_{current}.json"}, spark_files
    assert left - spark_files <= named, sorted(left - named)
