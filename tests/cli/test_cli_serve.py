"""``lakestats serve`` refuses what it cannot listen on, or should not, in one line.

The real command in a subprocess: a port in use and a host that does not resolve end in
one ``lakestats: error:`` line and a non-zero exit before anything is printed or served
(uvicorn printed its own ``ERROR:`` log and exited 3, or served a wrapped-around port).
So does an address beyond this machine with no token configured; with one, it serves.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from lakestats.service.server import is_local
from tests.cli.test_cli_errors import _env, assert_one_error_line

TIMEOUT = 120


def _serve(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lakestats.cli", "serve", "--tables", str(cwd / "t.toml"), *args],
        cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT,
    )


def _config(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(f'[tables.t]\ntable = "{tmp_path}"\n')


def test_port_in_use_is_one_line(tmp_path: Path) -> None:
    _config(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve(["--port", str(port)], tmp_path)
    line = assert_one_error_line(done, f"cannot listen on 127.0.0.1:{port}")
    assert "--port" in line and done.stdout == ""


def test_bad_host_is_one_line(tmp_path: Path) -> None:
    _config(tmp_path)
    done = _serve(["--host", "no-such-host.invalid", "--port", "0"], tmp_path)
    assert_one_error_line(done, "--host 'no-such-host.invalid'")
    assert done.stdout == ""


def test_port_out_of_range_is_refused_before_serving(tmp_path: Path) -> None:
    _config(tmp_path)
    done = _serve(["--port", "70000"], tmp_path)
    assert_one_error_line(done, "a TCP port is 0 to 65535, got '70000'")
    assert done.stdout == ""


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "::0"])
def test_an_open_service_beyond_this_machine_is_refused(tmp_path: Path, host: str) -> None:
    """No token configured: serving on an address others reach is one line and exit 2."""
    _config(tmp_path)
    done = _serve(["--host", host, "--port", "0"], tmp_path)
    line = assert_one_error_line(done, f"refusing to serve on --host {host} with no token")
    assert "[tokens.NAME]" in line and done.returncode == 2 and done.stdout == ""


def test_with_a_token_it_serves_beyond_this_machine_and_asks_for_it(tmp_path: Path) -> None:
    """The same host with a token in the file (as `lakestats token --add-to` writes it):
    it serves, and a request without the token is a 401."""
    _config(tmp_path)
    made = subprocess.run(
        [sys.executable, "-m", "lakestats.cli", "token", "reader", "--tables", "t",
         "--add-to", str(tmp_path / "t.toml"), "--json"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=TIMEOUT, check=True,
    )
    secret = json.loads(made.stdout)["token"]
    assert secret not in (tmp_path / "t.toml").read_text()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "lakestats.cli", "serve", "--tables", str(tmp_path / "t.toml"),
         "--host", "0.0.0.0", "--port", str(port)],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert server.stdout is not None
        assert "(1 token(s))" in server.stdout.readline()
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                denied = httpx.get(f"http://127.0.0.1:{port}/api/tables", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.2)
        assert denied.status_code == 401
        allowed = httpx.get(f"http://127.0.0.1:{port}/api/tables", timeout=30,
                            headers={"Authorization": f"Bearer {secret}"})
        assert allowed.status_code == 200 and [t["name"] for t in allowed.json()] == ["t"]
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize(
    ("host", "local"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True),
     ("[::1]", True), ("0.0.0.0", False), ("::", False), ("192.168.1.5", False),
     ("example.com", False)],
)
def test_which_hosts_are_this_machine_only(host: str, local: bool) -> None:
    assert is_local(host) is local


def test_token_command_refuses_what_it_cannot_grant(tmp_path: Path) -> None:
    _config(tmp_path)
    before = (tmp_path / "t.toml").read_text()
    for args, words in [
        (["reader", "--tables", "nope"], "does not serve ['nope']"),
        (["bad name", "--tables", "t"], "token name 'bad name'"),
        (["reader", "--tables", "t,*"], 'give "*" alone'),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "lakestats.cli", "token", *args,
             "--add-to", str(tmp_path / "t.toml")],
            cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=TIMEOUT,
        )
        assert_one_error_line(done, words)
        assert done.stdout == ""  # no secret printed for a token that was not added
    assert (tmp_path / "t.toml").read_text() == before
