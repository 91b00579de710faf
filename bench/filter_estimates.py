"""Spark's filter estimates with lakestats' own estimator behind them: q-error per class of
filter against DuckDB's counts, and the planner's time per filter estimate.

A table of skewed strings and correlated columns (``--rows``, 90,000 by default; ``day`` 6
values; ``k`` Zipf-skewed; ``region`` 55/30/10/5 %; ``tier`` always 'gold' where region is
'eu'; ``amount`` log-normal; ``note`` a third null), written as an Iceberg table (pyiceberg)
and a Delta table partitioned by day (delta-rs), each analyzed with ``lakestats analyze
--exact --column-groups region,tier``. ``lakestats serve`` serves both; one Spark 4.1
process (``.venv-interop``, ``bench/interop_spark.py``) plans each filter three ways:

* ``spark``: no component (Spark alone: Iceberg's own record count, nothing for Delta);
* ``component``: lakestats' Spark component, Spark estimating each Filter itself from the
  component's column statistics (``FilterEstimation``);
* ``estimates``: the component asking the service (``spark.lakestats.estimates.url``).

Per way and class: q-error p90 and max (targets with the service: p90 <= 1.5, max <= 3 in
every class). Then ``--timed`` new range predicates (each asked once, nothing cached) with
the component's debug log on: the time ``ServiceEstimates`` spent per Filter (translation,
the service's answer, the statistics built) plus what the rule before push-down spent
sending the same question ahead, p50/p99 after ``--warm`` predicates, per table (target:
p99 <= 2 ms), and each of the two parts' p50/p99; then how much of it the planning thread
ran on a core (its CPU time: the rest it waited, for the answer or, on a small host, for a
core) and how many of those windows held a garbage collection of the planning JVM (the
component's debug lines say both). The planning JVM gets ``--driver-memory`` (4g, a
planner's heap): at Spark's default 1g, the garbage of the Spark jobs Delta runs to plan each
scan paused it for about 10 ms every 0.2-0.3 s, on top of any filter's time.

    python -m bench.filter_estimates [--rows 90000] [--timed 500] [--warm 100]
        [--driver-memory 4g] [--service-nice 19]

``--service-nice`` runs the service below the planner's priority on the planner's host:
what that does to the planner's time is in docs/spark.md ("A service on the planner's host").
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from bench.common import machine
from bench.interop import EXTENSIONS, JARS, PYTHON, ROOT, _q_error, require_built

CLASSES = {
    "string =": ["region = 'sa'", "region = 'ap'", "region = 'eu'", "tier = 'bronze'",
                 "tier = 'gold'"],
    "string <>": ["region <> 'eu'", "region <> 'sa'", "tier <> 'gold'"],
    "IN": ["region IN ('ap', 'sa')", "tier IN ('silver', 'bronze')",
           "k IN (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233)"],
    "LIKE": ["region LIKE 's%'", "tier LIKE '%ld'", "note LIKE 'n1%'", "note LIKE '%7'"],
    "IS NULL": ["note IS NULL", "note IS NOT NULL"],
    "range int": ["k < 3", "k BETWEEN 10 AND 100", "k > 500"],
    "range float": ["amount < 5", "amount > 40", "amount BETWEEN 10 AND 20"],
    "range date": ["day >= '2024-01-04'", "day < '2024-01-02'"],
    "AND correlated": ["region = 'eu' AND tier = 'gold'", "region = 'us' AND tier = 'gold'",
                       "region = 'sa' AND tier = 'bronze'", "region = 'eu' AND tier <> 'gold'"],
    "AND independent": ["region = 'ap' AND k < 3", "tier = 'silver' AND amount > 40"],
    "OR": ["region = 'sa' OR k < 3", "tier = 'bronze' OR amount < 5"],
    "NOT": ["NOT (region = 'eu')", "NOT (k < 3)"],
}
WAYS = ["spark", "component", "estimates"]


def rows(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    region = rng.choice(["eu", "us", "ap", "sa"], p=[0.55, 0.30, 0.10, 0.05], size=n)
    other = rng.choice(["gold", "silver", "bronze"], p=[0.2, 0.5, 0.3], size=n)
    notes = rng.integers(0, 400, n)
    return pa.table({
        "day": pa.array(np.datetime64("2024-01-01") + np.arange(n) % 6, pa.date32()),
        "k": pa.array(np.minimum(rng.zipf(1.3, n), 1_000_000)),
        "region": pa.array(region),
        "tier": pa.array(np.where(region == "eu", "gold", other)),
        "amount": pa.array(rng.lognormal(2.5, 0.8, n)),
        "note": pa.array([None if i % 3 == 0 else f"n{v}" for i, v in enumerate(notes)]),
    })


def lakestats(*args: str) -> None:
    subprocess.run([str(ROOT / ".venv" / "bin" / "lakestats"), *args], check=True,
                   capture_output=True, text=True)


def build(base: Path, data: pa.Table) -> dict[str, dict]:
    """The Iceberg and Delta tables, analyzed; name -> {format, path, table, warehouse,
    location}."""
    from deltalake import write_deltalake

    from lakestats.formats.iceberg import load_catalog

    warehouse = base / "iceberg"
    catalog = load_catalog(warehouse=str(warehouse))
    catalog.create_namespace("bench")
    iceberg = catalog.create_table("bench.correlated", schema=data.schema)
    iceberg.append(data)
    delta = base / "delta"
    write_deltalake(str(delta), data, partition_by=["day"])
    groups = ["--exact", "--column-groups", "region,tier"]
    lakestats("analyze", "bench.correlated", "--warehouse", str(warehouse), *groups)
    lakestats("analyze", str(delta), *groups)
    metadata = load_catalog(warehouse=str(warehouse)).load_table("bench.correlated")
    return {
        "ice": {"format": "iceberg", "path": metadata.metadata_location.removeprefix("file://"),
                "table": "bench.correlated", "warehouse": str(warehouse),
                "location": metadata.location()},
        "dlt": {"format": "delta", "path": str(delta), "table": str(delta),
                "location": str(delta)},
    }


def serve(base: Path, tables: dict[str, dict], nice: int = 0) -> tuple[subprocess.Popen, str]:
    """``lakestats serve`` for ``tables``, ``nice`` steps below this process's priority."""
    config = {"tables": {name: {k: v for k, v in t.items() if k in ("table", "warehouse")}
                         for name, t in tables.items()}}
    (base / "tables.json").write_text(json.dumps(config))
    port = 18000 + (int(time.time()) % 1000)
    server = subprocess.Popen([str(ROOT / ".venv" / "bin" / "lakestats"), "serve", "--tables",
                               str(base / "tables.json"), "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              preexec_fn=(lambda: os.nice(nice)) if nice else None)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/tables", timeout=5) as answer:
                if all(t.get("version") is not None for t in json.load(answer)):
                    warm(url, tables)
                    return server, url
        except OSError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            raise SystemExit("lakestats serve did not start: " + server.stderr.read()[-2000:])
        time.sleep(0.5)


def warm(url: str, tables: dict[str, dict]) -> None:
    """Ask the planner's route once per table before Spark does: its first question opens
    the served tables, which a cold service may not do within the planner's time limit."""
    for table in tables.values():
        location = table.get("path", table["table"])  # a 4xx answer warms it as well
        body = json.dumps({"location": location, "where": ["k > 0"]}).encode()
        request = urllib.request.Request(f"{url}/api/estimate", data=body,
                                         headers={"Content-Type": "application/json"})
        with contextlib.suppress(OSError):  # a 404 opens the served tables just as well
            urllib.request.urlopen(request, timeout=60).close()


def service_alone(
    url: str, tables: dict[str, dict[str, str]], predicates: list[str], warm: int
) -> dict[str, tuple[list[int], list[int]]]:
    """Per timed table, microseconds per new predicate after ``warm`` of them: the planner's
    route asked from this process (no Spark beside it), and the same estimates computed in
    process: what a question costs the service, apart from the planner's side."""
    import http.client

    import lakestats.api as ls

    host, port = url.removeprefix("http://").split(":")
    out = {}
    for short in TIMED:
        table = tables[short]
        location = table["location"]  # as the component names the table
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        asked = []
        for where in predicates:
            body = json.dumps({"location": location, "where": [where]})
            started = time.perf_counter()
            connection.request("POST", "/api/estimate", body,
                               {"Content-Type": "application/json"})
            answer = connection.getresponse()
            answer.read()
            asked.append(round((time.perf_counter() - started) * 1e6))
            if answer.status != 200:
                raise SystemExit(f"the service answered {answer.status} for {where!r}")
        connection.close()
        handle = ls.open_table(table["table"], warehouse=table.get("warehouse"))
        computed = []
        for where in predicates:
            started = time.perf_counter()
            handle.estimate_many([where])
            computed.append(round((time.perf_counter() - started) * 1e6))
        out[short] = (asked[warm:], computed[warm:])
    return out


def timed_predicates(count: int, seed: int = 11) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        low = int(rng.integers(1, 400))
        if i % 3 == 0:
            out.append(f"k BETWEEN {low} AND {low + int(rng.integers(1, 300))}")
        elif i % 3 == 1:
            out.append(f"amount < {rng.uniform(1, 60):.4f} AND region = 'ap'")
        else:
            out.append(f"region IN ('sa', 'ap') AND k > {low}")
    return out


TIMED = ("dlt", "ice")
"""The tables the timed predicates are planned over: Delta's Filter is the one the rule
before push-down saw, Iceberg's is rebuilt by push-down."""


@dataclasses.dataclass(frozen=True)
class PlannerTime:
    """One Filter estimated with the service: the microseconds the rules before push-down
    spent sending its question ahead and those the rule after push-down spent on it (wall
    time), how many of them the planning thread ran on a core, and the planning JVM's
    garbage collections inside those windows."""

    ahead: int
    after: int
    on_core: int
    collections: int

    @property
    def total(self) -> int:
        return self.ahead + self.after


def planner_micros(log: str) -> list[PlannerTime]:
    """Per Filter estimated with the service, in plan order (the log lines of
    ``ServiceEstimates`` at debug level)."""
    out, ahead, on_core, collections = [], 0, 0, 0
    for kind, wall, cpu, gc in re.findall(
        r"lakestats: filter (question sent ahead|estimate (?:\d+|kept Spark's)) in (\d+) us "
        r"\((\d+) us on a core, (\d+) garbage", log
    ):
        if kind.startswith("question"):
            ahead, on_core = ahead + int(wall), on_core + int(cpu)
            collections += int(gc)
        else:
            out.append(PlannerTime(ahead, int(wall), on_core + int(cpu), collections + int(gc)))
            ahead, on_core, collections = 0, 0, 0
    return out


def _p50_p99(micros: list[int]) -> tuple[float, float]:
    ordered = sorted(micros)
    return (statistics.median(ordered) / 1000,
            ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] / 1000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=90_000)
    parser.add_argument("--timed", type=int, default=500)
    parser.add_argument("--warm", type=int, default=100)
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--service-nice", type=int, default=0,
                        help="run the service this many nice steps below the planner")
    args = parser.parse_args()
    require_built()
    base = Path(tempfile.mkdtemp(prefix="filter-estimates-"))
    data = rows(args.rows)
    tables = build(base, data)
    con = duckdb.connect()
    con.register("t", data)
    truth = {w: con.execute(f"SELECT count(*) FROM t WHERE {w}").fetchone()[0]
             for ws in CLASSES.values() for w in ws}
    server, url = serve(base, tables, args.service_nice)
    try:
        queries = {f"{short}: {w}": {"sql": f"SELECT * FROM {short} WHERE {w}"}
                   for short in tables for ws in CLASSES.values() for w in ws}
        timed = timed_predicates(args.warm + args.timed)
        for short in TIMED:
            for i, w in enumerate(timed):
                queries[f"timed {short} {i}: {w}"] = {"sql": f"SELECT * FROM {short} WHERE {w}"}
        ways = {"spark": {"spark.lakestats.enabled": "false"},
                "component": {"spark.lakestats.enabled": "true"},
                "estimates": {"spark.lakestats.enabled": "true",
                              "spark.lakestats.estimates.url": url}}
        spec = base / "spec.json"
        spec.write_text(json.dumps({
            "jars": [str(p) for p in JARS], "extensions": EXTENSIONS,
            "tables": {k: {"format": v["format"], "path": v["path"]} for k, v in tables.items()},
            "queries": queries, "ways": ways, "driver_memory": args.driver_memory,
            "debug_logger": "io.lakestats.spark.ServiceEstimates"}))
        # the planner's log goes to a file: read from a pipe, each of its lines would wake
        # this process, which then takes a core from the planning thread it measures
        with (base / "spark.log").open("w+") as log:
            done = subprocess.run(
                [str(PYTHON), str(ROOT / "bench" / "interop_spark.py"), str(spec)],
                stdout=subprocess.PIPE, stderr=log, text=True, timeout=3600, check=False)
            log.seek(0)
            spark_log = log.read()
        alone = service_alone(url, tables, timed_predicates(args.warm + args.timed, seed=29),
                              args.warm)
    finally:
        server.terminate()
        server.wait(timeout=30)
    if done.returncode != 0:
        raise SystemExit(spark_log[-3000:])
    out = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"machine: {machine()}; {args.rows:,} rows, Iceberg and Delta; Spark {out['spark']}; "
          f"the service at nice {args.service_nice} beside the planner")
    print(f"{'filter':45s} {'true':>7s} " + " ".join(f"{w:>18s}" for w in WAYS))
    met = True
    for short in tables:
        for name, wheres in CLASSES.items():
            errors: dict[str, list[float]] = {w: [] for w in WAYS}
            for where in wheres:
                cells = []
                for way in WAYS:
                    estimate = out["estimates"][way][f"{short}: {where}"]
                    error = _q_error(estimate, truth[where])
                    errors[way].append(1e9 if error is None else error)
                    cells.append("none" if estimate is None else f"{estimate:,} ({error:.2f})")
                print(f"{short}: {where:40s} {truth[where]:>7,} "
                      + " ".join(f"{c:>18s}" for c in cells))
            summary = []
            for way in WAYS:
                values = sorted(errors[way])
                p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
                summary.append(f"{way} p90 {p90:.2f} max {values[-1]:.2f}"
                               if values[-1] < 1e9 else f"{way}: some without an estimate")
                if way == "estimates" and (p90 > 1.5 or values[-1] > 3):
                    met = False
            print(f"  {short} {name}: " + "; ".join(summary), flush=True)
    print(f"q-error targets with the service (p90 <= 1.5, max <= 3 in every class): "
          f"{'met' if met else 'NOT met'}")
    per_filter = planner_micros(spark_log)
    for i, short in enumerate(TIMED):  # the estimates way's timed queries come last
        asked = per_filter[len(per_filter) - (len(TIMED) - i) * (args.warm + args.timed):][
            args.warm:args.warm + args.timed]
        if asked:
            p50, p99 = _p50_p99([t.total for t in asked])
            ahead, after = _p50_p99([t.ahead for t in asked]), _p50_p99([t.after for t in asked])
            print(f"planner time per filter estimate through the component, {short} "
                  f"({len(asked)} new predicates, warm): p50 {p50:.2f} ms, p99 {p99:.2f} ms "
                  f"(target p99 <= 2 ms: {'met' if p99 <= 2 else 'NOT met'}); of it sending "
                  f"ahead p50 {ahead[0]:.2f} / p99 {ahead[1]:.2f} ms, the rule after push-down "
                  f"p50 {after[0]:.2f} / p99 {after[1]:.2f} ms")
            paused = sum(1 for t in asked if t.collections)
            core = _p50_p99([t.on_core for t in asked])
            print(f"  of it on a core (the planning thread's CPU time): p50 {core[0]:.2f} ms, "
                  f"p99 {core[1]:.2f} ms (the rest it waited: for the answer or for a core); "
                  f"{paused} of the {len(asked)} held a garbage collection of the planning JVM")
    for short, (round_trips, computed) in alone.items():
        (a50, a99), (c50, c99) = _p50_p99(round_trips), _p50_p99(computed)
        print(f"the service alone, {short} ({len(round_trips)} new predicates from a Python "
              f"client, one kept-alive connection): p50 {a50:.2f} ms, p99 {a99:.2f} ms; the same "
              f"estimates in process p50 {c50:.2f} / p99 {c99:.2f} ms (the rest is HTTP and "
              "the service's routing)")
    for short in TIMED:  # per table: a Delta query's optimization takes far longer
        plan = {w: statistics.median(v for q, v in out["plan_ms"][w].items()
                                     if q.startswith(f"timed {short} ")) for w in WAYS}
        print(f"optimizer time per timed query, {short}, median: "
              + ", ".join(f"{w} {ms:.1f} ms" for w, ms in plan.items()))


if __name__ == "__main__":
    main()
