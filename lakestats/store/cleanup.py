"""A failed command leaves the statistics root as it was.

Every file a run writes carries its run id in its path (``partitions/<p>/<run>/…``,
``table/<run>/…``, ``_staging/<run>/…``, ``sample/data/<p>/<run>.parquet``), so
``remove_run`` finds and deletes exactly what one run wrote, never another run's files
(a concurrent analyze keeps its own). ``as_it_was`` wraps a whole command: on failure it
removes the directories the command created and left empty, and the root itself when the
command created it. ``expire`` still removes what a killed process (no ``finally``) left.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pyarrow.fs as pafs

from lakestats import fs
from lakestats.store.handle import StatisticsStore

RUN_TOPS = ("partitions", "table", "_staging", "sample/data", "sample/reserve")


def run_files(store: StatisticsStore, run_id: str) -> list[str]:
    """The files under ``store`` that the run ``run_id`` wrote (relative paths)."""
    _, base = store.resolve(store.uri)
    found = []
    for top in RUN_TOPS:
        for info in store.list_files(store.join(*top.split("/")), recursive=True):
            if info.type != pafs.FileType.File:
                continue
            relative = info.path[len(base) + 1 :]
            parts = relative.split("/")
            if run_id in parts or any(p.split(".", 1)[0] == run_id for p in parts):
                found.append(relative)
    return found


def remove_run(store: StatisticsStore, run_id: str) -> list[str]:
    """Delete what the run ``run_id`` wrote (after it failed, before it published)."""
    filesystem, base = store.resolve(store.uri)
    removed = run_files(store, run_id)
    for relative in removed:
        with contextlib.suppress(FileNotFoundError, OSError):
            filesystem.delete_file(f"{base}/{relative}")
    store.delete_dir(store.join("_staging", run_id))
    return removed


def _directories(path: str) -> set[str] | None:
    """The directories under a local ``path`` (itself included); None when it is none."""
    if not os.path.isdir(path):
        return None
    found = {path}
    for directory, names, _ in os.walk(path):
        found.update(os.path.join(directory, n) for n in names)
    return found


@contextlib.contextmanager
def as_it_was(root: StatisticsStore) -> Iterator[None]:
    """On failure, remove the directories the block created under ``root`` that are
    empty (their files removed by ``remove_run``), and ``root`` when the block created it
    and left it empty. Object stores have no directories: nothing to do there."""
    path = root.uri
    if fs.is_remote(path):
        yield
        return
    before = _directories(path)
    try:
        yield
    except BaseException:
        _prune(path, before or set())
        raise


def _prune(path: str, before: set[str]) -> None:
    """Empty directories under ``path`` not in ``before``, deepest first."""
    now = _directories(path)
    if now is None:
        return
    for directory in sorted(now - before, key=lambda d: -d.count(os.sep)):
        with contextlib.suppress(OSError):  # not empty (another run's files): kept
            os.rmdir(directory)
