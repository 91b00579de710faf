"""Are the files a version references still what the analyze wrote? Existence and size.

A version records each file's size (``PartitionEntry.file_sizes``, and
``extra["file_sizes"]`` for table-level and cached-group files). An incremental
analyze reuses a partition only when every one of its files is present with the
recorded size (files of versions that recorded none: present and at least a Parquet
file's minimum size), so a deleted or truncated file is recomputed, not carried on.
One listing of the root answers for every file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakestats.store.handle import StatisticsStore
from lakestats.threads import thread_map

if TYPE_CHECKING:
    from lakestats.store.manifest import Version

MIN_PARQUET_BYTES = 12  # "PAR1" + footer length + "PAR1"
PER_FILE_LIMIT = 64  # more files than this: one recursive listing beats one request each


def stored_sizes(store: StatisticsStore) -> dict[str, int]:
    """Size of every file under ``partitions/`` and ``table/``, by path relative to store."""
    _, base = store.resolve(store.uri)
    sizes: dict[str, int] = {}
    for top in ("partitions", "table"):
        for info in store.list_files(store.join(top), recursive=True):
            if info.is_file and info.path.startswith(base):
                sizes[info.path[len(base) :].lstrip("/")] = info.size
    return sizes


def sizes_of(store: StatisticsStore, relatives: list[str]) -> dict[str, int]:
    """Sizes of the files ``relatives`` (missing ones left out)."""
    if len(relatives) > PER_FILE_LIMIT:
        every = stored_sizes(store)
        return {r: every[r] for r in relatives if r in every}

    def size(relative: str) -> int | None:
        info = store.file_info(store.join(*relative.split("/")))
        return info.size if info.is_file else None

    found = thread_map(size, relatives)
    return {r: n for r, n in zip(relatives, found, strict=True) if n is not None}


def intact(
    files: dict[str, str], recorded: dict[str, int], sizes: dict[str, int], parquet: bool = True
) -> bool:
    """Every file of ``files`` (kind -> relative path) is present with its recorded size
    (``recorded`` by kind or by path), or at least a minimal Parquet file's size."""
    for kind, relative in files.items():
        have = sizes.get(relative)
        if have is None:
            return False
        want = recorded.get(kind, recorded.get(relative))
        if want is not None and have != want:
            return False
        if want is None and parquet and have < MIN_PARQUET_BYTES:
            return False
    return True


def version_bytes(root: StatisticsStore, version: Version) -> int:
    """Bytes of a statistics version's files (partition and table level): the sizes the
    manifest records, and a listing only for files it records none for."""
    recorded: dict[str, int] = dict(version.extra.get("file_sizes") or {})
    files: set[str] = set(recorded)
    for entry in version.partitions:
        for kind, relative in entry.files.items():
            files.add(relative)
            if kind in entry.file_sizes:
                recorded[relative] = entry.file_sizes[kind]
    files |= set((version.table_files or {}).values())
    missing = sorted(files - set(recorded))
    if missing:
        recorded |= sizes_of(root, missing)
    return sum(recorded.get(f, 0) for f in files)
