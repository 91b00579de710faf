"""Statistics of a predicate (``analyze --where``): computed on Spark over the partitions
that can match, stored as a derived entry, then looked up without Spark. Compared with
DuckDB over the same rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.errors import ColumnNotFoundError, InvalidPredicateError, StatisticsNotFoundError
from lakestats.store import derived, manifest
from lakestats.store.handle import StatisticsStore
from tests.query.test_estimate import _partition

pytestmark = pytest.mark.spark

WHERE = "u >= 100000 AND (i < 250 OR s LIKE 'apple%')"
SAME = "(s LIKE 'apple%' OR i < 250) AND NOT (u < 100000)"  # the same, spelled otherwise


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory: pytest.TempPathFactory):
    from deltalake import write_deltalake

    path = tmp_path_factory.mktemp("derived") / "t"
    rng = np.random.default_rng(3)
    parts = [
        _partition(rng, n, shift)
        .select(["i", "f", "s", "small", "u"])
        .append_column("part", pa.array([f"p{shift}"] * n))
        for shift, n in enumerate((1500, 700, 300))
    ]
    data = pa.concat_tables(parts)
    write_deltalake(str(path), data, partition_by=["part"])
    handle = ls.open_table(str(path))
    handle.analyze(spark=spark, bins=16, max_frequencies=30)
    con = duckdb.connect()
    con.register("t", data)
    return path, handle, con


def test_analyze_where_then_lookup(table, spark, capsys) -> None:
    path, handle, con = table
    before = handle.history().to_json()
    result = handle.analyze(spark=spark, where=WHERE, bins=16, max_frequencies=30)
    # p0 holds u < 100000 only: pruned by max, never read
    assert (result.partitions_computed, result.partitions_reused) == (2, 0)
    true = con.execute(f"SELECT count(*) FROM t WHERE {WHERE}").fetchone()[0]
    assert result.row_count == true
    # the table's own statistics stay as they were; history lists the derived entry
    after = ls.open_table(str(path)).history().to_json()
    assert [v for v in after if v.get("kind") != "derived"] == before
    entries = [v for v in after if v.get("kind") == "derived"]
    assert len(entries) == 1 and entries[0]["row_count"] == true
    assert entries[0]["snapshot_id"] == before[-1]["snapshot_id"]

    fresh = ls.open_table(str(path))
    for where in (WHERE, SAME):
        shown = fresh.stats(["i", "s", "f"], where=where).to_json()
        assert shown["derived"] is True
        assert shown["table"]["row_count"] == true
        i, s, f = shown["table"]["columns"]
        lo, hi, nulls, ndv = con.execute(
            f"SELECT min(i), max(i), count(*) - count(i), count(DISTINCT s) FROM t WHERE {WHERE}"
        ).fetchone()
        assert (i["min"], i["max"], i["null_count"], s["distinct_count"]) == (lo, hi, nulls, ndv)
        per_part = dict(
            con.execute(f"SELECT part, count(*) FROM t WHERE {WHERE} GROUP BY part").fetchall()
        )
        got = {p["partition"]["part"]: p["row_count"] for p in shown["partitions"]}
        assert got == per_part
        estimate = fresh.estimate(where).to_json()
        assert estimate["derived"] and estimate["exact"]
        assert (estimate["row_count"], estimate["lower"], estimate["upper"]) == (true,) * 3
    # a predicate not analyzed is still pruned and estimated from the table's statistics
    other = fresh.stats(["i"], where="u >= 100000").to_json()
    assert "derived" not in other
    assert other["table"]["partitions_matched"] == 2

    # CLI: the same lookup as JSON, and history
    assert cli.main(["stats", str(path), "--columns", "i", "--where", SAME, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["derived"] is True
    assert cli.main(["history", str(path), "--json"]) == 0
    assert any(v.get("kind") == "derived" for v in json.loads(capsys.readouterr().out))

    # the lookup starts no Spark: a fresh interpreter, no Java, pyspark never imported
    code = (
        "import json, sys; import lakestats.api as ls; "
        f"r = ls.open_table({str(path)!r}).stats(['i'], where={SAME!r}).to_json(); "
        "e = ls.open_table(" + repr(str(path)) + f").estimate({WHERE!r}).to_json(); "
        "print(json.dumps([r['derived'], r['table']['row_count'], e['row_count'], "
        "'pyspark' in sys.modules]))"
    )
    env = {**os.environ, "JAVA_HOME": "/nonexistent", "PYTHONPATH": str(Path.cwd())}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [True, true, true, False]

    # expire: derived versions go with the snapshot no kept version references
    stats_root = handle.stats_root
    assert derived.expire(StatisticsStore(stats_root), {before[-1]["snapshot_id"]}) == []
    removed = derived.expire(StatisticsStore(stats_root), {12345})
    assert len(removed) == 1
    assert ls.open_table(str(path)).stats(["i"], where=WHERE).derived_predicate is None
    assert not [v for v in ls.open_table(str(path)).history() if v.kind == "derived"]
    assert manifest.load_version(StatisticsStore(str(stats_root))).version == before[-1]["version"]


def test_analyze_where_errors(table, spark, capsys) -> None:
    path, handle, _ = table
    with pytest.raises(ColumnNotFoundError, match="unknown column 'nope'"):
        handle.analyze(spark=spark, where="nope = 1")
    with pytest.raises(InvalidPredicateError, match="'abc'"):
        handle.analyze(spark=spark, where="i = 'abc'")
    code = cli.main(["analyze", str(path), "--where", "i = 'abc'"])
    assert code != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("lakestats: error:") and "\n" not in err
    assert not (Path(handle.stats_root) / derived.DERIVED_DIR).exists() or all(
        (Path(handle.stats_root) / derived.DERIVED_DIR / k / "predicate.json").exists()
        for k in os.listdir(Path(handle.stats_root) / derived.DERIVED_DIR)
    )


def test_never_analyzed_where(tmp_path: Path, capsys) -> None:
    root = tmp_path / "t" / "part=a"
    root.mkdir(parents=True)
    pa.parquet.write_table(pa.table({"x": [1, 2]}), root / "d.parquet")
    for command in (["stats", "--columns", "x"], ["estimate"]):
        code = cli.main([command[0], str(tmp_path / "t"), *command[1:], "--where", "x > 1"])
        assert code != 0
        err = capsys.readouterr().err.strip()
        assert err.startswith("lakestats: error:") and "\n" not in err
        assert "analyze" in err
    with pytest.raises(StatisticsNotFoundError):
        ls.open_table(str(tmp_path / "t")).stats(["x"], where="x > 1")


def test_changed_partition_is_not_pruned_by_old_statistics(spark, tmp_path: Path) -> None:
    """A directory table has no snapshots: a partition whose files changed since the last
    analyze is analyzed even if its old statistics say it cannot match."""
    root = tmp_path / "t"
    for part, values in (("a", [1, 2, 3]), ("b", [10, 20])):
        (root / f"part={part}").mkdir(parents=True)
        pa.parquet.write_table(pa.table({"x": values}), root / f"part={part}" / "d.parquet")
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark)
    # (a fingerprint is path, size and row count of each file: this rewrite changes them)
    pa.parquet.write_table(pa.table({"x": [10, 11, 12, 13]}), root / "part=a" / "d.parquet")
    result = handle.analyze(spark=spark, where="x >= 10")
    assert result.partitions_computed == 2
    assert result.row_count == 6  # 10 to 13 in a (new data) + 10, 20 in b
    # no snapshots: the lookup returns the newest derived analysis
    assert handle.stats(["x"], where="x >= 10").row_count == 6
