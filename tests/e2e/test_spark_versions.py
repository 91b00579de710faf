"""lakestats' jobs on every PySpark line it supports give the same statistics: the table
analyzed with ``--exact`` and sampled by PySpark 3.5, 4.0 and 4.1 (``make spark-lines``: the
lock's versions with that PySpark), its reduction run as Spark stages, holds the same rows in
every statistics file as the default PySpark's analyze (reduced in one task) and sample, a
lookup and an estimate answer the same, and ``sql``'s ANALYZE runs. Every column is
compared, the quantile sketches' bytes included (they are deterministic); only the run
identifiers in file names differ."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
LINES = ["3.5.9", "4.0.2", "4.1.4"]

pytestmark = pytest.mark.spark


def _table(root: Path) -> Path:
    rng = np.random.default_rng(7)
    for p in range(3):
        part = root / f"p={p}"
        part.mkdir(parents=True)
        n = 2000
        pq.write_table(pa.table({
            "i": pa.array(rng.integers(0, 500, n)),
            "f": pa.array(rng.normal(size=n)),
            "s": pa.array([f"v{x}" for x in rng.zipf(1.5, n) % 300]),
            "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=int(x))
                           for x in rng.integers(0, 900, n)]),
        }), part / "f.parquet")  # fmt: skip
    return root


SPARK_STAGES = (
    "import sys; import lakestats.compute.reduce.spark as spark; "
    "spark.fits_one_task = lambda partitions, columns: False; "
    "from lakestats.cli import main; sys.exit(main(sys.argv[1:]))"
)
"""``lakestats`` with every reduction run as Spark stages (a table this small is otherwise
reduced in one task)."""


def _lakestats(python: Path, *args: str, cwd: Path) -> str:
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    env = {k: v for k, v in os.environ.items() if k not in drop}  # the line's own workers
    done = subprocess.run([str(python), "-c", SPARK_STAGES, *args], capture_output=True,
                          text=True, timeout=600, env=env, cwd=cwd, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _contents(stats: Path) -> dict[str, pa.Table]:
    """Every Parquet file's rows by its place (run identifiers left out), every column."""
    out = {}
    for path in sorted(stats.rglob("*.parquet")):
        place = "/".join(p for p in path.relative_to(stats).parts if not p.startswith("20"))
        rows = pq.ParquetFile(path).read()
        keep = [c for c in rows.column_names if c != "part"]  # a part's path names its run
        out[place] = rows.select(keep)
    return out


WHERE = "i < 100 AND s = 'v1'"


def _seen(python: Path, table: Path, stats: Path, cwd: Path) -> tuple:
    """The statistics files' rows, ``show --json``'s columns and an estimate (no Spark)."""
    root = ["--stats-root", str(stats)]
    shown = json.loads(_lakestats(python, "show", str(table), *root, "--json", cwd=cwd))
    estimate = json.loads(
        _lakestats(python, "estimate", str(table), *root, "--where", WHERE, "--json", cwd=cwd)
    )
    return _contents(stats), shown["columns"], estimate


@pytest.fixture(scope="module")
def default(spark, tmp_path_factory) -> tuple:
    import lakestats.api as ls

    base = tmp_path_factory.mktemp("lines")
    table = _table(base / "t")
    handle = ls.open_table(str(table), str(base / "stats"))
    handle.analyze(exact=True, spark=spark)
    handle.sample.create(seed=3, spark=spark)
    return table, _seen(Path(sys.executable), table, base / "stats", base)


@pytest.mark.parametrize("line", LINES)
def test_every_pyspark_line_gives_the_same_statistics(
    line: str, default: tuple, tmp_path: Path
) -> None:
    python = REPO / f".venv-pyspark-{line}" / "bin" / "python"
    assert python.exists(), f"no {python.parent.parent.name}: run `make spark-lines`"
    version = subprocess.run([str(python), "-c", "import pyspark; print(pyspark.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == line
    table, ours = default
    stats = tmp_path / "stats"
    _lakestats(python, "analyze", str(table), "--stats-root", str(stats), "--exact", cwd=tmp_path)
    _lakestats(python, "sample", "create", str(table), "--stats-root", str(stats), "--seed", "3",
               cwd=tmp_path)
    theirs = _seen(python, table, stats, tmp_path)
    assert ours[0].keys() == theirs[0].keys()
    differ = [place for place in ours[0] if not ours[0][place].equals(theirs[0][place])]
    assert not differ, differ
    assert ours[1] == theirs[1]
    assert ours[2] == theirs[2]


@pytest.mark.parametrize("line", LINES[:1])
def test_sql_analyze_runs_on_the_oldest_pyspark_line(
    line: str, default: tuple, tmp_path: Path
) -> None:
    """``lakestats sql``'s ANALYZE on the oldest line (the 4.x lines share the default's
    session calls) writes the version it says, with the counts Spark's own count gives."""
    python = REPO / f".venv-pyspark-{line}" / "bin" / "python"
    table, ours = default
    stats = tmp_path / "stats"
    said = _lakestats(python, "sql", f"ANALYZE TABLE `{table}` COMPUTE STATISTICS FOR COLUMNS i, s",
                      "--stats-root", str(stats), cwd=tmp_path)
    assert "statistics version 1" in said
    shown = json.loads(_lakestats(python, "show", str(table), "--stats-root", str(stats), "--json",
                                  cwd=tmp_path))
    assert shown["row_count"] == 6000
    by_name = {c["name"]: c for c in shown["columns"]}
    mine = {c["name"]: c for c in ours[1]}
    for name in ("i", "s"):
        assert by_name[name]["distinct_count"] == mine[name]["distinct_count"]
