"""The facade's whole surface and what it rests on.

* ``expire``, ``export_paimon``, ``sql`` and ``statistics(snapshot=)`` on the facade,
  checked against the statistics root's own files, pyarrow's reading of the data, the
  format's own library and the CLI's answer.
* ``lakestats.cli`` imports only the facade (and the faces it starts: the service, Spark's
  catalog registration, previews), never ``store``/``compute``/``formats``/``stats``/``query``.
* The stored vocabularies (``FileKind``, ``VersionKind``, ``TaskOutcome``) are the strings
  on disk; the ``FORMATS`` registry opens every format; Spark errors are one line
  (``spark_errors.py``); a missing snapshot is ``SnapshotNotFoundError`` in every format.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lakestats
import lakestats.api as ls
from lakestats import cli
from lakestats.compute.outcome import TaskOutcome
from lakestats.errors import LakestatsError, SnapshotNotFoundError
from lakestats.formats import FORMATS, detect_format
from lakestats.store.kinds import FileKind, VersionKind

BOGUS_SNAPSHOT = 987_654_321


def _write_parquet_dir(root: Path) -> pa.Table:
    """Two hive partitions; returns the whole table (partition column included)."""
    parts = {
        "east": {"amount": [1.5, 2.5, 2.5, None], "item": ["a", "b", "b", "c"]},
        "west": {"amount": [7.0, None, None], "item": ["c", "d", "e"]},
    }
    for region, data in parts.items():
        (root / f"region={region}").mkdir(parents=True)
        pq.write_table(pa.table(data), root / f"region={region}" / "part-0.parquet")
    return pq.read_table(root)


@pytest.fixture(scope="module")
def analyzed(spark, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("facade") / "sales"
    whole = _write_parquet_dir(path)
    table = ls.open_table(str(path))
    table.analyze(spark=spark)
    return path, table, whole


def _manifest(root: str, number: int) -> dict:
    return json.loads((Path(root) / "versions" / f"v{number:08d}.json").read_text())


# -- the facade -------------------------------------------------------------------------


def test_cli_imports_only_the_facade() -> None:
    trees = [ast.parse(p.read_text()) for p in Path(cli.__file__).parent.glob("*.py")]
    imported: set[str] = set()
    for node in (node for tree in trees for node in ast.walk(tree)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "lakestats":
                imported |= {f"lakestats.{alias.name}" for alias in node.names}
            else:
                imported.add(node.module)
    ours = {name for name in imported if name.split(".")[0] == "lakestats"}
    ours = {name for name in ours if not name.startswith("lakestats.cli")}  # its own modules
    assert "lakestats.api" in ours
    below = ("store", "compute", "formats", "stats", "query")
    assert not [n for n in ours if n.split(".")[1] in below], sorted(ours)
    assert ours <= {
        "lakestats.api",
        "lakestats.answers",  # the facade's typed answers, rendered here
        "lakestats.display",  # how figures read in text
        "lakestats.lazy",  # the answers module, loaded when a text view first needs it
        "lakestats.config",  # settings: environment, file, flags
        "lakestats.errors",
        "lakestats.options",  # AnalyzeOptions/SampleOptions: the flags are derived from them
        "lakestats.preview",
        "lakestats.spark",
        "lakestats.service.config",
        "lakestats.service.server",
        "lakestats.service.tokens",  # `lakestats token`: a new secret and its hash
    }, sorted(ours)


def test_public_surface_is_lazy() -> None:
    """``import lakestats`` gives the errors at once and the facade on first use, without
    loading the facade (or pandas, Spark) before it is asked for."""
    code = (
        "import sys, json, lakestats\n"
        "before = 'lakestats.api' in sys.modules\n"
        "t = lakestats.open_table\n"
        "print(json.dumps([before, t is __import__('lakestats.api').api.open_table,\n"
        "    issubclass(lakestats.SnapshotNotFoundError, lakestats.LakestatsError),\n"
        "    'pandas' in sys.modules, 'pyspark' in sys.modules]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(lakestats.__file__).parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [False, True, True, False, False]
    assert set(lakestats.__all__) >= {"open_table", "LakestatsTable", "LakestatsError", "sql"}
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = lakestats.no_such_name


@pytest.mark.spark
def test_export_paimon_matches_the_stored_files(analyzed, capsys) -> None:
    path, table, whole = analyzed
    exported = table.export_paimon()
    versions = (Path(table.stats_root) / "versions").glob("v*.json")
    latest = max(int(p.stem[1:]) for p in versions)
    stored = _manifest(table.stats_root, latest)
    assert exported["snapshotId"] == stored["snapshot_id"]
    assert exported["mergedRecordCount"] == stored["merged_record_count"] == whole.num_rows
    item, amount = whole.column("item").to_pylist(), whole.column("amount")
    assert exported["colStats"]["item"] == {
        "distinctCount": len(set(item)),
        "min": min(item),
        "max": max(item),
        "nullCount": 0,
        "avgLen": 1,
        "maxLen": 1,
    }
    assert exported["colStats"]["amount"]["nullCount"] == amount.null_count
    values = [v for v in amount.to_pylist() if v is not None]
    assert float(exported["colStats"]["amount"]["max"]) == max(values)
    # the CLI prints the same document
    assert cli.main(["export-paimon", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == exported


@pytest.mark.spark
def test_expire_removes_only_orphans_the_versions_do_not_reference(analyzed) -> None:
    path, table, _ = analyzed
    root = Path(table.stats_root)
    orphan = root / "partitions" / "region=gone" / "killed-run" / "statistics.parquet"
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"left by a killed run")
    old = time.time() - 3600
    os.utime(orphan, (old, old))

    dry = table.expire(dry_run=True, orphan_age_minutes=1).to_json()
    assert orphan.exists() and dry["dry_run"] is True
    assert dry["files_removed"] == 1 and dry["versions_removed"] == []

    done = table.expire(orphan_age_minutes=1).to_json()
    assert not orphan.exists()
    assert {k: v for k, v in done.items() if k != "dry_run"} == {
        k: v for k, v in dry.items() if k != "dry_run"
    }
    # a Parquet directory has no snapshots: every version stays, with all its files
    for number in done["versions_kept"]:
        stored = _manifest(str(root), number)
        for entry in stored["partitions"]:
            assert all((root / rel).is_file() for rel in entry["files"].values())
    with pytest.raises(LakestatsError, match="--retain-last must be at least 1"):
        table.expire(0)


def test_sql_noscan_counts_rows_from_metadata(tmp_path: Path) -> None:
    path = tmp_path / "t"
    whole = _write_parquet_dir(path)
    root = tmp_path / "stats"
    result = ls.sql(f"ANALYZE TABLE `{path}` COMPUTE STATISTICS NOSCAN", stats_root=str(root))
    assert result.merged_record_count == whole.num_rows
    assert result.to_json() == {
        "kind": "noscan",
        "version": result.version,
        "snapshot_id": None,
        "message": result.message,
        "merged_record_count": whole.num_rows,
    }
    stored = _manifest(str(root), result.version)
    assert stored["kind"] == "noscan" == VersionKind.NOSCAN
    assert stored["merged_record_count"] == whole.num_rows
    with pytest.raises(LakestatsError, match="only ANALYZE TABLE"):
        ls.sql("SELECT 1")


@pytest.mark.spark
def test_statistics_at_a_snapshot(spark, tmp_path: Path, capsys) -> None:
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path / "delta")
    first = pa.table({"p": ["x", "x", "y"], "v": [1, None, 3]})
    write_deltalake(path, first, partition_by=["p"])
    table = ls.open_table(path, stats_root=str(tmp_path / "stats"))
    table.analyze(spark=spark)
    write_deltalake(path, pa.table({"p": ["x", "y"], "v": [None, None]}), mode="append")
    table.analyze(spark=spark)
    assert DeltaTable(path).version() == 1

    [at_zero] = table.statistics(columns=["v"], snapshot=0)
    assert (at_zero["row_count"], at_zero["null_count"]) == (3, 1)
    [latest] = table.statistics(columns=["v"])
    assert (latest["row_count"], latest["null_count"]) == (5, 3)
    [x_at_zero] = table.statistics("p=x", ["v"], snapshot=0)
    assert (x_at_zero["row_count"], x_at_zero["null_count"]) == (2, 1)
    # a typed answer: which partition and version it describes, read-only rows, the same
    # JSON as `show --partition` and an Arrow table pyarrow's own counts agree with
    at_x = table.statistics({"p": "x"}, ["v"])
    assert (at_x.partition, at_x.version, len(at_x)) == ("p=x", 2, 1)
    with pytest.raises(TypeError):
        at_x[0]["null_count"] = 0  # type: ignore[index]
    assert (
        at_x.to_json()["columns"] == table.partition_statistics("p=x", ["v"]).to_json()["columns"]
    )
    x_rows = pa.concat_tables([first, pa.table({"p": ["x"], "v": pa.array([None], pa.int64())})])
    x_rows = x_rows.filter(pc.equal(x_rows["p"], "x"))
    assert at_x.to_arrow().select(["name", "row_count", "null_count"]).to_pylist() == [
        {"name": "v", "row_count": x_rows.num_rows, "null_count": x_rows["v"].null_count}
    ]
    assert table.statistics(columns=["v"], snapshot=0).version == 1
    # the CLI's `show --snapshot 0` answers the same
    args = ["show", path, "--stats-root", table.stats_root, "--snapshot", "0", "--json"]
    assert cli.main([*args, "--columns", "v"]) == 0
    [shown] = json.loads(capsys.readouterr().out)["columns"]
    assert (shown["row_count"], shown["null_count"]) == (3, 1)
    with pytest.raises(SnapshotNotFoundError, match=str(BOGUS_SNAPSHOT)):
        table.statistics(snapshot=BOGUS_SNAPSHOT)



@pytest.mark.spark
def test_estimates_at_the_current_snapshot_read_no_manifest(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planner names the snapshot it reads in every question: the handle's own version
    answers it when it describes that snapshot (no manifest read per question), an earlier
    snapshot still gets its own version's answer; the counts are pyarrow's."""
    from deltalake import DeltaTable, write_deltalake

    from lakestats.store import manifest

    path = str(tmp_path / "delta")
    first = pa.table({"p": ["x", "x", "y"], "v": [1, None, 3]})
    write_deltalake(path, first, partition_by=["p"])
    table = ls.open_table(path, stats_root=str(tmp_path / "stats"))
    table.analyze(spark=spark)
    second = pa.table({"p": ["x", "y"], "v": pa.array([None, None], pa.int64())})
    write_deltalake(path, second, mode="append")
    table.analyze(spark=spark)
    current = DeltaTable(path).version()
    handle = ls.open_table(path, stats_root=str(tmp_path / "stats"))
    nulls = first["v"].null_count + second["v"].null_count
    assert handle.estimate("v IS NULL").row_count == nulls
    loads: list[object] = []
    load_version = manifest.load_version
    monkeypatch.setattr(manifest, "load_version", lambda *a: loads.append(a) or load_version(*a))
    for where in ("v IS NULL", "v IS NOT NULL", "v > 1"):
        answer = handle.estimate_many([where], snapshot_id=current)
        assert (answer.version, answer.snapshot_id) == (2, current)
    assert handle.estimate("v IS NULL", snapshot_id=current).row_count == nulls
    assert loads == []
    earlier = handle.estimate("v IS NULL", snapshot_id=0)
    assert (earlier.row_count, earlier.version) == (first["v"].null_count, 1)
    assert loads  # the earlier snapshot's version was looked up

# -- one name per concept ---------------------------------------------------------------


@pytest.mark.spark
def test_stored_kinds_are_the_strings_on_disk(analyzed) -> None:
    _, table, _ = analyzed
    stored = _manifest(table.stats_root, 1)
    assert stored["kind"] == VersionKind.FULL.value == "full"
    file_kinds = {FileKind.STATISTICS, FileKind.FREQUENCIES, FileKind.HISTOGRAMS}
    assert set(stored["table_files"]) == {k.value for k in file_kinds}
    for entry in stored["partitions"]:  # (format 6: the parts hold the other two kinds)
        assert set(entry["files"]) == {"statistics"}
        for kind, relative in entry["files"].items():
            assert relative.endswith(f"/{kind}.parquet")
    assert [k.value for k in VersionKind] == ["full", "noscan", "sampled", "derived"]
    assert [k.value for k in FileKind] == [
        "statistics", "frequencies", "histograms", "values", "groups"
    ]
    # the task summaries Spark carries (SUMMARY_SCHEMA's `kind`) keep their strings
    assert [o.value for o in TaskOutcome] == ["done", "partial", "error"]
    assert pa.array([TaskOutcome.DONE]).to_pylist() == ["done"]
    assert json.dumps({FileKind.VALUES: VersionKind.SAMPLED}) == '{"values": "sampled"}'


def _fixture_tables(fixtures_dir: Path) -> dict[str, str]:
    return {
        "iceberg": str(fixtures_dir / "iceberg" / "data/persistent/partition_integer"),
        "delta": str(fixtures_dir / "delta" / "delta-0.8.0-partitioned"),
        "hudi": str(fixtures_dir / "hudi" / "v6_trips_8i1u"),
        "paimon": str(
            fixtures_dir / "paimon" / "warehouse" / "default.db" / "test_pk_full_text_golden"
        ),
    }


def test_formats_registry_opens_every_format(
    fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(fixtures_dir / "iceberg")  # the Iceberg tables store relative locations
    tables = _fixture_tables(fixtures_dir)
    tables["parquet"] = str(tmp_path / "p")
    whole = _write_parquet_dir(tmp_path / "p")
    assert sorted(FORMATS) == sorted(tables)
    for name, path in tables.items():
        assert detect_format(path) == name
        opened = FORMATS[name](path, None)
        assert opened.format_name == name
        assert type(opened).__name__ == f"{name.capitalize()}TableFormat"
        assert type(ls.open_table(path).format) is type(opened)
    from deltalake import DeltaTable

    assert FORMATS["delta"](tables["delta"], None).current_snapshot_id() == (
        DeltaTable(tables["delta"]).version()
    )
    plans = FORMATS["parquet"](tables["parquet"], None).plan()
    assert {dict(p.key)["region"] for p in plans} == set(whole.column("region").to_pylist())


def test_missing_snapshot_is_snapshot_not_found_in_every_format(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(fixtures_dir / "iceberg")
    for name, path in _fixture_tables(fixtures_dir).items():
        opened = FORMATS[name](path, None)
        with pytest.raises(SnapshotNotFoundError, match=str(BOGUS_SNAPSHOT)) as caught:
            opened.plan(BOGUS_SNAPSHOT)
        assert "\n" not in str(caught.value), name
        with pytest.raises(SnapshotNotFoundError, match="is not a snapshot of"):
            ls.check_snapshot(opened, BOGUS_SNAPSHOT)


# -- Spark errors, one line ---------------------------------------------------------------


def _cli_without_java(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "JAVA_HOME": str(tmp_path / "no-java"),
        "PYTHONPATH": str(Path(lakestats.__file__).parents[1]),
        "LAKESTATS_SPARK_LOG": str(tmp_path / "spark.log"),
    }
    for name in ("LAKESTATS_SPARK_REMOTE", "LAKESTATS_SPARK_MASTER", "LAKESTATS_DEBUG"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "lakestats.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )


def test_a_jvm_that_does_not_start_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write_parquet_dir(path)
    run = _cli_without_java(
        [
            "sql",
            f"ANALYZE TABLE `{path}` COMPUTE STATISTICS FOR ALL COLUMNS",
            "--stats-root",
            str(tmp_path / "s"),
        ],
        tmp_path,
    )
    assert run.returncode == 2, run.stderr[-2000:]
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("lakestats: error: Spark did not start ("), line
    assert f"its log is {tmp_path / 'spark.log'}; lakestats needs Java 17" in line
    assert f"{tmp_path / 'no-java'}/bin/java" in (tmp_path / "spark.log").read_text()


@pytest.mark.spark
def test_a_spark_metastore_that_does_not_start_is_one_line(analyzed, tmp_path: Path) -> None:
    path, _, _ = analyzed
    run = _cli_without_java(
        ["spark-register", str(path), "--name", "sales", "--metastore", str(tmp_path / "m")],
        tmp_path,
    )
    assert run.returncode == 2, run.stderr[-2000:]
    # lakestats' one line is the last; this session (Hive support, its own builder) does not
    # send the JVM launcher's stderr to a log yet, so spark-class's complaint precedes it
    *launcher, line = run.stderr.strip().splitlines()
    assert not [other for other in launcher if other.startswith("lakestats")], launcher
    assert line.startswith("lakestats: error: Spark did not start ("), line
    assert line.endswith("or call lakestats.spark.register from your own session"), line


@pytest.mark.spark
def test_a_failed_spark_job_is_one_line(spark) -> None:
    from lakestats.spark_errors import spark_call

    with pytest.raises(LakestatsError) as caught:
        spark_call("the query failed", lambda: spark.sql("SELECT * FROM no_such_t").collect())
    message = str(caught.value)
    assert message.startswith("the query failed: ") and "\n" not in message
    assert type(caught.value) is LakestatsError
    assert "no_such_t" in str(caught.value.__cause__)
