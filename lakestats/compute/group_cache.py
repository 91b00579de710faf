"""Groups of partitions and their cached partial results (incremental reductions).

Partitions are hashed by path into ~sqrt(n) groups; a group's scalar states, re-binned
histograms and pruned frequency rows are written under ``table/<run>/groups/`` keyed by a
hash of exactly their inputs, and reused by the next reduction whose group has the same key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import pickle
import zlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats import fs
from lakestats.compute.reduce_steps import (
    FREQUENCY_ROW_ARROW,
    ReduceJob,
    group_frequency_rows,
    group_histograms,
    group_keep,
    group_states,
)
from lakestats.stats.table_merge import (
    HOLDER_SHIFT,
    Grid,
    ScalarState,
)
from lakestats.store import layout
from lakestats.store.partition_index import SOURCE_FIELDS, assemble, index_part, write_index
from lakestats.threads import prefetch

ONE_GROUP = [pa.RecordBatch.from_pydict({"id": pa.array([0], pa.int64())})]
"""The single group a sub-job of one group's partitions folds."""


CACHE_FORMAT = 5
"""Part of every cache key: bump it when cached states, histograms or frequency rows change
meaning (``ScalarState`` fields, pruning, holder packing), so older caches are not reused."""

MAX_GROUPS = 32
"""At most this many cached groups: every group adds its pruned frequency candidates (up to
``KEEP_FACTOR`` x max_frequencies per incomplete column) to the final merge, so more,
smaller groups make a changed partition cheaper to recompute but every reduction dearer to
merge."""


class GroupCache:
    """Groups of partitions and their cached intermediate results.

    A group's scalar states depend only on its partitions' statistics files; its re-binned
    histograms also on the table grids; its frequency rows also on which columns are
    incomplete table-wide (pruning and holders). Cache keys
    hash exactly those inputs, so a cached result is used only where recomputing it would
    give the same result (frequency rows: the same rows and bounds; their order may differ
    between pyarrow versions, and nothing downstream depends on it). Holders are cached with
    positions inside the group and mapped to the version's partition positions on load.
    User-defined statistics disable the cache (their merge functions may have changed).
    """

    def __init__(self, job: ReduceJob, cache_dir: str, background_writes: bool = False) -> None:
        self.job = job
        self.cache_dir = cache_dir
        self.enabled = not job.statistics
        self.written: dict[str, str] = {}
        # with ``background_writes``, entries are written on a thread until ``flush``
        self._writer = ThreadPoolExecutor(1) if background_writes else None
        self._pending: list[Future[None]] = []
        # states key -> the group's per-partition histogram fields, kept from ``states``
        # so ``histograms`` in the same process does not read the states entry again
        self._histogram_rows: dict[str, dict[int, pa.Table]] = {}
        count = len(job.partitions)
        buckets = 1 << max(0, round(math.log2(math.sqrt(count)))) if count else 1
        buckets = min(buckets, MAX_GROUPS)
        members: list[list[int]] = [[] for _ in range(buckets)]
        for i, entry in enumerate(job.partitions):
            members[zlib.crc32(entry.path.encode()) % buckets].append(i)
        self.members = [m for m in members if m]

    def _key(self, kind: str, members: list[int], extra: object = None) -> str:
        entries = [[self.job.partitions[i].path, self.job.partitions[i].files] for i in members]
        columns = [[c["name"], c["type"]] for c in self.job.columns]
        text = json.dumps([CACHE_FORMAT, kind, entries, columns, self.job.max_frequencies, extra])
        return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}"

    def _states_key(self, members: list[int]) -> str:
        return self._key("states", members)

    def _histograms_key(self, members: list[int], grids: dict[int, Grid]) -> str:
        return self._key("histograms", members, [[i, repr(g)] for i, g in sorted(grids.items())])

    def _frequencies_key(self, members: list[int], incomplete: np.ndarray) -> str:
        # which candidates a group keeps depends on counts and values only (ties by value),
        # not on the order rows were combined in
        keep = group_keep(self.job.max_frequencies)
        return self._key("frequencies", members, [incomplete.tolist(), keep])

    def expected(self, grids: dict[int, Grid], incomplete: np.ndarray) -> dict[str, str]:
        """On the driver: the cache entries a reduction with these inputs used or wrote
        (a reused entry keeps its old file; a new one is under this run's directory)."""
        if not self.enabled:
            return {}
        keys = []
        for members in self.members:
            keys += [self._states_key(members), self._frequencies_key(members, incomplete)]
            if grids:
                keys.append(self._histograms_key(members, grids))
        return {k: self.job.cache.get(k, f"{self.cache_dir}/{k}") for k in keys}

    def merge_states(self, into: dict[int, ScalarState], more: dict[int, ScalarState]) -> None:
        for index, state in more.items():
            if index not in into:
                into[index] = state
            else:
                into[index].merge(state)
                self.job.fold_custom(into[index], state.custom)

    def _sub_job(self, members: list[int]) -> ReduceJob:
        return dataclasses.replace(self.job, partitions=[self.job.partitions[i] for i in members])

    def _load(self, key: str, this_run: bool = False) -> bytes | None:
        """A cached entry from the previous version (or, with ``this_run``, one an earlier
        stage of this reduction wrote); None when there is none."""
        if not self.enabled:
            return None
        candidates = [self.job.cache.get(key)] + ([f"{self.cache_dir}/{key}"] if this_run else [])
        for relative in filter(None, candidates):
            data = self.job.blobs.get(relative)
            try:
                if data is None:
                    data = fs.read_bytes(layout.absolute(self.job.root, relative), self.job.s3)
            except OSError:
                continue  # expired or never finished: recompute
            self.written[key] = relative
            return data
        return None

    def _save(self, key: str, data: bytes | Callable[[], bytes]) -> None:
        """Write an entry; ``data`` may be a function making the bytes, called on the
        writer thread when writes are in the background."""
        if not self.enabled:
            return
        relative = f"{self.cache_dir}/{key}"
        uri = layout.absolute(self.job.root, relative)

        def write() -> None:
            fs.write_bytes_atomic(uri, data() if callable(data) else data, self.job.s3)

        if self._writer is None:
            write()
        else:
            self._pending.append(self._writer.submit(write))
        self.written[key] = relative

    def flush(self) -> dict[str, str]:
        """Wait for background writes (raising their errors); the entries used or written."""
        for pending in self._pending:
            pending.result()
        self._pending = []
        self.close()
        return self.written

    def close(self) -> None:
        """Stop the background writer; writes not yet started are dropped (after a failure
        nothing references them, and a file is only visible once completely written)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True, cancel_futures=True)
            self._writer = None

    def states(self, members: list[int]) -> dict[int, ScalarState]:
        key = self._states_key(members)
        ready = self.job.ready_states.pop(key, None) if self.enabled else None
        if ready is not None:  # read and unpickled ahead (``reduce_local.preload``)
            self.written[key] = self.job.cache[key]
            self._histogram_rows[key] = ready["rows"]
            return ready["states"]
        data = self._load(key)
        if data is None:
            rows: dict[int, pa.Table] = {}
            batch = next(group_states(self._sub_job(members), iter(ONE_GROUP), rows))
            states = dict(
                zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True)
            )
            data = pickle.dumps({"states": states, "histogram_rows": rows}, protocol=5)
            self._save(key, data)
        entry = pickle.loads(data)
        self._histogram_rows[key] = entry["histogram_rows"]
        return {i: pickle.loads(b) for i, b in entry["states"].items()}

    def histograms(self, members: list[int], grids: dict[int, Grid]) -> dict[int, np.ndarray]:
        """The group's partition histograms re-binned onto the table grids and summed."""
        key = self._histograms_key(members, grids)
        data = self._load(key)
        if data is None:
            states_key = self._states_key(members)
            rows = self._histogram_rows.get(states_key)
            if rows is None:
                cached = self._load(states_key, this_run=True)
                rows = pickle.loads(cached)["histogram_rows"] if cached else None
            batch = next(group_histograms(self._sub_job(members), grids, iter(ONE_GROUP), rows))
            data = pickle.dumps(
                dict(zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True)),
                protocol=5,
            )
            self._save(key, data)
        return {i: np.frombuffer(b, dtype=np.float64) for i, b in pickle.loads(data).items()}

    def frequency_rows(self, members: list[int], incomplete: np.ndarray) -> pa.Table:
        key = self._frequencies_key(members, incomplete)
        relative = self.job.cache.get(key) if self.enabled else None
        decoded = self.job.tables.get(relative) if relative else None  # read ahead
        if decoded is not None:
            self.written[key] = relative
            return _holders_to_version(decoded, members)
        data = self._load(key)
        if data is None:
            batches = list(
                group_frequency_rows(self._sub_job(members), incomplete, iter(ONE_GROUP))
            )
            table = pa.Table.from_batches(
                [b.cast(FREQUENCY_ROW_ARROW) for b in batches], schema=FREQUENCY_ROW_ARROW
            )
            self._save(key, lambda: _ipc_bytes(table))
        else:
            table = read_rows(data)
        return _holders_to_version(table, members)

    def index_key(self, members: list[int]) -> str:
        return self._key("index", members, INDEX_FORMAT)

    def index_part(self, members: list[int]) -> pa.Table:
        """The group's rows of the partition index (``store/partition_index.index_part``,
        positions inside the group): cached like the states, since both depend on the same
        statistics files only; an earlier stage of this reduction may have written it."""
        key = self.index_key(members)
        relative = self.job.cache.get(key) if self.enabled else None
        decoded = self.job.tables.get(relative) if relative else None  # read ahead
        if decoded is not None:
            self.written[key] = relative
            return decoded
        data = self._load(key, this_run=True)
        if data is not None:
            return read_rows(data)
        job = self.job
        tables = list(
            prefetch(lambda p: job.read(job.partitions[p], "statistics", SOURCE_FIELDS), members)
        )
        part = index_part(tables)
        self._save(key, lambda: _ipc_bytes(part))
        return part

    def ensure_index_part(self, members: list[int]) -> None:
        """Make sure the group's part is cached (a staged reduction's stage 1): a part the
        previous version cached is left for the last stage to read (and, if it is gone by
        then, to recompute)."""
        if self.enabled and self.index_key(members) in self.job.cache:
            return
        self.index_part(members)

    def expected_index(self) -> dict[str, str]:
        """On the driver: the index entries a reduction used or wrote (as ``expected``)."""
        if not self.enabled:
            return {}
        keys = [self.index_key(members) for members in self.members]
        return {k: self.job.cache.get(k, f"{self.cache_dir}/{k}") for k in keys}


INDEX_FORMAT = 1
"""Part of the index entries' keys: bump it when ``index_part``'s rows change."""


def write_partition_index(groups: GroupCache, relative: str) -> int:
    """The version's ``partition_index.parquet`` from every group's part (cached parts
    reused: an incremental reduction reads only the changed groups' statistics files);
    returns the bytes written."""
    job = groups.job
    parts = [(members, groups.index_part(members)) for members in groups.members]
    table = assemble(parts, job.partitions, job.columns)
    return write_index(table, layout.absolute(job.root, relative), job.s3, len(job.partitions))


def read_rows(data: bytes) -> pa.Table:
    """Cached frequency rows (Arrow IPC) back as a table."""
    return pa.ipc.open_file(pa.BufferReader(data)).read_all()


def is_rows(data: bytes) -> bool:
    return data[:6] == b"ARROW1"


def _ipc_bytes(table: pa.Table) -> bytes:
    """Arrow IPC with LZ4: cached rows are read back by the next reduction's critical path,
    where decoding Parquet cost more than the larger file does."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    with pa.ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _holders_to_version(table: pa.Table, members: list[int]) -> pa.Table:
    """Holder lists packed with positions inside a group, repacked with the version's."""
    lists = table.column("holder_list").combine_chunks()
    if lists.null_count == len(lists):
        return table
    offsets = lists.offsets.to_numpy() - lists.offsets[0].as_py()
    packed = pc.list_flatten(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    low = packed & ((np.int64(1) << HOLDER_SHIFT) - 1)
    position = np.asarray(members, dtype=np.int64)[packed >> HOLDER_SHIFT]
    repacked = pa.ListArray.from_arrays(
        pa.array(offsets.astype(np.int32)),
        pa.array((position << HOLDER_SHIFT) | low),
        mask=lists.is_null(),
    )
    return table.set_column(table.schema.get_field_index("holder_list"), "holder_list", repacked)
