"""A few threads inside one Spark task.

Arrow, NumPy and Parquet reads release the GIL, so a task that has the executor to itself
(the one-task reduction) gets a second core's worth of work done, inside ``parallel()``.
Both helpers keep results in input order, so what a task writes does not depend on which
thread finished first.
"""

from __future__ import annotations

import gc
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

THREADS = 2
"""Threads per task."""

_local = threading.local()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _mark_worker() -> None:
    _local.in_pool = True


@contextmanager
def parallel() -> Iterator[None]:
    """Inside this block (on this thread) the helpers use threads; elsewhere they run in
    line. Only a task that has the executor to itself gains: where Spark runs a task per
    core, more threads only contend (the staged reduction measured ~5 % slower)."""
    previous = getattr(_local, "parallel", False)
    _local.parallel = True
    try:
        yield
    finally:
        _local.parallel = previous


def _shared_pool() -> ThreadPoolExecutor | None:
    """One pool per process, reused by every task (starting threads costs ~1 ms each);
    None outside ``parallel`` and inside the pool's own threads (waiting on it there could
    deadlock)."""
    global _pool
    if getattr(_local, "in_pool", False) or not getattr(_local, "parallel", False):
        return None
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(THREADS, "lakestats", initializer=_mark_worker)
        return _pool


def thread_map(
    function: Callable[[T], R], items: Sequence[T], weight: Callable[[T], int] | None = None
) -> list[R]:
    """``[function(x) for x in items]`` on ``THREADS`` threads; with ``weight``, the
    heaviest items start first (so the last one to finish is short)."""
    pool = _shared_pool()
    if len(items) < 2 or pool is None:
        return [function(x) for x in items]
    order = list(range(len(items)))
    if weight is not None:
        order.sort(key=lambda i: -weight(items[i]))
    done = dict(zip(order, pool.map(function, [items[i] for i in order]), strict=True))
    return [done[i] for i in range(len(items))]


_leaf_pool: ThreadPoolExecutor | None = None


def leaf_map(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[function(x) for x in items]`` on ``THREADS`` threads of a second pool, also from
    the shared pool's own threads: for leaf reads (a Parquet decode that never uses these
    helpers itself, so waiting on them cannot deadlock). An estimate's survivors run on
    the shared pool and the first of them reads a column of every partition: in line,
    that read would take one core while the other waits for it."""
    global _leaf_pool
    if len(items) < 2:
        return [function(x) for x in items]
    with _pool_lock:
        if _leaf_pool is None:
            _leaf_pool = ThreadPoolExecutor(THREADS, "lakestats-leaf")
    return list(_leaf_pool.map(function, items))


def prefetch(function: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
    """``function`` over ``items`` in order, up to ``THREADS`` calls running ahead of the
    consumer (reads overlap; memory stays bounded by the look-ahead)."""
    pool = _shared_pool()
    if len(items) < 2 or pool is None:
        yield from (function(x) for x in items)
        return
    running: deque[Future[R]] = deque()
    try:
        for item in items:
            running.append(pool.submit(function, item))
            if len(running) > THREADS:
                yield running.popleft().result()
        while running:
            yield running.popleft().result()
    finally:  # a consumer that stops early leaves no reads behind
        for future in running:
            future.cancel()


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = True


@contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside (as it was before, after the last
    of nested or concurrent uses): a bulk decode or an estimate allocates many small
    acyclic objects, and each collection of the older generations walks every object the
    process holds (a resident estimator's statistics), 50-100 ms on a 10,000-partition
    table. Reference counting still frees everything at once; only cycles wait for
    the next collection."""
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()
