"""lakestats' Spark component (``jvm/``, ``make jvm``) gives Spark's optimizer lakestats'
statistics on scans of Iceberg and Delta tables written by their own writers (pyiceberg,
delta-rs) and analyzed from Python (``open_table(...).analyze()``, which writes the
component's file itself): the row count and exact distinct counts as pyarrow counts them,
and a range filter estimated from the histogram within q-error 1.5 of the true count. A
table appended to after its analyze gets nothing from the component (the statistics
describe another snapshot): Spark's own defaults, exactly as with the component off. Spark
4.1 with Iceberg 1.12's and Delta 4.1's runtimes runs once for the module in
``.venv-interop`` (``tests/formats/interop/spark_lakestats_stats.py``), the component
switched on and off per case with ``spark.lakestats.enabled``. Hudi and Paimon publish no
Spark 4 runtime that Maven Central serves here: they are tested on Spark 3.5
(test_spark35_component.py, docs/spark.md)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakestats.api as ls
from lakestats.formats.iceberg import load_catalog

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-interop" / "bin" / "python"
SCRIPT = Path(__file__).parent / "interop" / "spark_lakestats_stats.py"
JARS = ROOT / "build" / "jars"
COMPONENT = ROOT / "build" / "jvm" / "lakestats-spark.jar"
NEEDED = [
    COMPONENT,
    JARS / "iceberg-spark-runtime-4.1_2.13-1.12.0.jar",
    JARS / "delta-spark_2.13-4.1.0.jar",
    JARS / "delta-storage-4.1.0.jar",
]
FILTERS = {"x < -1.0": "x < -1.0", "k < 100": "k < 100", "z > 2.5": "z > 2.5"}
# both sides filtered on another column than the key (k has a histogram: 700 values drawn at
# random, its bins uneven)
JOIN = ("SELECT * FROM (SELECT * FROM ice WHERE x < -1.0) a "
        "JOIN (SELECT * FROM dlt WHERE z > 2.5) b USING (k)")

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(
        not PYTHON.exists() or not all(p.exists() for p in NEEDED),
        reason="no .venv-interop or jars (make interop jars jvm)",
    ),
]


def _rows(seed: int, n: int = 20_000) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "k": pa.array(rng.integers(0, 700, n)),
        "s": pa.array([f"v{i}" for i in rng.integers(0, 123, n)]),
        "x": pa.array(rng.normal(size=n)),
        "z": pa.array(rng.exponential(size=n)),
    })


def _iceberg(warehouse: Path, name: str, rows: pa.Table):
    catalog = load_catalog(warehouse=str(warehouse))
    if ("db",) not in catalog.list_namespaces():
        catalog.create_namespace("db")
    table = catalog.create_table(f"db.{name}", schema=rows.schema)
    table.append(rows)
    return table


def _analyze(name: str, warehouse: Path | None, spark) -> None:
    """Analyzed from Python, not the CLI: the analyze job itself writes the component's file."""
    table = ls.open_table(name, warehouse=str(warehouse) if warehouse else None)
    result = table.analyze(exact=True, spark=spark)
    spark_dir = Path(table.stats_root.removeprefix("file://")) / "spark"
    assert [p.name for p in spark_dir.iterdir()] == [
        f"v{result.version:08d}_{result.snapshot_id}.json"]


def _true_counts(rows: pa.Table) -> dict:
    con = duckdb.connect()
    con.register("t", rows)
    return {
        "rows": rows.num_rows,
        "distinct": {c: pc.count_distinct(rows[c]).as_py() for c in rows.column_names},
        "filters": {f: con.execute(f"SELECT count(*) FROM t WHERE {w}").fetchone()[0]
                    for f, w in FILTERS.items()},
    }


@pytest.fixture(scope="module")
def seen(spark, tmp_path_factory) -> dict:
    from deltalake import write_deltalake

    base = tmp_path_factory.mktemp("component")
    warehouse = base / "iceberg"
    cases, truth = [], {}
    # Iceberg: analyzed at its current snapshot; and one appended to after its analyze
    for name, seed in (("current", 1), ("appended", 2)):
        rows = _rows(seed)
        _iceberg(warehouse, name, rows)
        _analyze(f"db.{name}", warehouse, spark)
        analyzed = load_catalog(warehouse=str(warehouse)).load_table(f"db.{name}")
        if name == "appended":
            analyzed.append(_rows(9, 1_000))
            # time travel to the analyzed snapshot: its statistics again
            first = analyzed.metadata.snapshots[0].snapshot_id
            cases.append({"name": "iceberg-travel", "format": "iceberg",
                          "path": analyzed.metadata_location.removeprefix("file://"),
                          "options": {"versionAsOf": str(first)},
                          "filters": list(FILTERS.values())})  # fmt: skip
            truth["iceberg-travel"] = _true_counts(rows)
        location = load_catalog(warehouse=str(warehouse)).load_table(f"db.{name}")
        cases.append({"name": f"iceberg-{name}", "format": "iceberg",
                      "path": location.metadata_location.removeprefix("file://"),
                      "filters": list(FILTERS.values())})
        truth[f"iceberg-{name}"] = _true_counts(rows)
    # Iceberg partitioned by identity(r): a filter on r is evaluated on partition values only
    rows = _rows(5).append_column("r", pa.array(np.where(np.arange(20_000) % 2 == 0, "a", "b")))
    catalog = load_catalog(warehouse=str(warehouse))
    table = catalog.create_table("db.parts", schema=rows.schema)
    with table.update_spec() as spec:
        spec.add_identity("r")
    table.append(rows)
    _analyze("db.parts", warehouse, spark)
    parts = load_catalog(warehouse=str(warehouse)).load_table("db.parts").metadata_location
    cases.append({"name": "iceberg-parts", "format": "iceberg",
                  "path": parts.removeprefix("file://"),
                  "filters": [*FILTERS.values(), "r = 'a'"]})  # fmt: skip
    truth["iceberg-parts"] = _true_counts(rows)
    # Delta (delta-rs' writer): the same two cases
    for name, seed in (("current", 3), ("appended", 4)):
        rows = _rows(seed)
        path = base / "delta" / name
        write_deltalake(str(path), rows)
        _analyze(str(path), None, spark)
        if name == "appended":
            write_deltalake(str(path), _rows(9, 1_000), mode="append")
            cases.append({"name": "delta-travel", "format": "delta", "path": str(path),
                          "options": {"versionAsOf": "0"}, "filters": list(FILTERS.values())})
            truth["delta-travel"] = _true_counts(rows)
        cases.append({"name": f"delta-{name}", "format": "delta", "path": str(path),
                      "filters": list(FILTERS.values())})
        truth[f"delta-{name}"] = _true_counts(rows)
    iceberg_current = next(c for c in cases if c["name"] == "iceberg-current")["path"]
    joins = [{"name": "filtered", "sql": JOIN,
              "views": {"ice": {"format": "iceberg", "path": iceberg_current},
                        "dlt": {"format": "delta", "path": str(base / "delta" / "current")}}}]
    con = duckdb.connect()
    con.register("ice", _rows(1))
    con.register("dlt", _rows(3))
    truth["joins"] = {"filtered": con.execute(f"SELECT count(*) FROM ({JOIN})").fetchone()[0]}
    spec = base / "spec.json"
    spec.write_text(json.dumps({
        "jars": [str(p) for p in NEEDED],
        "extensions": ["org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
                       "io.delta.sql.DeltaSparkSessionExtension",
                       "io.lakestats.spark.LakestatsExtensions"],
        "cases": cases,
        "joins": joins,
    }))
    done = subprocess.run([str(PYTHON), str(SCRIPT), str(spec)], capture_output=True,
                          text=True, timeout=500, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {"spark": out["cases"], "joins": out["joins"], "truth": truth}


def _q_error(estimate: float, true: float) -> float:
    estimate, true = max(estimate, 1.0), max(true, 1.0)
    return max(estimate / true, true / estimate)


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_component_reports_lakestats_statistics(seen: dict, fmt: str) -> None:
    got = seen["spark"][f"{fmt}-current"]["lakestats"]
    truth = seen["truth"][f"{fmt}-current"]
    assert got["row_count"] == truth["rows"]
    assert got["distinct"] == truth["distinct"]  # exact, as pyarrow counts them
    assert f"rowCount={truth['rows']:.2E}".replace("E+0", "E+") in got["explain"]
    for text, true in truth["filters"].items():
        assert _q_error(got["filters"][text], true) <= 1.5, (text, got["filters"][text], true)


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_histogram_beats_sparks_defaults_on_a_skewed_range(seen: dict, fmt: str) -> None:
    """``x < -1`` on a normal column: a uniform spread over [min, max] (what min/max alone
    give) is far off; the histogram is not."""
    ours = seen["spark"][f"{fmt}-current"]["lakestats"]["filters"]["x < -1.0"]
    true = seen["truth"][f"{fmt}-current"]["filters"]["x < -1.0"]
    assert _q_error(ours, true) <= 1.2


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_statistics_of_another_snapshot_are_not_reported(seen: dict, fmt: str) -> None:
    case = seen["spark"][f"{fmt}-appended"]
    on, off = case["lakestats"], case["spark"]
    assert (on["row_count"], on["distinct"], on["filters"]) == (
        off["row_count"], off["distinct"], off["filters"])
    assert on["row_count"] != seen["truth"][f"{fmt}-appended"]["rows"] or on["row_count"] is None


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_without_the_component_spark_keeps_its_defaults(seen: dict, fmt: str) -> None:
    off = seen["spark"][f"{fmt}-current"]["spark"]
    truth = seen["truth"][f"{fmt}-current"]
    if fmt == "delta":  # a v1 relation without catalog statistics: a size, no row count
        assert off["row_count"] is None and off["distinct"] == {}
    else:  # Iceberg's own: the snapshot's record count; ndv from the Puffin file only
        assert off["row_count"] == truth["rows"]
    assert off["counted"] == truth["rows"]


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_time_travel_to_the_analyzed_snapshot_gets_its_statistics(seen: dict, fmt: str) -> None:
    """The appended table read at the snapshot lakestats analyzed (``versionAsOf``: Iceberg's
    snapshot id, Delta's version): that snapshot's statistics, as for a current one."""
    got = seen["spark"][f"{fmt}-travel"]["lakestats"]
    truth = seen["truth"][f"{fmt}-travel"]
    assert (got["row_count"], got["distinct"]) == (truth["rows"], truth["distinct"])
    for text, true in truth["filters"].items():
        assert _q_error(got["filters"][text], true) <= 1.5, (text, got["filters"][text], true)


def test_a_partition_filter_is_estimated_once(seen: dict) -> None:
    """``r = 'a'`` on an identity partition (half the rows): Spark keeps the Filter above
    Iceberg's scan, so with Iceberg's own statistics (the pruned partitions' 10,000 rows) the
    filter is applied twice (5,000); with lakestats' (the snapshot's 20,000 rows, 2 distinct
    values of r) once: 10,000, the true count."""
    case = seen["spark"]["iceberg-parts"]
    truth = seen["truth"]["iceberg-parts"]
    assert truth["rows"] == 20_000
    assert case["lakestats"]["filters"]["r = 'a'"] == 10_000
    assert case["spark"]["filters"]["r = 'a'"] == 5_000
    on = case["lakestats"]
    assert on["row_count"] == truth["rows"] and on["distinct"]["r"] == 2
    for text, true in truth["filters"].items():
        assert _q_error(on["filters"][text], true) <= 1.5, (text, on["filters"][text], true)


def test_a_join_of_filtered_scans_is_not_estimated_as_unfiltered(seen: dict) -> None:
    """Each side filtered on another column than the join key ``k`` (700 values drawn at
    random: uneven bins, so the statistics file keeps its histogram). Spark estimates an
    equi-join from both keys' histograms when both have one and never scales a histogram down
    after a filter on another column: with ``k``'s histograms this join was estimated as
    unfiltered, 496,120 rows for 7,705 (q-error 64). A scan gets the histograms of the columns
    its Filter reads only: ``x`` and ``z`` estimate their filters within q-error 1.5 in the
    plan's ``EXPLAIN COST``, and the join is estimated from distinct counts, which Spark scales
    down with each filter (by the filter's selectivity: 700 values of ``k`` become 113 and 57,
    hence 46,248, q-error 6.0; without histograms the filters and the join are further off)."""
    true = seen["truth"]["joins"]["filtered"]
    got = seen["joins"]["filtered"]
    ours = got["lakestats"]["row_count"]
    assert _q_error(ours, true) <= 8, (ours, true)
    explain = got["lakestats"]["explain"].split("== Physical Plan ==")[0]
    assert "Join Inner, (k#" in explain
    assert f"rowCount={ours:.2E}".replace("E+0", "E+") in explain
    filters = [float(n) for n in re.findall(r"Filter .*rowCount=([0-9.E+]+)\)", explain)]
    truths = [seen["truth"]["iceberg-current"]["filters"]["x < -1.0"],
              seen["truth"]["delta-current"]["filters"]["z > 2.5"]]
    assert len(filters) == 2
    assert all(_q_error(e, t) <= 1.5 for e, t in zip(filters, truths, strict=True)), filters
    assert _q_error(got["no histograms"]["row_count"], true) > 2 * _q_error(ours, true)
    assert got["spark"]["row_count"] is None  # Delta's relation without the component: no rows
