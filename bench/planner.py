"""Estimates at planner speed: in-process estimate latency of an open table.

    python -m bench.planner [--out DIR] [--partitions 48] [--rows 400000] [--seed 25]
                            [--lineitem SCALE] [--fanout-root DIR [--fanout-only]]
                            [--calls 300] [--spark [--spark-calls 60]] [--skip-skewed]

A planner asks for many selectivities while it plans one query, so what counts is the
latency of ``LakestatsTable.estimate`` on a handle that is already open, and of its first
call after opening. Measured here, in one warm process (modules imported, files in the OS
cache):

* **skewed**: a table of our own (``--partitions`` partitions of Zipf-distributed sizes,
  per-partition shifted ranges, skewed frequent values, NULLs), analyzed with lakestats on
  local Spark (kept under ``--out`` and reused);
* **lineitem by month** (``--lineitem SCALE``, optional): TPC-H lineitem at that scale
  partitioned by ship year + month (``bench.common``), analyzed likewise;
* the competitor, with ``--spark``: Spark's optimizer on the same table (a catalog table
  over the same files, ``ANALYZE TABLE ... FOR ALL COLUMNS`` with histograms, CBO on; the
  catalog persists under ``--out``/spark so the ANALYZE runs once): per predicate, the time
  from the SQL text to the optimized plan's row count (``spark.sql(...)`` analysis +
  ``optimizedPlan().stats()``), p50 and p99 over ``--spark-calls`` predicates the session
  has not planned before, printed next to lakestats' figures;
* **fan-out** (``--fanout-root``, optional): the 3-conjunct estimate over the 10,000
  partitions x 100 columns statistics root ``bench/lookup.py --estimate-only`` builds
  (``bench.lookup.ESTIMATE_WHERE``); it is not built here (a 30-minute Spark reduction).

Per table: the first estimate after ``open_table`` (a new handle each time); warm
estimates of predicates the handle has not seen (the statistics are resident, the answer
is computed) and of predicates it has (the answer cache), p50 and p99; a batch of 50
predicates (``estimate_many``) cold, warm with new predicates, and repeated. Each figure is
printed against its target. The predicates are generated with a seed: single-column
equalities, ranges, IN lists, IS NULL, prefix LIKE, and 2- and 3-conjunct conjunctions.

Run against older code (PYTHONPATH at its checkout, without ``estimate_many``), the batch
is timed as a loop over ``estimate``: that is the "before" of the same run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lakestats.api as ls
from bench.common import DATA, machine
from lakestats.store.handle import StatisticsStore

OUT = DATA / "planner"
TARGETS = {
    "warm p50": 1.0,
    "warm p99": 5.0,
    "first call": 50.0,
    "batch of 50": 25.0,
    "fan-out warm": 50.0,
    "fan-out cold": 300.0,
}
CATEGORIES = [f"cat{i:02d}" for i in range(40)]


def skewed_table(out: Path, partitions: int, rows: int, seed: int) -> Path:
    """``partitions`` hive partitions ``p=0..`` whose sizes follow a Zipf law, with
    per-partition shifted ranges and frequent values (written once)."""
    root = out / f"skewed_{partitions}x{rows}"
    if (root / "_SUCCESS").exists():
        return root
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, partitions + 1) ** 1.1
    sizes = np.maximum(50, (weights / weights.sum() * rows).astype(int))
    for p, n in enumerate(rng.permutation(sizes)):
        zipf = (rng.zipf(1.3, n) + p * 7) % 2000
        base = dt.date(2020, 1, 1) + dt.timedelta(days=p * 9)
        cats = [CATEGORIES[(int(z) + p) % len(CATEGORIES)] for z in rng.zipf(1.6, n)]
        table = pa.table({
            "id": pa.array(np.arange(n, dtype=np.int64) + p * 1_000_000),
            "z": pa.array(zipf.astype(np.int64), mask=rng.random(n) < 0.05),
            "x": pa.array(rng.normal(p, 10, n)),
            "amount": pa.array(np.round(rng.lognormal(3, 1, n), 2)),
            "cat": pa.array(cats),
            "day": pa.array([base + dt.timedelta(days=int(d)) for d in rng.integers(0, 60, n)],
                            pa.date32()),
            "flag": pa.array(rng.integers(0, 4, n).astype(np.int32)),
        })
        (root / f"p={p}").mkdir(parents=True, exist_ok=True)
        pq.write_table(table, root / f"p={p}" / "data.parquet")
    (root / "_SUCCESS").touch()
    return root


def skewed_predicates(rng: np.random.Generator, count: int, partitions: int) -> list[str]:
    """``count`` distinct predicates over the skewed table's columns."""
    def one() -> str:
        p = int(rng.integers(0, partitions))
        kinds = {
            "eq": lambda: f"z = {int(rng.integers(0, 2000))}",
            "cat": lambda: f"cat = '{CATEGORIES[int(rng.integers(0, len(CATEGORIES)))]}'",
            "range": lambda: f"x > {rng.normal(p, 15):.2f}",
            "id": lambda: f"id < {p * 1_000_000 + int(rng.integers(0, 5000))}",
            "in": lambda: "flag IN ({})".format(", ".join(
                str(v) for v in sorted(set(rng.integers(0, 6, 2).tolist()))
            )),
            "null": lambda: "z IS NULL" if rng.random() < 0.5 else "z IS NOT NULL",
            "like": lambda: f"cat LIKE 'cat{int(rng.integers(0, 4))}%'",
            "day": lambda: f"day >= DATE '{dt.date(2020, 1, 1) + dt.timedelta(days=p * 9)}'",
            "amount": lambda: f"amount BETWEEN {rng.uniform(0, 50):.2f} AND "
                              f"{rng.uniform(50, 200):.2f}",
        }
        names = list(kinds)
        terms = int(rng.choice([1, 1, 2, 3]))
        chosen = rng.choice(len(names), size=terms, replace=False)
        return " AND ".join(kinds[names[int(i)]]() for i in chosen)

    seen: dict[str, None] = {}
    while len(seen) < count:
        seen[one()] = None
    return list(seen)


def lineitem_predicates(rng: np.random.Generator, count: int) -> list[str]:
    modes = ["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"]

    def one() -> str:
        kinds = [
            lambda: f"l_quantity < {int(rng.integers(1, 50))}",
            lambda: f"l_discount > 0.0{int(rng.integers(0, 9))}",
            lambda: f"l_shipmode = '{modes[int(rng.integers(0, len(modes)))]}'",
            lambda: f"l_tax <= 0.0{int(rng.integers(1, 8))}",
            lambda: f"l_extendedprice BETWEEN {int(rng.integers(900, 50000))} AND "
                    f"{int(rng.integers(50000, 100000))}",
            lambda: f"l_shipdate >= DATE '199{int(rng.integers(2, 9))}-0"
                    f"{int(rng.integers(1, 10))}-01'",
            lambda: f"l_returnflag = '{'ANR'[int(rng.integers(0, 3))]}'",
            lambda: f"l_orderkey < {int(rng.integers(1, 600_000))}",
        ]
        terms = int(rng.choice([1, 1, 2, 3]))
        chosen = rng.choice(len(kinds), size=terms, replace=False)
        return " AND ".join(kinds[int(i)]() for i in chosen)

    seen: dict[str, None] = {}
    while len(seen) < count:
        seen[one()] = None
    return list(seen)


def analyzed(path: Path, spark_of: Callable[[], object]) -> str:
    """``path`` analyzed with lakestats (once; a marker file records it)."""
    marker = path / "_lakestats_planner_bench"
    if not marker.exists():
        start = time.perf_counter()
        ls.open_table(str(path)).analyze(spark=spark_of())
        print(f"analyzed {path.name} in {time.perf_counter() - start:.0f} s", flush=True)
        marker.touch()
    return str(path)


def _ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p99 * 1000


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _line(label: str, value: float, target: str | None = None, unit: str = "ms") -> None:
    if target is None:
        print(f"  {label:52s} {value:9.2f} {unit}")
        return
    limit = TARGETS[target]
    verdict = "met" if value <= limit else "NOT met"
    print(f"  {label:52s} {value:9.2f} {unit}   target <= {limit:g} {unit}: {verdict}"
          f" ({value / limit:.2f}x)")


def _batch(table: ls.LakestatsTable, wheres: list[str]) -> object:
    many = getattr(table, "estimate_many", None)
    if many is not None:
        return many(wheres)
    return [table.estimate(w) for w in wheres]  # older code: one call each


def run_spark(spark, name: str, path: str, predicates: list[str], out: Path) -> None:  # noqa: ANN001
    """Spark's optimizer time per predicate on the same files (see the module docstring)."""
    from bench.estimate import _spark_analyze

    seconds = _spark_analyze(spark, name, Path(path), out / "spark")
    print(f"  Spark ANALYZE ... FOR ALL COLUMNS: {seconds:.1f} s (once)", flush=True)

    def plan(where: str) -> None:
        query = spark.sql(f"SELECT * FROM {name} WHERE {where}")._jdf.queryExecution()
        query.optimizedPlan().stats().rowCount()

    for where in predicates[:5]:  # the JIT and the catalog's caches
        plan(where)
    times = [_timed(lambda w=where: plan(w)) for where in predicates[5:]]
    p50, p99 = _ms(times)
    _line(f"Spark optimizer (SQL text to row count), p50 of {len(times)}", p50)
    _line(f"Spark optimizer (SQL text to row count), p99 of {len(times)}", p99)


def run_table(label: str, path: str, predicates: list[str], calls: int) -> None:
    """The figures for one table (see the module docstring)."""
    partitions = len(ls.open_table(path).reader().version.partitions)
    print(f"\n## {label}: {partitions} partitions", flush=True)
    warmup, fresh = predicates[:50], predicates[50 : 50 + calls]
    batch_cold, batch_warm = predicates[-100:-50], predicates[-50:]
    ls.open_table(path).estimate(warmup[0])  # imports, OS cache
    firsts = []
    for where in warmup[:10]:
        firsts.append(_timed(lambda w=where: ls.open_table(path).estimate(w)))
    first_p50, first_max = _ms(firsts)
    table = ls.open_table(path)
    for where in warmup:
        table.estimate(where)
    new = [_timed(lambda w=where: table.estimate(w)) for where in fresh]
    again = [_timed(lambda w=where: table.estimate(w)) for where in fresh]
    new_p50, new_p99 = _ms(new)
    hit_p50, hit_p99 = _ms(again)
    cold_batch = _timed(lambda: _batch(ls.open_table(path), batch_cold))
    warm_batch = _timed(lambda: _batch(table, batch_warm))
    repeated_batch = _timed(lambda: _batch(table, batch_warm))
    _line("first call after open_table, p50 of 10", first_p50, "first call")
    _line("first call after open_table, max of 10", first_max)
    _line(f"warm, predicates not seen before, p50 of {len(new)}", new_p50, "warm p50")
    _line(f"warm, predicates not seen before, p99 of {len(new)}", new_p99, "warm p99")
    _line(f"warm, the same predicates again, p50 of {len(again)}", hit_p50, "warm p50")
    _line(f"warm, the same predicates again, p99 of {len(again)}", hit_p99, "warm p99")
    _line("batch of 50 on a new handle (cold)", cold_batch * 1000)
    _line("batch of 50 new predicates on a warm handle", warm_batch * 1000, "batch of 50")
    _line("the same batch of 50 again", repeated_batch * 1000, "batch of 50")


def run_fanout(root: str, runs: int) -> None:
    """The 3-conjunct estimate over bench/lookup.py's fan-out root: cold (a new handle per
    call) and warm (one handle; a new literal per call so no answer is reused, and the
    same predicate repeated)."""
    from bench.lookup import ESTIMATE_WHERE, _estimate_version
    from lakestats.store.reader import StatisticsReader

    number = _estimate_version(root)

    def handle() -> ls.LakestatsTable:  # the fan-out version, not a later lookup's
        return ls.LakestatsTable(
            root, root, _reader=StatisticsReader(StatisticsStore(str(root)), number)
        )

    partitions = len(handle().reader().version.partitions)
    print(f"\n## fan-out: {ESTIMATE_WHERE} over {partitions} partitions (version {number})",
          flush=True)
    cold = [_timed(lambda: handle().estimate(ESTIMATE_WHERE)) for _ in range(max(3, runs // 5))]
    table = handle()
    table.estimate(ESTIMATE_WHERE)
    varied = [ESTIMATE_WHERE.replace("int_4 = 17", f"int_4 = {17 + i % 40}")
              for i in range(1, runs + 1)]
    for where in varied[:5]:
        table.estimate(where)
    new = [_timed(lambda w=w: table.estimate(w)) for w in varied[5:]]
    same = [_timed(lambda: table.estimate(ESTIMATE_WHERE)) for _ in range(runs)]
    _line("cold (new handle), p50", _ms(cold)[0], "fan-out cold")
    _line("warm, equality literal varied, p50", _ms(new)[0], "fan-out warm")
    _line("warm, the same predicate, p50", _ms(same)[0], "fan-out warm")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--partitions", type=int, default=48)
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--lineitem", type=float, default=None,
                        help="also lineitem by month at this TPC-H scale")
    parser.add_argument("--fanout-root", default=None,
                        help="bench/lookup.py's fan-out statistics root (10,000 partitions)")
    parser.add_argument("--fanout-runs", type=int, default=30)
    parser.add_argument("--fanout-only", action="store_true", help="only the fan-out root")
    parser.add_argument("--spark", action="store_true",
                        help="also Spark's optimizer time for the same predicates")
    parser.add_argument("--spark-calls", type=int, default=60)
    parser.add_argument("--skip-skewed", action="store_true", help="not the skewed table")
    args = parser.parse_args()
    print(f"# bench/planner.py on {machine()}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    spark = None

    def spark_of() -> object:
        nonlocal spark
        if spark is None:
            from lakestats.compute.session import get_spark

            if args.spark:  # a catalog that keeps Spark's ANALYZE between runs, CBO on
                from bench.estimate import cbo_session

                cbo_session(args.out / "spark")
            spark = get_spark()
        return spark

    rng = np.random.default_rng(args.seed)
    count = 50 + args.calls + 100
    if not args.fanout_only and not args.skip_skewed:
        skewed = skewed_table(args.out, args.partitions, args.rows, args.seed)
        wheres = skewed_predicates(rng, count, args.partitions)
        run_table("skewed", analyzed(skewed, spark_of), wheres, args.calls)
        if args.spark:
            run_spark(spark_of(), "planner_skewed", str(skewed),
                      wheres[50 : 55 + args.spark_calls], args.out)
    if args.lineitem is not None and not args.fanout_only:
        from bench.common import partitioned, tpch_lineitem

        lineitem = analyzed(partitioned(tpch_lineitem(args.lineitem), "month"), spark_of)
        wheres = lineitem_predicates(np.random.default_rng(args.seed), count)
        run_table(f"lineitem by month, scale {args.lineitem:g}", lineitem, wheres, args.calls)
        if args.spark:
            run_spark(spark_of(), f"planner_lineitem_{str(args.lineitem).replace('.', '_')}",
                      lineitem, wheres[50 : 55 + args.spark_calls], args.out)
    if args.fanout_root:
        run_fanout(args.fanout_root, args.fanout_runs)


if __name__ == "__main__":
    main()
