"""``lakestats serve`` refuses what it cannot listen on in one line.

The real command in a subprocess: a port in use and a host that does not resolve end in
one ``lakestats: error:`` line and a non-zero exit before anything is printed or served
(uvicorn printed its own ``ERROR:`` log and exited 3, or served a wrapped-around port).
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

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
