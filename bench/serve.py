"""HTTP service throughput and latency: ``lakestats serve`` under 32 concurrent clients.

Two tables: a generated 1,000-column x 10-partition Parquet table (``wide``) and TPC-H
lineitem (scale 0.1) by ship year (``lineitem``), both analyzed once on local Spark. The
server runs as ``lakestats serve --workers W`` on 127.0.0.1; 32 aiohttp clients in a
separate load-generator process send a fixed number of requests over a mix of endpoints.
Prints p50/p99 per endpoint class, requests/s and errors (must be 0), the CPU seconds of
the server (all workers) and of the load generator, the median with one client at a time
(HTTP cost without queueing) and the same calls in-process; plus the first (uncached)
load of the 1,000-column table page, its overview (profile and alerts) and two column
pages; then an open-loop run at ``--rate`` requests/s (latency
counted from each request's due time: what a caller sees below saturation, whereas the
closed loop's latency is ``clients / throughput`` by Little's law). ``--compare DIR``
serves the same mix from another checkout (e.g. ``/work/main``) in the same run and prints
the ratios. Targets:
single-partition lookups p50 < 10 ms, p99 < 50 ms; >= 1,000 req/s.

    python -m bench.serve [--requests 20000] [--workers 2] [--clients 32] [--compare DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import DATA, machine, partitioned, tpch_lineitem

WIDE_COLUMNS = 1000
WIDE_PARTITIONS = 10
WIDE_ROWS = 2000


def wide_table(root: Path) -> Path:
    """1,000 columns (floats, integers, low-cardinality strings) x 10 partitions."""
    if (root / "_SUCCESS").exists():
        return root
    for p in range(WIDE_PARTITIONS):
        rng = np.random.default_rng(p)
        columns = {}
        for c in range(WIDE_COLUMNS):
            if c % 10 < 7:
                columns[f"c{c:04d}"] = rng.normal(c, 1 + p, WIDE_ROWS)
            elif c % 10 < 9:
                columns[f"c{c:04d}"] = rng.integers(0, 100 + c, WIDE_ROWS)
            else:
                columns[f"c{c:04d}"] = pa.array([f"v{v}" for v in rng.integers(0, 20, WIDE_ROWS)])
        directory = root / f"p={p}"
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(columns), directory / "part-0.parquet")
    (root / "_SUCCESS").touch()
    return root


def analyzed(path: Path) -> None:
    import lakestats.api as ls
    from lakestats.store import manifest

    table = ls.open_table(str(path))
    if manifest.latest_version_number(table.store) == 0:
        started = time.perf_counter()
        table.analyze()
        print(f"analyzed {path.name} in {time.perf_counter() - started:.0f} s", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def requests_mix(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``(class, path)`` pairs: mostly single-partition lookups, some table-level, estimates,
    fan-outs (10 columns x every partition) and table pages."""
    rng = random.Random(seed)
    years = list(range(1992, 1999))
    out = []
    for _ in range(n):
        r = rng.random()
        c = rng.randrange(WIDE_COLUMNS)
        p = rng.randrange(WIDE_PARTITIONS)
        y = rng.choice(years)
        if r < 0.25:
            out.append(("partition statistics", f"/api/tables/wide/statistics?partition=p={p}"
                        f"&columns=c{c:04d},c{(c + 1) % WIDE_COLUMNS:04d}"))
        elif r < 0.45:
            out.append(("partition frequencies", "/api/tables/lineitem/columns/l_shipmode/"
                        f"frequencies?partition=ship_year={y}&top=5"))
        elif r < 0.65:
            out.append(("partition histogram", "/api/tables/lineitem/columns/l_quantity/"
                        f"histogram?partition=ship_year={y}&start={c % 40}&stop={c % 40 + 10}"))
        elif r < 0.75:
            out.append(("table statistics", f"/api/tables/wide/statistics?columns=c{c:04d}"))
        elif r < 0.85:
            out.append(("estimate", "/api/tables/lineitem/estimate?where="
                        f"l_quantity < {c % 50} AND l_shipmode = 'AIR'"))
        elif r < 0.95:
            cols = ",".join(f"c{(c + 7 * k) % WIDE_COLUMNS:04d}" for k in range(10))
            out.append(("fan-out 10 cols x 10 parts", f"/api/tables/wide/stats?columns={cols}"))
        else:
            out.append(("table page (cached)", f"/tables/wide?page={c % 10 + 1}"))
    return out


async def run_clients(  # noqa: ANN201
    base: str, mix: list[tuple[str, str]], clients: int, rate: float | None = None
):
    """``clients`` aiohttp sessions' worth of concurrent requests over ``mix``: seconds per
    class, error lines, wall seconds.

    ``rate`` None: closed loop, each client sends its next request when the last one ends
    (the most requests/s the server gives; by Little's law the mean latency is then
    ``clients / throughput``). ``rate`` R: open loop, request i is due at ``i / R`` seconds
    and its latency counts from then, not from when a free client sent it (no coordinated
    omission): the latency a caller sees at that offered load."""
    import aiohttp

    queue = list(reversed(list(enumerate(mix))))
    times: dict[str, list[float]] = {}
    errors: list[str] = []
    origin = time.perf_counter()

    async def client(session: aiohttp.ClientSession) -> None:
        while queue:
            i, (kind, path) = queue.pop()
            started = time.perf_counter()
            if rate is not None:
                due = origin + i / rate
                if due > started:
                    await asyncio.sleep(due - started)
                started = due
            try:
                async with session.get(base + path) as response:
                    body = await response.read()
                    status = response.status
            except (aiohttp.ClientError, TimeoutError) as exc:
                errors.append(f"{type(exc).__name__} {exc} after "
                              f"{time.perf_counter() - started:.1f} s: {path}")
                continue
            elapsed = time.perf_counter() - started
            if status != 200:
                errors.append(f"{status} {path} {body[:200]!r}")
            times.setdefault(kind, []).append(elapsed)

    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        started = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        wall = time.perf_counter() - started
    return times, errors, wall


def load_generator(
    base: str, requests: int, clients: int, seed: int, rate: float | None = None
) -> None:
    """The load generator's process (``--load BASE``): runs the mix, prints its results and
    its own CPU seconds as one JSON line."""
    cpu = time.process_time()
    mix = requests_mix(requests, seed)
    times, errors, wall = asyncio.run(run_clients(base, mix, clients, rate))
    print(json.dumps({"times": times, "errors": errors, "wall": wall,
                      "cpu": time.process_time() - cpu}), flush=True)


def generate_load(
    base: str, requests: int, clients: int, seed: int = 0, rate: float | None = None
) -> dict:
    """Run ``load_generator`` in its own process, so its CPU is its own and visible."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.serve", "--load", base, "--requests", str(requests),
         "--clients", str(clients), "--seed", str(seed), "--rate", str(rate or 0)],
        capture_output=True, text=True, timeout=1800, check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its live children (uvicorn's workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        pids.append(int(child))
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


@contextlib.contextmanager
def serving(
    config: Path, workers: int, source: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``lakestats serve --tables config --workers workers`` from the code in ``source``
    (default: this checkout) on a free port, once it answers: its base URL and process."""
    import httpx

    source = source or Path(__file__).resolve().parents[1]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "lakestats.cli", "serve", "--tables", str(config),
         "--port", str(port), "--workers", str(workers)],
        env={**os.environ, "PYTHONPATH": str(source)}, cwd=str(source),
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/api/tables", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the server did not start within 120 s")
            time.sleep(0.2)
        yield base, server
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def run_server(label: str, source: Path, config: Path, args: argparse.Namespace) -> dict:
    """Start ``lakestats serve`` from the code in ``source``, warm it up, run the mix from a
    separate load-generator process; results with the server's and the client's CPU."""
    import httpx

    with serving(config, args.workers, source) as (base, server):
        started = time.perf_counter()
        first = httpx.get(f"{base}/tables/wide?page=3", timeout=60)
        cold = time.perf_counter() - started
        print(f"[{label}] first load of /tables/wide?page=3 (100 of 1,000 columns, uncached): "
              f"{cold * 1000:.0f} ms, {len(first.content) / 1024:.0f} KiB", flush=True)
        for page in ("/tables/wide/overview", "/tables/wide/columns/c0500",
                     "/tables/lineitem/columns/l_quantity?scale=log"):
            started = time.perf_counter()  # the pages' later parts, each uncached once
            found = httpx.get(f"{base}{page}", timeout=60)
            print(f"[{label}] first load of {page}: {found.status_code}, "
                  f"{(time.perf_counter() - started) * 1000:.0f} ms", flush=True)
        sequential = one_client(base)
        generate_load(base, 2000, args.clients, seed=1)  # warm up
        cpu = tree_cpu(server.pid)
        result = generate_load(base, args.requests, args.clients)
        result["server_cpu"] = tree_cpu(server.pid) - cpu
        result["sequential"] = sequential
        if args.rate:
            result["open"] = generate_load(
                base, int(args.rate * args.open_seconds), args.clients, seed=2, rate=args.rate
            )
    return result


def one_client(base: str, n: int = 200) -> dict[str, float]:
    """Median seconds per class with one client sending one request at a time (HTTP cost
    without queueing; the first requests of each path miss the server's answer cache)."""
    import httpx

    out: dict[str, list[float]] = {}
    with httpx.Client(base_url=base, timeout=60) as session:
        for kind, path in requests_mix(n * 7, seed=3):
            started = time.perf_counter()
            session.get(path).raise_for_status()
            out.setdefault(kind, []).append(time.perf_counter() - started)
    return {kind: statistics.median(values) for kind, values in out.items()}


def in_process(wide: Path, lineitem: Path, n: int = 300) -> dict[str, float]:
    """Median seconds of the same lookups as direct facade calls in this process (no HTTP,
    one at a time): the baseline the HTTP figures are compared with."""
    import lakestats.api as ls

    w, li = ls.open_table(str(wide)), ls.open_table(str(lineitem))
    rng = random.Random(2)
    calls = {
        "partition statistics": lambda c, p, y: w.statistics(
            f"p={p}", [f"c{c:04d}", f"c{(c + 1) % WIDE_COLUMNS:04d}"]
        ),
        "partition frequencies": lambda c, p, y: li.frequencies(
            "l_shipmode", f"ship_year={y}", 5
        ),
        "partition histogram": lambda c, p, y: li.histogram(
            "l_quantity", f"ship_year={y}", c % 40, c % 40 + 10
        ),
        "fan-out 10 cols x 10 parts": lambda c, p, y: w.stats(
            [f"c{(c + 7 * k) % WIDE_COLUMNS:04d}" for k in range(10)]
        ),
    }
    out = {}
    for kind, call in calls.items():
        times = []
        for _ in range(n):
            args = (rng.randrange(WIDE_COLUMNS), rng.randrange(WIDE_PARTITIONS),
                    rng.randrange(1992, 1999))
            started = time.perf_counter()
            call(*args)
            times.append(time.perf_counter() - started)
        out[kind] = statistics.median(times)
    return out


CLIENTS_NOTE = "every client waits for its answer before sending again"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(label: str, result: dict, direct: dict[str, float]) -> None:
    times, errors, wall = result["times"], result["errors"], result["wall"]
    total = sum(len(v) for v in times.values())
    print(f"\n[{label}]")
    print(f"{'endpoint class':30s} {'requests':>9s} {'p50 ms':>8s} {'p99 ms':>8s} {'mean ms':>8s}"
          f" {'1 client p50 ms':>15s} {'in-process p50 ms':>18s}")
    for kind, values in sorted(times.items()):
        p50 = percentile(values, 0.5)
        base = direct.get(kind)
        alone = result["sequential"].get(kind)
        print(f"{kind:30s} {len(values):9d} {p50 * 1000:8.1f} "
              f"{percentile(values, 0.99) * 1000:8.1f} {statistics.fmean(values) * 1000:8.1f}"
              f" {alone * 1000 if alone else float('nan'):15.2f}"
              + (f" {base * 1000:18.2f}" if base else ""))
    print(f"total {total} requests in {wall:.1f} s: {total / wall:,.0f} requests/s; "
          f"errors: {len(errors)}")
    print(f"CPU: server {result['server_cpu']:.1f} s ({result['server_cpu'] / total * 1000:.2f} ms"
          f" per request), load generator {result['cpu']:.1f} s "
          f"({result['cpu'] / total * 1000:.2f} ms per request)")
    print(f"closed loop, {CLIENTS_NOTE}: mean latency = clients / throughput = "
          f"{statistics.fmean([t for v in times.values() for t in v]) * 1000:.1f} ms")
    for line in errors[:5]:
        print("  error:", line)
    opened = result.get("open")
    if opened:
        count = sum(len(v) for v in opened["times"].values())
        print(f"open loop at {count / opened['wall']:,.0f} requests/s offered-and-served "
              f"({count} requests, latency from each request's due time), errors: "
              f"{len(opened['errors'])}")
        print(f"{'endpoint class':30s} {'requests':>9s} {'p50 ms':>8s} {'p99 ms':>8s}")
        for kind, values in sorted(opened["times"].items()):
            print(f"{kind:30s} {len(values):9d} {percentile(values, 0.5) * 1000:8.1f} "
                  f"{percentile(values, 0.99) * 1000:8.1f}")
        for line in opened["errors"][:5]:
            print("  error:", line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--compare", type=Path, default=None,
                        help="another checkout (e.g. the main branch) to serve the same mix")
    parser.add_argument("--rate", type=float, default=200.0,
                        help="also an open-loop run at this many requests/s (0: none)")
    parser.add_argument("--open-seconds", type=float, default=30.0,
                        help="length of the open-loop run")
    parser.add_argument("--load", help=argparse.SUPPRESS)  # the load generator's process
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        load_generator(args.load, args.requests, args.clients, args.seed, args.rate or None)
        return

    wide = wide_table(DATA / "serve_wide_1000x10")
    lineitem = partitioned(tpch_lineitem(0.1), "year")
    analyzed(wide)
    analyzed(lineitem)
    config = Path(tempfile.mkdtemp(prefix="serve-bench-")) / "tables.json"
    config.write_text(json.dumps({"tables": {"wide": {"table": str(wide)},
                                             "lineitem": {"table": str(lineitem)}}}))
    print(f"machine: {machine()}; server workers {args.workers}, {args.clients} clients "
          f"(aiohttp, one separate process), {args.requests} requests", flush=True)
    here = Path(__file__).resolve().parents[1]
    servers = [("this code", here)]
    if args.compare:
        servers.append((f"{args.compare}", args.compare.resolve()))
    results = [(label, run_server(label, source, config, args)) for label, source in servers]
    direct = in_process(wide, lineitem)
    for label, result in results:
        report(label, result, direct)
    if args.compare:
        [(_, new), (_, old)] = results
        rate = [sum(len(v) for v in r["times"].values()) / r["wall"] for r in (new, old)]
        print(f"\nrequests/s this code / {args.compare}: {rate[0] / rate[1]:.1f}x")
        for kind in sorted(new["times"]):
            ratio = percentile(old["times"][kind], 0.5) / percentile(new["times"][kind], 0.5)
            print(f"  {kind:30s} p50 {args.compare} / this code: {ratio:6.1f}x")
    if any(r["errors"] for _, r in results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
