"""An S3 endpoint that accepts connections and never answers.

A socket on 127.0.0.1 accepts every connection and sends nothing. A lookup gives up within
the configured limits (``s3.request_timeout`` times ``s3.attempts``), ~15 s by default
(it took 180 s), in one line naming the endpoint that did not answer.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from lakestats import cli, config, fs

TABLE = "s3://lakestats-test/tables/t"


@pytest.fixture
def silent_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])  # kept open, never read or answered
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}"
    for name, value in (("AWS_ENDPOINT_URL", url), ("AWS_REGION", "us-east-1"),
                        ("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    fs._s3.cache_clear()
    yield url
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    server.close()


def _one_line(capsys: pytest.CaptureFixture, args: list[str]) -> tuple[str, float]:
    started = time.monotonic()
    code = cli.main(args)
    took = time.monotonic() - started
    err = capsys.readouterr().err
    assert code != 0
    [line] = err.splitlines()
    assert line.startswith("lakestats: error: ") and "Traceback" not in err
    return line, took


@pytest.mark.timeout(120)
def test_a_lookup_gives_up_within_the_configured_time(
    silent_endpoint: str, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAKESTATS_S3_REQUEST_TIMEOUT", "1")
    monkeypatch.setenv("LAKESTATS_S3_ATTEMPTS", "2")
    for args in (["history", TABLE], ["show", TABLE, "--json"]):
        line, took = _one_line(capsys, args)
        assert took < 8, (args, took)
        assert f"S3 endpoint {silent_endpoint.removeprefix('http://')}" in line or (
            silent_endpoint in line
        ), line
        assert "did not answer" in line and "request timeout 1 s, 2 attempts" in line, line


@pytest.mark.timeout(120)
def test_the_default_limits_bound_a_lookup_near_15_seconds(
    silent_endpoint: str, capsys: pytest.CaptureFixture
) -> None:
    chosen = config.load()
    assert (chosen.s3_request_timeout, chosen.s3_attempts) == (4.0, 3)
    line, took = _one_line(capsys, ["history", TABLE])
    assert took < 25, took  # 3 attempts of 4 s and their back-off; it was 180 s
    assert silent_endpoint in line and "did not answer" in line, line


def test_analyze_jobs_get_the_longer_request_timeout() -> None:
    """What travels to executors carries its limits (their environment is not the driver's)."""
    options = fs.S3Options(endpoint_url="http://127.0.0.1:1").with_limits(analyze=True)
    chosen = config.load()
    assert options.request_timeout == chosen.s3_analyze_request_timeout == 15.0
    assert options.attempts * (options.request_timeout + options.connect_timeout) < 60
    assert fs.S3Options.from_json(options.to_json()) == options


def _limited(endpoint: str) -> fs.S3Options:
    return fs.S3Options(endpoint_url=endpoint, region="us-east-1", access_key="testing",
                        secret_key="testing", connect_timeout=1, request_timeout=1, attempts=2)


def _gives_up(call) -> float:
    started = time.monotonic()
    with pytest.raises(Exception):  # noqa: B017 - each library's own error type
        call()
    return time.monotonic() - started


@pytest.mark.timeout(120)
def test_the_format_libraries_clients_get_the_same_limits(silent_endpoint: str) -> None:
    """delta-rs and hudi-rs (Rust object_store: 30 s a request, 10 retries by default) and
    pyiceberg's FileIO are handed lakestats' limits: each gives up on the silent endpoint
    within a few request timeouts, not minutes."""
    import deltalake
    import hudi
    from pyiceberg.table import StaticTable

    options = _limited(silent_endpoint)
    store = fs.object_store_options(options)
    assert (store["timeout"], store["connect_timeout"], store["max_retries"]) == ("1s", "1s", "1")
    took = _gives_up(lambda: deltalake.DeltaTable(f"{TABLE}-delta", storage_options=store))
    assert took < 15, took
    took = _gives_up(lambda: hudi.HudiTableBuilder.from_base_uri(f"{TABLE}-hudi")
                     .with_storage_options(store).build())
    assert took < 40, took  # hudi-rs asks several files in turn, each within the limits
    properties = fs.iceberg_io_properties(options)
    assert properties["s3.request-timeout"] == "1" and properties["s3.endpoint"] == silent_endpoint
    took = _gives_up(lambda: StaticTable.from_metadata(
        f"{TABLE}-iceberg/metadata/v1.metadata.json", properties))
    assert took < 15, took
