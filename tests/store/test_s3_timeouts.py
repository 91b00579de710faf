"""Issue 29 item 5: an S3 endpoint that accepts connections and never answers.

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
