"""Spark Connect on a stock cluster, whose Python workers lack lakestats.

The Connect server here runs its Python workers with a ``sitecustomize`` that hides every
installed lakestats (as on a cluster where it was never installed): only a copy shipped
with the session (a ``.zip`` on the workers' path) can be imported. ``analyze --remote``
then fails in one line saying what to install where or which option ships it (it was
``SQLSTATE: 38000``); with ``--ship-lakestats`` the same command succeeds and its
statistics equal pyarrow's over the same files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from tests.spark_servers import connect_server, run_cli, spark_env

pytestmark = pytest.mark.spark

HIDE_LAKESTATS = '''
import importlib.abc
import importlib.machinery
import sys


class _OnlyShippedLakestats(importlib.abc.MetaPathFinder):
    """lakestats only from a shipped zip (Spark Connect artifacts), never installed."""

    def find_spec(self, name, path=None, target=None):
        if name != "lakestats":
            return None
        shipped = [p for p in sys.path if p.endswith(".zip") and "lakestats" in p]
        spec = importlib.machinery.PathFinder.find_spec(name, shipped) if shipped else None
        if spec is None:
            raise ModuleNotFoundError("No module named 'lakestats'", name="lakestats")
        return spec


sys.meta_path.insert(0, _OnlyShippedLakestats())
'''


def _table(root: Path) -> Path:
    for part, values in {"p=a": range(0, 40), "p=b": range(100, 130)}.items():
        (root / part).mkdir(parents=True)
        pq.write_table(pa.table({"n": list(values)}), root / part / "0.parquet")
    return root


@pytest.mark.timeout(600)
def test_workers_without_lakestats_are_named_and_shipping_fixes_it(tmp_path: Path) -> None:
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(HIDE_LAKESTATS)
    table = _table(tmp_path / "t")
    client = spark_env(JAVA_HOME=str(tmp_path / "no-java"), LAKESTATS_DRIVER_MEMORY="1g")
    with connect_server(tmp_path / "server", PYTHONPATH=str(hide)) as url:
        failed = run_cli(["analyze", str(table), "--stats-root", str(tmp_path / "s1"),
                          "--remote", url], client)
        sampled = run_cli(["sample", "create", str(table), "--stats-root",
                           str(tmp_path / "s3"), "--remote", url], client)
        shipped = run_cli(["analyze", str(table), "--stats-root", str(tmp_path / "s2"),
                           "--remote", url, "--ship-lakestats", "--json"], client)
    assert failed.returncode != 0
    [line] = failed.stderr.splitlines()
    assert line.startswith("lakestats: error: the Spark Connect server's Python workers "
                           "cannot import lakestats"), line
    assert "No module named 'lakestats'" in line and "--ship-lakestats" in line, line
    assert "install lakestats==" in line, line
    assert not (tmp_path / "s1").exists()  # a failed command leaves no root behind
    assert sampled.returncode != 0
    [line] = sampled.stderr.splitlines()
    assert "Python workers cannot import lakestats" in line and "--ship-lakestats" in line, line
    assert not (tmp_path / "s3").exists()
    assert shipped.returncode == 0, shipped.stderr[-3000:]
    assert json.loads(shipped.stdout)["partitions_computed"] == 2
    shown = run_cli(["show", str(table), "--stats-root", str(tmp_path / "s2"), "--json"], client)
    assert shown.returncode == 0, shown.stderr[-2000:]
    [n] = [c for c in json.loads(shown.stdout)["columns"] if c["name"] == "n"]
    data = pads.dataset(table, partitioning="hive").to_table(columns=["n"]).column("n")
    assert (n["min"], n["max"]) == (pc.min(data).as_py(), pc.max(data).as_py())
    assert n["distinct_count"] == len(pc.unique(data)) and n["null_count"] == 0


def _stock_python(directory: Path) -> str:
    """A Python with this environment's packages (PySpark, pyarrow) but no lakestats: a
    venv whose ``.pth`` adds this site-packages directory as a plain path, so the
    editable install's own ``.pth`` (which makes lakestats importable) is never run."""
    import site
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True,
                   timeout=120)
    python = directory / "bin" / "python"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = directory / "lib" / version / "site-packages"
    (packages / "this_environment.pth").write_text(site.getsitepackages()[0] + "\n")
    probe = subprocess.run([str(python), "-c", "import pyspark, pyarrow, lakestats"],
                           capture_output=True, text=True, timeout=120, cwd=directory,
                           env={"PATH": "/usr/bin:/bin"})
    assert "No module named 'lakestats'" in probe.stderr, probe.stderr
    return str(python)


@pytest.mark.timeout(600)
def test_a_stock_server_is_checked_before_the_job(tmp_path: Path) -> None:
    """A stock Connect server (its workers' Python has PySpark but not lakestats, nothing
    hidden) reports the failed task to the client as ``SQLSTATE: 38000`` alone: the
    workers are asked before the job, which then never starts."""
    python = _stock_python(tmp_path / "stock")
    table = _table(tmp_path / "t")
    client = spark_env(JAVA_HOME=str(tmp_path / "no-java"), LAKESTATS_DRIVER_MEMORY="1g")
    server = tmp_path / "server"
    with connect_server(server, PYSPARK_PYTHON=python, PYTHONPATH="") as url:
        failed = run_cli(["analyze", str(table), "--stats-root", str(tmp_path / "s1"),
                          "--remote", url], client)
        sampled = run_cli(["sample", "create", str(table), "--stats-root",
                           str(tmp_path / "s3"), "--remote", url], client)
        shipped = run_cli(["analyze", str(table), "--stats-root", str(tmp_path / "s2"),
                           "--remote", url, "--ship-lakestats", "--json"], client)
    log = (server / "connect.log").read_text(errors="replace")
    for run in (failed, sampled):
        assert run.returncode != 0
        [line] = run.stderr.splitlines()
        assert line.startswith("lakestats: error: the Spark Connect server's Python workers "
                               "cannot import lakestats (ModuleNotFoundError: No module named "
                               f"'lakestats'; their Python is {python})"), line
        assert "install lakestats==" in line and "--ship-lakestats" in line, line
        assert "spark.addArtifacts" in line, line
    assert "Exception in task" not in log  # no job ran: the probe answered, it did not fail
    assert not (tmp_path / "s1").exists() and not (tmp_path / "s3").exists()
    assert shipped.returncode == 0, shipped.stderr[-3000:]
    assert json.loads(shipped.stdout)["partitions_computed"] == 2
