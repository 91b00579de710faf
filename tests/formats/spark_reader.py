"""One Spark 4.1 session (``.venv-interop``: Iceberg's and Delta's runtimes, lakestats'
component) kept running for a test module, asked what its optimizer sees of a table between the
test's changes (``interop/spark_reader.py``). Every answer is awaited with a timeout, and the
process group is killed when the module ends."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-interop" / "bin" / "python"
SCRIPT = Path(__file__).parent / "interop" / "spark_reader.py"
JARS = ROOT / "build" / "jars"
COMPONENT = ROOT / "build" / "jvm" / "lakestats-spark.jar"
NEEDED = [
    COMPONENT,
    JARS / "iceberg-spark-runtime-4.1_2.13-1.12.0.jar",
    JARS / "delta-spark_2.13-4.1.0.jar",
    JARS / "delta-storage-4.1.0.jar",
]
EXTENSIONS = [
    "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    "io.delta.sql.DeltaSparkSessionExtension",
    "io.lakestats.spark.LakestatsExtensions",
]
MISSING = not PYTHON.exists() or not all(p.exists() for p in NEEDED)
"""Skip reason: no ``.venv-interop`` or jars (``make interop jars jvm``)."""


class SparkReader:
    """The running session; ``ask`` sends one request and waits for its answer."""

    def __init__(self, work: Path) -> None:
        spec = work / "reader.json"
        spec.write_text(json.dumps({"jars": [str(p) for p in NEEDED], "extensions": EXTENSIONS}))
        self.log = work / "reader.log"
        self._stderr = self.log.open("wb")
        self.process = subprocess.Popen(
            [str(PYTHON), str(SCRIPT), str(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            start_new_session=True,
        )
        self._answers: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._answer(180)
        assert "ready" in ready, ready

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                self._answers.put(line)

    def _answer(self, timeout: float) -> dict:
        try:
            return json.loads(self._answers.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(
                f"the Spark reader gave no answer within {timeout} s: {self.warnings()[-5:]}"
            ) from None

    def ask(self, request: dict, timeout: float = 120) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self._answer(timeout)
        assert "error" not in answer, answer["error"]
        return answer

    def warnings(self) -> list[str]:
        """The component's warnings so far (its log lines, in order)."""
        self._stderr.flush()
        return [line for line in self.log.read_text(errors="replace").splitlines()
                if "lakestats:" in line]

    def stop(self) -> None:
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps({"op": "stop"}) + "\n")
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self._stderr.close()


def iceberg(warehouse: Path, name: str) -> dict:
    """The request's table: the current metadata of ``db.<name>`` in the embedded catalog."""
    return {"format": "iceberg", "catalog": str(warehouse / "catalog.db"), "namespace": "db",
            "name": name}
