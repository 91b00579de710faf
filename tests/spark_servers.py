"""Servers for the cluster tests, each in its own process group and killed on exit.

* ``standalone_cluster``: a Spark standalone master and workers from the PySpark package
  (``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``); every
  application gets one executor JVM per worker, separate from the driver.
* ``connect_server``: a Spark Connect server (``SparkConnectServer``, shipped in the PySpark
  package's jars) on 127.0.0.1.
* ``moto_server``: an S3-compatible server (moto) with the bucket ``lakestats-test``.
* ``run_cli``: ``lakestats`` in a subprocess (its own driver JVM), killed with its group on
  timeout.

Every server's Python workers import this checkout's lakestats (``PYTHONPATH``) with this
interpreter (``PYSPARK_PYTHON``), as every node of a real cluster must.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pyspark

from lakestats import fs

MOTO_SERVER = Path(__file__).parent / "s3_server.py"
"""moto with S3's atomic conditional writes."""

SPARK_HOME = Path(pyspark.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[1]
BUCKET = "lakestats-test"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spark_env(**extra: str) -> dict[str, str]:
    """The environment of every Spark process: this checkout first on ``PYTHONPATH``,
    this interpreter for Python workers, 127.0.0.1 for every address, small JVMs."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SPARK_", "LAKESTATS_", "AWS_", "PYSPARK_"))
    }
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="512m",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    env.update(extra)
    return env


class Processes:
    """Started processes, each the leader of its own group; ``stop`` kills every group."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: list[tuple[str, subprocess.Popen]] = []
        log_dir.mkdir(parents=True, exist_ok=True)

    def start(self, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = (self.log_dir / f"{name}.log").open("wb")
        process = subprocess.Popen(
            command,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=self.log_dir,
        )
        log.close()
        self.started.append((name, process))
        return process

    def tail(self, lines: int = 15) -> str:
        out = []
        for name, _ in self.started:
            text = (self.log_dir / f"{name}.log").read_text(errors="replace").splitlines()
            out.append(f"--- {name} ---\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [name for name, p in self.started if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"{', '.join(dead)} exited" if dead else f"not within {timeout:.0f} s"
                raise RuntimeError(f"{what}: {why}\n{self.tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        for _, process in reversed(self.started):
            _kill_group(process, signal.SIGTERM)
        for _, process in reversed(self.started):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                _kill_group(process, signal.SIGKILL)
                process.wait(timeout=15)
        for _, process in self.started:  # executors and Python workers left in a group
            _kill_group(process, signal.SIGKILL)


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    with suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


def _json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def standalone_cluster(log_dir: Path, workers: int = 2, timeout: float = 120) -> Iterator[str]:
    """A standalone master and ``workers`` workers (1 core, 1 GiB each); yields the master
    URL once every worker is registered and alive."""
    processes = Processes(log_dir)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, webui = free_port(), free_port()
    master = f"spark://127.0.0.1:{port}"
    env = spark_env()
    try:
        processes.start(
            "master",
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(webui)],
            env,
        )
        for i in range(workers):
            work_dir = log_dir / f"worker{i}"
            processes.start(
                f"worker{i}",
                [spark_class, "org.apache.spark.deploy.worker.Worker", master, "--cores", "1",
                 "--memory", "1g", "--host", "127.0.0.1", "--webui-port", "0",
                 "--work-dir", str(work_dir)],
                env,
            )

        def alive() -> bool:
            status = _json(f"http://127.0.0.1:{webui}/json/")
            return status is not None and status.get("aliveworkers") == workers

        processes.wait_until(alive, timeout, f"standalone master with {workers} workers")
        yield master
    finally:
        processes.stop()


def executor_logs(log_dir: Path) -> list[Path]:
    """The executors' stderr files the workers wrote (one per executor JVM)."""
    return sorted(log_dir.glob("worker*/app-*/*/stderr"))


@contextmanager
def connect_server(
    log_dir: Path, master: str = "local[2]", timeout: float = 120, **env: str
) -> Iterator[str]:
    """A Spark Connect server on 127.0.0.1 running its jobs on ``master`` (``env`` over
    ``spark_env``'s); yields its ``sc://`` URL once it listens."""
    processes = Processes(log_dir)
    port = free_port()
    try:
        processes.start(
            "connect",
            [str(SPARK_HOME / "bin" / "spark-submit"),
             "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--name", "lakestats-connect-test", "--master", master,
             "--driver-memory", "1g",
             "--conf", f"spark.connect.grpc.binding.port={port}",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
             "--conf", "spark.ui.enabled=false",
             "--conf", "spark.python.unix.domain.socket.enabled=true",
             "--conf", "spark.sql.shuffle.partitions=8"],
            spark_env(SPARK_CONNECT_MODE="0", **env),
        )
        processes.wait_until(lambda: _listening(port), timeout, "Spark Connect server")
        yield f"sc://127.0.0.1:{port}"
    finally:
        processes.stop()


@contextmanager
def moto_server(log_dir: Path, timeout: float = 30) -> Iterator[fs.S3Options]:
    """moto's S3 server with an empty bucket ``lakestats-test``."""
    processes = Processes(log_dir)
    port = free_port()
    options = fs.S3Options(
        endpoint_url=f"http://127.0.0.1:{port}",
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
    )
    try:
        processes.start(
            "moto",
            [sys.executable, str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)],
            dict(os.environ),
        )
        processes.wait_until(lambda: _listening(port), timeout, "moto server")
        s3_client(options).create_bucket(Bucket=BUCKET)
        yield options
    finally:
        processes.stop()


def s3_client(options: fs.S3Options):
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=options.endpoint_url,
        region_name=options.region,
        aws_access_key_id=options.access_key,
        aws_secret_access_key=options.secret_key,
    )


def upload(options: fs.S3Options, local: Path, prefix: str) -> str:
    """Copy a directory into the bucket; returns its ``s3://`` URI."""
    client = s3_client(options)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(local).as_posix()}")
    return f"s3://{BUCKET}/{prefix}"


def s3_env(options: fs.S3Options) -> dict[str, str]:
    """The ``AWS_*`` variables lakestats' driver reads (executors get them with the job)."""
    return {
        "AWS_ENDPOINT_URL": options.endpoint_url or "",
        "AWS_REGION": options.region or "",
        "AWS_ACCESS_KEY_ID": options.access_key or "",
        "AWS_SECRET_ACCESS_KEY": options.secret_key or "",
    }


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


# runs ``lakestats`` with reduce_local.LOCAL_CELLS set from argv[1] (-1: unchanged), so a
# test can send a small table through the staged table-level reduction
_CLI = """
import sys
from lakestats.compute.reduce import local as reduce_local
if int(sys.argv[1]) >= 0:
    reduce_local.LOCAL_CELLS = int(sys.argv[1])
from lakestats import cli
sys.exit(cli.main(sys.argv[2:]))
"""


def run_cli(
    argv: list[str], env: dict[str, str], timeout: float = 300, local_cells: int = -1
) -> CliRun:
    """``lakestats argv`` in a subprocess (its own session, so a test's SparkSession is
    untouched); ``local_cells`` overrides ``reduce_local.LOCAL_CELLS`` there."""
    return run_python(_CLI, [str(local_cells), *argv], env, timeout)


def run_python(code: str, argv: list[str], env: dict[str, str], timeout: float = 300) -> CliRun:
    """``python -c code argv`` in its own process group, killed (driver JVM included) on
    timeout and when it ends."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process, signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=30)
        raise RuntimeError(
            f"python -c ... {' '.join(argv)} did not finish within {timeout:.0f} s\n"
            f"{stderr[-3000:]}"
        ) from None
    finally:
        _kill_group(process, signal.SIGKILL)  # a driver JVM left behind
    return CliRun(process.returncode, stdout, stderr, time.monotonic() - started)
