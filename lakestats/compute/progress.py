"""Progress while a job runs: a rich bar fed by Spark's status tracker, and stage timings."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")


@contextmanager
def spark_progress(
    spark: SparkSession, description: str, total: int, enabled: bool = True
) -> Iterator[None]:
    """Show completed/total tasks of the running jobs until the block ends."""
    if not enabled:
        yield
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from lakestats.compute.connect_workers import is_connect

    if is_connect(spark):  # a Connect client has no status tracker: no bar, the job runs
        yield
        return
    try:
        tracker = spark.sparkContext.statusTracker()
    except Exception:  # noqa: BLE001 - a session without a status tracker shows no bar
        yield
        return
    stop = threading.Event()
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)

        def poll() -> None:
            done_before = 0
            while not stop.wait(0.2):
                done = 0
                for stage_id in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(stage_id)
                    if info is not None:
                        done += info.numCompletedTasks
                done_before = max(done_before, done)
                progress.update(task, completed=min(done_before, total))

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=1)
            progress.update(task, completed=total)


def run_with_progress(
    spark: SparkSession,
    description: str,
    total: int,
    action: Callable[[], T],
    enabled: bool = True,
) -> T:
    with spark_progress(spark, description, total, enabled):
        return action()


class Clock:
    """Stage timings on stderr when ``LAKESTATS_TIMINGS`` is set (for benchmarks)."""

    def __init__(self) -> None:
        import time

        from lakestats import config

        self._enabled = config.settings().timings
        self._time = time.perf_counter
        self._last = self._time()

    def lap(self, label: str) -> None:
        now = self._time()
        if self._enabled:
            import sys

            print(f"[lakestats] {label}: {now - self._last:.3f} s", file=sys.stderr)
        self._last = now
