"""The service's other clients under a hostile mix.

``lakestats serve --workers 2`` on TPC-H lineitem (scale 0.1) by ship year. Two clients time
ordinary lookups (one column's table-level statistics, a partition's statistics, an
estimate a planner would send), 10 ms apart, while two hostile clients send the mix that
hurt the service before, each with a new literal so no answer is cached (400-disjunct ORs,
500 NOTs, 50 parentheses, ``1e1000000`` literals, 5,000-element IN lists, 60 KiB query
strings, traversal, unknown methods). Every
hostile answer must be a 200 or a 4xx with a JSON body; the lookups' p50/p99 are printed
beside the same lookups with no hostile client (the competitor: the service itself, idle).
Target: the other clients' p99 under 100 ms, 0 errors.

    python -m bench.hostile [--seconds 20] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import socket
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import machine, partitioned, tpch_lineitem
from bench.serve import analyzed, percentile, serving

TABLE = "/api/tables/lineitem"
LOOKUPS = [
    f"{TABLE}/statistics?columns=l_quantity",
    f"{TABLE}/statistics?partition=ship_year%3D1995&columns=l_extendedprice",
    f"{TABLE}/estimate?where=" + urllib.parse.quote("l_quantity < 10 AND l_discount > 0.05"),
]
ORS = " OR ".join(f"l_quantity = {i}" for i in range(1, 401))
ESTIMATE = f"{TABLE}/estimate?where="
HOSTILE = [
    ("GET", ESTIMATE + urllib.parse.quote(ORS)),
    ("GET", ESTIMATE + urllib.parse.quote("(" * 50 + "l_quantity = 1" + ")" * 50)),
    ("GET", ESTIMATE + urllib.parse.quote("NOT " * 500 + "l_quantity = 1")),
    ("GET", ESTIMATE + urllib.parse.quote("l_quantity = 1e1000000")),
    ("GET", f"{TABLE}/stats?columns=l_quantity&where="
     + urllib.parse.quote("NOT " * 500 + "l_quantity=1")),
    ("GET", ESTIMATE + urllib.parse.quote("l_quantity IN (" + "1," * 5000 + "1)")),
    ("GET", ESTIMATE + "l_quantity%3D1" + "%20" * 60_000),
    ("GET", f"{TABLE}/stats?columns=l_quantity&where=" + "x" * 70_000),
    ("GET", "/api/tables/..%2F..%2Fetc%2Fpasswd/versions"),
    ("GET", "/static/..%2F..%2F..%2Fetc%2Fpasswd"),
    ("FROBNICATE", "/api/tables"),
    ("GET", f"{TABLE}/statistics?columns=" + ",".join(["l_quantity"] * 5000)),
    ("GET", ESTIMATE + "l_quantity%20%3D%201%20OR%20" * 8000 + "l_quantity=2"),
]


def _raw(port: int, request: bytes) -> tuple[int, str]:
    """A request sent as bytes (what httpx refuses to send): status and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode(errors="replace")


def _hostile(base: str, port: int, stop: threading.Event, offset: int) -> list[tuple]:
    import httpx

    answers = []
    i = offset
    with httpx.Client(base_url=base, timeout=60) as client:
        while not stop.is_set():
            method, url = HOSTILE[i % len(HOSTILE)]
            url = url.replace("%3D%201", f"%3D%20{i}")  # a new literal: no cached answer
            i += 1
            started = time.monotonic()
            if method == "FROBNICATE" or len(url) > 16_000:
                request = f"{method} {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                status, text = _raw(port, request.encode())
            else:
                response = client.request(method, url)
                status, text = response.status_code, response.text
            answers.append((url[:60], status, text[:200], time.monotonic() - started))
    return answers


def _lookups(
    base: str, stop: threading.Event, seconds: list[float], errors: list, slowest: list
) -> None:
    import httpx

    with httpx.Client(base_url=base, timeout=60) as client:
        i = 0
        while not stop.is_set():
            url = LOOKUPS[i % len(LOOKUPS)]
            i += 1
            started = time.monotonic()
            response = client.get(url)
            seconds.append(time.monotonic() - started)
            slowest.append((seconds[-1], url[:70], started))
            if response.status_code != 200:
                errors.append((url, response.status_code, response.text[:200]))
            time.sleep(0.01)


def run(base: str, port: int, duration: float, hostile: int) -> dict:
    """``duration`` seconds of two lookup clients beside ``hostile`` hostile clients."""
    stop = threading.Event()
    seconds: list[float] = []
    errors: list = []
    slowest: list = []
    begun = time.monotonic()
    with ThreadPoolExecutor(2 + hostile) as pool:
        timers = [pool.submit(_lookups, base, stop, seconds, errors, slowest) for _ in range(2)]
        attacks = [pool.submit(_hostile, base, port, stop, k * 5) for k in range(hostile)]
        time.sleep(duration)
        stop.set()
        for timer in timers:
            timer.result(timeout=120)
        answers = [a for attack in attacks for a in attack.result(timeout=120)]
    bad = [a for a in answers if not (a[1] == 200 or 400 <= a[1] < 500)]
    for url, status, text, _ in answers:
        if status != 200 and not text.startswith('{"error"'):
            bad.append((url, status, text, 0))
    slowest = [(took, url, at - begun) for took, url, at in sorted(slowest, reverse=True)[:3]]
    return {"lookups": seconds, "errors": errors, "hostile": answers, "bad": bad,
            "slowest": slowest}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    lineitem = partitioned(tpch_lineitem(0.1), "year")
    analyzed(lineitem)
    config = Path(tempfile.mkdtemp(prefix="hostile-bench-")) / "tables.json"
    config.write_text(json.dumps({"tables": {"lineitem": {"table": str(lineitem)}}}))
    print(f"machine: {machine()}; serve --workers {args.workers}; {args.seconds:.0f} s per run; "
          f"2 lookup clients (10 ms apart), hostile clients as named", flush=True)
    failed = False
    with serving(config, args.workers) as (base, _):
        port = int(base.rsplit(":", 1)[1])
        run(base, port, 3.0, 0)  # warm both workers' caches
        for hostile in (0, 2):
            result = run(base, port, args.seconds, hostile)
            lookups = sorted(result["lookups"])
            p50, p99 = percentile(lookups, 0.5), percentile(lookups, 0.99)
            line = (f"hostile clients {hostile}: lookups {len(lookups)}, p50 {p50 * 1000:.1f} ms,"
                    f" p99 {p99 * 1000:.1f} ms (target < 100 ms: "
                    f"{'met' if p99 < 0.1 else 'NOT met'}), max {lookups[-1] * 1000:.1f} ms, "
                    f"lookup errors {len(result['errors'])}")
            if hostile:
                took = sorted(a[3] for a in result["hostile"])
                line += (f"; hostile requests {len(took)}, p50 {percentile(took, 0.5) * 1000:.1f}"
                         f" ms, max {took[-1] * 1000:.1f} ms, not 200/JSON 4xx: "
                         f"{len(result['bad'])}")
            print(line, flush=True)
            for url, status, _, took in sorted(result["hostile"], key=lambda a: -a[3])[:3]:
                print(f"   slowest hostile {took * 1000:.0f} ms ({status}): {url}", flush=True)
            for took, url, at in result["slowest"]:
                print(f"   slowest lookup {took * 1000:.0f} ms at {at:.1f} s: {url}", flush=True)
            for bad in result["bad"][:5] + result["errors"][:5]:
                print("  ", bad, flush=True)
            failed |= bool(result["bad"] or result["errors"])
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
