"""Long IN lists, as planners send them (a semi-join's keys pushed down as a filter).

A generated table of two partitions x 150,000 rows with four high-cardinality columns
(strings, integers, decimals, dates), analyzed twice: with complete frequencies
(``--max-frequencies 400000``) and with the default 10,000 listed values. For 1,000,
10,000 and 100,000 values per type, the median of 3 runs of: the parse alone
(``predicate.parse``), a cold estimate (a new table handle: parse, read the statistics,
estimate) and a warm estimate (the same handle, a new list of the same length). Each
answer is checked against DuckDB's true count (exact where the frequencies are complete,
inside the bounds always).

    python -m bench.in_lists [--dir /tmp/in_lists] [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import statistics
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROWS = 150_000
BASE = dt.date(1800, 1, 1)


def _partition(rng: np.random.Generator, shift: int) -> pa.Table:
    keys = rng.integers(0, 400_000, ROWS) + shift * 50_000
    return pa.table({
        "s": pa.array([f"key-{k:07d}" for k in keys.tolist()]),
        "i": pa.array(keys * 7, pa.int64()),
        "d": pa.array([decimal.Decimal(int(k)).scaleb(-2) for k in keys.tolist()],
                      pa.decimal128(12, 2)),
        "day": pa.array([BASE + dt.timedelta(days=int(k) % 150_000) for k in keys.tolist()],
                        pa.date32()),
    })


def build(root: Path) -> tuple[Path, Path, pa.Table]:
    """The table's data once, analyzed into two statistics roots (complete, default)."""
    rng = np.random.default_rng(7)
    data = root / "data"
    parts = []
    for shift in range(2):
        part = _partition(rng, shift)
        parts.append(part)
        folder = data / f"p={shift}"
        if not folder.exists():
            folder.mkdir(parents=True)
            pq.write_table(part, folder / "data.parquet")
    import lakestats.api as ls

    roots = []
    for name, listed in (("complete", 400_000), ("default", 10_000)):
        store = root / f"stats-{name}"
        if not store.exists():
            ls.open_table(str(data), stats_root=str(store)).analyze(max_frequencies=listed)
        roots.append(store)
    return roots[0], roots[1], pa.concat_tables(parts)


def _literal(column: str, value: object) -> str:
    if column == "s":
        return f"'{value}'"
    if column == "day":
        return f"DATE '{value}'"
    return str(value)


def _predicate(rng: np.random.Generator, table: pa.Table, column: str, size: int) -> str:
    """``column IN (...)`` of ``size`` distinct values: half present, half absent."""
    present = np.unique(np.asarray(table[column].to_pylist(), dtype=object))
    chosen = list(rng.choice(present, size=min(size // 2, len(present)), replace=False))
    absent = {"s": lambda k: f"zz-{k}", "i": lambda k: k * 7 + 3,
              "d": lambda k: decimal.Decimal(k * 100 + 10**9).scaleb(-2),
              "day": lambda k: BASE - dt.timedelta(days=k % 500_000 + 1)}[column]
    extra = [absent(int(k)) for k in rng.integers(1, 10**6, size - len(chosen))]
    return f"{column} IN ({', '.join(_literal(column, v) for v in chosen + extra)})"


def _median(action, runs: int = 3) -> tuple[float, object]:  # noqa: ANN001
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = action()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/tmp/in_lists")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--columns", default="s,i,d,day")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stats", default="complete,default")
    args = parser.parse_args()
    import duckdb

    import lakestats.api as ls
    from lakestats.errors import LakestatsError
    from lakestats.query.predicate import parse

    complete, default, table = build(Path(args.dir))
    con = duckdb.connect()
    con.register("t", table)
    rng = np.random.default_rng(1)
    print(f"{'column':6s} {'values':>7s} {'chars':>9s} {'stats':8s} {'parse s':>8s} "
          f"{'cold s':>8s} {'warm s':>8s}  check")
    for column in args.columns.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            where = _predicate(rng, table, column, size)
            truth = con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchone()[0]
            for name, store in (("complete", complete), ("default", default)):
                if name not in args.stats.split(","):
                    continue
                handle = ls.open_table(str(Path(args.dir) / "data"), stats_root=str(store))
                types = {f.name: f.type for f in table.schema}
                try:
                    parse_s, _ = _median(lambda: parse(where, types), args.runs)  # noqa: B023
                except LakestatsError as exc:
                    print(f"{column:6s} {size:7,d} {len(where):9,d} {name:8s} refused: {exc}")
                    continue
                cold_s, got = _median(
                    lambda: ls.open_table(str(Path(args.dir) / "data"),
                                          stats_root=str(store)).estimate(where),  # noqa: B023
                    args.runs)
                handle.estimate(where)
                warm_where = _predicate(rng, table, column, size)
                warm_s, _ = _median(lambda: handle.estimate(warm_where), runs=1)  # noqa: B023
                ok = got.lower <= truth <= got.upper
                if name == "complete":
                    ok = ok and got.exact and got.row_count == truth
                print(f"{column:6s} {size:7,d} {len(where):9,d} {name:8s} {parse_s:8.3f} "
                      f"{cold_s:8.3f} {warm_s:8.3f}  truth {truth} est {got.row_count:.1f} "
                      f"[{got.lower}, {got.upper}] {'ok' if ok else 'WRONG'}", flush=True)


if __name__ == "__main__":
    main()
