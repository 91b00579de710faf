"""Nothing redone: re-analyzing an unchanged table publishes nothing and starts no Spark; a
new snapshot that changed no data file gets a version sharing the earlier files, also
without Spark; a real change still runs the job. References: the table's own snapshots
(deltalake), the statistics root's listing, DuckDB over the data."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

import lakestats.api as ls
from lakestats import cli
from lakestats.compute import session

pytestmark = pytest.mark.spark


def _no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(session, "get_spark", refuse)


def _versions(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "versions").iterdir())


def test_unchanged_parquet_table_publishes_nothing(spark, tmp_path: Path, capsys, monkeypatch):
    table = tmp_path / "t"
    for p in range(3):
        (table / f"p={p}").mkdir(parents=True)
        pq.write_table(pa.table({"n": list(range(p, 100 + p))}), table / f"p={p}" / "d.parquet")
    first = ls.open_table(str(table)).analyze(spark=spark)
    root = table / "_lakestats"
    before = _versions(root)
    _no_spark(monkeypatch)
    again = ls.open_table(str(table)).analyze()
    assert again.unchanged and again.version == first.version
    assert (again.partitions_computed, again.partitions_reused) == (0, 3)
    assert _versions(root) == before
    capsys.readouterr()
    assert cli.main(["analyze", str(table)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [
        f"nothing to analyze: statistics version {first.version} already describes snapshot "
        "None (3 partitions, 300 rows, none changed)"
    ]
    # other options shape other files: computed again (with Spark)
    monkeypatch.undo()
    other = ls.open_table(str(table)).analyze(spark=spark, bins=10)
    assert not other.unchanged and other.partitions_computed == 3


def test_a_commit_without_data_changes_inherits_without_spark(spark, tmp_path: Path, capsys,
                                                             monkeypatch) -> None:
    path = str(tmp_path / "d")
    rows = pa.table({"k": ["a", "b"] * 50, "n": list(range(100))})
    write_deltalake(path, rows, partition_by=["k"])
    first = ls.open_table(path).analyze(spark=spark)
    DeltaTable(path).alter.set_table_properties({"delta.appendOnly": "false"})  # version 1
    assert DeltaTable(path).version() == 1
    _no_spark(monkeypatch)
    inherited = ls.open_table(path).analyze()
    assert not inherited.unchanged and inherited.version == first.version + 1
    assert (inherited.snapshot_id, inherited.partitions_computed) == (1, 0)
    level = ls.open_table(path).table_statistics()
    assert not level.stale and level.staleness.statistics_snapshot_id == 1
    con = duckdb.connect()
    con.register("t", rows)
    (distinct,) = con.execute("SELECT count(DISTINCT n) FROM t").fetchone()
    [n] = [c for c in level.columns if c["column"] == "n"]
    assert n["distinct_count"] == distinct
    stored = json.loads(
        (Path(path) / "_lakestats" / "versions" / f"v{inherited.version:08d}.json").read_text()
    )
    assert stored["extra"]["inherited_from"] == first.version
    assert ls.open_table(path).analyze().unchanged  # and now: nothing at all
    # new data: the job runs again (Spark), only for the changed partition
    monkeypatch.undo()
    write_deltalake(path, rows.slice(0, 1), mode="append", partition_by=["k"])
    changed = ls.open_table(path).analyze(spark=spark)
    assert (changed.partitions_computed, changed.partitions_reused) == (1, 1)
