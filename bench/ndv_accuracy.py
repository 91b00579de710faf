"""Distinct counts from a sample: ratio error of every estimator, of the selection rule and
of the baselines, on real-shaped columns.

For every column of TPC-H lineitem (scale 1), TPC-DS ``store_sales`` (scale 1, DuckDB's
tpcds extension) and Zipf tables (z = 0.5, 1, 2), draw a seeded uniform 1 % and 10 % row
sample, build the sample's frequency of frequencies and estimate the column's distinct count
from it alone. Ratio error = max(est/true, true/est) against the exact count of the full
column (pyarrow). Baselines in the same run: Chao (Presto), Duj1 (PostgreSQL) and the learned
estimator of Wu et al. (SIGMOD 2022, ``estndv``, weights bundled in the wheel).

    python -m bench.ndv_accuracy [--scale 1] [--rates 0.01,0.1] [--seed 2026]

``store_sales``: duckdb 2.0.0 in the project venv cannot ``INSTALL tpcds`` offline and the
PyPI package ``duckdb-extension-tpcds`` exists only for duckdb 1.5.5, so the table is
generated once by a throwaway ``uv run --with duckdb==1.5.5 --with
duckdb-extension-tpcds==1.5.5`` process into bench/data (the project venv is untouched).
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.common import DATA, machine, tpch_lineitem
from lakestats.stats.ndv import ESTIMATORS, frequency_of_frequencies, select_estimator

SHOWN = ("chao", "chao_wor", "chao_katz", "chao_lee", "shlosser", "duj1", "duj2a", "haas_stokes",
         "gee", "ae", "smoothed_jackknife", "hybskew")  # fmt: skip
SHORT = {"chao": "chao", "chao_wor": "chaoW", "chao_katz": "chaoK", "chao_lee": "chaoL",
         "shlosser": "shl", "duj1": "duj1",
         "duj2a": "duj2a", "haas_stokes": "HS98", "gee": "gee", "ae": "ae",
         "smoothed_jackknife": "sjack", "hybskew": "hyb95", "learned": "learn",
         "selected": "SEL"}  # fmt: skip
ZIPF_ROWS, ZIPF_DOMAIN = 2_000_000, 1_000_000
TIE = 0.005  # ratio errors within 0.5 % of each other: a tie, counted neither way


def store_sales(scale: float) -> Path | str:
    """store_sales at ``scale`` as Parquet, or the reason it could not be generated."""
    target = DATA / f"tpcds-sf{scale:g}" / "store_sales.parquet"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    script = textwrap.dedent(f"""
        import os, duckdb, duckdb_extension_tpcds as ext
        path = os.path.join(os.path.dirname(ext.__file__),
                            "extensions", "v1.5.5", "tpcds.duckdb_extension")
        con = duckdb.connect()
        con.execute("SET threads = 2")
        con.execute(f"LOAD '{{path}}'")
        con.execute("CALL dsdgen(sf={scale:g})")
        con.execute("COPY store_sales TO '{target}.tmp' (FORMAT parquet)")
    """)
    uv = Path(sys.executable).parent / "uv"
    cmd = [str(uv), "run", "--no-project", "--python", sys.executable, "--with", "duckdb==1.5.5",
           "--with", "duckdb-extension-tpcds==1.5.5", "python", "-c", script]  # fmt: skip
    try:
        subprocess.run(cmd, check=True, timeout=1800, capture_output=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"store_sales skipped: could not generate it with duckdb-extension-tpcds ({exc})"
    Path(f"{target}.tmp").rename(target)
    return target


def zipf_table(seed: int) -> pa.Table:
    """Zipf(z) ranks over a finite domain of ZIPF_DOMAIN values, ZIPF_ROWS rows each."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, ZIPF_DOMAIN + 1, dtype=np.float64)
    columns = {}
    for z in (0.5, 1.0, 2.0):
        weights = ranks**-z
        columns[f"zipf_z{z:g}"] = rng.choice(ZIPF_DOMAIN, ZIPF_ROWS, p=weights / weights.sum())
    return pa.table(columns)


def learned_estimator():  # noqa: ANN201 - estndv's model or the reason it is missing
    try:
        from estndv import ndvEstimator

        return ndvEstimator()  # loads model_paras.npy from inside the package
    except Exception as exc:  # noqa: BLE001 - any failure means: skip the baseline, say why
        return f"learned estimator (estndv) skipped: {exc}"


def ratio(est: float, true: int) -> float:
    est = max(est, 1e-9)
    return max(est / true, true / est)


def evaluate(table_name: str, table: pa.Table, rates, seed: int, learned) -> list[dict]:  # noqa: ANN001
    rows = []
    total = table.num_rows
    truth = {c: pc.count_distinct(table[c], mode="only_valid").as_py() for c in table.column_names}
    for rate in rates:
        rng = np.random.default_rng([seed, int(rate * 1e6), total])
        indices = np.sort(rng.choice(total, round(total * rate), replace=False))
        sample = table.take(pa.array(indices))
        for name in table.column_names:
            column = table[name]
            true = truth[name]
            big_n = len(column) - column.null_count
            if true == 0:
                continue
            f = frequency_of_frequencies(sample[name])
            n = int((np.arange(1, f.size + 1) * f).sum())
            errors = {e: ratio(ESTIMATORS[e](f, n, big_n).value, true) for e in SHOWN}
            if not isinstance(learned, str):
                est = float(np.ravel(learned.profile_predict(f, big_n))[0])
                errors["learned"] = ratio(est, true)
            chosen, value, (lower, upper) = select_estimator(f, n, big_n, seed=seed)
            errors["selected"] = ratio(value, true)
            rows.append({"table": table_name, "column": name, "rate": rate, "true": true,
                         "d": int(f.sum()), "chosen": chosen, "errors": errors,
                         "covered": lower <= true <= upper})  # fmt: skip
    return rows


def print_rate(rows: list[dict], rate: float, names: list[str]) -> None:
    print(f"\n### {rate:.0%} sample: ratio error max(est/true, true/est)")
    header = f"{'column':28}{'true NDV':>10}{'chosen':>14}" + "".join(
        f"{SHORT[n]:>7}" for n in names
    )
    print(header)
    mine = [r for r in rows if r["rate"] == rate]
    for r in mine:
        label = f"{r['table']}.{r['column']}"[:27]
        print(f"{label:28}{r['true']:>10}{r['chosen']:>14}"
              + "".join(f"{r['errors'][n]:7.2f}" for n in names))  # fmt: skip
    for what, agg in (("median", statistics.median), ("max", max)):
        print(f"{what:28}{'':>10}{'':>14}"
              + "".join(f"{agg(r['errors'][n] for r in mine):7.2f}" for n in names))  # fmt: skip
    medians = {n: statistics.median(r["errors"][n] for r in mine) for n in names}
    print("medians to 4 decimals: " + ", ".join(f"{SHORT[n]} {m:.4f}" for n, m in medians.items()))
    for base in ("chao", "duj1", *(["learned"] if "learned" in names else [])):
        pairs = [(r["errors"]["selected"], r["errors"][base]) for r in mine]
        ties = sum(abs(a - b) <= TIE * b for a, b in pairs)
        better = sum(a < b and abs(a - b) > TIE * b for a, b in pairs)
        worse = len(pairs) - ties - better
        share = better / (better + worse) if better + worse else 1.0
        print(f"selected vs {SHORT[base]}: better on {better}, worse on {worse}, tied on {ties} "
              f"of {len(mine)} columns (tie: ratio errors within {TIE:.1%} of each other); "
              f"better on {share:.0%} of the untied columns; not worse on "
              f"{(better + ties) / len(pairs):.0%} of all")
    covered = sum(r["covered"] for r in mine)
    print(f"true NDV inside the selected interval on {covered}/{len(mine)} columns")


def print_targets(rows: list[dict], rates: list[float], names: list[str]) -> None:
    """The targets, met or not, from the figures above."""
    print("\n### targets")
    bounds = {0.01: (1.5, None), 0.1: (1.1, 3.0)}
    baselines = [b for b in ("chao", "duj1", "learned") if b in names]
    for rate in rates:
        mine = [r for r in rows if r["rate"] == rate]
        sel = statistics.median(r["errors"]["selected"] for r in mine)
        top = max(r["errors"]["selected"] for r in mine)
        median_bound, max_bound = bounds.get(rate, (None, None))
        if median_bound is not None:
            print(f"{rate:.0%}: selected median {sel:.4f} <= {median_bound}: "
                  f"{'met' if sel <= median_bound else 'MISSED'}")
        if max_bound is not None:
            print(f"{rate:.0%}: selected max {top:.2f} <= {max_bound}: "
                  f"{'met' if top <= max_bound else 'MISSED'}")
        for base in baselines:
            other = statistics.median(r["errors"][base] for r in mine)
            print(f"{rate:.0%}: selected median {sel:.4f} < {SHORT[base]} {other:.4f}: "
                  f"{'met' if sel < other else 'MISSED'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--rates", default="0.01,0.1")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    print(f"# ndv_accuracy {dt.date.today()}  {machine()}  seed {args.seed}")
    learned = learned_estimator()
    if isinstance(learned, str):
        print(learned)
    tables = [("lineitem", pq.read_table(tpch_lineitem(args.scale)))]
    sales = store_sales(args.scale)
    if isinstance(sales, str):
        print(sales)
    else:
        tables.append(("store_sales", pq.read_table(sales)))
    tables.append(("zipf", zipf_table(args.seed)))
    rows = []
    for name, table in tables:
        print(f"{name}: {table.num_rows:,} rows, {table.num_columns} columns")
        rows += evaluate(name, table, rates, args.seed, learned)
    names = [*SHOWN, *([] if isinstance(learned, str) else ["learned"]), "selected"]
    for rate in rates:
        print_rate(rows, rate, names)
    print_targets(rows, rates, names)


if __name__ == "__main__":
    main()
