"""lakestats' Spark component on Hudi and Paimon tables, in Spark 3.5: Hudi (0.15) and Paimon
(0.9) publish no Spark 4 runtime that Maven Central serves here, so their Spark 3.5 runtimes
run in PySpark 3.5.9 (``.venv-interop35``) with the component built against Spark 3.5
(``build/jvm35``, ``make interop35 jars35 jvm35``); Iceberg and Delta are tested on Spark 4.1
(test_spark_component.py). The tables are written by those runtimes, analyzed by lakestats'
API as a user would, and read by the same Spark session: the row count and exact distinct
counts as pyarrow counts them, range filters within q-error 1.5 of DuckDB's count; after a
commit (Hudi) or snapshot (Paimon) nobody analyzed, Spark's own defaults, exactly as with the
component off; time travel to the analyzed commit or snapshot gets its statistics again.
One Spark 3.5 process for the module (``tests/formats/interop/spark35_lakestats_stats.py``)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.spark_sidecar import publish

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-interop35" / "bin" / "python"
SCRIPT = Path(__file__).parent / "interop" / "spark35_lakestats_stats.py"
NEEDED = [
    ROOT / "build" / "jvm35" / "lakestats-spark-3.5.jar",
    ROOT / "build" / "jars35" / "hudi-spark3.5-bundle_2.12-0.15.0.jar",
    ROOT / "build" / "jars35" / "paimon-spark-3.5-0.9.0.jar",
]
FILTERS = ["x < -1.0", "k < 100", "z > 2.5"]
COLUMNS = ["k", "s", "x", "z"]
FORMATS = ["hudi", "paimon"]
TIMEOUT = 600  # seconds for each phase of the Spark process

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(
        not PYTHON.exists() or not all(p.exists() for p in NEEDED),
        reason="no .venv-interop35 or Spark 3.5 jars (make interop35 jars35 jvm35)",
    ),
]


def _rows(seed: int, n: int = 20_000, first_id: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": pa.array(np.arange(first_id, first_id + n, dtype=np.int64)),
        "k": pa.array(rng.integers(0, 700, n)),
        "s": pa.array([f"v{i}" for i in rng.integers(0, 123, n)]),
        "x": pa.array(rng.normal(size=n)),
        "z": pa.array(rng.exponential(size=n)),
    })


def _true_counts(rows: pa.Table) -> dict:
    con = duckdb.connect()
    con.register("t", rows)
    return {
        "rows": rows.num_rows,
        "distinct": {c: pc.count_distinct(rows[c]).as_py() for c in COLUMNS},
        "filters": {f: con.execute(f"SELECT count(*) FROM t WHERE {f}").fetchone()[0]
                    for f in FILTERS},
    }


class _Spark:
    """The Spark 3.5 process: JSON lines out, one JSON line in, each wait bounded."""

    def __init__(self, spec: Path) -> None:
        self.process = subprocess.Popen(
            [str(PYTHON), str(SCRIPT), str(spec)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=self._pump, args=(self.process.stdout, self.lines.put),
                         daemon=True).start()
        threading.Thread(target=self._pump, args=(self.process.stderr, self.errors.append),
                         daemon=True).start()

    @staticmethod
    def _pump(stream, put) -> None:
        for line in stream:
            put(line)

    def next_json(self) -> dict:
        while True:
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                self.process.kill()
                pytest.fail("Spark 3.5 gave no answer in time: " + "".join(self.errors)[-3000:])
            if line.startswith("{"):
                return json.loads(line)

    def send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _analyze(path: str, spark) -> int:
    table = ls.open_table(path)
    table.analyze(exact=True, spark=spark)
    assert publish(table) is not None
    return table.format.current_snapshot_id()


@pytest.fixture(scope="module")
def seen(spark, tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("component35")
    data = {("current", fmt): _rows(seed) for seed, fmt in enumerate(FORMATS, 1)}
    data |= {("appended", fmt): _rows(seed) for seed, fmt in enumerate(FORMATS, 3)}
    writes = []
    for (name, fmt), rows in data.items():
        parquet = base / f"{fmt}-{name}.parquet"
        pq.write_table(rows, parquet)
        writes.append({"name": f"{fmt}-{name}", "format": fmt, "parquet": str(parquet),
                       "path": str(base / "hudi" / name), "table": f"db.{name}"})
    extra = _rows(9, 1_000, first_id=1_000_000)
    pq.write_table(extra, base / "extra.parquet")
    spec = base / "spec.json"
    spec.write_text(json.dumps({
        "jars": [str(p) for p in NEEDED],
        "extensions": ["org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
                       "org.apache.paimon.spark.extensions.PaimonSparkSessionExtensions",
                       "io.lakestats.spark.LakestatsExtensions"],
        "paimon_warehouse": f"file:{base / 'paimon'}",
        "writes": writes,
    }))
    spark35 = _Spark(spec)
    try:
        written = spark35.next_json()["written"]
        cases, truth = [], {}
        for (name, fmt), rows in data.items():
            path = written[f"{fmt}-{name}"].removeprefix("file:")
            snapshot = _analyze(path, spark)
            cases.append({"name": f"{fmt}-{name}", "format": fmt, "path": path,
                          "filters": FILTERS})
            truth[f"{fmt}-{name}"] = _true_counts(rows)
            if name == "appended":  # read again at the analyzed commit / snapshot
                travel = {"hudi": "as.of.instant", "paimon": "scan.snapshot-id"}[fmt]
                cases.append({"name": f"{fmt}-travel", "format": fmt, "path": path,
                              "options": {travel: str(snapshot)}, "filters": FILTERS})
                truth[f"{fmt}-travel"] = _true_counts(rows)
        appends = [{"name": f"{fmt}-appended", "parquet": str(base / "extra.parquet")}
                   for fmt in FORMATS]
        spark35.send({"appends": appends, "cases": cases})
        out = spark35.next_json()
    finally:
        spark35.close()
    return {"spark": out["cases"], "truth": truth, "version": out["spark"]}


def _q_error(estimate: float, true: float) -> float:
    estimate, true = max(estimate, 1.0), max(true, 1.0)
    return max(estimate / true, true / estimate)


def _lakestats_statistics(got: dict, truth: dict) -> None:
    assert got["row_count"] == truth["rows"]
    assert {c: got["distinct"].get(c) for c in COLUMNS} == truth["distinct"]
    for text, true in truth["filters"].items():
        assert _q_error(got["filters"][text], true) <= 1.5, (text, got["filters"][text], true)


@pytest.mark.parametrize("fmt", FORMATS)
def test_component_reports_lakestats_statistics(seen: dict, fmt: str) -> None:
    assert seen["version"].startswith("3.5.")
    got = seen["spark"][f"{fmt}-current"]["lakestats"]
    truth = seen["truth"][f"{fmt}-current"]
    _lakestats_statistics(got, truth)
    assert f"rowCount={truth['rows']:.2E}".replace("E+0", "E+") in got["explain"]
    assert seen["spark"][f"{fmt}-current"]["spark"]["counted"] == truth["rows"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_histogram_beats_min_max_on_a_skewed_range(seen: dict, fmt: str) -> None:
    """``x < -1`` on a normal column: what min/max alone give (a uniform spread) is far off;
    the histogram is not."""
    ours = seen["spark"][f"{fmt}-current"]["lakestats"]["filters"]["x < -1.0"]
    true = seen["truth"][f"{fmt}-current"]["filters"]["x < -1.0"]
    assert _q_error(ours, true) <= 1.2


@pytest.mark.parametrize("fmt", FORMATS)
def test_statistics_of_another_snapshot_are_not_reported(seen: dict, fmt: str) -> None:
    """After a commit (Hudi) or snapshot (Paimon) nobody analyzed: what Spark has without the
    component, never the analyzed snapshot's 20,000 rows."""
    case = seen["spark"][f"{fmt}-appended"]
    on, off = case["lakestats"], case["spark"]
    assert (on["row_count"], on["distinct"], on["filters"]) == (
        off["row_count"], off["distinct"], off["filters"])
    assert off["counted"] == 21_000
    assert on["row_count"] != seen["truth"][f"{fmt}-appended"]["rows"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_without_the_component_spark_keeps_its_defaults(seen: dict, fmt: str) -> None:
    off = seen["spark"][f"{fmt}-current"]["spark"]
    if fmt == "hudi":  # a v1 relation without catalog statistics: a size, no row count
        assert off["row_count"] is None and off["distinct"] == {}
    else:  # Paimon's own: the planned splits' row count, no column statistics
        assert off["row_count"] == seen["truth"][f"{fmt}-current"]["rows"]
        assert not any(off["distinct"].get(c) for c in COLUMNS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_time_travel_to_the_analyzed_snapshot_gets_its_statistics(seen: dict, fmt: str) -> None:
    """The appended table read as of the analyzed Hudi instant (``as.of.instant``) or Paimon
    snapshot (``scan.snapshot-id``): that snapshot's statistics, as for a current one."""
    _lakestats_statistics(seen["spark"][f"{fmt}-travel"]["lakestats"],
                          seen["truth"][f"{fmt}-travel"])
