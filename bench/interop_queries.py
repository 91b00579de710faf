"""Wall time of the 22 TPC-H queries on Spark with and without lakestats' Spark component.

All eight TPC-H tables (``--scale``, default 1) as unpartitioned Iceberg tables (pyiceberg,
SQLite catalog under bench/data) and Delta tables (delta-rs), each analyzed with ``lakestats
analyze --exact`` (timed: it commits the Iceberg Puffin file and writes the component's
statistics). Then one Spark 4.1 process (``.venv-interop``, the runtimes of
``bench/interop.py``, ``make interop jars jvm``) with ``spark.sql.cbo.enabled`` and
``spark.sql.cbo.joinReorder.enabled`` runs each query (``bench/tpch_queries.py``: the
specification's texts and validation parameters) per format two ways, alternating, ``--runs``
times each (median):

* ``without``: the component off and Iceberg's ``report-column-stats`` off: the row count
  and size the scan reports alone (Delta: its size);
* ``with``: lakestats' component (row count, distinct counts, min/max, nulls, lengths and
  histograms of the snapshot read);
* ``service`` (``--service``): the component asking ``lakestats serve`` (serving the 16
  tables) for each Filter's and two-column aggregate's estimate.

Per query and format: the median wall time each way and their ratio (with / without),
whether the optimizer chose another physical plan (join order or strategy: broadcast hash /
shuffled hash / sort-merge joins in the executed plan), and whether the answers are the same
both ways and equal to DuckDB's on the same Parquet files (the statistics may change the plan,
never the rows). Then the totals per format. Target: no query slower than 1.05x with the
component, the total lower. ``--explain DIR`` writes each query's ``EXPLAIN COST`` per format
and way (``<format>-<query>-<way>.txt``); ``--runs 0`` plans without executing.

    python -m bench.interop_queries [--scale 1] [--runs 3] [--queries Q8,Q9]
        [--formats iceberg,delta] [--service] [--explain DIR]
        [--jar build/jvm/lakestats-spark.jar]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import DATA, machine
from bench.filter_estimates import serve
from bench.interop import EXTENSIONS, JARS, PYTHON, ROOT, analyze_exact, require_built
from bench.tpch_queries import queries

TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]
FORMATS = ["iceberg", "delta"]
# Every way sets every key another way sets: one session runs them all, in turn.
WAYS = {
    "without": {"spark.lakestats.enabled": "false",
                "spark.sql.iceberg.report-column-stats": "false",
                "spark.lakestats.estimates.url": ""},
    "with": {"spark.lakestats.enabled": "true", "spark.lakestats.histograms": "true",
             "spark.sql.iceberg.report-column-stats": "true",
             "spark.lakestats.estimates.url": ""},
}


def tpch_tables(scale: float) -> Path:
    """The eight tables at ``scale`` from tpchgen-cli, generated once under bench/data."""
    out = DATA / f"tpch-sf{scale:g}" / "tables"
    if not all((out / f"{t}.parquet").exists() for t in TABLES):
        out.mkdir(parents=True, exist_ok=True)
        cli = Path(ROOT / ".venv" / "bin" / "tpchgen-cli")
        subprocess.run([str(cli), "parquet", "-s", f"{scale:g}", f"--output-dir={out}"],
                       check=True, stdout=subprocess.DEVNULL)
    return out


def iceberg_tables(source: Path) -> tuple[Path, dict[str, str]]:
    """Each table as an unpartitioned Iceberg table ``tpch.<name>``: the warehouse and each
    table's current metadata file."""
    from lakestats.formats.iceberg import load_catalog

    warehouse = source.parent / "iceberg_all"
    catalog = load_catalog(warehouse=str(warehouse))
    catalog.create_namespace_if_not_exists("tpch")
    metadata = {}
    for name in TABLES:
        done = warehouse / f"{name}.done"
        if not done.exists():
            if catalog.table_exists(f"tpch.{name}"):
                catalog.purge_table(f"tpch.{name}")
            data = pq.read_table(source / f"{name}.parquet")
            # fresh Iceberg field ids come from the catalog: drop the file's own
            data = data.cast(pa.schema([pa.field(f.name, f.type, f.nullable)
                                        for f in data.schema]))
            table = catalog.create_table(f"tpch.{name}", schema=data.schema,
                                         properties={"format-version": "2"})
            table.append(data)
            done.touch()
        table = catalog.load_table(f"tpch.{name}")
        metadata[name] = table.metadata_location.removeprefix("file://")
    return warehouse, metadata


def _cells(row: list[object]) -> list[object]:
    """A row's values as text, decimals and doubles as floats (engines differ in a sum's
    last digits and in how they print a decimal)."""
    out: list[object] = []
    for value in row:
        text = str(value)
        try:
            out.append(float(text) if "." in text else text)
        except ValueError:
            out.append(text)
    return out


def same_answer(spark_rows: list[list[str]], duckdb_rows: list[list[object]]) -> bool:
    """Equal rows in any order (ordered by their non-float values), floats within 1e-4
    (Spark divides decimals to six digits: Q8's share 0.018250 for 0.0182503)."""
    def ordered(rows: list[list[object]]) -> list[list[object]]:
        cells = [_cells(r) for r in rows]
        return sorted(cells, key=lambda r: [str(v) for v in r if not isinstance(v, float)])

    a, b = ordered(spark_rows), ordered(duckdb_rows)
    return len(a) == len(b) and all(
        len(x) == len(y) and all(
            math.isclose(u, v, rel_tol=1e-4, abs_tol=1e-9)
            if isinstance(u, float) and isinstance(v, float) else u == v
            for u, v in zip(x, y, strict=True))
        for x, y in zip(a, b, strict=True))


def delta_tables(source: Path) -> dict[str, str]:
    """Each table as an unpartitioned Delta table written by delta-rs: its directory."""
    from deltalake import write_deltalake

    out = {}
    for name in TABLES:
        path = source.parent / "delta_all" / name
        if not (path.parent / f"{name}.done").exists():
            shutil.rmtree(path, ignore_errors=True)
            write_deltalake(str(path), pq.read_table(source / f"{name}.parquet"))
            (path.parent / f"{name}.done").touch()
        out[name] = str(path)
    return out


def duckdb_answers(source: Path, texts: dict[str, str]) -> dict[str, list[list[object]]]:
    con = duckdb.connect()
    for name in TABLES:
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{source / name}.parquet')")
    return {q: [list(r) for r in con.execute(sql).fetchall()] for q, sql in texts.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3, help="per query and way; 0: plans only")
    parser.add_argument("--queries", default="", help="e.g. Q8,Q9 (default: all 22)")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--explain", type=Path, help="a directory for EXPLAIN COST texts")
    parser.add_argument("--service", action="store_true",
                        help="a third way: the component asking `lakestats serve` for its "
                        "filter and aggregate estimates (spark.lakestats.estimates.url)")
    parser.add_argument("--jar", type=Path, default=JARS[0],
                        help=f"the component's jar (default {JARS[0].relative_to(ROOT)})")
    args = parser.parse_args()
    require_built()
    texts = queries(args.scale)
    if args.queries:
        chosen = [q.strip().upper() for q in args.queries.split(",")]
        unknown = [q for q in chosen if q not in texts]
        if unknown:
            raise SystemExit(f"no such TPC-H query: {', '.join(unknown)}")
        texts = {q: texts[q] for q in chosen}
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    if not formats or any(f not in FORMATS for f in formats):
        raise SystemExit(f"--formats: some of {', '.join(FORMATS)}")
    source = tpch_tables(args.scale)
    tables: dict[str, dict[str, str]] = {}
    print(f"machine: {machine()}; TPC-H scale {args.scale:g}, 8 tables as "
          f"{' and '.join(formats)}; {args.runs} runs per query, format and way", flush=True)
    if "iceberg" in formats:
        warehouse, tables["iceberg"] = iceberg_tables(source)
        took = sum(analyze_exact([f"tpch.{name}", "--warehouse", str(warehouse)])
                   for name in TABLES)
        print(f"lakestats analyze --exact of the 8 Iceberg tables: {took:.1f} s (a table "
              "analyzed before and unchanged since publishes nothing)", flush=True)
    if "delta" in formats:
        tables["delta"] = delta_tables(source)
        took = sum(analyze_exact([path]) for path in tables["delta"].values())
        print(f"lakestats analyze --exact of the 8 Delta tables: {took:.1f} s", flush=True)
    if args.explain:
        args.explain.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="interop-queries-"))
    ways = dict(WAYS)
    server = None
    if args.service:
        served = {f"{fmt}_{name}": ({"table": f"tpch.{name}", "warehouse": str(warehouse)}
                                    if fmt == "iceberg" else {"table": path})
                  for fmt, paths in tables.items() for name, path in paths.items()}
        server, url = serve(base, served)
        ways["service"] = {**WAYS["with"], "spark.lakestats.estimates.url": url}
    spec = base / "spec.json"
    spec.write_text(json.dumps({
        "jars": [str(args.jar.resolve()), *map(str, JARS[1:])], "extensions": EXTENSIONS,
        "tables": tables, "queries": texts, "ways": ways, "runs": args.runs,
        "explain": str(args.explain.resolve()) if args.explain else None}))
    try:
        done = subprocess.run(
            [str(PYTHON), str(ROOT / "bench" / "interop_queries_spark.py"), str(spec)],
            capture_output=True, text=True, timeout=4 * 3600, check=False)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    if done.returncode != 0:
        raise SystemExit(f"the Spark run failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    expected = duckdb_answers(source, texts) if args.runs else {}
    print(f"Spark {result['spark']}; wall seconds, median of {args.runs}; plan: the physical "
          "plan with the component differs (joins: broadcast hash / shuffled hash / "
          "sort-merge, without -> with)\n")
    others = [w for w in ways if w != "without"]
    print(f"{'query':6s}{'format':9s}" + "".join(f"{w:>10s}" for w in ways)
          + "".join(f"{w + ' x':>11s}" for w in others) + f"   {'plan':28s}same answer")
    wrong, slower = [], []
    for fmt in formats:
        total = {way: 0.0 for way in ways}
        for query in texts:
            run = result["runs"][fmt][query]
            joins = {way: "/".join(str(run[way]["joins"][k])
                                   for k in ("broadcast", "shuffled", "merge")) for way in ways}
            changed = run["without"]["plan"] != run["with"]["plan"]
            plan = (f"changed {joins['without']} -> {joins['with']}" if changed
                    else f"same {joins['with']}")
            if not args.runs:
                print(f"{query:6s}{fmt:9s}   {plan}")
                continue
            median = {way: statistics.median(run[way]["seconds"]) for way in ways}
            for way in ways:
                total[way] += median[way]
            ratios = {w: median[w] / median["without"] for w in others}
            same = all(same_answer(run[way]["rows"], expected[query]) for way in ways)
            if not same:
                wrong.append(f"{query} {fmt}")
            slower += [f"{query} {fmt} {w} {r:.2f}x" for w, r in ratios.items() if r > 1.05]
            print(f"{query:6s}{fmt:9s}" + "".join(f"{median[w]:>10.2f}" for w in ways)
                  + "".join(f"{ratios[w]:>10.2f}x" for w in others)
                  + f"   {plan:28s}{'yes' if same else 'NO'}")
        if args.runs:
            print(f"{'total':6s}{fmt:9s}" + "".join(f"{total[w]:>10.2f}" for w in ways)
                  + "".join(f"{total[w] / total['without']:>10.2f}x" for w in others) + "\n")
    print("join order of the optimized plan where it differs (tables as its leaves read them):")
    for fmt in formats:
        for query in texts:
            run = result["runs"][fmt][query]
            orders = {way: " ".join(run[way]["order"]) for way in ways}
            if len(set(orders.values())) > 1:
                print(f"  {fmt} {query}: " + "; ".join(f"{w}: {o}" for w, o in orders.items()))
    if slower:
        print(f"slower than 1.05x the query without the component: {', '.join(slower)}")
    if wrong:
        raise SystemExit(f"answers differ (both ways or from DuckDB's): {', '.join(wrong)}")


if __name__ == "__main__":
    main()
