"""One Trino server on 127.0.0.1 for a test (``make trino``: trino-server from Maven Central,
unpacked into ``build-trino/``), with an Iceberg catalog over a file metastore in a
temporary directory, and a small client of Trino's HTTP protocol (``POST /v1/statement``,
then ``nextUri`` until the answer is whole). The server runs in a process group of its own
and is always stopped: ``server()`` is a context manager."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_BUILT = sorted((ROOT / "build-trino").glob("trino-server-*/bin/launcher"))
HOME = Path(os.environ.get("LAKESTATS_TRINO_HOME") or (_BUILT[-1].parents[1] if _BUILT else
                                                          ROOT / "build-trino" / "missing"))
JAVA_HOME = Path(os.environ.get("LAKESTATS_TRINO_JAVA_HOME",
                                "/usr/lib/jvm/temurin-25-jdk-amd64"))
LAUNCHER = HOME / "bin" / "launcher"
USER = "lakestats"
START_SECONDS = 240  # two busy cores: Trino alone starts in about 20 s


def available() -> bool:
    return LAUNCHER.is_file() and (JAVA_HOME / "bin" / "java").is_file()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _configure(base: Path, port: int) -> Path:
    etc, data, metastore, plugins = (base / d for d in ("etc", "data", "metastore", "plugins"))
    for d in (etc / "catalog", data, metastore, plugins):
        d.mkdir(parents=True)
    # only the Iceberg plugin is loaded: a quicker start than with all fifty
    (plugins / "iceberg").symlink_to(HOME / "plugin" / "iceberg")
    (etc / "config.properties").write_text(
        "coordinator=true\n"
        "node-scheduler.include-coordinator=true\n"
        f"http-server.http.port={port}\n"
        f"discovery.uri=http://127.0.0.1:{port}\n"
        f"plugin.dir={plugins}\n"
        "query.max-memory=512MB\n"
        "query.max-memory-per-node=512MB\n"
    )
    (etc / "node.properties").write_text(
        f"node.environment=test\nnode.id=lakestats-test\nnode.data-dir={data}\n"
    )
    (etc / "jvm.config").write_text(
        "-server\n-Xmx1G\n-XX:+UseG1GC\n-XX:+ExitOnOutOfMemoryError\n"
        "-XX:ActiveProcessorCount=2\n-Djdk.attach.allowAttachSelf=true\n"
    )
    (etc / "log.properties").write_text("io.trino=WARN\n")
    (etc / "catalog" / "iceberg.properties").write_text(
        "connector.name=iceberg\n"
        "iceberg.catalog.type=TESTING_FILE_METASTORE\n"
        f"hive.metastore.catalog.dir={metastore}\n"
        "fs.hadoop.enabled=true\n"  # file:// locations, as pyiceberg writes them
        "iceberg.register-table-procedure.enabled=true\n"
    )
    return etc


class Trino:
    def __init__(self, port: int, log: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = log

    def _get(self, request: urllib.request.Request | str) -> dict:
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.load(response)

    def query(self, sql: str) -> tuple[list[str], list[list]]:
        """Column names and rows of ``sql``; a failed query raises with Trino's message."""
        answer = self._get(urllib.request.Request(
            f"{self.url}/v1/statement", data=sql.encode(), method="POST",
            headers={"X-Trino-User": USER},
        ))
        columns, rows = None, []
        deadline = time.monotonic() + 300
        while True:
            if "error" in answer:
                raise AssertionError(f"{sql}: {answer['error'].get('message')}")
            columns = columns or answer.get("columns")
            rows += answer.get("data") or []
            following = answer.get("nextUri")
            if following is None:
                return [c["name"] for c in columns or []], rows
            assert time.monotonic() < deadline, f"{sql}: no answer in 300 s"
            answer = self._get(urllib.request.Request(following,
                                                      headers={"X-Trino-User": USER}))

    def ready(self) -> bool:
        try:
            info = self._get(f"{self.url}/v1/info")
        except OSError:
            return False
        return info.get("starting") is False


@contextmanager
def server(base: Path) -> Iterator[Trino]:
    port = _free_port()
    etc = _configure(base, port)
    log = base / "server.log"
    env = {**os.environ, "JAVA_HOME": str(JAVA_HOME),
           "PATH": f"{JAVA_HOME / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(LAUNCHER), "run", "--etc-dir", str(etc), "--data-dir", str(base / "data")],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    trino = Trino(port, log)
    try:
        deadline = time.monotonic() + START_SECONDS
        while not trino.ready():
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"Trino did not start (exit {process.poll()}): "
                    + log.read_text(errors="replace")[-3000:]
                )
            time.sleep(1)
        yield trino
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)  # the launcher execs java: the group is the server
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            continue
