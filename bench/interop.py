"""What lakestats' statistics buy Spark's optimizer: row estimates of
filters and joins against the true counts, each way, on TPC-H lineitem as Iceberg and Delta.

lineitem (``--scale``, default 0.1) by ship year as an Iceberg table (pyiceberg) and a Delta
table (delta-rs), each analyzed with ``lakestats analyze --exact`` (timed; it also commits
the Iceberg Puffin file and writes the Spark component's statistics). Then one Spark 4.1
process (``.venv-interop``, Iceberg 1.12's and Delta 4.1's runtimes, ``make interop jars
jvm``) plans every query three ways and prints the optimized plan's row count:

* ``defaults``: no component, Iceberg's ``report-column-stats`` off: what Spark has alone;
* ``puffin``: no component, Iceberg's own reporting on (row count and the Puffin ``ndv``);
* ``lakestats``: lakestats' Spark component (row count, distinct counts, min/max, nulls,
  lengths, histograms of the snapshot read);
* ``no histograms``: the component with ``spark.lakestats.histograms=false`` (Spark then
  estimates filters from min/max and joins from distinct counts alone);
* ``compute_table_stats``: no component; the Iceberg table registered in an Iceberg Hadoop
  catalog of the Spark session, where Iceberg's own ``CALL ….system.compute_table_stats``
  committed its Puffin theta sketches (Iceberg's reporting on). Delta rows: as ``defaults``.

Time to produce the statistics, in the same run: ``lakestats analyze --exact`` (each table),
Iceberg's ``compute_table_stats``, and Spark's ``ANALYZE TABLE … FOR ALL COLUMNS`` of the
same rows as a Parquet table (Spark's ANALYZE does not run on Iceberg's or Delta's V2 tables).

Per way: each query's estimate and q-error against DuckDB's count, the q-error p50/p90 and
the median planning time. Target: p90 q-error <= 1.5 with the component where
Spark's defaults are worse. Not covered here: query wall times with join reordering.

    python -m bench.interop [--scale 0.1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import duckdb

from bench.common import as_delta, as_iceberg, machine, tpch_lineitem

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv-interop" / "bin" / "python"
JARS = [
    ROOT / "build" / "jvm" / "lakestats-spark.jar",
    ROOT / "build" / "jars" / "iceberg-spark-runtime-4.1_2.13-1.12.0.jar",
    ROOT / "build" / "jars" / "delta-spark_2.13-4.1.0.jar",
    ROOT / "build" / "jars" / "delta-storage-4.1.0.jar",
]
EXTENSIONS = ["org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
              "io.delta.sql.DeltaSparkSessionExtension",
              "io.lakestats.spark.LakestatsExtensions"]
WHERE = {
    "quantity < 10": "l_quantity < 10",
    "discount > 0.07": "l_discount > 0.07",
    "shipdate 1995": "l_shipdate >= DATE '1995-01-01' AND l_shipdate < DATE '1996-01-01'",
    "returnflag = R": "l_returnflag = 'R'",
    "price > 90,000": "l_extendedprice > 90000",
    "quantity < 10 and discount > 0.07": "l_quantity < 10 AND l_discount > 0.07",
    "shipmode in (AIR, MAIL)": "l_shipmode IN ('AIR', 'MAIL')",
    "partkey < 1,000": "l_partkey < 1000",
}
JOINS = {
    "self-join on orderkey, quantity < 5": (
        "SELECT * FROM {t} a JOIN {t} b ON a.l_orderkey = b.l_orderkey "
        "WHERE a.l_quantity < 5"),
    "join on partkey < 500 both sides": (
        "SELECT * FROM {t} a JOIN {t} b ON a.l_partkey = b.l_partkey "
        "WHERE a.l_partkey < 500 AND b.l_discount > 0.08"),
}
WAYS = {
    "defaults": {"spark.lakestats.enabled": "false",
                 "spark.sql.iceberg.report-column-stats": "false"},
    "puffin": {"spark.lakestats.enabled": "false",
               "spark.sql.iceberg.report-column-stats": "true"},
    "lakestats": {"spark.lakestats.enabled": "true", "spark.lakestats.histograms": "true",
                  "spark.sql.iceberg.report-column-stats": "true"},
    "no histograms": {"spark.lakestats.enabled": "true", "spark.lakestats.histograms": "false",
                      "spark.sql.iceberg.report-column-stats": "true"},
    "compute_table_stats": {"spark.lakestats.enabled": "false",
                            "spark.sql.iceberg.report-column-stats": "true"},
}


def _q_error(estimate: int | None, true: int) -> float | None:
    if estimate is None:
        return None
    estimate, true = max(estimate, 1), max(true, 1)
    return max(estimate / true, true / estimate)


def _shown(q_error: float) -> str:
    return "no estimate" if q_error >= 1e9 else f"{q_error:.2f}"


def require_built() -> None:
    """Stop with one line when the interop venv, runtimes or component are not built."""
    missing = [str(p) for p in [PYTHON, *JARS] if not p.exists()]
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: run make interop jars jvm")


def analyze_exact(target: list[str]) -> float:
    """Seconds of ``lakestats analyze TARGET --exact`` as a process."""
    started = time.perf_counter()
    subprocess.run([str(ROOT / ".venv" / "bin" / "lakestats"), "analyze", *target, "--exact"],
                   check=True, capture_output=True, text=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=0.1)
    args = parser.parse_args()
    require_built()
    source = tpch_lineitem(args.scale)
    iceberg = as_iceberg(source)
    delta = as_delta(source)
    warehouse = source.parent / "iceberg"
    from lakestats.formats.iceberg import load_catalog

    metadata = load_catalog(warehouse=str(warehouse)).load_table("bench.lineitem_year")
    print(f"machine: {machine()}; TPC-H lineitem scale {args.scale} by ship year as Iceberg "
          f"and Delta", flush=True)
    took = {"iceberg": analyze_exact(["bench.lineitem_year", "--warehouse", str(warehouse)]),
            "delta": analyze_exact([str(delta)])}
    for name, seconds in took.items():
        print(f"lakestats analyze --exact ({name}): {seconds:.1f} s", flush=True)
    tables = {"ice": {"format": "iceberg",
                      "path": load_catalog(warehouse=str(warehouse))
                      .load_table("bench.lineitem_year").metadata_location
                      .removeprefix("file://")},
              "dlt": {"format": "delta", "path": str(delta)}}
    del metadata, iceberg
    queries, truth = {}, {}
    con = duckdb.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{source}')")
    for label, where in WHERE.items():
        truth[label] = con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchone()[0]
        for short in tables:
            queries[f"{short}: {label}"] = {"sql": f"SELECT * FROM {short} WHERE {where}"}
    for label, sql in JOINS.items():
        truth[label] = con.execute(f"SELECT count(*) FROM ({sql.format(t='t')})").fetchone()[0]
        for short in tables:
            queries[f"{short}: {label}"] = {"sql": sql.format(t=short)}
    spec = Path(tempfile.mkdtemp(prefix="interop-bench-")) / "spec.json"
    compute = {"way": "compute_table_stats", "view": "ice", "table": "bench.lineitem_year",
               "metadata": tables["ice"]["path"]}
    spec.write_text(json.dumps({"jars": [str(p) for p in JARS], "extensions": EXTENSIONS,
                                "tables": tables, "queries": queries, "ways": WAYS,
                                "compute_table_stats": compute,
                                "analyze_parquet": str(source)}))
    done = subprocess.run([str(PYTHON), str(ROOT / "bench" / "interop_spark.py"), str(spec)],
                          capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for what, seconds in out["seconds"].items():
        print(f"{what}: {seconds:.1f} s", flush=True)
    print(f"Spark {out['spark']}; estimates (q-error against DuckDB's count):", flush=True)
    print(f"{'query':50s} {'true':>9s} " + " ".join(f"{w:>20s}" for w in WAYS))
    errors: dict[tuple[str, str], list[float]] = {}
    for query in queries:
        short, label = query.split(": ", 1)
        cells = []
        for way in WAYS:
            estimate = out["estimates"][way][query]
            error = _q_error(estimate, truth[label])
            cells.append("none" if estimate is None else f"{estimate:,} ({error:.2f})")
            errors.setdefault((short, way), []).append(error if error is not None else 1e9)
        print(f"{query:50s} {truth[label]:>9,} " + " ".join(f"{c:>20s}" for c in cells))
    for short in tables:
        for way in WAYS:
            values = sorted(errors[(short, way)])
            p50 = statistics.median(values)
            p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
            plan = statistics.median(
                v for q, v in out["plan_ms"][way].items() if q.startswith(short))
            target = ""
            if way in ("lakestats", "no histograms"):
                target = f" (target p90 <= 1.5: {'met' if p90 <= 1.5 else 'NOT met'})"
            print(f"{short} {way:10s} q-error p50 {_shown(p50)}, p90 {_shown(p90)}{target}; "
                  f"planning median {plan:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
