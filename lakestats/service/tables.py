"""The served tables by name, as ``LakestatsTable`` handles kept fresh.

A handle caches the latest statistics version and its file footers, so repeated lookups
read only the row groups they need. ``TableSet.get`` re-opens a handle at most every
``refresh_seconds`` when a newer version was published, and every ``reopen_seconds``
anyway (the table may have a new snapshot: ``stale`` must see it), so a long-running
service follows ``lakestats analyze`` without a restart.
An unknown name is a ``TableNotFoundError`` (404); names are never paths.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import lakestats.api as ls
from lakestats.errors import LakestatsError, TableNotFoundError
from lakestats.service.config import TableConfig
from lakestats.store import manifest

T = TypeVar("T")
MEMO_SIZE = 512


@dataclass
class _Handle:
    table: ls.LakestatsTable
    version: int
    checked_at: float
    opened_at: float
    memo: dict = field(default_factory=dict)


class TableSet:
    """Name -> ``LakestatsTable`` for the configured tables."""

    def __init__(
        self,
        configs: list[TableConfig],
        refresh_seconds: float = 2.0,
        reopen_seconds: float = 60.0,
    ) -> None:
        self.configs = {c.name: c for c in configs}
        self.refresh_seconds = refresh_seconds
        self.reopen_seconds = reopen_seconds
        self._handles: dict[str, _Handle] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        return list(self.configs)

    def warm_up(self) -> None:
        """Open every table and its latest version now, not on the first request."""
        for name in self.configs:
            with contextlib.suppress(LakestatsError):  # not analyzed: pages and API say so
                self.get(name).reader()

    def get(self, name: str) -> ls.LakestatsTable:
        """The handle of ``name``; 404 (``TableNotFoundError``) for any other name."""
        config = self.configs.get(name)
        if config is None:
            known = ", ".join(sorted(self.configs)) or "(none)"
            raise TableNotFoundError(
                f"no table named {name!r} is served here; served tables: {known}"
            )
        now = time.monotonic()
        handle = self._handles.get(name)
        if handle is not None and now - handle.checked_at < self.refresh_seconds:
            return handle.table
        with self._lock:
            handle = self._handles.get(name)
            if handle is not None and now - handle.checked_at < self.refresh_seconds:
                return handle.table
            if handle is None or now - handle.opened_at >= self.reopen_seconds:
                handle = _Handle(_open(config), -1, now, now)  # the table may have moved on
            latest = manifest.latest_version_number(handle.table.stats_root, config.s3)
            if handle.version not in (-1, latest):
                handle = _Handle(_open(config), latest, now, now)  # a newer version
            self._handles[name] = _Handle(
                handle.table, latest, now, handle.opened_at, handle.memo
            )
            return handle.table

    def memo(self, name: str, key: object, compute: Callable[[], T]) -> T:
        """``compute()`` once per handle of ``name`` (dropped when the handle is re-opened);
        at most ``MEMO_SIZE`` answers per table."""
        self.get(name)
        handle = self._handles[name]
        if key not in handle.memo:
            if len(handle.memo) >= MEMO_SIZE:
                handle.memo.clear()
            handle.memo[key] = compute()
        return handle.memo[key]


def _open(config: TableConfig) -> ls.LakestatsTable:
    return ls.open_table(
        config.table,
        stats_root=config.stats_root,
        catalog=config.catalog,
        warehouse=config.warehouse,
        s3=config.s3,
    )
