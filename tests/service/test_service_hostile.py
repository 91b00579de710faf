"""The service under requests meant to hurt it.

The real server (uvicorn with the service's protocol, on 127.0.0.1 and a free port) gets a
bounded hostile mix: URLs and query strings over the parser's limit, unknown methods,
traversal, slow headers, deep predicates and huge literals. Every answer must be a 200 or
a 4xx with the ``{"error": {"type", "message"}}`` body, and clients asking ordinary
(cached) lookups meanwhile must keep a low latency. Also: a request over its time budget is
a JSON 503 while others are answered, error bodies name tables (not server paths), and a
column whose name holds ``/`` is addressable (checked against DuckDB).
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import schemathesis
import uvicorn
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import lakestats.api as ls
from lakestats.service.app import create_app
from lakestats.service.config import TableConfig
from lakestats.service.protocol import MAX_URL_BYTES
from lakestats.service.server import listen, uvicorn_options
from lakestats.service.tables import TableSet
from tests.service.test_service_fixture import analyzed_sales
from tests.service.uvicorn_thread import serving

pytestmark = pytest.mark.spark
HEADER_SECONDS = 1.0
REQUEST_SECONDS = 5.0
SLASHED = "a/b"


def _slashed_table(root: Path) -> Path:
    for part, values in {"p=1": [1, 2, 2, None], "p=2": [2, 3, 3, 3]}.items():
        (root / part).mkdir(parents=True)
        pq.write_table(pa.table({SLASHED: pa.array(values, pa.int64()), "n": [1, 2, 3, 4]}),
                       root / part / "0.parquet")
    return root


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory, spark) -> list[TableConfig]:
    base = tmp_path_factory.mktemp("hostile")
    sales = analyzed_sales(base, spark)
    slashed = _slashed_table(base / "slashed")
    ls.open_table(str(slashed)).analyze(spark=spark)
    raw = _slashed_table(base / "never_analyzed")
    return [sales, TableConfig("slashed", str(slashed)), TableConfig("raw", str(raw))]


@pytest.fixture(scope="module")
def base_url(tables: list[TableConfig]):
    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = create_app(tables, warm_up=True, request_seconds=REQUEST_SECONDS)
    server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options(HEADER_SECONDS)))
    with serving(server, sockets=[sock]):
        yield f"http://127.0.0.1:{port}"


def _raw(base_url: str, request: bytes, timeout: float = 30) -> tuple[int, dict, float]:
    """``request`` sent as bytes (what httpx would refuse to send); status, JSON body and
    seconds until the server closed the connection."""
    port = int(base_url.rsplit(":", 1)[1])
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"content-type: application/json" in head.lower(), head
    return status, json.loads(body), time.monotonic() - started


def _is_error(body: dict, kind: str | None = None) -> None:
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}, body
    assert isinstance(body["error"]["message"], str) and "Traceback" not in body["error"]["message"]
    if kind is not None:
        assert body["error"]["type"] == kind, body


def test_parser_refusals_are_json(base_url: str) -> None:
    """What uvicorn's parser refuses answers as every other 4xx: a URL over 64 KiB (414),
    an unknown method or a broken request line (400); the connection is closed."""
    where = urllib.parse.quote("n = 1 OR " * (MAX_URL_BYTES // 9 + 10) + "n = 2")
    status, body, _ = _raw(
        base_url, f"GET /api/tables/sales/estimate?where={where} HTTP/1.1\r\nHost: x\r\n\r\n"
        .encode()
    )
    assert status == 414
    _is_error(body, "URITooLong")
    assert "POST /api/tables/{table}/estimate" in body["error"]["message"]  # where long ones go
    for request in (b"FROBNICATE /api/tables HTTP/1.1\r\nHost: x\r\n\r\n",
                    b"GET /api/tables HTTP/9.9 extra\r\n\r\n",
                    b"GET /api/tables HTTP/1.1\r\nBad Header Line\r\n\r\n"):
        status, body, _ = _raw(base_url, request)
        assert status == 400, request
        _is_error(body, "BadRequest")
    # a method the parser knows but no route serves stays FastAPI's JSON 405
    response = httpx.request("PATCH", base_url + "/api/tables")
    assert response.status_code == 405
    _is_error(response.json(), "MethodNotAllowed")


def test_slow_headers_are_cut_off(base_url: str) -> None:
    """A client dribbling its headers (a byte every 0.2 s, never done) gets a JSON 408
    after the header deadline and is disconnected; the keep-alive timeout would not
    fire, as bytes keep arriving."""
    port = int(base_url.rsplit(":", 1)[1])
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(b"GET /api/tables HTTP/1.1\r\n")
        data = b""
        for byte in b"X-Slow: " + b"z" * 200:
            try:
                conn.sendall(bytes([byte]))
            except OSError:
                break  # closed by the server
            conn.settimeout(0.2)
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                break
            data += chunk
        conn.settimeout(5)
        with contextlib.suppress(OSError):  # a reset after the answer is a close too
            while chunk := conn.recv(65536):
                data += chunk
    took = time.monotonic() - started
    assert data.startswith(b"HTTP/1.1 408"), data[:100]
    _is_error(json.loads(data.partition(b"\r\n\r\n")[2]), "RequestTimeout")
    assert HEADER_SECONDS <= took < HEADER_SECONDS + 5, took
    # and a prompt client on the same server is answered at once
    assert httpx.get(base_url + "/api/tables", timeout=10).status_code == 200


def test_error_bodies_name_the_table_not_server_paths(base_url: str, tables) -> None:
    """A table without statistics, a data path and a bad partition: each message names
    the served table and no directory of the server."""
    raw = tables[2].table
    for url in ("/api/tables/raw/statistics", "/api/tables/raw", "/api/tables/raw/partitions",
                "/api/tables/sales/statistics?partition=region=nowhere"):
        response = httpx.get(base_url + url, timeout=30)
        assert 400 <= response.status_code < 500, (url, response.text)
        _is_error(response.json())
        message = response.json()["error"]["message"]
        assert raw not in message and str(Path(raw).parent) not in message, message
        assert "/tmp" not in message and "pytest-" not in message, message
    message = httpx.get(base_url + "/api/tables/raw/statistics").json()["error"]["message"]
    assert "raw" in message, message
    [listed] = [t for t in httpx.get(base_url + "/api/tables").json() if t["name"] == "raw"]
    assert "error" in listed and raw not in listed["error"] and "/tmp" not in listed["error"]
    page = httpx.get(base_url + "/tables/raw")
    assert page.status_code == 404 and raw not in page.text


def test_column_names_with_a_slash_are_addressable(base_url: str, tables) -> None:
    """``a/b`` sent as ``a%2Fb`` (and as is) reaches the column: frequencies and
    histogram counts equal DuckDB's over the same files; the column page renders."""
    con = duckdb.connect()
    files = f"{tables[1].table}/*/*.parquet"
    expected = dict(con.execute(
        f"SELECT \"{SLASHED}\", count(*) FROM read_parquet('{files}', hive_partitioning = true) "
        f"WHERE \"{SLASHED}\" IS NOT NULL GROUP BY 1").fetchall())
    for spelled in (urllib.parse.quote(SLASHED, safe=""), SLASHED):
        response = httpx.get(f"{base_url}/api/tables/slashed/columns/{spelled}/frequencies")
        assert response.status_code == 200, response.text
        got = {f["value"]: f["frequency"] for f in response.json()["frequencies"]}
        assert got == expected
        bins = httpx.get(f"{base_url}/api/tables/slashed/columns/{spelled}/histogram").json()
        assert sum(b["count"] for b in bins["bins"]) == sum(expected.values())
        holders = httpx.get(
            f"{base_url}/api/tables/slashed/columns/{spelled}/partitions-containing?value=3"
        ).json()
        assert {h["name"]: h["frequency"] for h in holders["partitions"]} == {"p=2": 3}
    page = httpx.get(f"{base_url}/tables/slashed/columns/{urllib.parse.quote(SLASHED, safe='')}")
    assert page.status_code == 200 and "top-values" in page.text


def test_a_request_over_its_budget_is_a_json_503_and_blocks_no_one(
    tables, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lookup that takes 5 s against a 0.5 s budget: its client gets a JSON 503 within
    about the budget; another client's lookup meanwhile is answered at once."""
    release = threading.Event()
    real = TableSet.table_statistics

    def slow(*args, **kwargs):
        release.wait(5)
        return real(*args, **kwargs)

    monkeypatch.setattr(TableSet, "table_statistics", slow)
    app = create_app(tables[:1], request_seconds=0.5)
    try:
        with TestClient(app) as client, ThreadPoolExecutor(2) as pool:
            started = time.monotonic()
            stalled = pool.submit(client.get, "/api/tables/sales/statistics")
            time.sleep(0.1)
            other = client.get("/api/tables/sales/partitions")
            other_took = time.monotonic() - started
            response = stalled.result(timeout=30)
            took = time.monotonic() - started
    finally:
        release.set()
    assert other.status_code == 200 and other_took < 0.5 + 0.4, other_took
    assert response.status_code == 503
    _is_error(response.json(), "TimeBudgetExceeded")
    assert 0.5 <= took < 3, took


# -- the hostile mix -----------------------------------------------------------------------

ORS = " OR ".join(f"n = {i}" for i in range(400))
TRANSPORT = [
    ("GET", "/api/tables/sales/estimate?where=" + "n%20%3D%201%20OR%20" * 8000 + "n=2"),
    ("GET", "/api/tables/sales/stats?columns=n&where=" + "x" * 70_000),
    ("GET", "/api/tables/sales/estimate?where=" + "n%3D1" + "%20" * 60_000),
    ("GET", "/api/tables/..%2F..%2Fetc%2Fpasswd/versions"),
    ("GET", "/api/tables/%2E%2E/versions"),
    ("GET", "/tables/..%2F..%2Fetc"),
    ("GET", "/static/..%2F..%2F..%2Fetc%2Fpasswd"),
    ("FROBNICATE", "/api/tables"),
    ("GET", "/api/tables/sales/columns/" + "%2F" * 3000 + "/histogram"),
    ("GET", "/api/tables/sales/statistics?columns=" + ",".join(["n"] * 5000)),
]
ESTIMATE = "/api/tables/sales/estimate?where="
PREDICATES = [
    ("GET", ESTIMATE + urllib.parse.quote(ORS)),
    ("GET", ESTIMATE + urllib.parse.quote("(" * 50 + "n = 1" + ")" * 50)),
    ("GET", ESTIMATE + urllib.parse.quote("NOT " * 500 + "n = 1")),
    ("GET", ESTIMATE + urllib.parse.quote("n = 1e1000000")),
    ("GET", "/api/tables/sales/stats?columns=n&where=" + urllib.parse.quote("NOT " * 500 + "n=1")),
    ("GET", ESTIMATE + urllib.parse.quote("n IN (" + "1," * 5000 + "1)")),
]


def _hostile_mix(base_url: str, mix: list[tuple[str, str]], rounds: int) -> None:
    """``rounds`` of ``mix`` from two clients while two others time cached lookups; every
    hostile answer is a 200 or a JSON 4xx, and the lookups' p99 stays low."""
    stop = threading.Event()
    latencies: list[float] = []

    def lookups() -> None:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            while not stop.is_set():
                started = time.monotonic()
                response = client.get("/api/tables/sales/statistics?columns=n")
                latencies.append(time.monotonic() - started)
                assert response.status_code == 200
                time.sleep(0.01)

    def hostile(offset: int) -> list[tuple[str, int, str]]:
        answers = []
        for i in range(rounds * len(mix)):
            method, url = mix[(i + offset) % len(mix)]
            if method == "FROBNICATE" or len(url) > 16_000:
                request = f"{method} {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                status, body, _ = _raw(base_url, request.encode(), timeout=60)
                answers.append((url[:80], status, json.dumps(body)))
                continue
            response = httpx.request(method, base_url + url, timeout=60)
            answers.append((url[:80], response.status_code, response.text))
        return answers

    with ThreadPoolExecutor(4) as pool:
        timers = [pool.submit(lookups) for _ in range(2)]
        time.sleep(0.5)
        attacks = [pool.submit(hostile, k) for k in range(2)]
        answers = [a for attack in attacks for a in attack.result(timeout=300)]
        stop.set()
        for timer in timers:
            timer.result(timeout=60)
    for url, status, text in answers:
        assert status == 200 or 400 <= status < 500, (url, status, text[:300])
        if status != 200:
            _is_error(json.loads(text))
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    print(f"lookups: {len(latencies)}, p50 {latencies[len(latencies) // 2] * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms")
    assert len(latencies) >= 20
    # 100 ms on an idle machine; a shared, loaded 2-core machine gets slack, a stall fails
    assert p99 < 1.0, f"p99 of the other clients' lookups {p99 * 1000:.0f} ms"


@pytest.mark.timeout(240)
def test_hostile_mix_transport(base_url: str) -> None:
    """Long URLs and query strings, traversal, unknown methods, huge column lists."""
    _hostile_mix(base_url, TRANSPORT, rounds=3)


@pytest.mark.timeout(240)
def test_hostile_mix_predicates(base_url: str) -> None:
    """Deep and long predicates, huge literals and IN lists, as planners and probes send."""
    _hostile_mix(base_url, PREDICATES, rounds=1)


# -- item 4: a manifest naming files outside its root ---------------------------------------


def _manifest_pointing_at(victim: Path, base: Path) -> Path:
    """A table whose statistics root holds one manifest: the victim's latest, with every
    path it names rewritten as ``../../<victim>/_lakestats/<path>`` (another root)."""
    [latest] = sorted((victim / "_lakestats" / "versions").glob("v*.json"))[-1:]
    away = f"../../{victim.name}/_lakestats/"
    text = re.sub(r'"(partitions|table)/', lambda m: f'"{away}{m.group(1)}/', latest.read_text())
    assert text.count(away) >= 4
    table = _slashed_table(base / "evil")
    (table / "_lakestats" / "versions").mkdir(parents=True)
    (table / "_lakestats" / "versions" / "v00000001.json").write_text(text)
    return table


def test_a_manifest_naming_another_root_is_refused_as_damaged(
    tables, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from lakestats import cli

    sales = Path(tables[0].table)
    (tmp_path / sales.name).symlink_to(sales)  # ../../sales/_lakestats resolves from evil
    evil = _manifest_pointing_at(tmp_path / sales.name, tmp_path)
    with TestClient(create_app([TableConfig("evil", str(evil))])) as client:
        for url in ("/api/tables/evil/statistics", "/api/tables/evil/partitions",
                    "/api/tables/evil/columns/n/histogram"):
            response = client.get(url)
            assert 400 <= response.status_code < 500, (url, response.text[:300])
            _is_error(response.json())
            assert "outside its statistics root" in response.json()["error"]["message"]
    assert cli.main(["show", str(evil)]) != 0
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("lakestats: error: ") and "outside its statistics root" in line


# -- the Schemathesis run, with the deep-predicate and huge-literal strategies --------------

DEPTHS = st.integers(min_value=40, max_value=700)
DEEP_PREDICATES = st.one_of(
    DEPTHS.map(lambda d: "(" * d + "n = 1" + ")" * d),
    DEPTHS.map(lambda d: "NOT " * d + "n = 1"),
    DEPTHS.map(lambda d: " OR ".join(f"n = {i}" for i in range(d))),
    DEPTHS.map(lambda d: " AND ".join(["(n > 0 OR x < 1)"] * d)),
)
HUGE_LITERALS = st.one_of(
    st.integers(min_value=300, max_value=1_000_000).map(lambda e: f"n = 1e{e}"),
    st.integers(min_value=300, max_value=1_000_000).map(lambda e: f"x > -1e-{e}"),
    st.integers(min_value=50, max_value=20_000).map(lambda k: "n = " + "9" * k),
    st.integers(min_value=50, max_value=5_000).map(lambda k: "amount < 0." + "1" * k),
    st.integers(min_value=1_000, max_value=20_000).map(
        lambda k: "n IN (" + ",".join(["1"] * k) + ")"),
    st.sampled_from(["day = DATE '99999999-01-01'", "word = '" + "w" * 60_000 + "'"]),
)


@pytest.mark.timeout(300)
def test_fuzzed_predicates_never_5xx_nor_slow(tables) -> None:
    """Schemathesis cases of the predicate routes, their ``where`` drawn from the deep and
    huge strategies: each answer a 200 or a JSON 4xx, within the request budget."""
    app = create_app(tables[:1], request_seconds=REQUEST_SECONDS)
    openapi = schemathesis.openapi.from_asgi("/openapi.json", app)
    routes = [("/api/tables/{table}/estimate", {}),
              ("/api/tables/{table}/stats", {"columns": "n"}),
              ("/api/tables/{table}/predicate-statistics", {})]

    @given(where=st.one_of(DEEP_PREDICATES, HUGE_LITERALS), route=st.sampled_from(routes))
    @settings(max_examples=30, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck),
              phases=[Phase.explicit, Phase.generate])  # bounded: no shrinking
    def check(where: str, route: tuple[str, dict]) -> None:
        path, extra = route
        case = openapi[path]["GET"].Case(path_parameters={"table": "sales"},
                                         query={"where": where, **extra})
        started = time.monotonic()
        response = case.call()
        took = time.monotonic() - started
        assert response.status_code == 200 or 400 <= response.status_code < 500, (
            where[:80], response.status_code, response.text[:300])
        if response.status_code != 200:
            _is_error(response.json())
        assert response.status_code != 503 and took < REQUEST_SECONDS, (where[:80], took)

    check()


def test_a_column_listed_many_times_is_answered_once(base_url: str) -> None:
    """5,000 copies of one name (the hostile mix's costliest 200: 1.8 s of a worker) answer
    what the name once answers."""
    once = httpx.get(base_url + "/api/tables/sales/statistics?columns=n", timeout=30)
    many = httpx.get(base_url + "/api/tables/sales/statistics?columns=" + ",".join(["n"] * 5000),
                     timeout=30)
    assert once.status_code == many.status_code == 200
    assert many.json() == once.json()
