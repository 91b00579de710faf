"""What one task of a reduction read ahead, kept apart from the job it reduces.

Contract: a ``ReadAhead`` holds, by path relative to the statistics root, whole partition
files and decoded group cache entries a task read before the reduction needed them, and
group states entries already unpickled (by cache key); ``read`` returns a partition file
from there when it is, from the store otherwise, with the same columns either way.
``preload`` fills it on a second thread while the one-task analyze computes its partition
(``local.compute_and_reduce``): only what that partition cannot change.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import pyarrow as pa

from lakestats.compute.reduce.cache import (
    PARTS_PREFIX,
    decode_states,
    group_members,
    is_rows,
    read_rows,
)
from lakestats.compute.reduce.fold import GroupStates
from lakestats.compute.reduce.job import ReduceJob
from lakestats.errors import LakestatsError
from lakestats.store.manifest import PartitionEntry


@dataclass
class ReadAhead:
    job: ReduceJob
    tables: dict[str, pa.Table] = field(default_factory=dict, repr=False)
    blobs: dict[str, bytes] = field(default_factory=dict, repr=False)
    ready_states: dict[str, GroupStates] = field(default_factory=dict, repr=False)

    def read(self, entry: PartitionEntry, kind: str, columns: list[str] | None = None) -> pa.Table:
        """A partition's ``kind`` file (some ``columns``), read ahead or read now."""
        whole = self.tables.get(entry.files[kind])
        if whole is not None:  # absent columns are left out, as a Parquet read does
            if columns is None:
                return whole
            names = set(whole.schema.names)  # once, not a list per column
            return whole.select([c for c in columns if c in names])
        return self.job.read_file(entry.files[kind], columns)


def preload(ahead: ReadAhead, computing: set[str]) -> None:
    """Read what the reduction needs that the partitions being computed cannot change: the
    previous version's group cache entries (frequency rows decoded, states unpickled), and
    the other partitions' files in the groups those partitions fall into (the groups to
    recompute). Unreadable files are left to the reduction, which reports or recomputes
    them as usual."""
    job = ahead.job
    unreadable = (OSError, LakestatsError, pa.ArrowException)
    for key, relative in job.cache.items():
        if key.startswith(PARTS_PREFIX):
            continue  # published parts: read back only where a group is re-binned anew
        with contextlib.suppress(*unreadable):
            data = job.store.read_bytes(job.store.path(relative))
            if is_rows(data):  # frequency rows: decoded here too
                ahead.tables[relative] = read_rows(data)
            else:
                ahead.blobs[relative] = data
        if key.startswith("states-") and relative in ahead.blobs and not job.statistics:
            with contextlib.suppress(Exception):  # unpickled here too; else the reduction does
                ahead.ready_states[key] = decode_states(ahead.blobs[relative])
                del ahead.blobs[relative]  # the reduction uses the unpickled entry
    for members in group_members(job.partitions):
        entries = [job.partitions[i] for i in members]
        if not any(e.path in computing for e in entries):
            continue
        for entry in entries:
            if entry.path in computing:
                continue
            for kind in ("statistics", "frequencies", "histograms"):
                with contextlib.suppress(*unreadable):
                    ahead.tables[entry.files[kind]] = job.read_file(entry.files[kind])
