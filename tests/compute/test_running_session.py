"""An analyze from Python reuses the SparkSession the process already runs: the thread's active
session, or the default one when another thread built it, without building or configuring a
session."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.compute import session


def _no_new_session(*args: object, **kwargs: object) -> None:
    raise AssertionError("a new session was built while one runs")


def test_get_spark_answers_the_running_session(spark, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "local_session", _no_new_session)
    assert session.get_spark() is spark
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(session.get_spark()))
    thread.start()
    thread.join()
    assert seen == [spark]  # another thread: no active session there, the default one


def test_analyze_without_a_session_argument_reuses_it(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session, "local_session", _no_new_session)
    (tmp_path / "t" / "p=1").mkdir(parents=True)
    pq.write_table(pa.table({"x": list(range(10))}), tmp_path / "t" / "p=1" / "a.parquet")
    result = ls.open_table(str(tmp_path / "t")).analyze()
    assert result.partitions_computed == 1
    assert ls.open_table(str(tmp_path / "t")).statistics(None)[0]["row_count"] == 10


def _allocator_settings(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import os

    with open(f"/proc/{os.getppid()}/environ", "rb") as environ:
        daemon = environ.read().split(b"\0")
    for _ in batches:
        yield pa.RecordBatch.from_pydict({
            "key": list(session.WORKER_ALLOCATOR),
            "worker": [os.environ.get(k) for k in session.WORKER_ALLOCATOR],
            "daemon": [next((e.split(b"=", 1)[1].decode() for e in daemon
                             if e.startswith(k.encode() + b"=")), None)
                       for k in session.WORKER_ALLOCATOR],
        })


def test_python_workers_start_with_the_allocator_settings(spark) -> None:
    """The Python workers of lakestats' own session, and the daemon they are forked from
    (whose C allocator reads the settings when it starts), have ``WORKER_ALLOCATOR``."""
    rows = spark.range(1).mapInArrow(
        _allocator_settings, "key string, worker string, daemon string"
    ).collect()
    assert {r["key"]: (r["worker"], r["daemon"]) for r in rows} == {
        k: (v, v) for k, v in session.WORKER_ALLOCATOR.items()
    }
