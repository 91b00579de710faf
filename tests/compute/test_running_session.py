"""An analyze from Python reuses the SparkSession the process already runs: the thread's active
session, or the default one when another thread built it, without building or configuring a
session."""

from __future__ import annotations

import threading
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
