"""The served tables by name, as ``LakestatsTable`` handles kept fresh.

A handle caches the latest statistics version and its open files (Parquet footers), so
repeated lookups read only the row groups they need. Handles are per thread: a reader's
open files are not shared between the threads FastAPI runs requests on. ``TableSet.get``
re-checks the latest version at most every ``refresh_seconds`` and re-opens the handle
when a newer one was published, and re-reads the table every ``reopen_seconds`` anyway
(it may have a new snapshot: ``stale`` must see it; the open statistics files are kept),
so a long-running service follows ``lakestats analyze`` without a restart. ``memo`` keeps
answers per table and version, shared by all threads, for ``reopen_seconds``; ``cached``
keeps rendered API answers the same way (``cache.AnswerCache``). An unknown name is a
``TableNotFoundError`` (404); names are never paths. ``get`` hands out the handle
guarded (``sensitive.GuardedTable``): the routes never see a sensitive column's values.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import lakestats.api as ls
from lakestats.errors import LakestatsError, TableNotFoundError
from lakestats.service.cache import Answer, AnswerCache
from lakestats.service.config import TableConfig
from lakestats.service.sensitive import GuardedTable, Sensitivity

if TYPE_CHECKING:
    from lakestats.answers import ServedTable, TableProfile, TableStatistics

T = TypeVar("T")
MEMO_SIZE = 512


@dataclass
class _Handle:
    table: ls.LakestatsTable
    guarded: GuardedTable
    version: int
    checked_at: float
    opened_at: float


@dataclass
class _Memo:
    started_at: float
    answers: dict[tuple[int, object], Any]


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
        self._local = threading.local()
        self._memos: dict[str, _Memo] = {}
        self.answers = AnswerCache(reopen_seconds)
        self._locations: list[tuple[str, str]] | None = None
        self._by_location: dict[str, str] | None = None

    def names(self) -> list[str]:
        return list(self.configs)

    def redact(self, message: str) -> str:
        """``message`` as a client may read it: where a served table and its statistics live
        on the server becomes the table's name, and any other server path ``<path>``."""
        if self._locations is None:
            self._locations = _locations(self.configs.values())
        for location, name in self._locations:
            message = message.replace(location, name)
        return _SERVER_PATH.sub("<path>", message)

    def warm_up(self) -> None:
        """Open every table (its format's libraries load on first use: seconds), its latest
        version, the estimator and the tables' locations now, not on the first request: a
        worker's first estimate imported the predicate reader and the estimate's libraries
        (1.2 s on lineitem), the tail a planner's first question met. Also pyarrow's pandas shim:
        pyarrow imports pandas on its first conversion of Python or NumPy values
        (``pa.array``, a compute call with a Python scalar, ``Array.to_numpy``), which the
        table page does not make and the overview does: the 1,000-column overview's first
        load paid the import (1.1 s of 1.2 s, under load)."""
        _load_pyarrow_pandas_shim()
        for name in self.configs:
            with contextlib.suppress(LakestatsError):  # not analyzed: pages and API say so
                table = self._handle(name).table
                table.format.schema(None)
                summary = table.summary()  # opens the latest version
                for column in summary.columns[:1]:
                    quoted = column.name.replace('"', '""')
                    table.estimate(f'"{quoted}" IS NULL')
        self._served_locations()  # a planner's first question finds its table at once

    def _handles(self) -> dict[str, _Handle]:
        handles = getattr(self._local, "handles", None)
        if handles is None:
            handles = self._local.handles = {}
        return handles

    def get(self, name: str) -> GuardedTable:
        """This thread's handle of ``name``, guarded; 404 (``TableNotFoundError``) for any
        other."""
        return self._handle(name).guarded

    def check(self) -> None:
        """Open every table with sensitive columns and check them against it
        (``ConfigurationError``): ``lakestats serve`` refuses a wrong file before
        listening, instead of every request to the table failing."""
        for name, config in self.configs.items():
            if config.sensitive:
                self._handle(name)

    def _handle(self, name: str) -> _Handle:
        config = self.configs.get(name)
        if config is None:
            known = ", ".join(sorted(self.configs)) or "(none)"
            raise TableNotFoundError(
                f"no table named {name!r} is served here; served tables: {known}"
            )
        handles = self._handles()
        now = time.monotonic()
        handle = handles.get(name)
        if handle is not None and now - handle.checked_at < self.refresh_seconds:
            return handle
        if handle is None:
            handle = self._opened(config, -1, now)
        elif now - handle.opened_at >= self.reopen_seconds:
            # the table may have moved on: re-read it, keep the open statistics files (every
            # thread re-opening them at once stalled the service for ~1 s); threads drift
            # apart so that they do not all refresh in the same second
            handle.table.forget_table_state()
            opened = now - random.uniform(0, self.reopen_seconds / 4)
            handle = _Handle(handle.table, handle.guarded, handle.version, now, opened)
        latest = handle.table.latest_version()
        if handle.version != latest:  # a version not seen before: its columns may differ
            if handle.version != -1:
                handle = self._opened(config, latest, now)  # a newer version
            handle.guarded.check()
        handle = handles[name] = _Handle(
            handle.table, handle.guarded, latest, now, handle.opened_at
        )
        return handle

    def _opened(self, config: TableConfig, version: int, now: float) -> _Handle:
        table = _open(config)
        guarded = GuardedTable(table, Sensitivity(config.name, config.sensitive))
        return _Handle(table, guarded, version, now, now)

    def cached(
        self, name: str, key: object, compute: Callable[[GuardedTable], Answer]
    ) -> Answer:
        """``compute(handle)`` once per table, statistics version and ``key`` (the
        request), while it stays in ``answers``; the version is this thread's handle's, so
        a published version is answered within ``refresh_seconds``."""
        handle = self._handle(name)
        found = self.answers.get(name, handle.version, key)
        if found is None:
            found = compute(handle.guarded)
            self.answers.put(name, handle.version, key, found)
        return found

    def memo(self, name: str, key: object, compute: Callable[[], T]) -> T:
        """``compute()`` once per table version and ``reopen_seconds`` (at most
        ``MEMO_SIZE`` answers per table)."""
        version = self._handle(name).version
        now = time.monotonic()
        memo = self._memos.get(name)
        if memo is None or now - memo.started_at >= self.reopen_seconds:
            memo = self._memos[name] = _Memo(now, {})
        full_key = (version, key)
        if full_key not in memo.answers:
            if len(memo.answers) >= MEMO_SIZE:
                memo.answers.clear()
            memo.answers[full_key] = compute()
        return memo.answers[full_key]  # type: ignore[no-any-return]

    def named_at(self, location: str) -> str:
        """The served table at ``location`` (a path or URI, spelled as an engine spells it:
        ``file:/t``, ``file:///t/``, ``s3a://b/t``), by the location each table resolves to;
        404 (``TableNotFoundError``) when none is there."""
        try:
            wanted = same_location(location)
        except ValueError:  # a NUL byte in a local path
            raise TableNotFoundError("no served table is at that location") from None
        for _ in range(2):  # a table opened since: look once more
            found = self._served_locations().get(wanted)
            if found is not None:
                return found
            self._by_location = None
        raise TableNotFoundError("no served table is at that location")

    def _served_locations(self) -> dict[str, str]:
        """Each served table's location (as ``same_location`` spells it) -> its name."""
        if self._by_location is None:
            by_location = {}
            for name in self.configs:
                with contextlib.suppress(LakestatsError):
                    place = self._handle(name).table.format.location
                    by_location[same_location(place)] = name
            self._by_location = by_location
        return self._by_location

    def served(self, name: str, strict: bool = False) -> ServedTable:
        """The table's summary; a table without statistics says so in ``error``
        (``strict``: raises instead)."""
        from lakestats.answers import ServedTable  # dataclasses compile on first use

        try:
            summary = self.get(name).summary()
        except LakestatsError as exc:
            if strict:
                raise
            return ServedTable(name, error=self.redact(exc.message))
        return ServedTable(name, summary)

    def table_statistics(
        self, name: str, snapshot_id: int | None, columns: list[str] | None
    ) -> TableStatistics:
        """``table_statistics`` for ``columns`` (all when None), memoized per column list:
        reading every column of a wide table costs seconds, a page's worth milliseconds
        (it also plans the table to say how stale the statistics are)."""
        handle = self.get(name)
        key = ("table_level", snapshot_id, tuple(columns) if columns is not None else None)
        return self.memo(name, key, lambda: handle.table_statistics(snapshot_id, columns))

    def profile(self, name: str, snapshot_id: int | None) -> TableProfile:
        """``profile``, memoized per version and snapshot: the API route and the table
        page's overview share it (it reads every column's statistics once)."""
        handle = self.get(name)
        return self.memo(name, ("profile", snapshot_id), lambda: handle.profile(snapshot_id))


# a URI, or an absolute path of two or more parts (not a route such as /docs, not a/b)
_SERVER_PATH = re.compile(
    r"\b(?:file|s3a?|gs|abfss?|hdfs|oss)://[^\s'\"]+|(?<![\w.~/>])/(?:[^\s'\"/]+/)+[^\s'\",;)]*"
)


def _locations(configs: Iterable[TableConfig]) -> list[tuple[str, str]]:
    """(location, what to say instead) for every served table, longest location first."""
    pairs: dict[str, str] = {}
    for config in configs:
        for where, said in (
            (config.stats_root, f"<statistics of {config.name}>"),
            (config.table, f"<table {config.name}>"),
            (config.warehouse, f"<warehouse of {config.name}>"),
        ):
            if not where or not ("/" in where or "\\" in where):
                continue  # a catalog identifier (db.table) is no location
            for form in _forms(where):
                pairs.setdefault(form, said)
    return sorted(pairs.items(), key=lambda pair: -len(pair[0]))


def _forms(where: str) -> set[str]:
    """A location as messages may spell it: as given, absolute, as a file URI."""
    forms = {where.rstrip("/")}
    if "://" not in where:
        absolute = os.path.abspath(where)
        forms |= {absolute, Path(absolute).as_uri(), "file://" + absolute}
        with contextlib.suppress(OSError):
            forms.add(os.path.realpath(where))
    return {f for f in forms if len(f) > 1}


def same_location(location: str) -> str:
    """One spelling of a location: a local path absolute and resolved, with no ``file:``
    scheme; ``s3a://`` as ``s3://``; no trailing slash."""
    place = location.strip()
    if place.startswith("file:"):
        place = "/" + place[len("file:"):].lstrip("/")
    elif place.startswith("s3a://"):
        place = "s3://" + place[len("s3a://"):]
    if "://" not in place:
        place = os.path.realpath(place)
    return place.rstrip("/") or "/"


def _open(config: TableConfig) -> ls.LakestatsTable:
    return ls.open_table(
        config.table,
        stats_root=config.stats_root,
        catalog=config.catalog,
        warehouse=config.warehouse,
        s3=config.s3,
    )


def _load_pyarrow_pandas_shim() -> None:
    """Make pyarrow load pandas now (it does on its first value conversion, if installed)."""
    import pyarrow as pa

    pa.array([0]).to_numpy()
