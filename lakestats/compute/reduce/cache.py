"""Groups of partitions and their cached partial results (incremental reductions).

Contract: partitions are hashed by path into ~sqrt(n) groups (``group_members``); a
group's scalar states, re-binned histograms, pruned frequency rows and partition index part
are written under ``table/<run>/groups/`` keyed by a hash of exactly their inputs, and
reused by the next reduction whose group has the same key. Every byte of an entry counts:
states, histograms and index parts are zstd frames (``pack``), and a group's frequency
rows are kept only where pruning paid for them (``PAYS``): rows a group lists in full are
in its partition files already, and the next reduction reads them there. ``GroupCache``
answers each group's partial results from the cache, from what the task read ahead, or by
folding the group (``fold.py``). A group's part of the partition histograms (``phist-``
entries) is itself published: the version's directory lists it, and later versions whose
group has the same members list the same file (always written, also when user-defined
statistics disable the rest of the cache). It is also what the histograms stage re-bins from (one
read of the part instead of one ``histograms.parquet`` per member), and a staged
reduction's first pass reads each member's files once for the states, the index part and
the histograms part (``holding``).

Over 400 lines because the cache, its keys and the one pass that fills all three parts sit
together: splitting them would pass each group's open files across modules.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import pickle
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.compute.reduce.fold import (
    GroupStates,
    ReadAhead,
    ahead_key,
    fold_histograms,
    fold_states,
    read_kind,
)
from lakestats.compute.reduce.frequency_rows import (
    CombinedRows,
    combine_frequency_rows,
    decode_combined,
    encode_combined,
    finish_frequency_rows,
)
from lakestats.compute.reduce.job import ReduceJob
from lakestats.compute.reduce.prune import group_keep
from lakestats.errors import LakestatsError
from lakestats.stats import holders
from lakestats.stats.rebin import Grid
from lakestats.stats.scalar_state import ScalarState
from lakestats.store import histogram_parts, partition_histograms
from lakestats.store.manifest import PartitionEntry
from lakestats.store.partition_index import SOURCE_FIELDS, index_part
from lakestats.store.partition_rows import ROW_KINDS
from lakestats.threads import prefetch

CACHE_FORMAT = 9
"""Part of every cache key: bump it when cached states, histograms or frequency rows change
meaning or bytes (``ScalarState`` fields or module, pruning, holder packing), so older
caches are not reused. 6: ``ScalarState`` moved to ``stats/scalar_state.py`` (its pickles
name the module). 7: a complete group's state may leave out sketches
(``sketches_deferred``). 8: quantile sketches are ``stats/quantile_sketch.py``'s, members
ordered by path. 9: states, histograms and index entries are zstd frames (``pack``)."""

PAYS = 0.5
"""A group's frequency rows are cached only when pruning left at most this share of the
rows it combined (its values summed per column, and the holders' rows): a group whose
columns are all complete keeps every row, and an entry as large as its members' frequency
files (LZ4 Arrow, larger than their zstd Parquet) saves no reading worth its bytes.
Deterministic: the same inputs, the same choice."""

PACKED = b"LQZ\x01"
"""The first bytes of a packed entry: the magic, then the unpacked size (uint64, little
endian), then one zstd frame."""

MAX_GROUPS = 32
"""At most this many cached groups: every group adds its pruned frequency candidates (up to
``KEEP_FACTOR`` x max_frequencies per incomplete column) to the final merge, so more,
smaller groups make a changed partition cheaper to recompute but every reduction dearer to
merge."""

INDEX_FORMAT = 1
"""Part of the index entries' keys: bump it when ``index_part``'s rows change."""

PARTITION_HISTOGRAMS_FORMAT = 5
"""Part of the partition histograms entries' keys: bump it when a part's rows or encoding
change. 2: the entries are the published Parquet parts (int32 counts), not Arrow IPC.
3: string, binary and boolean columns are held too (a directory says which kinds).
4: decimal keys of int64 values as ints, counts BYTE_STREAM_SPLIT, values at zstd 9.
5: counts at zstd level 1."""


PARTS_PREFIX = "phist-"
"""The keys of the partition histograms' parts."""


def group_members(partitions: list[PartitionEntry]) -> list[list[int]]:
    """The groups: positions in ``partitions``, by a hash of each path (none empty), each
    group's members by path, so a group folds (and its sketches merge) in one order
    whatever order the partitions were listed in."""
    count = len(partitions)
    buckets = 1 << max(0, round(math.log2(math.sqrt(count)))) if count else 1
    buckets = min(buckets, MAX_GROUPS)
    members: list[list[int]] = [[] for _ in range(buckets)]
    for i, entry in enumerate(partitions):
        members[zlib.crc32(entry.path.encode()) % buckets].append(i)
    return [sorted(m, key=lambda i: partitions[i].path) for m in members if m]


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

    def __init__(
        self, job: ReduceJob, cache_dir: str, ahead: ReadAhead, background_writes: bool = False
    ) -> None:
        self.job = job
        self.ahead = ahead
        self.cache_dir = cache_dir
        # below ``cache_from_partitions`` each group has a handful of members, which the next
        # reduction re-reads in about the time it reads their entry, and the entries
        # (frequency rows above all) were as large as the partition files themselves
        self.enabled = (job.kept and not job.statistics
                        and len(job.partitions) >= job.cache_from_partitions)
        self.written: dict[str, str] = {}
        # with ``background_writes``, entries are written on a thread until ``flush``
        self._writer = ThreadPoolExecutor(1) if background_writes else None
        self._pending: list[Future[None]] = []
        # states key -> the group's per-partition histogram fields, kept from ``states``
        # so ``histograms`` in the same process does not read the states entry again
        self._histogram_rows: dict[str, dict[int, pa.Table]] = {}
        self.members = group_members(job.partitions)

    def _key(self, kind: str, members: list[int], extra: object = None) -> str:
        # a partition's statistics file names the run that computed it: where its
        # frequency and histogram rows are (hand-off files, a part) is no input
        entries = [
            [self.job.partitions[i].path, _inputs(self.job.partitions[i].files)]
            for i in members
        ]
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

    def index_key(self, members: list[int]) -> str:
        return self._key("index", members, INDEX_FORMAT)

    def partition_histograms_key(self, members: list[int]) -> str:
        return self._key(PARTS_PREFIX[:-1], members, PARTITION_HISTOGRAMS_FORMAT)

    def expected(self, grids: dict[int, Grid], incomplete: np.ndarray) -> dict[str, str]:
        """On the driver: the cache entries a reduction with these inputs used or wrote
        (a reused entry keeps its old file; a new one is under this run's directory)."""
        keys = []
        if self.enabled:
            for members in self.members:
                keys.append(self._states_key(members))
                key = self._frequencies_key(members, incomplete)
                if key in self.job.cache or self.job.store.exists(
                    self.job.store.path(f"{self.cache_dir}/{key}")
                ):  # (not written where it did not pay)
                    keys.append(key)
                if grids:
                    keys.append(self._histograms_key(members, grids))
            keys += [self.index_key(members) for members in self.members]
        keys += [self.partition_histograms_key(members) for members in self.members]
        return {k: self.job.cache.get(k, f"{self.cache_dir}/{k}") for k in keys}

    def _load(self, key: str, this_run: bool = False) -> bytes | None:
        """A cached entry from the previous version (or, with ``this_run``, one an earlier
        stage of this reduction wrote); None when there is none."""
        if not self.enabled:
            return None
        candidates = [self.job.cache.get(key)] + ([f"{self.cache_dir}/{key}"] if this_run else [])
        for relative in filter(None, candidates):
            data = self.ahead.blobs.get(relative)
            try:
                if data is None:
                    data = self.job.store.read_bytes(self.job.store.path(relative))
            except OSError:
                continue  # expired or never finished: recompute
            self.written[key] = relative
            return unpack(data)
        return None

    def _save(
        self, key: str, data: bytes | Callable[[], bytes], always: bool = False
    ) -> None:
        """Write an entry; ``data`` may be a function making the bytes, called on the
        writer thread when writes are in the background; ``always``: also when the cache
        is disabled (a published part)."""
        if not self.enabled and not always:
            return
        relative = f"{self.cache_dir}/{key}"
        uri = self.job.store.path(relative)

        def write() -> None:
            self.job.store.write_bytes_atomic(uri, data() if callable(data) else data)

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
        """The group's scalar states, by column."""
        key = self._states_key(members)
        ready = self.ahead.ready_states.pop(key, None) if self.enabled else None
        if ready is not None:  # read and unpickled ahead (``preload``)
            self.written[key] = self.job.cache[key]
        else:
            data = self._load(key)
            if data is not None:
                ready = decode_states(data)
            else:
                ready = fold_states(self.job, self.ahead, members)
                if self.enabled:  # pickled now: the states are merged into after this
                    self._save(key, pack(encode_states(ready)))
        self._histogram_rows[key] = ready.histogram_rows
        return ready.states

    def histograms(self, members: list[int], grids: dict[int, Grid]) -> dict[int, np.ndarray]:
        """The group's partition histograms re-binned onto the table grids and summed."""
        key = self._histograms_key(members, grids)
        data = self._load(key)
        if data is not None:
            return {i: np.frombuffer(b, dtype=np.float64) for i, b in pickle.loads(data).items()}
        states_key = self._states_key(members)
        rows = self._histogram_rows.get(states_key)
        if rows is None:
            cached = self._load(states_key, this_run=True)
            rows = pickle.loads(cached)["histogram_rows"] if cached else None
        part = self.part_histograms(members, sorted(grids)) if self.job.kept else None
        sums = fold_histograms(self.job, self.ahead, members, grids, rows, part)
        if self.enabled:
            self._save(
                key, pack(pickle.dumps({i: s.tobytes() for i, s in sums.items()}, protocol=5))
            )
        return sums

    def frequency_rows(self, members: list[int], incomplete: np.ndarray) -> pa.Table:
        """The group's pruned frequency rows, holders at the version's positions."""
        key = self._frequencies_key(members, incomplete)
        relative = self.job.cache.get(key) if self.enabled else None
        decoded = self.ahead.tables.get(relative) if relative else None  # read ahead
        if decoded is not None:
            self.written[key] = relative
            return holders.to_version(decoded, members)
        data = self._load(key)
        if data is None:
            combined = self._combined_rows(members)
            table = finish_frequency_rows(self.job, combined, incomplete)
            listed = combined.combined.num_rows + (
                combined.holders.num_rows if combined.holders is not None else 0
            )
            if table.num_rows <= PAYS * listed:
                self._save(key, lambda: _ipc_bytes(table))
        else:
            table = read_rows(data)
        return holders.to_version(table, members)

    def _combined_key(self, members: list[int]) -> str:
        return self._key("combined", members)

    def _combined_rows(self, members: list[int]) -> CombinedRows:
        """The group's frequency rows before pruning: made by this run's first pass
        (``ensure_combined_rows``, removed once read), else from the partition files now."""
        if self.enabled:
            uri = self.job.store.path(f"{self.cache_dir}/{self._combined_key(members)}")
            with contextlib.suppress(OSError):
                rows = decode_combined(self.job.store.read_bytes(uri))
                with contextlib.suppress(OSError):  # read once (a retried task: the files)
                    self.job.store.delete_file(uri)
                return rows
        return combine_frequency_rows(self.job, self.ahead, members)

    def ensure_combined_rows(self, members: list[int]) -> None:
        """A staged reduction's first pass: a group whose files changed (its states are
        not cached) also combines its frequency rows from the files it holds, so the
        frequencies stage does not read them again (an entry of this run only: it is not
        among the entries the next version reuses)."""
        if not self.enabled or self._states_key(members) in self.job.cache:
            return
        rows = combine_frequency_rows(self.job, self.ahead, members)
        self._save(self._combined_key(members), lambda: encode_combined(rows))
        self.written.pop(self._combined_key(members), None)

    def index_part(self, members: list[int]) -> pa.Table:
        """The group's rows of the partition index (``store/partition_index.index_part``,
        positions inside the group): cached like the states, since both depend on the same
        statistics files only; an earlier stage of this reduction may have written it."""
        key = self.index_key(members)
        cached = self._cached_part(key)
        if cached is not None:
            return cached
        job, ahead = self.job, self.ahead
        tables = list(
            prefetch(lambda p: ahead.read(job.partitions[p], "statistics", SOURCE_FIELDS), members)
        )
        part = index_part(tables)
        self._save(key, lambda: pack(_ipc_bytes(part, compression=None)))
        return part

    def _cached_part(self, key: str) -> pa.Table | None:
        """A part already computed: read ahead from the previous version's cache, or
        written by an earlier stage of this reduction; None when it must be computed."""
        relative = self.job.cache.get(key) if self.enabled else None
        decoded = self.ahead.tables.get(relative) if relative else None  # read ahead
        if decoded is not None:
            self.written[key] = relative
            return decoded
        data = self._load(key, this_run=True)
        return read_rows(data) if data is not None else None

    def partition_histograms_part(self, members: list[int]) -> str:
        """The group's part of the partition histograms (``store/partition_histograms``),
        relative to the root: the previous version's file or this run's when it exists
        (they depend on the group's partition files only), else computed and written."""
        relative = self._existing_part(members)
        if relative is None:
            self._new_part(members)
            relative = self.written[self.partition_histograms_key(members)]
        return relative

    def part_histograms(self, members: list[int], columns: list[int]) -> pa.Table:
        """``member``, ``column_index`` and ``histogram_counts`` of the group's part rows
        of ``columns``: one read of the part (made now when it does not exist yet) instead
        of one ``histograms.parquet`` per member."""
        relative = self._existing_part(members)
        fields = ["member", "column_index", "histogram_counts"]
        if relative is None:
            rows = self._new_part(members).select(fields)
        else:
            rows = self.job.read_file(relative, fields)
        wanted = pc.is_in(rows.column("column_index"), value_set=pa.array(columns, pa.int32()))
        return rows.filter(wanted)

    def _existing_part(self, members: list[int]) -> str | None:
        """The group's part if it exists: listed already, the previous version's or this
        run's (written in the background: waited for)."""
        key = self.partition_histograms_key(members)
        if key in self.written:
            if self._writer is not None:
                for pending in self._pending:
                    pending.result()
            return self.written[key]
        for relative in filter(None, [self.job.cache.get(key), f"{self.cache_dir}/{key}"]):
            if self.job.store.exists(self.job.store.path(relative)):
                self.written[key] = relative
                return relative
        return None

    def _new_part(self, members: list[int]) -> pa.Table:
        """The group's part computed from its members' files and written; its rows."""
        key = self.partition_histograms_key(members)
        job, ahead = self.job, self.ahead
        held = partition_histograms.held_columns(job.columns)

        def files(p: int) -> tuple[pa.Table, pa.Table, pa.Table]:
            entry = job.partitions[p]
            if not held:
                return pa.table({}), pa.table({}), pa.table({})
            return (
                ahead.read(entry, "statistics", partition_histograms.SOURCE_FIELDS),
                ahead.read(entry, "histograms"),
                ahead.read(entry, "frequencies"),
            )

        read = list(prefetch(files, members))
        rows = histogram_parts.histograms_part(
            job.columns, *[[r[k] for r in read] for k in range(3)]
        )
        del read
        count = len(job.partitions)
        self._save(key, lambda: histogram_parts.write_part(rows, count), always=True)
        return rows

    def first_pass_kinds(self, members: list[int]) -> list[str]:
        """The partition files a staged reduction's first pass reads for this group (its
        scalar states, then the ``prepare`` steps): read once each, whole, and shared by
        them (``holding``) instead of once per step."""
        kinds = []
        states = not self.enabled or self._states_key(members) not in self.job.cache
        index = self.enabled and self.index_key(members) not in self.job.cache
        parts = self.partition_histograms_key(members) not in self.job.cache
        if states or index or parts:
            kinds.append("statistics")
        if parts and partition_histograms.held_columns(self.job.columns):
            kinds += ["histograms", "frequencies"]
        elif self.enabled and states:  # ``ensure_combined_rows``
            kinds.append("frequencies")
        return kinds

    @contextlib.contextmanager
    def holding(self, members: list[int], kinds: list[str]) -> Iterator[None]:
        """The members' ``kinds`` files read whole (on threads) and kept for reads inside
        the block (``ReadAhead.read`` answers from them); dropped after it."""
        job, ahead = self.job, self.ahead
        wanted = [
            (job.partitions[p], kind)
            for p in members
            for kind in kinds
            if ahead_key(job.partitions[p], kind) not in ahead.tables
        ]
        keys = [ahead_key(entry, kind) for entry, kind in wanted]
        try:
            read = prefetch(lambda pair: read_kind(job, *pair), wanted)
            for key, table in zip(keys, read, strict=True):
                ahead.tables[key] = table
            yield
        finally:
            for key in keys:
                ahead.tables.pop(key, None)

    def ensure_partition_histograms_part(self, members: list[int]) -> None:
        """``ensure_index_part`` for the partition histograms (written whatever the cache
        says: the version lists them)."""
        if self.partition_histograms_key(members) in self.job.cache:
            return
        self.partition_histograms_part(members)

    def ensure_index_part(self, members: list[int]) -> None:
        """Make sure the group's part is cached (a staged reduction's first pass): a part
        the previous version cached is left for the writing task to read (and, if it is
        gone by then, to recompute)."""
        if not self.enabled or self.index_key(members) in self.job.cache:
            return  # (without the cache, the writing task computes it)
        self.index_part(members)


def _inputs(files: dict[str, str]) -> dict[str, str]:
    """The files of an entry a cache key hashes: not where its frequency and histogram
    rows are (a run's hand-off files, then its version's parts), or every version would
    rebuild every group's entries."""
    return {k: v for k, v in files.items() if k not in ROW_KINDS}


def encode_states(group: GroupStates) -> bytes:
    """A group states cache entry: each state pickled, in a pickled dict."""
    states = {i: pickle.dumps(s, protocol=5) for i, s in group.states.items()}
    return pickle.dumps({"states": states, "histogram_rows": group.histogram_rows}, protocol=5)


def decode_states(data: bytes) -> GroupStates:
    entry = pickle.loads(data)
    states = {i: pickle.loads(b) for i, b in entry["states"].items()}
    return GroupStates(states, entry["histogram_rows"])


def read_rows(data: bytes) -> pa.Table:
    """Cached rows (Arrow IPC, unpacked) back as a table."""
    return pa.ipc.open_file(pa.BufferReader(data)).read_all()


def is_rows(data: bytes) -> bool:
    return data[:6] == b"ARROW1"


def pack(data: bytes) -> bytes:
    """A small entry as one zstd frame (``PACKED``): states, histograms and index parts
    are many small buffers, which per-buffer compression leaves almost as they are (a
    whole zstd frame is 4-50x smaller) and which decompress in microseconds."""
    body = pa.Codec("zstd", 3).compress(data, asbytes=True)
    return PACKED + len(data).to_bytes(8, "little") + body


def unpack(data: bytes) -> bytes:
    """An entry's bytes as they were packed (entries that are not packed as they are)."""
    if data[: len(PACKED)] != PACKED:
        return data
    size = int.from_bytes(data[len(PACKED) : len(PACKED) + 8], "little")
    body = data[len(PACKED) + 8 :]
    return pa.Codec("zstd").decompress(body, decompressed_size=size, asbytes=True)


def _ipc_bytes(table: pa.Table, compression: str | None = "lz4") -> bytes:
    """Arrow IPC with LZ4: cached rows are read back by the next reduction's critical path,
    where decoding Parquet cost more than the larger file does (zstd halves the entries but
    made a 1,000-partition reduction 0.6-1.5 s slower); without compression inside a packed
    entry (``pack``)."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def preload(ahead: ReadAhead, computing: set[str]) -> None:
    """Read ahead, while the one-task analyze computes its partition, what it cannot change:
    the previous version's group cache entries (decoded, unpickled) and the other files of
    the groups it falls into. Unreadable files are left to the reduction to report."""
    job = ahead.job
    unreadable = (OSError, LakestatsError, pa.ArrowException)
    for key, relative in job.cache.items():
        if key.startswith(PARTS_PREFIX):
            continue  # published parts: read back only where a group is re-binned anew
        with contextlib.suppress(*unreadable):
            data = unpack(job.store.read_bytes(job.store.path(relative)))
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
                    ahead.tables[ahead_key(entry, kind)] = read_kind(job, entry, kind)
