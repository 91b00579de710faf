"""Statistics versions tied to snapshots: incremental analyze, inheritance (stale), schema
change, expiry after the table's own snapshot expiry, SQL, and concurrent analyses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lakestats import cli
from lakestats.formats.iceberg import load_catalog
from lakestats.store import layout, manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader

pytestmark = pytest.mark.spark


def _rows(n: int, seed: int, regions: list[str]) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(rng.integers(0, 10_000, n), pa.int32()),
            "region": pa.array(rng.choice(regions, n)),
            "amount": pa.array(rng.normal(100, 10, n)),
        }
    )


def _run(capsys: pytest.CaptureFixture, *args: str) -> dict | list:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_snapshots_incremental_inheritance_schema_change_and_expiry(
    spark,
    tmp_path: Path,
    capsys,
) -> None:
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, LongType, StringType

    warehouse = tmp_path / "wh"
    catalog = load_catalog(warehouse=str(warehouse))
    catalog.create_namespace("db")
    first = _rows(2000, 1, ["east", "west"])
    table = catalog.create_table("db.sales", schema=first.schema)
    with table.update_spec() as spec:
        spec.add_field("region", IdentityTransform(), "region")
    table.append(first)
    s1 = table.current_snapshot().snapshot_id
    common = ["--warehouse", str(warehouse), "--json"]

    v1 = _run(capsys, "analyze", "db.sales", *common)
    assert (v1["partitions_computed"], v1["partitions_reused"]) == (2, 0)

    east = _rows(500, 2, ["east"])
    table.append(east)
    table = catalog.load_table("db.sales")
    s2 = table.current_snapshot().snapshot_id
    shown = _run(capsys, "show", "db.sales", *common)
    assert shown["stale"] is True and shown["snapshot_id"] == s2
    assert shown["statistics_snapshot_id"] == s1
    assert (shown["snapshots_behind"], shown["partitions_changed"]) == (1, 1)
    assert shown["row_count"] == 2000
    old = _run(capsys, "show", "db.sales", "--snapshot", str(s1), *common)
    assert old["stale"] is False and old["row_count"] == 2000

    v2 = _run(capsys, "analyze", "db.sales", *common)
    assert (v2["partitions_computed"], v2["partitions_reused"]) == (1, 1)
    shown = _run(capsys, "show", "db.sales", "--columns", "id,amount", *common)
    assert shown["stale"] is False and shown["row_count"] == 2500
    data = pa.concat_tables([first, east])
    ids, amounts = shown["columns"]
    assert (ids["min"], ids["max"]) == (pc.min(data["id"]).as_py(), pc.max(data["id"]).as_py())
    assert ids["distinct_count"] == len(pc.unique(data["id"])) or not ids["distinct_count_exact"]
    assert amounts["mean"] == pytest.approx(pc.mean(data["amount"]).as_py(), rel=1e-9)
    history = _run(capsys, "history", "db.sales", *common)
    assert [(h["snapshot_id"], h["partitions_reused"]) for h in history] == [(s1, 0), (s2, 1)]

    # schema change: id widened to long, a column added; the others keep their statistics
    with table.update_schema() as update:
        update.update_column("id", LongType())
        update.add_column("note", StringType())
    table = catalog.load_table("db.sales")
    more = _rows(100, 3, ["west"]).set_column(0, "id", pa.array(range(100), pa.int64()))
    table.append(more.append_column("note", pa.array(["x"] * 100)))
    shown = _run(capsys, "show", "db.sales", *common)
    assert shown["stale"] is True
    assert shown["columns_not_inherited"] == ["id"]
    assert [c["name"] for c in shown["columns"]] == ["region", "amount"]

    # dropped and added again under the same name and type: a new field id, no inheritance
    with table.update_schema() as update:
        update.delete_column("amount")
    with table.update_schema() as update:
        update.add_column("amount", DoubleType())
    table = catalog.load_table("db.sales")
    table.append(
        pa.table(
            {"id": pa.array([1], pa.int64()), "region": ["west"], "note": ["y"], "amount": [1.0]}
        )
    )
    shown = _run(capsys, "show", "db.sales", *common)
    assert shown["columns_not_inherited"] == ["id", "amount"]
    assert [c["name"] for c in shown["columns"]] == ["region"]

    # the table expires its first snapshot: lakestats drops version 1 and only its files
    table = catalog.load_table("db.sales")
    table.maintenance.expire_snapshots().by_id(s1).commit()
    root = str(Path(table.location().removeprefix("file://")) / "_lakestats")
    v1_only = _files(root, 1) - _files(root, 2)
    assert v1_only  # the east partition was recomputed in version 2
    dry = _run(capsys, "expire", "db.sales", "--dry-run", *common)
    assert dry["versions_removed"] == [1]
    assert all((Path(root) / f).exists() for f in v1_only)
    done = _run(capsys, "expire", "db.sales", *common)
    assert done["versions_removed"] == [1] and done["versions_kept"] == [2]
    assert not any((Path(root) / f).exists() for f in v1_only)
    assert all((Path(root) / f).exists() for f in _files(root, 2))
    assert StatisticsReader(StatisticsStore(str(root))).column_statistics("region=west", ["amount"])


def _files(root: str, version: int) -> set[str]:
    v = manifest.load_version(StatisticsStore(str(root)), version)
    return {p for e in v.partitions for p in e.files.values()} | set(v.table_files.values())


def test_sql_statements(spark, tmp_path: Path, capsys) -> None:
    warehouse = tmp_path / "wh"
    catalog = load_catalog(warehouse=str(warehouse))
    catalog.create_namespace("db")
    data = _rows(300, 5, ["a", "b"])
    catalog.create_table("db.t", schema=data.schema).append(data)
    common = ["--warehouse", str(warehouse), "--json"]
    noscan = _run(capsys, "sql", "ANALYZE TABLE db.t COMPUTE STATISTICS NOSCAN", *common)
    assert noscan["kind"] == "noscan" and noscan["merged_record_count"] == 300
    columns = _run(
        capsys, "sql", "analyze table db.t compute statistics for columns id, `amount`", *common
    )
    assert columns["kind"] == "full"
    shown = _run(capsys, "show", "db.t", *common)
    assert [c["name"] for c in shown["columns"]] == ["id", "amount"]
    _run(capsys, "sql", "ANALYZE TABLE db.t COMPUTE STATISTICS FOR ALL COLUMNS", *common)
    counts = _run(capsys, "sql", "ANALYZE TABLE db.t COMPUTE STATISTICS", *common)
    assert counts["merged_record_count"] == 300
    shown = _run(capsys, "show", "db.t", *common)  # counts-only version keeps column stats
    assert [c["name"] for c in shown["columns"]] == ["id", "region", "amount"]
    assert cli.main(["sql", "SELECT 1", "--warehouse", str(warehouse)]) == 2
    assert "only ANALYZE TABLE" in capsys.readouterr().err


def test_two_analyses_at_once_stay_consistent(tmp_path: Path) -> None:
    root = tmp_path / "t"
    for p in range(6):
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(_rows(5000, p, ["x", "y"]), root / f"p={p}" / "d.parquet")
    env = {**os.environ, "LAKESTATS_SPARK_MASTER": "local[1]"}
    command = [sys.executable, "-m", "lakestats.cli", "analyze", str(root), "--json"]
    processes = [
        subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outcomes = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in processes]
    assert any(code == 0 for code, _, _ in outcomes)
    for code, _, err in outcomes:
        if code != 0:
            assert "another analyze published" in err.strip().splitlines()[-1]
    stats = str(root / "_lakestats")
    numbers = manifest.version_numbers(StatisticsStore(str(stats)))
    assert numbers == list(range(1, len(numbers) + 1))
    for number in numbers:
        version = manifest.load_version(StatisticsStore(str(stats)), number)
        for relative in [p for e in version.partitions for p in e.files.values()]:
            assert Path(layout.absolute(stats, relative)).is_file()
    reader = StatisticsReader(StatisticsStore(str(stats)))
    assert reader.version.version == numbers[-1]
    assert reader.version.merged_record_count == 30_000


@pytest.mark.parametrize("path", ["one_task", "spark_stages"])
def test_incremental_reduction_reuses_group_caches_and_equals_a_full_one(
    spark,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    """After one partition of many changes, the reduction recomputes that partition's group
    and reads the other groups' caches, and its table files equal a from-scratch analyze
    (with the one-task reduction and with the staged Spark one)."""
    from lakestats.compute.reduce import local as reduce_local

    if path == "spark_stages":
        monkeypatch.setattr(reduce_local, "LOCAL_CELLS", 0)
    import pyarrow.parquet as pq

    import lakestats.api as ls
    from lakestats.store import manifest
    from lakestats.store.expire import plan_expiry

    root = tmp_path / "t"
    rng = np.random.default_rng(3)
    for p in range(20):
        n = 300
        part = pa.table(
            {
                "v": pa.array(rng.zipf(1.5, n) % 5000, pa.int64()),
                "s": pa.array([f"c{x}" for x in rng.integers(0, 40, n)]),
                "f": pa.array(rng.normal(0, 1, n)),
            }
        )
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(part, root / f"p={p}" / "d.parquet")
    stats = str(tmp_path / "stats")
    ls.open_table(str(root), stats_root=stats).analyze(spark=spark, max_frequencies=50)
    first = manifest.load_version(StatisticsStore(str(stats)), None)
    pq.write_table(
        pq.read_table(root / "p=7" / "d.parquet").slice(0, 40), root / "p=7" / "e.parquet"
    )
    from lakestats.compute.analyze import run as analyze

    fused = []  # the one changed partition is computed in the reduction's Spark task
    compute_and_reduce = analyze.compute_and_reduce
    monkeypatch.setattr(
        analyze, "compute_and_reduce", lambda *a: fused.append(1) or compute_and_reduce(*a)
    )
    result = ls.open_table(str(root), stats_root=stats).analyze(spark=spark, max_frequencies=50)
    assert (result.partitions_computed, result.partitions_reused) == (1, 19)
    assert len(fused) == (1 if path == "one_task" else 0)
    assert manifest.load_version(StatisticsStore(str(stats)), None).row_count == 20 * 300 + 40
    second = manifest.load_version(StatisticsStore(str(stats)), None)
    old, new = first.extra["reduce_cache"], second.extra["reduce_cache"]
    reused = set(old.items()) & set(new.items())
    assert len(new) == len(old) and 0 < len(reused) < len(new)  # one group's entries changed
    fresh = str(tmp_path / "fresh")
    ls.open_table(str(root), stats_root=fresh).analyze(spark=spark, max_frequencies=50)
    for kind in ("statistics", "frequencies", "histograms"):
        got = pq.read_table(f"{stats}/{second.table_files[kind]}").to_pylist()
        want = pq.read_table(
            f"{fresh}/{manifest.load_version(StatisticsStore(str(fresh)), None).table_files[kind]}"
        )
        for mine, theirs in zip(got, want.to_pylist(), strict=True):
            if kind == "statistics":
                # KLL compaction flips coins: merged sketches (and the percentiles read
                # from them where values were not all listed) differ from run to run
                sketched = (
                    []
                    if mine["percentiles_exact"]
                    else [k for k in mine if re.fullmatch(r"p\d\d", k)]
                )
                for name in ("kll_sketch", *sketched):
                    mine.pop(name), theirs.pop(name)
            assert mine == theirs, kind
    # once the first version is gone, its own files go, but not the caches the second
    # version reuses (written by the first run)
    os.remove(f"{stats}/{layout.version_path(1)}")
    removed = set(
        plan_expiry(StatisticsStore(str(stats)), None, orphan_age_seconds=0).files_removed
    )
    assert set(old.values()) - set(new.values()) <= removed
    assert first.table_files["statistics"] in removed
    assert not removed & set(new.values())


def test_snapshot_lookups_read_one_manifest_and_fall_back_without_markers(
    spark,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Which version describes a snapshot comes from the marker listing; a lookup reads the
    latest manifest and the chosen one only. Without markers (older roots) the manifests
    are read and the answer is the same; expiry removes a dropped version's marker."""
    import shutil

    from deltalake import write_deltalake

    import lakestats.api as ls
    from lakestats.formats import open_table
    from lakestats.store import layout
    from lakestats.store.expire import ExpirePlan, apply_expiry

    path = str(tmp_path / "t")
    stats = str(tmp_path / "stats")
    rows = pa.table({"region": ["east", "west"] * 50, "v": list(range(100))})
    write_deltalake(path, rows, partition_by=["region"])
    ls.open_table(path, stats_root=stats).analyze(spark=spark)  # version 1: snapshot 0
    write_deltalake(path, rows, mode="append")
    ls.open_table(path, stats_root=stats).analyze(spark=spark)  # version 2: snapshot 1
    write_deltalake(path, rows, mode="append")  # snapshot 2: no version of its own
    table = open_table(path)

    loads: list[int | None] = []
    load_version = manifest.load_version

    def counting(root: object, version: int | None = None) -> manifest.Version:
        loads.append(version)
        return load_version(root, version)

    monkeypatch.setattr(manifest, "load_version", counting)
    answers = {}
    for snapshot in (0, 1, 2):
        loads.clear()
        answers[snapshot] = ls.version_for_snapshot(
            StatisticsStore(str(stats)), table, snapshot
        ).version
        assert len(loads) <= 2, (snapshot, loads)
    assert answers == {0: 1, 1: 2, 2: 2}

    shutil.rmtree(layout.absolute(stats, layout.SNAPSHOT_MARKERS))
    for snapshot, want in answers.items():
        assert ls.version_for_snapshot(StatisticsStore(str(stats)), table, snapshot).version == want

    monkeypatch.setattr(manifest, "load_version", load_version)
    write_deltalake(path, rows, mode="append")
    ls.open_table(path, stats_root=stats).analyze(spark=spark)  # version 3, with a marker
    apply_expiry(StatisticsStore(str(stats)), ExpirePlan(versions_removed=[3]))
    assert not (Path(stats) / layout.SNAPSHOT_MARKERS).exists() or not list(
        (Path(stats) / layout.SNAPSHOT_MARKERS).iterdir()
    )
    assert manifest.version_numbers(StatisticsStore(str(stats))) == [1, 2]
