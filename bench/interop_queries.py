"""Wall time of TPC-H queries whose join order depends on statistics.

All eight TPC-H tables (``--scale``, default 1) as Iceberg tables (pyiceberg, SQLite catalog
under bench/data), each analyzed with ``lakestats analyze --exact`` (timed: it commits the
Puffin file and writes the Spark component's statistics). Then one Spark 4.1 process
(``.venv-interop``, the runtimes of ``bench/interop.py``, ``make interop jars jvm``) with
``spark.sql.cbo.enabled`` and ``spark.sql.cbo.joinReorder.enabled`` runs the join-heavy
queries Q5, Q7, Q8, Q9 and Q10 three ways, three times each (median):

* ``row counts``: what Iceberg's scan reports alone (row count and size, no column stats);
* ``puffin``: Iceberg's ``report-column-stats`` on: the Puffin ``ndv`` of each column too;
* ``lakestats``: lakestats' Spark component (distinct counts, min/max, nulls, lengths and
  histograms of the snapshot read).

Per query and way: the median wall time, the join strategies Spark chose (broadcast hash /
shuffled hash / sort-merge joins in the executed plan), the order in which the optimized
plan joins the tables, and whether the answer equals DuckDB's on the same Parquet files
(the statistics may change the plan, never the rows). No query-time target:
the figures say what changed and what did not.

    python -m bench.interop_queries [--scale 1] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import DATA, machine
from bench.interop import EXTENSIONS, JARS, PYTHON, ROOT, analyze_exact, require_built
from bench.interop import WAYS as ESTIMATE_WAYS

TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]
# bench/interop.py's ways but the one without histograms (its jars and extensions too)
WAYS = {"row counts": ESTIMATE_WAYS["defaults"], "puffin": ESTIMATE_WAYS["puffin"],
        "lakestats": ESTIMATE_WAYS["lakestats"]}
# TPC-H's join-heavy queries with the specification's validation parameters
QUERIES = {
    "Q5": """
SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM customer, orders, lineitem, supplier, nation, region
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey
  AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey
  AND r_name = 'ASIA' AND o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1995-01-01'
GROUP BY n_name ORDER BY revenue DESC""",
    "Q7": """
SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue FROM (
  SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation, year(l_shipdate) AS l_year,
         l_extendedprice * (1 - l_discount) AS volume
  FROM supplier, lineitem, orders, customer, nation n1, nation n2
  WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey
    AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey
    AND ((n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY')
      OR (n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE'))
    AND l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31') AS shipping
GROUP BY supp_nation, cust_nation, l_year ORDER BY supp_nation, cust_nation, l_year""",
    "Q8": """
SELECT o_year, sum(CASE WHEN nation = 'BRAZIL' THEN volume ELSE 0 END) / sum(volume) AS share
FROM (
  SELECT year(o_orderdate) AS o_year, l_extendedprice * (1 - l_discount) AS volume,
         n2.n_name AS nation
  FROM part, supplier, lineitem, orders, customer, nation n1, nation n2, region
  WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey
    AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey
    AND n1.n_regionkey = r_regionkey AND r_name = 'AMERICA' AND s_nationkey = n2.n_nationkey
    AND o_orderdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31'
    AND p_type = 'ECONOMY ANODIZED STEEL') AS all_nations
GROUP BY o_year ORDER BY o_year""",
    "Q9": """
SELECT nation, o_year, sum(amount) AS sum_profit FROM (
  SELECT n_name AS nation, year(o_orderdate) AS o_year,
         l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount
  FROM part, supplier, lineitem, partsupp, orders, nation
  WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey
    AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey
    AND p_name LIKE '%green%') AS profit
GROUP BY nation, o_year ORDER BY nation, o_year DESC""",
    "Q10": """
SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue, c_acctbal,
       n_name, c_address, c_phone, c_comment
FROM customer, orders, lineitem, nation
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey
  AND o_orderdate >= DATE '1993-10-01' AND o_orderdate < DATE '1994-01-01'
  AND l_returnflag = 'R' AND c_nationkey = n_nationkey
GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
ORDER BY revenue DESC LIMIT 20""",
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


def duckdb_answers(source: Path) -> dict[str, list[list[object]]]:
    con = duckdb.connect()
    for name in TABLES:
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{source / name}.parquet')")
    return {q: [list(r) for r in con.execute(sql).fetchall()] for q, sql in QUERIES.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    require_built()
    source = tpch_tables(args.scale)
    warehouse, metadata = iceberg_tables(source)
    print(f"machine: {machine()}; TPC-H scale {args.scale:g}, 8 Iceberg tables; "
          f"{args.runs} runs per query and way", flush=True)
    took = sum(analyze_exact([f"tpch.{name}", "--warehouse", str(warehouse)]) for name in TABLES)
    print(f"lakestats analyze --exact of the 8 tables: {took:.1f} s (a table analyzed "
          "before and unchanged since publishes nothing)", flush=True)
    spec = Path(tempfile.mkdtemp(prefix="interop-queries-")) / "spec.json"
    spec.write_text(json.dumps({"jars": [str(p) for p in JARS], "extensions": EXTENSIONS,
                                "tables": metadata, "queries": QUERIES, "ways": WAYS,
                                "runs": args.runs}))
    done = subprocess.run(
        [str(PYTHON), str(ROOT / "bench" / "interop_queries_spark.py"), str(spec)],
        capture_output=True, text=True, timeout=5400, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the Spark run failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    expected = duckdb_answers(source)
    print(f"Spark {result['spark']}; wall seconds, median of {args.runs}; joins: broadcast "
          "hash / shuffled hash / sort-merge\n")
    print(f"{'query':6s}" + "".join(f"{way:>28s}" for way in WAYS) + "   same answer")
    wrong = []
    for query in QUERIES:
        line = f"{query:6s}"
        for way in WAYS:
            run = result["runs"][way][query]
            joins = "/".join(str(run["joins"][k]) for k in ("broadcast", "shuffled", "merge"))
            line += f"{run['seconds']:>18.2f} s {joins:>7s}"
            if not same_answer(run["rows"], expected[query]):
                wrong.append(f"{query} {way}")
        print(line + ("   yes" if not any(w.startswith(query + " ") for w in wrong) else "   NO"))
    print("\njoin order of the optimized plan (tables as the plan's leaves read them):")
    for query in QUERIES:
        orders = {way: " ".join(result["runs"][way][query]["order"]) for way in WAYS}
        same = len(set(orders.values())) == 1
        print(f"  {query}: " + ("the same every way: " + orders["row counts"] if same else
                                "; ".join(f"{way}: {order}" for way, order in orders.items())))
    if wrong:
        raise SystemExit(f"answers differ from DuckDB's: {', '.join(wrong)}")


if __name__ == "__main__":
    main()
