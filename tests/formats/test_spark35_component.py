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
import math
import queue
import re
import socket
import subprocess
import threading
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import uvicorn

import lakestats.api as ls
from lakestats.service.app import create_app
from lakestats.service.config import TableConfig
from lakestats.service.server import uvicorn_options
from tests.service.uvicorn_thread import serving

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-interop35" / "bin" / "python"
SCRIPT = Path(__file__).parent / "interop" / "spark35_lakestats_stats.py"
NEEDED = [
    ROOT / "build" / "jvm35" / "lakestats-spark-3.5.jar",
    ROOT / "build" / "jars35" / "hudi-spark3.5-bundle_2.12-0.15.0.jar",
    ROOT / "build" / "jars35" / "paimon-spark-3.5-0.9.0.jar",
]
FILTERS = ["x < -1.0", "k < 100", "z > 2.5"]
# filters of every class, estimated by lakestats through the service (as on Spark 4.1)
ESTIMATED = ["s = 'v7'", "s <> 'v7'", "s IN ('v1', 'v2')", "s LIKE 'v1%'", "s IS NULL",
             "k BETWEEN 10 AND 20", "NOT (k < 300)", "k < 100 OR s = 'v5'",
             "x > 0.5 AND k < 350", "z <= 0.25"]
ESTIMATED_CASES = ["hudi-current", "paimon-current", "hudi-appended-catalog"]
# on the partition column (Hudi and Paimon prune partitions with them) and mixed
PARTITION_FILTERS = ["p = 3", "p < 3", "p = 3 AND x < -1.0"]
COLUMNS = ["k", "s", "x", "z"]
FORMATS = ["hudi", "paimon"]
TIMEOUT = 600  # seconds for each phase of the Spark process
# table: how it is written (seed of its rows). The ``current`` tables are read once, the
# others before and after a commit/snapshot nobody analyzed (and as of the analyzed one).
TABLES = {
    "hudi-current": ({"format": "hudi"}, 1),
    "paimon-current": ({"format": "paimon"}, 2),
    # partitioned Hudi tables keep their statistics outside the table (``--stats-root``,
    # ``spark.lakestats.roots``): hudi-rs takes every file under the base path but
    # ``.hoodie/`` for a partition's, lakestats' own at ``<table>/_lakestats`` included
    "hudi-appended": ({"format": "hudi", "partition": "p"}, 3),
    "paimon-appended": ({"format": "paimon", "partition": "p"}, 4),
    "hudi-mor": ({"format": "hudi", "partition": "p", "mor": True, "updates": True}, 5),
    "paimon-pk": ({"format": "paimon", "primary_key": "id", "updates": True}, 7),
}
APPENDED = [name for name in TABLES if not name.endswith("-current")]
TRAVEL = {"hudi": "as.of.instant", "paimon": "scan.snapshot-id"}
CATALOG_TABLE = "default.hudi_partitioned"  # hudi-appended registered in the session catalog

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
        "p": pa.array(rng.integers(0, 8, n)),
        "k": pa.array(rng.integers(0, 700, n)),
        "s": pa.array([f"v{i}" for i in rng.integers(0, 123, n)]),
        "x": pa.array(rng.normal(size=n)),
        "z": pa.array(rng.exponential(size=n)),
    })


def _updates(rows: pa.Table, seed: int, n: int = 2_000) -> pa.Table:
    """New values for the first ``n`` keys, each in its own partition (an upsert that moved a
    key to another partition would be an insert under Hudi's default, non-global index)."""
    fresh = _rows(seed, n)
    return fresh.set_column(1, "p", rows["p"].slice(0, n))


def _merged(rows: pa.Table, updates: pa.Table) -> pa.Table:
    """The table after the upsert: what a snapshot read returns."""
    kept = rows.filter(pc.invert(pc.is_in(rows["id"], updates["id"])))
    return pa.concat_tables([kept, updates])


def _true_counts(rows: pa.Table, filters: list[str]) -> dict:
    con = duckdb.connect()
    con.register("t", rows)
    return {
        "rows": rows.num_rows,
        "distinct": {c: pc.count_distinct(rows[c]).as_py() for c in COLUMNS},
        "filters": {f: con.execute(f"SELECT count(*) FROM t WHERE {f}").fetchone()[0]
                    for f in filters},
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


def _analyze(path: str, spark, root: str | None) -> int:
    table = ls.open_table(path, stats_root=root)
    result = table.analyze(exact=True, spark=spark)  # writes the component's file too
    spark_dir = Path(table.stats_root.removeprefix("file://")) / "spark"
    assert (spark_dir / f"v{result.version:08d}_{result.snapshot_id}.json").is_file()
    return table.format.current_snapshot_id()


def _spec(base: Path) -> tuple[dict, list[dict], dict]:
    """The tables' rows as read after their writes, the writes, and the Parquet of the rows
    appended later."""
    data, writes = {}, []
    for name, (how, seed) in TABLES.items():
        rows = _rows(seed)
        pq.write_table(rows, base / f"{name}.parquet")
        write = {**how, "name": name, "parquet": str(base / f"{name}.parquet"),
                 "path": str(base / "hudi" / name), "table": f"db.{name.replace('-', '_')}"}
        if how.get("updates"):
            updates = _updates(rows, seed + 1)
            pq.write_table(updates, base / f"{name}-updates.parquet")
            write["updates"] = str(base / f"{name}-updates.parquet")
            rows = _merged(rows, updates)
        data[name] = rows
        writes.append(write)
    extra = _rows(9, 1_000, first_id=1_000_000)
    pq.write_table(extra, base / "extra.parquet")
    return data, writes, {"appends": [{"name": name, "parquet": str(base / "extra.parquet")}
                                      for name in APPENDED]}


@pytest.fixture(scope="module")
def seen(spark, tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("component35")
    data, writes, step = _spec(base)
    roots = {w["path"]: str(base / "stats" / w["name"]) for w in writes
             if w["format"] == "hudi" and "partition" in w}
    spec = base / "spec.json"
    spec.write_text(json.dumps({
        "roots": ",".join(f"{path}={root}" for path, root in roots.items()),
        "jars": [str(p) for p in NEEDED],
        "extensions": ["org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
                       "org.apache.paimon.spark.extensions.PaimonSparkSessionExtensions",
                       "io.lakestats.spark.LakestatsExtensions"],
        "paimon_warehouse": f"file:{base / 'paimon'}",
        "writes": writes,
        "catalog": {CATALOG_TABLE: str(base / "hudi" / "hudi-appended")},
    }))
    spark35 = _Spark(spec)
    try:
        written = spark35.next_json()["written"]
        step |= {"before": [], "cases": [], "tags": []}
        truth, paths, estimates, served = {}, {}, {}, []
        for name, rows in data.items():
            fmt = TABLES[name][0]["format"]
            paths[name] = path = written[name].removeprefix("file:")
            snapshot = _analyze(path, spark, roots.get(path))
            filters = FILTERS + (PARTITION_FILTERS if "partition" in TABLES[name][0] else [])
            case = {"format": fmt, "path": path, "filters": filters}
            truth[name] = _true_counts(rows, filters)
            if name in ("hudi-current", "paimon-current", "hudi-appended"):
                config = TableConfig(name.replace("-", "_"), path, stats_root=roots.get(path))
                served.append(config)
                table = ls.open_table(path, stats_root=config.stats_root)
                estimates[name if name != "hudi-appended" else f"{name}-catalog"] = {
                    f: math.ceil(table.estimate(f, snapshot_id=snapshot).row_count)
                    for f in [*filters, *ESTIMATED]}
            if name not in APPENDED:
                step["cases"].append({**case, "name": name, "ways": ["estimates"],
                                      "way_filters": {"estimates": ESTIMATED}})
                continue
            step["before"].append({**case, "name": f"{name}-analyzed", "explain_filter": "p = 3"})
            step["cases"].append({**case, "name": f"{name}-appended"})
            step["cases"].append({**case, "name": f"{name}-travel",
                                  "options": {TRAVEL[fmt]: str(snapshot)}})
            if name == "hudi-appended":  # the same table through the session catalog
                step["before"].append({**case, "name": f"{name}-catalog",
                                       "table": CATALOG_TABLE, "ways": ["estimates"],
                                       "way_filters": {"estimates": ESTIMATED}})
            if name == "hudi-mor":  # base files only: not the snapshot's rows
                step["before"].append({**case, "name": f"{name}-read-optimized", "options": {
                    "hoodie.datasource.query.type": "read_optimized"}})
            if name == "paimon-pk":  # a tag on the analyzed snapshot
                step["tags"].append({"name": name, "tag": "analyzed", "snapshot": snapshot})
                step["cases"].append({**case, "name": f"{name}-tag",
                                      "options": {"scan.tag-name": "analyzed"}})
        server = uvicorn.Server(uvicorn.Config(create_app(served, warm_up=True), port=_free_port(),
                                               **uvicorn_options()))
        step["ways"] = {"estimates": {
            "spark.lakestats.estimates.url": f"http://127.0.0.1:{server.config.port}",
            "spark.lakestats.estimates.timeoutMs": "10000"}}  # a busy test machine
        with serving(server):
            spark35.send(step)
            out = spark35.next_json()
    finally:
        spark35.close()
    return {"spark": out["cases"], "truth": truth, "version": out["spark"], "paths": paths,
            "estimates": estimates}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@pytest.mark.parametrize("name", APPENDED)
def test_partitioned_merge_on_read_and_primary_key_tables(seen: dict, name: str) -> None:
    """Read before the next commit: a partitioned table (filters on its partition column
    included, which Hudi and Paimon evaluate by pruning partitions), a merge-on-read Hudi table
    whose updates sit in log files, a Paimon primary-key table whose upserted keys are merged:
    lakestats' statistics of the rows the snapshot query returns (Spark counts them too)."""
    case = seen["spark"][f"{name}-analyzed"]
    _lakestats_statistics(case["lakestats"], seen["truth"][name])
    assert case["spark"]["counted"] == seen["truth"][name]["rows"]


def test_paimon_still_prunes_partitions_and_spark_keeps_the_filter(seen: dict) -> None:
    """With the component Paimon still gets the partition filter (its scan's pushed filters)
    and Spark keeps it in a Filter above the scan, which narrows the whole snapshot's
    statistics; without it Paimon drops the filter from Spark's plan (its own row count is
    then the pruned splits')."""
    case = seen["spark"]["paimon-appended-analyzed"]
    on, off = (case[way]["filter_explain"] for way in ("lakestats", "spark"))
    for plan in (on, off):
        assert re.search(r"PushedFilters: \[[^\]]*\bp\b", plan.split("== Physical Plan ==")[1])
    optimized = [plan.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]
                 for plan in (on, off)]
    assert "Filter" in optimized[0] and "(p#" in optimized[0]
    assert "Filter" not in optimized[1]


def test_a_read_optimized_read_of_the_merge_on_read_table_keeps_spark_defaults(
        seen: dict) -> None:
    """Read-optimized reads see the base files without their logs' updates: other rows than
    the analyzed snapshot's, so what Spark has without the component."""
    case = seen["spark"]["hudi-mor-read-optimized"]
    on, off = case["lakestats"], case["spark"]
    assert (on["row_count"], on["distinct"], on["filters"]) == (
        off["row_count"], off["distinct"], off["filters"])
    assert on["row_count"] is None


def test_a_partitioned_hudi_table_in_the_session_catalog(seen: dict) -> None:
    """Through a catalog table, Hudi's partition pruning replaces the table's statistics with
    the pruned files' size before the component's rule runs, which sets the snapshot's again;
    partition filters are then estimated by the Filter Hudi keeps above the relation."""
    case = seen["spark"]["hudi-appended-catalog"]
    _lakestats_statistics(case["lakestats"], seen["truth"]["hudi-appended"])
    assert case["spark"]["counted"] == seen["truth"]["hudi-appended"]["rows"]
    assert case["spark"]["row_count"] is None


def test_the_merge_on_read_table_has_log_files(seen: dict) -> None:
    """The Hudi merge-on-read case is one: its upsert left log files beside the base files
    (hudi-rs merges them for lakestats, Hudi's snapshot relation for Spark)."""
    files = [p.name for p in Path(seen["paths"]["hudi-mor"]).rglob("*") if p.is_file()]
    assert any(".log." in name for name in files)
    assert any(name.endswith(".parquet") for name in files)


@pytest.mark.parametrize("fmt", FORMATS)
def test_histogram_beats_min_max_on_a_skewed_range(seen: dict, fmt: str) -> None:
    """``x < -1`` on a normal column: what min/max alone give (a uniform spread) is far off;
    the histogram is not."""
    ours = seen["spark"][f"{fmt}-current"]["lakestats"]["filters"]["x < -1.0"]
    true = seen["truth"][f"{fmt}-current"]["filters"]["x < -1.0"]
    assert _q_error(ours, true) <= 1.2


@pytest.mark.parametrize("name", APPENDED)
def test_statistics_of_another_snapshot_are_not_reported(seen: dict, name: str) -> None:
    """After a commit (Hudi) or snapshot (Paimon) nobody analyzed: what Spark has without the
    component, never the analyzed snapshot's rows, partition filters included."""
    case = seen["spark"][f"{name}-appended"]
    on, off = case["lakestats"], case["spark"]
    assert (on["row_count"], on["distinct"], on["filters"]) == (
        off["row_count"], off["distinct"], off["filters"])
    assert off["counted"] == seen["truth"][name]["rows"] + 1_000
    assert on["row_count"] != seen["truth"][name]["rows"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_without_the_component_spark_keeps_its_defaults(seen: dict, fmt: str) -> None:
    off = seen["spark"][f"{fmt}-current"]["spark"]
    if fmt == "hudi":  # a v1 relation without catalog statistics: a size, no row count
        assert off["row_count"] is None and off["distinct"] == {}
    else:  # Paimon's own: the planned splits' row count, no column statistics
        assert off["row_count"] == seen["truth"][f"{fmt}-current"]["rows"]
        assert not any(off["distinct"].get(c) for c in COLUMNS)


@pytest.mark.parametrize("name", [*APPENDED, "paimon-pk-tag"])
def test_time_travel_to_the_analyzed_snapshot_gets_its_statistics(seen: dict, name: str) -> None:
    """The appended table read as of the analyzed Hudi instant (``as.of.instant``) or Paimon
    snapshot (``scan.snapshot-id``, or a tag made on it, ``scan.tag-name``): that snapshot's
    statistics, as for a current one."""
    table = name.removesuffix("-tag")
    case = f"{name}" if name.endswith("-tag") else f"{name}-travel"
    _lakestats_statistics(seen["spark"][case]["lakestats"], seen["truth"][table])
    assert seen["spark"][case]["spark"]["counted"] == seen["truth"][table]["rows"]


@pytest.mark.parametrize("case", ESTIMATED_CASES)
def test_filters_get_lakestats_estimate(seen: dict, case: str) -> None:
    """With ``spark.lakestats.estimates.url``, each Filter's row count on Hudi (a path, and a
    partitioned table in the session catalog with its partition filters) and Paimon is the one
    ``lakestats estimate`` gives for the same predicate and snapshot."""
    got = seen["spark"][case]["estimates"]["filters"]
    assert got == seen["estimates"][case]
