"""The built wheel (``make wheel``) installed into fresh venvs, nothing of the clone on their
path. With every extra: it analyzes and shows a Delta table, carries the Spark component's
jars, and Spark 4.1 with Delta and the jar it names plans the table with lakestats'
statistics. The core alone (no extra): it reads statistics (show, estimate) at a third of the
full install's size or less, and what needs an extra is one line naming the install; it
installs and reads on Python 3.12 and 3.13 too (pyenv's), and on 3.13 with ``[spark]`` its
jobs write the same statistics as the default Python's. Every extra resolves beside PySpark
3.5, 4.0 and 4.1 on Python 3.11, 3.12 and 3.13."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "dist"
INTEROP_PYTHON = REPO / ".venv-interop" / "bin" / "python"
SCRIPT = REPO / "tests" / "formats" / "interop" / "spark_lakestats_stats.py"
DELTA_JARS = [REPO / "build" / "jars" / "delta-spark_2.13-4.1.0.jar",
              REPO / "build" / "jars" / "delta-storage-4.1.0.jar"]  # fmt: skip

pytestmark = pytest.mark.spark


def _clean_env() -> dict[str, str]:
    """The environment without anything that points back into the clone (the session's
    ``PYSPARK_PYTHON`` names the clone's venv: the installed one's workers use their own)."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    return {k: v for k, v in os.environ.items() if k not in drop}


def _venv(root: Path, requirement: str) -> Path:
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    uv = Path(sys.executable).parent / "uv"
    subprocess.run(
        [str(uv), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
         requirement, "-c", str(REPO / "requirements.lock")],
        check=True, timeout=900, env=_clean_env(), cwd=root,
    )  # fmt: skip
    return venv


def _wheel() -> Path:
    wheels = sorted(DIST.glob("lakestats-*-py3-none-any.whl"))
    assert wheels, "no wheel in dist/: run `make wheel`"
    assert sorted(DIST.glob("lakestats-*.tar.gz")), "no sdist in dist/: run `make wheel`"
    return wheels[-1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    return _venv(tmp_path_factory.mktemp("wheel"), f"lakestats[all] @ {_wheel().as_uri()}")


@pytest.fixture(scope="module")
def core(tmp_path_factory) -> Path:
    return _venv(tmp_path_factory.mktemp("core"), str(_wheel()))


def _site_bytes(venv: Path) -> int:
    return sum(p.stat().st_size for p in (venv / "lib").rglob("*") if p.is_file())


def _run(venv: Path, *args: str, cwd: Path, fails: bool = False) -> str:
    done = subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]], capture_output=True, text=True,
        timeout=600, env=_clean_env(), cwd=cwd, check=False,
    )  # fmt: skip
    assert (done.returncode != 0) == fails, done.stderr[-3000:]
    return done.stderr if fails else done.stdout


def test_the_wheel_runs_from_its_own_install(installed: Path, tmp_path: Path) -> None:
    from deltalake import write_deltalake

    where = _run(installed, "python", "-c",
                 "import lakestats, lakestats.component_jar as c; print(lakestats.__file__); "
                 "print(c.jar_path('4.1.4')); print(c.jar_path('3.5.9'))", cwd=tmp_path)
    module, jar4, jar35 = where.split()
    site = str(installed / "lib")
    assert module.startswith(site) and not module.startswith(str(REPO)), module
    assert jar4.startswith(site) and jar4.endswith("lakestats-spark.jar")
    assert jar35.startswith(site) and jar35.endswith("lakestats-spark-3.5.jar")
    assert Path(jar4).stat().st_size > 1000 and Path(jar35).stat().st_size > 1000
    # the command names the jar of the installed PySpark (4.x), or of the Spark asked for
    assert _run(installed, "lakestats", "spark-jar", cwd=tmp_path).strip() == jar4
    assert _run(installed, "lakestats", "spark-jar", "--spark-version", "3.5.9",
                cwd=tmp_path).strip() == jar35  # fmt: skip

    rows = pa.table({"k": pa.array([i % 37 for i in range(5_000)], pa.int64()),
                     "s": pa.array([f"v{i % 11}" for i in range(5_000)])})  # fmt: skip
    table = tmp_path / "delta"
    write_deltalake(str(table), rows)
    _run(installed, "lakestats", "analyze", str(table), "--exact", cwd=tmp_path)
    shown = json.loads(_run(installed, "lakestats", "show", str(table), "--json", cwd=tmp_path))
    distinct = {c["name"]: c["distinct_count"] for c in shown["columns"]}
    assert distinct == {c: pc.count_distinct(rows[c]).as_py() for c in rows.column_names}

    if not INTEROP_PYTHON.exists() or not all(p.exists() for p in DELTA_JARS):
        pytest.fail("no .venv-interop or Delta jars: run `make interop jars`")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "jars": [jar4, *map(str, DELTA_JARS)],
        "extensions": ["io.delta.sql.DeltaSparkSessionExtension",
                       "io.lakestats.spark.LakestatsExtensions"],
        "cases": [{"name": "delta", "format": "delta", "path": str(table), "filters": ["k < 10"]}],
    }))  # fmt: skip
    done = subprocess.run([str(INTEROP_PYTHON), str(SCRIPT), str(spec)], capture_output=True,
                          text=True, timeout=500, check=False, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])["cases"]["delta"]
    assert seen["lakestats"]["row_count"] == rows.num_rows
    assert seen["lakestats"]["distinct"] == distinct
    assert seen["spark"]["row_count"] is None  # without the component: no row count at all


def test_the_core_reads_statistics_and_names_the_extras_it_lacks(
    core: Path, installed: Path, tmp_path: Path, spark
) -> None:
    import duckdb
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    import lakestats.api as ls

    table = tmp_path / "sales"
    for region, n in (("east", 300), ("west", 700)):
        (table / f"region={region}").mkdir(parents=True)
        rows = pa.table({"amount": pa.array([float(i % 17) for i in range(n)])})
        pq.write_table(rows, table / f"region={region}" / "part-0.parquet")
    ls.open_table(str(table)).analyze(spark=spark)  # written by the full install

    shown = json.loads(_run(core, "lakestats", "show", str(table), "--json", cwd=tmp_path))
    assert shown["row_count"] == 1000
    where = "amount < 5"
    estimate = json.loads(
        _run(core, "lakestats", "estimate", str(table), "--where", where, "--json", cwd=tmp_path)
    )
    [(true,)] = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{table}/*/*.parquet') WHERE {where}"
    ).fetchall()
    assert estimate["lower"] <= true <= estimate["upper"]

    delta = tmp_path / "delta"
    write_deltalake(str(delta), pa.table({"n": [1, 2, 3]}))
    ls.open_table(str(delta)).analyze(spark=spark)  # so that show opens the table
    for args, extra in (
        (["analyze", str(table)], "spark"),
        (["show", str(delta)], "delta"),
        (["serve", "--port", "0"], "serve"),
    ):
        said = _run(core, "lakestats", *args, cwd=tmp_path, fails=True).strip().splitlines()
        assert len(said) == 1 and f"pip install 'lakestats[{extra}]'" in said[0], said

    assert _site_bytes(core) * 3 <= _site_bytes(installed), (
        _site_bytes(core), _site_bytes(installed))


def _pyenv_python(minor: str) -> Path:
    """A CPython of that minor version from pyenv (the machine's other Pythons)."""
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False)
    found = sorted(Path(root.stdout.strip()).glob(f"versions/{minor}.*/bin/python{minor}"))
    assert found, f"no Python {minor} from pyenv on this machine"
    return found[-1]


@pytest.mark.parametrize("minor", ["3.12", "3.13"])
def test_the_core_installs_and_reads_on_newer_pythons(minor: str, tmp_path: Path, spark) -> None:
    import pyarrow.parquet as pq

    import lakestats.api as ls

    table = tmp_path / "t"
    (table / "p=1").mkdir(parents=True)
    pq.write_table(pa.table({"n": pa.array(range(100), pa.int64())}), table / "p=1" / "f.parquet")
    ls.open_table(str(table)).analyze(spark=spark)
    venv = tmp_path / "venv"
    subprocess.run([str(_pyenv_python(minor)), "-m", "venv", str(venv)], check=True, timeout=120)
    uv = Path(sys.executable).parent / "uv"
    subprocess.run([str(uv), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
                    str(_wheel())], check=True, timeout=600, env=_clean_env(), cwd=tmp_path)
    shown = json.loads(_run(venv, "lakestats", "show", str(table), "--json", cwd=tmp_path))
    assert shown["row_count"] == 100
    assert {c["name"]: c["distinct_count"] for c in shown["columns"]}["n"] == 100


def test_the_jobs_run_on_the_newest_python(tmp_path: Path, spark) -> None:
    """``lakestats[spark]`` on Python 3.13: analyze ``--exact`` and sample write the same
    rows in every statistics file as this venv's Python and PySpark do."""
    import lakestats.api as ls
    from tests.e2e.test_spark_versions import _contents, _table

    table = _table(tmp_path / "t")
    handle = ls.open_table(str(table), str(tmp_path / "ours"))
    handle.analyze(exact=True, spark=spark)
    handle.sample.create(seed=3, spark=spark)
    venv = tmp_path / "venv"
    subprocess.run([str(_pyenv_python("3.13")), "-m", "venv", str(venv)], check=True, timeout=120)
    uv = Path(sys.executable).parent / "uv"
    subprocess.run(
        [str(uv), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
         f"lakestats[spark] @ {_wheel().as_uri()}", "-c", str(REPO / "requirements.lock")],
        check=True, timeout=900, env=_clean_env(), cwd=tmp_path,
    )  # fmt: skip
    theirs = tmp_path / "theirs"
    _run(venv, "lakestats", "analyze", str(table), "--stats-root", str(theirs), "--exact",
         cwd=tmp_path)  # fmt: skip
    _run(venv, "lakestats", "sample", "create", str(table), "--stats-root", str(theirs),
         "--seed", "3", cwd=tmp_path)  # fmt: skip
    mine, seen = _contents(tmp_path / "ours"), _contents(theirs)
    assert mine.keys() == seen.keys()
    assert [place for place in mine if not mine[place].equals(seen[place])] == []


@pytest.mark.parametrize(
    ("python", "pyspark"),
    [("3.11", "3.5.9"), ("3.12", "4.0.2"), ("3.13", "4.1.4"), ("3.13", "3.5.9")],
)
def test_every_extra_resolves_beside_each_pyspark(
    python: str, pyspark: str, tmp_path: Path
) -> None:
    """The wheel with every extra beside the PySpark a cluster runs: one resolution, no
    conflict (uv's resolver, as pip's would decide it)."""
    wanted = tmp_path / "wanted.in"
    wanted.write_text(f"lakestats[all] @ {_wheel().as_uri()}\npyspark=={pyspark}\n")
    uv = Path(sys.executable).parent / "uv"
    done = subprocess.run(
        [str(uv), "pip", "compile", "--quiet", str(wanted), "--python-version", python,
         "-o", str(tmp_path / "resolved.txt")],
        capture_output=True, text=True, timeout=600, env=_clean_env(), cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    resolved = (tmp_path / "resolved.txt").read_text(encoding="utf-8")
    assert f"pyspark=={pyspark}" in resolved
