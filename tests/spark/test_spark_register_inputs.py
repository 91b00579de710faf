"""spark-register refuses or quotes what it is given.

Names reach Spark as quoted identifiers after a check (``x; DROP TABLE y``, an empty name,
``a.b.c`` are one line each, before a JVM starts); ``--bins`` is capped as analyze caps it;
a ``--metastore`` that is a file is one line; a dry run refuses Delta and Iceberg tables as
a real run does; ±infinity in a column gives a histogram without NumPy warnings; a real
registration prints its answer and nothing of the JVM's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.cli import main

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]
INF = float("inf")


@pytest.fixture(scope="module")
def infinite(tmp_path_factory: pytest.TempPathFactory, spark) -> Path:
    """A partitioned table whose float columns hold ±infinity (and NaN)."""
    root = tmp_path_factory.mktemp("register") / "t"
    for part, values in {"p=a": [1.0, INF, -INF, 2.0, 3.0, float("nan")],
                         "p=b": [INF, INF, 5.0, 6.5, -1.0, 0.0]}.items():
        (root / part).mkdir(parents=True)
        pq.write_table(pa.table({"x": values, "n": list(range(len(values)))}),
                       root / part / "0.parquet")
    ls.open_table(str(root)).analyze(spark=spark)
    return root


def _cli(args: list[str], cwd: Path, *options: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "LAKESTATS_SPARK_MASTER": "local[2]"}
    env.pop("LAKESTATS_DEBUG", None)
    return subprocess.run([sys.executable, *options, "-m", "lakestats.cli", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=400)


def _one_line(capsys: pytest.CaptureFixture, args: list[str], text: str) -> None:
    import lakestats.spark

    def no_session(metastore: str) -> None:
        raise AssertionError("a JVM was started for a request that is refused")

    original, lakestats.spark.hive_session = lakestats.spark.hive_session, no_session
    try:
        code = main(args)
    finally:
        lakestats.spark.hive_session = original
    err = capsys.readouterr().err
    assert code != 0, args
    [line] = err.splitlines()
    assert line.startswith("lakestats: error: ") and text in line, (args, line)


@pytest.mark.parametrize(
    ("name", "dry"),
    [("x; DROP TABLE y", False), ("x; DROP TABLE y", True), ("", False), ("a.b.c", True),
     ("a.b.c", False), (".t", False), ("db.", True), ("1abc", False), ("t`x", False),
     ("t'); DROP TABLE y; --", True)],
)
def test_bad_names_are_one_line(infinite, tmp_path, capsys, name: str, dry: bool) -> None:
    args = ["spark-register", str(infinite), "--name", name, "--metastore",
            str(tmp_path / "ms"), *(["--dry-run"] if dry else [])]
    _one_line(capsys, args, "is not a Spark table name")
    assert not (tmp_path / "ms").exists()


def test_bins_are_capped_and_metastore_must_be_a_directory(infinite, tmp_path, capsys) -> None:
    for dry in ([], ["--dry-run"]):
        _one_line(capsys, ["spark-register", str(infinite), "--name", "t", "--bins",
                           "2000000", *dry], "between 1 and 100000")
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory")
    _one_line(capsys, ["spark-register", str(infinite), "--name", "t", "--metastore",
                       str(a_file)], "is a file")


def test_dry_runs_refuse_delta_and_iceberg_as_real_runs_do(tmp_path, capsys) -> None:
    from deltalake import write_deltalake

    from lakestats.formats.iceberg import load_catalog

    write_deltalake(str(tmp_path / "delta"), pa.table({"a": [1, 2]}))
    catalog = load_catalog(warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    catalog.create_table("db.t", schema=pa.schema([("a", pa.int64())])).append(
        pa.table({"a": [1, 2]}))
    for table, extra, kind in ((str(tmp_path / "delta"), [], "delta"),
                               ("db.t", ["--warehouse", str(tmp_path / "wh")], "iceberg")):
        for dry in ([], ["--dry-run"]):
            _one_line(capsys, ["spark-register", table, *extra, "--name", "t", *dry],
                      f"cannot register a {kind} table")


def test_infinity_dry_run_has_no_numpy_warnings(infinite, tmp_path) -> None:
    done = _cli(["spark-register", str(infinite), "--name", "t", "--dry-run"], tmp_path,
                "-W", "error::RuntimeWarning")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == ""
    [x] = [c for c in json.loads(done.stdout)["columns"] if c["name"] == "x"]
    assert (x["min"], x["max"]) == ("-Infinity", "Infinity")
    assert x["histogram_bins"][-1][1] == "Infinity"
    assert sum(1 for _ in x["histogram_bins"]) == 254


@pytest.mark.timeout(500)
def test_a_real_registration_prints_only_its_answer(infinite, tmp_path) -> None:
    """The JVM's own warnings (launcher, log4j, Hive, Derby) go to Spark's log file; the
    quoted name reaches Spark's catalog as given."""
    done = _cli(["spark-register", str(infinite), "--name", "default.t_inf", "--metastore",
                 str(tmp_path / "ms")], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == "", done.stderr[:2000]
    assert done.stdout.splitlines() == [
        f"registered default.t_inf (12 rows, 3 columns with statistics) in {tmp_path / 'ms'}"
    ], done.stdout
