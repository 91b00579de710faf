"""A few threads inside one Spark task.

Arrow, NumPy and Parquet reads release the GIL, so a task that handles many columns or
reads many small files gets a second core's worth of work done on a two-core executor.
Both helpers keep results in input order, so what a task writes does not depend on which
thread finished first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

THREADS = 2
"""Threads per task."""


def thread_map(
    function: Callable[[T], R], items: Sequence[T], weight: Callable[[T], int] | None = None
) -> list[R]:
    """``[function(x) for x in items]`` on ``THREADS`` threads; with ``weight``, the
    heaviest items start first (so the last one to finish is short)."""
    if len(items) < 2:
        return [function(x) for x in items]
    order = list(range(len(items)))
    if weight is not None:
        order.sort(key=lambda i: -weight(items[i]))
    with ThreadPoolExecutor(THREADS) as pool:
        done = dict(zip(order, pool.map(function, [items[i] for i in order]), strict=True))
    return [done[i] for i in range(len(items))]


def prefetch(function: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
    """``function`` over ``items`` in order, up to ``THREADS`` calls running ahead of the
    consumer (reads overlap; memory stays bounded by the look-ahead)."""
    if len(items) < 2:
        yield from (function(x) for x in items)
        return
    with ThreadPoolExecutor(THREADS) as pool:
        running: deque[Future[R]] = deque()
        for item in items:
            running.append(pool.submit(function, item))
            if len(running) > THREADS:
                yield running.popleft().result()
        while running:
            yield running.popleft().result()
