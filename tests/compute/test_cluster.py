"""lakestats on a real Spark cluster and under Spark Connect equals lakestats on local[2].

* A standalone master with two workers (separate executor JVMs), the table and the
  statistics root on an S3-compatible server: ``analyze --master spark://...`` (slow).
* A Spark Connect server: ``analyze --remote sc://...``, then an incremental analyze through
  the Python API with progress on, from a client that cannot start a JVM.
* The job code stays Connect-clean: no ``sparkContext``, py4j or RDD outside an allow-list.

Each cluster run is a subprocess with its own driver; the reference is the same table
analyzed by the suite's local[2] session. Compared: every partition's and the table's
decoded statistics, full frequencies and histograms (``assert_same_statistics``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.compute.reduce import local as reduce_local
from lakestats.stats.keys import to_json
from lakestats.stats.percentiles import PERCENTILES
from lakestats.store import manifest
from lakestats.store.handle import StatisticsStore
from tests.conftest import mixed_table
from tests.spark_servers import (
    BUCKET,
    REPO,
    connect_server,
    executor_logs,
    moto_server,
    run_cli,
    run_python,
    s3_env,
    spark_env,
    standalone_cluster,
    upload,
)

pytestmark = pytest.mark.spark


def _part(rows: int, seed: int, noise_bytes: int) -> pa.Table:
    """``mixed_table`` plus an incompressible binary column that sets the file's size."""
    rng = np.random.default_rng(seed + 100)
    noise = [rng.bytes(noise_bytes) for _ in range(rows)]
    return mixed_table(rows, seed).append_column("noise", pa.array(noise, pa.binary()))


def _write_table(root: Path, sliced: bool = False) -> Path:
    """Three partitions, ``k=b`` in three files; ``sliced``: ~0.5 MB each, so
    ``--max-slice-mb 1`` splits ``k=b`` into slices whose states are staged and merged by a
    second stage."""
    rows, noise = (700, 700) if sliced else (150, 8)
    files = {"a": [(3 * rows // 2, 1, 8)], "b": [(rows, seed, noise) for seed in (2, 3, 4)]}
    files["c"] = [(rows // 4, 5, 8)]
    for key, parts in files.items():
        (root / f"k={key}").mkdir(parents=True)
        for i, (rows, seed, noise) in enumerate(parts):
            pq.write_table(_part(rows, seed, noise), root / f"k={key}" / f"part-{i}.parquet")
    return root


def _add_partition(root: Path, key: str) -> None:
    (root / f"k={key}").mkdir()
    pq.write_table(_part(300, 9, 8), root / f"k={key}" / "part-0.parquet")


def _whole(root: Path) -> pa.Table:
    return pads.dataset(root, format="parquet", partitioning="hive").to_table()


def _decoded(rows: list[dict]) -> list[dict]:
    return [{k: to_json(v) for k, v in row.items()} for row in rows]


def _rank_fraction(data: pa.Table, column: str, value: object) -> tuple[float, float]:
    """The fraction of the column's ordered values (no nulls, no NaN) below ``value`` and
    at or below it."""
    values = data.column(column).combine_chunks()
    if pa.types.is_floating(values.type):
        values = values.filter(pc.invert(pc.is_nan(values)))
    values = values.drop_null()
    probe = pa.array([value], type=values.type)[0]
    below = pc.sum(pc.less(values, probe)).as_py() or 0
    at_most = pc.sum(pc.less_equal(values, probe)).as_py() or 0
    return below / len(values), at_most / len(values)


def _check_sketched_percentiles(row: dict, data: pa.Table) -> None:
    """Percentiles from merged KLL sketches (randomized, so two runs differ): the rank of
    each lies within twice the reported normalized rank error of its percentile."""
    error = row["percentile_rank_error"]
    assert row["column"] in data.column_names, f"{row['column']}: sketched nested leaf"
    for p in PERCENTILES:
        low, high = _rank_fraction(data, row["column"], row[f"p{p:02d}"])
        assert low - 2 * error <= p / 100 <= high + 2 * error, (row["column"], p, low, high)


def assert_same_statistics(
    mine: ls.LakestatsTable, reference: ls.LakestatsTable, data: pa.Table
) -> None:
    """Same partitions, and for every partition and the table: the same decoded statistics
    of every column, the same full frequencies and the same histogram bins. Table-level
    percentiles from KLL sketches (not exact) are checked against ``data`` instead."""
    ours, theirs = mine.partitions(), reference.partitions()
    assert [(p.name, p.row_count) for p in ours] == [(p.name, p.row_count) for p in theirs]
    assert sum(p.row_count for p in ours) == data.num_rows > 0
    histograms = sketched = 0
    for partition in [None, *(p.name for p in theirs)]:
        expected = reference.statistics(partition)
        got = mine.statistics(partition)
        assert [r["column"] for r in got] == [r["column"] for r in expected]
        for row, want in zip(map(dict, got), map(dict, expected), strict=True):
            if want["percentiles_exact"] is False:
                sketched += 1
                for stats in (row, want):
                    _check_sketched_percentiles(stats, data)
                    for p in PERCENTILES:
                        stats.pop(f"p{p:02d}")
            assert _decoded([row]) == _decoded([want]), (partition, want["column"])
            column = want["column"]
            freq = reference.frequencies(column, partition)
            assert _decoded_pairs(mine.frequencies(column, partition)) == _decoded_pairs(freq)
            if want["histogram_bins"] is not None:
                bins = reference.histogram(column, partition).rows()
                assert _decoded(mine.histogram(column, partition).rows()) == _decoded(bins)
                histograms += 1
    assert histograms > 10  # numeric, decimal and temporal columns at both levels
    assert sketched < len(expected)  # some table-level percentiles are exact


EXACT = ["--exact", "--max-frequencies", "20"]
"""Exact table level; partitions list at most 20 values, so most columns are staged and
merged by key range."""


def assert_same_ranks(mine: ls.LakestatsTable, reference: ls.LakestatsTable) -> None:
    """Every exact column's quantiles, and the rank of each, equal the reference's (both
    read from the rank files each run wrote)."""
    checked = 0
    for row in reference.statistics(None):
        if not row.get("percentiles_exact") or "." in row["column"]:
            continue
        column = row["column"]
        for p in (0.0, 0.01, 0.25, 0.5, 0.9, 1.0):
            value = reference.quantile(column, p).value
            assert to_json(mine.quantile(column, p).value) == to_json(value), (column, p)
            assert mine.rank(column, value) == reference.rank(column, value), (column, p)
        checked += 1
    assert checked >= 3


def _decoded_pairs(pairs: list) -> list:
    return [tuple(to_json(v) for v in pair) for pair in pairs]


@pytest.mark.slow
@pytest.mark.s3
def test_standalone_cluster_with_s3_equals_local(spark, tmp_path: Path, monkeypatch) -> None:
    """``analyze --exact --master spark://...`` on two workers, table and statistics on S3,
    through sliced partitions, the staged (multi-stage, shuffling) table-level reduction and
    the exact step (executors write the rank parts and frequency runs to S3)."""
    table = _write_table(tmp_path / "t", sliced=True)
    with moto_server(tmp_path / "moto") as s3:
        remote = upload(s3, table, "tables/t")
        root = f"s3://{BUCKET}/stats/t"
        with standalone_cluster(tmp_path / "cluster") as master:
            env = spark_env(
                LAKESTATS_DRIVER_MEMORY="1g",
                # start tasks once both executors are registered, so both do work
                PYSPARK_SUBMIT_ARGS="--conf spark.scheduler.minRegisteredResourcesRatio=1.0 "
                "--conf spark.scheduler.maxRegisteredResourcesWaitingTime=120s pyspark-shell",
                **s3_env(s3),
            )
            run = run_cli(
                ["analyze", remote, "--stats-root", root, "--master", master,
                 "--max-slice-mb", "1", *EXACT, "--json"],
                env,
                local_cells=0,
            )
            assert run.returncode == 0, run.stderr[-3000:]
        logs = executor_logs(tmp_path / "cluster")
        assert len(logs) == 2, logs  # one executor JVM per worker
        for log in logs:
            assert "Finished task" in log.read_text(errors="replace"), log
        summary = json.loads(run.stdout)
        assert summary["partitions_computed"] == 3

        monkeypatch.setattr(reduce_local, "LOCAL_CELLS", 0)
        reference = ls.open_table(str(table), stats_root=str(tmp_path / "local"))
        reference.analyze(spark=spark, max_slice_bytes=1 << 20, exact=True, max_frequencies=20)
        clustered = ls.open_table(remote, stats_root=root, s3=s3)
        assert_same_statistics(clustered, reference, _whole(table))
        assert_same_ranks(clustered, reference)
        (tmp_path / "seconds").write_text(f"cluster analyze {run.seconds:.1f} s\n")


_INCREMENTAL = """
import json, sys
import lakestats.api as ls
result = ls.open_table(sys.argv[1], stats_root=sys.argv[2]).analyze(progress=True)
print(json.dumps({"computed": result.partitions_computed, "reused": result.partitions_reused}))
"""


def test_analyze_through_spark_connect_equals_local(spark, tmp_path: Path, monkeypatch) -> None:
    """``analyze --remote sc://...`` (staged reduction), then one new partition analyzed
    incrementally through ``LAKESTATS_SPARK_REMOTE`` with progress on (the fused one-task
    path); the client has no Java, so it cannot have fallen back to a local JVM."""
    table = _write_table(tmp_path / "t")
    root, here = str(tmp_path / "connect-stats"), str(tmp_path / "local-stats")
    no_jvm = {"JAVA_HOME": str(tmp_path / "no-java"), "LAKESTATS_DRIVER_MEMORY": "1g"}
    with connect_server(tmp_path / "server") as url:
        first = run_cli(
            ["analyze", str(table), "--stats-root", root, "--remote", url, "--json"],
            spark_env(**no_jvm),
            local_cells=0,
        )
        assert first.returncode == 0, first.stderr[-3000:]
        assert json.loads(first.stdout)["partitions_computed"] == 3
        monkeypatch.setattr(reduce_local, "LOCAL_CELLS", 0)
        ls.open_table(str(table), stats_root=here).analyze(spark=spark)
        monkeypatch.undo()

        _add_partition(table, "d")
        second = run_python(
            _INCREMENTAL, [str(table), root], spark_env(LAKESTATS_SPARK_REMOTE=url, **no_jvm)
        )
        assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads(second.stdout) == {"computed": 1, "reused": 3}
    reference = ls.open_table(str(table), stats_root=here)
    reference.analyze(spark=spark)
    assert_same_statistics(ls.open_table(str(table), stats_root=root), reference, _whole(table))
    (tmp_path / "seconds").write_text(f"connect analyze {first.seconds:.1f} s\n")


def test_exact_through_spark_connect_equals_local(spark, tmp_path: Path, monkeypatch) -> None:
    """``analyze --exact --remote sc://...``, then a partition added and ``--exact`` again
    through the same server (incremental: the previous ranks plus the new partition): the
    exact table level (distinct counts, every frequency, histograms, ranks and quantiles)
    equals the table analyzed ``--exact`` on local[2]; the client has no Java."""
    table = _write_table(tmp_path / "t")
    root, here = str(tmp_path / "connect-stats"), str(tmp_path / "local-stats")
    no_jvm = {"JAVA_HOME": str(tmp_path / "no-java"), "LAKESTATS_DRIVER_MEMORY": "1g"}
    argv = ["analyze", str(table), "--stats-root", root, *EXACT, "--json"]
    with connect_server(tmp_path / "server") as url:
        first = run_cli([*argv, "--remote", url], spark_env(**no_jvm), local_cells=0)
        assert first.returncode == 0, first.stderr[-3000:]
        _add_partition(table, "d")
        second = run_cli([*argv, "--remote", url], spark_env(**no_jvm), local_cells=0)
        assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads(second.stdout)["partitions_computed"] == 1
    report = manifest.load_version(StatisticsStore(str(root))).extra["exact"]
    assert (report["incremental"], report["partitions_added"]) == (True, 1)
    assert report["ranges"] >= 1 and report["rows_read"] > 0
    monkeypatch.setattr(reduce_local, "LOCAL_CELLS", 0)
    reference = ls.open_table(str(table), stats_root=here)
    reference.analyze(spark=spark, exact=True, max_frequencies=20)
    mine = ls.open_table(str(table), stats_root=root)
    assert_same_statistics(mine, reference, _whole(table))
    assert_same_ranks(mine, reference)
    flags = [r["distinct_count_exact"] for r in mine.statistics(None)]
    assert False not in flags and flags.count(True) >= 15  # None: lists, maps, a null type


def test_a_client_without_java_cannot_start_local_spark(tmp_path: Path) -> None:
    """The premise of the Connect test: without ``--remote`` the same client fails, as it
    would have to start a JVM."""
    table = tmp_path / "t"
    table.mkdir()
    _add_partition(table, "a")
    no_java = tmp_path / "no-java"
    run = run_cli(
        ["analyze", str(table), "--stats-root", str(tmp_path / "s")],
        spark_env(JAVA_HOME=str(no_java)),
        timeout=120,
    )
    assert run.returncode != 0
    # one line on the terminal; the JVM's own complaint is in the Spark log it names
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("lakestats: error: Spark did not start"), line
    log = line.split("its log is ", 1)[1].split(";", 1)[0]
    assert f"{no_java}/bin/java" in Path(log).read_text(), Path(log).read_text()[-2000:]


def test_remote_url_is_checked_before_anything_starts(capsys) -> None:
    from lakestats import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["analyze", "db.t", "--remote", "http://127.0.0.1:15002"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "expected a Spark Connect URL such as sc://host:15002, got 'http://127" in err
    with pytest.raises(SystemExit):
        cli.main(["analyze", "db.t", "--remote", "sc://h:1", "--master", "local[1]"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_master_and_remote_flags_reach_the_settings_get_spark_reads(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """The flags reach ``get_spark`` through the command's settings (``lakestats.config``,
    installed while the command runs, so Spark starts only once the request is checked);
    ``--master`` clears an inherited remote; nothing leaks into the environment."""
    import os

    from lakestats import api, cli, config
    from lakestats.errors import LakestatsError

    seen: list[config.Settings] = []

    def stop(*args: object, **kwargs: object) -> None:
        seen.append(config.settings())
        raise LakestatsError("stopped before Spark")

    monkeypatch.setenv("LAKESTATS_SPARK_REMOTE", "sc://inherited:1")
    monkeypatch.delenv("LAKESTATS_SPARK_MASTER", raising=False)
    monkeypatch.setattr(api.LakestatsTable, "analyze", stop)
    monkeypatch.setattr(api, "sql", stop)
    assert cli.main(["analyze", str(tmp_path), "--master", "spark://h:7077"]) != 0
    assert (seen[-1].spark_master, seen[-1].spark_remote) == ("spark://h:7077", None)
    assert cli.main(["sql", "ANALYZE nothing", "--remote", "sc://h:15002"]) != 0
    assert seen[-1].spark_remote == "sc://h:15002"
    assert cli.main(["analyze", str(tmp_path)]) != 0  # no flag: the inherited remote
    assert (seen[-1].spark_master, seen[-1].spark_remote) == (None, "sc://inherited:1")
    assert os.environ["LAKESTATS_SPARK_REMOTE"] == "sc://inherited:1"
    assert "LAKESTATS_SPARK_MASTER" not in os.environ
    errors = capsys.readouterr().err.splitlines()
    assert errors == ["lakestats: error: stopped before Spark"] * 3


def test_get_spark_refuses_a_remote_that_is_not_spark_connect() -> None:
    from lakestats.compute.session import get_spark
    from lakestats.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError) as error:
        get_spark(remote="localhost:15002")
    assert str(error.value) == (
        "--remote expects a Spark Connect URL such as sc://host:15002, got 'localhost:15002'"
    )


# Spark integration, not job code: the session module (classic and Connect sessions are
# made there; each classic-only call is skipped under Connect), and the progress bar's
# status tracker (no bar under Connect)
EVERYTHING = {"sparkContext", "SparkContext", "_jvm", "_jsparkSession", "_jdf", "_jsc", "py4j"}
ALLOWED = {
    "lakestats/compute/session.py": EVERYTHING,
    "lakestats/compute/progress.py": {"sparkContext"},
    # feeding Spark's optimizer is the session catalog's py4j API by design (README "Spark's
    # optimizer"); it refuses a Connect session with one line, and no job runs through it
    "lakestats/spark.py": {"_jsparkSession", "_jvm", "py4j", "sparkContext"},
}
CLASSIC_ONLY = re.compile(
    r"\b(?:sparkContext|SparkContext|_jvm|_jsparkSession|_jdf|_jsc|py4j)\b|\.rdd\b"
)


def test_job_code_is_connect_clean() -> None:
    """No SparkContext, py4j or RDD anywhere in lakestats outside the allow-list, so every
    job runs on a Spark Connect session."""
    found = {}
    for path in sorted((REPO / "lakestats").rglob("*.py")):
        relative = path.relative_to(REPO).as_posix()
        uses = set(CLASSIC_ONLY.findall(path.read_text()))
        extra = {u.lstrip(".") for u in uses} - ALLOWED.get(relative, set())
        if extra:
            found[relative] = sorted(extra)
    assert found == {}
