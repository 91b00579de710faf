"""Spark with Iceberg's own runtime plans with lakestats' statistics: nothing of lakestats
on Spark's side, only the Puffin file analyze committed. Spark 4.1 with Iceberg 1.12's
runtime (the newest pair Iceberg supports; this venv's PySpark 4.3 cannot load it) runs in
``.venv-interop`` (``make interop``) and reports what its optimizer reads
(``tests/formats/interop/spark_iceberg_stats.py``); the reference for the counts is pyarrow
over the table's rows (pyiceberg's scan)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakestats.api as ls
from lakestats.formats.iceberg import load_catalog

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-interop" / "bin" / "python"
SCRIPT = Path(__file__).parent / "interop" / "spark_iceberg_stats.py"
JARS = sorted((ROOT / "build" / "jars").glob("iceberg-spark-runtime-*.jar"))

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(not PYTHON.exists() or not JARS,
                       reason="no .venv-interop or Iceberg runtime (make interop jars)"),
]


def _spark_reads(metadata_location: str) -> dict:
    done = subprocess.run(
        [str(PYTHON), str(SCRIPT), str(JARS[-1]), metadata_location.removeprefix("file://")],
        capture_output=True, text=True, timeout=400, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(warehouse: Path, name: str) -> pa.Table:
    catalog = load_catalog(warehouse=str(warehouse))
    if ("db",) not in catalog.list_namespaces():
        catalog.create_namespace("db")
    rng = np.random.default_rng(3)
    n = 20_000
    rows = pa.table({
        "k": pa.array(rng.integers(0, 700, n)),
        "s": pa.array([f"v{i}" for i in rng.integers(0, 123, n)]),
        "x": pa.array(rng.normal(size=n)),
        "r": pa.array(np.where(np.arange(n) % 2 == 0, "a", "b")),
    })
    catalog.create_table(f"db.{name}", schema=rows.schema).append(rows)
    return rows


def test_spark_with_icebergs_runtime_reads_lakestats_distinct_counts(spark, tmp_path: Path):
    rows = _table(tmp_path, "t")
    table = ls.open_table("db.t", warehouse=str(tmp_path))
    table.analyze(exact=True, spark=spark)
    location = load_catalog(warehouse=str(tmp_path)).load_table("db.t").metadata_location
    seen = _spark_reads(location)
    truth = {c: pc.count_distinct(rows[c]).as_py() for c in rows.column_names}
    assert seen["distinct"] == truth  # lakestats' exact counts, as Spark's optimizer has them
    assert seen["row_count"] == rows.num_rows
    assert f"rowCount={rows.num_rows:.2E}".replace("E+0", "E+") in seen["explain"]

    # without the Puffin file Spark knows no distinct count: its own defaults
    bare = _table(tmp_path, "bare")
    ls.open_table("db.bare", warehouse=str(tmp_path)).analyze(puffin=False, spark=spark)
    location = load_catalog(warehouse=str(tmp_path)).load_table("db.bare").metadata_location
    assert set(_spark_reads(location)["distinct"].values()) <= {None}
    assert bare.num_rows == rows.num_rows
