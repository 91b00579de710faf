"""Rendered API answers kept per table and statistics version: ``AnswerCache``.

A statistics version never changes once published, so the JSON body of a lookup on it
(and its ETag) can be served again without re-reading Parquet, re-decoding values or
re-encoding JSON. Entries are keyed by table, the statistics version the answer was
computed from, and the request (path and query): a newly published version has a new key,
so it is served as soon as ``TableSet`` sees it (``refresh_seconds``), never an older one.
Everything is dropped every ``lifetime_seconds`` anyway, because some answers also depend
on the table's current snapshot (``stale``), which moves without a new statistics
version. Least recently used entries go first once the bodies exceed ``max_bytes``.
Thread-safe: routes run on the threadpool.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

MAX_BYTES = 64 * 1024 * 1024
MAX_ENTRY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Answer:
    """A rendered JSON body and its ETag."""

    body: bytes
    etag: str


class AnswerCache:
    """``(table, version, request key) -> Answer``, LRU within a byte budget."""

    def __init__(self, lifetime_seconds: float = 60.0, max_bytes: int = MAX_BYTES) -> None:
        self.lifetime_seconds = lifetime_seconds
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[object, ...], Answer] = OrderedDict()
        self._bytes = 0
        self._started_at = time.monotonic()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, table: str, version: int, key: object) -> Answer | None:
        with self._lock:
            self._expire()
            found = self._entries.get((table, version, key))
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end((table, version, key))
            self.hits += 1
            return found

    def put(self, table: str, version: int, key: object, answer: Answer) -> None:
        if len(answer.body) > MAX_ENTRY_BYTES:
            return
        with self._lock:
            self._expire()
            old = self._entries.pop((table, version, key), None)
            if old is not None:
                self._bytes -= len(old.body)
            self._entries[(table, version, key)] = answer
            self._bytes += len(answer.body)
            while self._bytes > self.max_bytes and self._entries:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped.body)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self._started_at = time.monotonic()

    def __len__(self) -> int:
        return len(self._entries)

    def _expire(self) -> None:
        now = time.monotonic()
        if now - self._started_at >= self.lifetime_seconds:
            self._entries.clear()
            self._bytes = 0
            self._started_at = now
