"""The range task: merge one task's key ranges from every source, write its rank part and runs.

For each piece (one column's key range) of the task: the sources' rows inside the range
(``sources.read_piece``) are sorted by key and equal keys summed (vectorised: fixed-width
keys as big-endian words with NumPy's stable sort, which exploits the sources' sorted runs,
other keys with one Arrow sort, no sort when the rows are in order already; then NumPy
``add.reduceat`` over the runs of equal keys); values whose sum is not positive
are dropped (an incremental subtraction that removed them); writing a delta layer
(``delta``), the rows from the previous layers are told apart, and only the values whose
count changed are stored, with the change. The pieces go to
``table/<run>/ranks/part-<k>.parquet`` in the layout of ``store/ranks.py`` (one row group per
column, local cumulative counts). For the columns whose table frequencies are rewritten the
task also writes a **run**, ``runs/part-<k>-<column>.arrow`` (Arrow IPC): the frequency rows of its
range (every value, or only those counted more than once for ``duplicates_only`` columns)
sorted by decreasing count, then key; ``frequencies.py`` merges the runs. It returns one
summary row per (part, column): distinct values, total, first and last key, the exact
counts on the table histogram grid, and the run's rows. No Spark shuffle carries a value.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from lakestats.compute.exact.ranges import Piece
from lakestats.compute.exact.sources import Files, Source, read_piece
from lakestats.stats.arrays import (
    int64_array,
    integer_array,
    numbers,
    record_batch,
)
from lakestats.stats.exact_histogram import ExactGrid, bin_counts
from lakestats.stats.key_sums import fixed_width_words, grouped, merged
from lakestats.store import layout, ranks, schemas
from lakestats.store.handle import StatisticsStore

RANGE_FIELDS = [
    ("part", pa.int32()),
    ("column_index", pa.int32()),
    ("distinct_count", pa.int64()),
    ("total", pa.int64()),
    ("min", pa.binary()),
    ("max", pa.binary()),
    ("bytes", pa.int64()),
    ("histogram", pa.binary()),
    ("run_rows", pa.int64()),
    ("listed", pa.int64()),
    ("rank_rows", pa.int64()),
]
RANGE_ARROW = pa.schema(RANGE_FIELDS)
RANGE_SCHEMA = (
    "part int, column_index int, distinct_count long, total long, "
    "min binary, max binary, bytes long, histogram binary, run_rows long, listed long, "
    "rank_rows long"
)
RUN_SCHEMA = pa.schema(
    [pa.field("value", pa.binary(), nullable=False), pa.field("frequency", pa.int64())]
)
LISTED_FROM = 2
"""The smallest count the table frequencies list for the columns the exact step rewrites:
only repeated values (``duplicates_only``); the ranks hold every value's count."""
RUN_BATCH = 65_536
RUN_IPC_OPTIONS = ipc.IpcWriteOptions(compression="lz4")
"""Runs live minutes (``frequencies.py`` reads each once, then deletes them): Arrow IPC
with LZ4 writes 4x and reads 9x faster than zstd Parquet, for 3x the bytes."""


def runs_dir(run_id: str) -> str:
    """Relative directory of the range tasks' frequency runs (removed once merged)."""
    return f"table/{run_id}/runs"


def run_file(run_id: str, part: int, column: int) -> str:
    return f"{runs_dir(run_id)}/part-{part:05d}-{column:05d}.arrow"


@dataclass(frozen=True)
class MergeJob:
    """What every range task needs (travels to the executors)."""

    store: StatisticsStore
    run_id: str
    sources: list[Source]
    tasks: list[list[Piece]]
    dtypes: dict[int, pa.DataType]  # the grid columns' types
    grids: dict[int, ExactGrid]  # columns whose table histogram is recounted exactly
    frequencies: frozenset[int]  # columns whose table frequencies are rewritten (their runs)
    delta: bool = False  # write a delta layer over the rank sources (store/ranks.py)


@dataclass(frozen=True)
class Change:
    """One piece merged in a delta layer: what the layer stores (the keys whose count
    changed) and their counts before and after (for the frequency run)."""

    changed: pa.Array  # the keys whose count changed, in key order
    by: np.ndarray  # their signed change
    distinct: int  # the change in the number of distinct values
    old: np.ndarray  # the changed keys' counts before (0: a new value)
    new: np.ndarray  # and after (0: a value no longer held)


def delta(keys: pa.Array, counts: np.ndarray, lower: np.ndarray) -> Change:
    """The piece's rows from the layers below (``lower``) and from the changed partitions:
    the changed partitions' rows are merged (few), and the layers' counts of just those
    keys are looked up, so the layers' rows are read but never sorted or rewritten."""
    empty = np.zeros(0, dtype=np.int64)
    k = len(lower) - int(np.count_nonzero(lower))
    if lower[:k].any():  # not the changed rows first (``read_piece``'s order): gather them
        order = np.argsort(lower, kind="stable")
        keys, counts, lower = keys.take(int64_array(order)), counts[order], lower[order]
    changed, by = merged(keys.slice(0, k), counts[:k], signed=True)
    if len(changed) == 0:
        return Change(changed, empty, 0, empty, empty)
    old = np.maximum(_layer_counts(keys.slice(k), counts[k:], changed), 0)
    new = np.maximum(old + by, 0)
    return Change(changed, new - old, int((new > 0).sum() - (old > 0).sum()), old, new)


def _layer_counts(keys: pa.Array, counts: np.ndarray, changed: pa.Array) -> np.ndarray:
    """The layers' summed count of each of the ``changed`` keys (sorted, distinct; 0: not
    held). One layer of one-word keys in key order (the usual base) is searched for the few
    changed keys; otherwise its rows are hashed against them (``is_in``)."""
    old = np.zeros(len(changed), dtype=np.int64)
    if len(keys) == 0:
        return old
    words = fixed_width_words(keys)
    wanted = fixed_width_words(changed) if words is not None and words.shape[1] == 1 else None
    if wanted is not None and wanted.shape[1] == 1:
        held, want = words[:, 0], wanted[:, 0]
        if np.all(held[1:] > held[:-1]):
            at = np.minimum(np.searchsorted(held, want), len(held) - 1)
            return np.where(held[at] == want, counts[at], 0)
    hit = pc.is_in(keys, value_set=changed)
    found, sums = grouped(keys.filter(hit), counts[numbers(hit)])
    if len(found):
        old[numbers(pc.index_in(found, value_set=changed))] = sums
    return old


def _write_change_run(job: MergeJob, part: int, column: int, change: Change) -> tuple[int, int]:
    """The run of a frequency delta layer: the values listed now whose count changed, with
    their new count, and the values listed before and no longer, with 0; returns its rows
    and the change in the number of values listed."""
    listed_now = change.new >= LISTED_FROM
    listed_before = change.old >= LISTED_FROM
    kept = np.flatnonzero(listed_now | listed_before)
    counts = np.where(listed_now, change.new, 0)[kept]
    rows = _write_run(job, part, column, change.changed.take(int64_array(kept)), counts, 0)
    return rows, int(listed_now.sum()) - int(listed_before.sum())


def _write_run(
    job: MergeJob,
    part: int,
    column: int,
    keys: pa.Array,
    counts: np.ndarray,
    smallest: int = LISTED_FROM,
) -> int:
    if smallest > 1:
        kept = np.flatnonzero(counts >= smallest)
        keys, counts = keys.take(int64_array(kept)), counts[kept]
    if len(counts) == 0:
        return 0
    if counts.min() < counts.max():  # decreasing count, ties by key (already sorted)
        order = np.argsort(-counts, kind="stable")
        keys, counts = keys.take(int64_array(order)), counts[order]
    table = pa.table({"value": keys, "frequency": int64_array(counts)}, schema=RUN_SCHEMA)
    uri = job.store.path(run_file(job.run_id, part, column))
    filesystem, path = job.store.resolve(uri)
    filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with (
        filesystem.open_output_stream(path) as out,
        ipc.new_file(out, RUN_SCHEMA, options=RUN_IPC_OPTIONS) as writer,
    ):
        writer.write_table(table, max_chunksize=RUN_BATCH)
    return len(counts)


def _range_task(job: MergeJob, part: int) -> list[dict]:
    directory = layout.ranks_dir(job.run_id)
    uri = job.store.path(f"{directory}/part-{part:05d}.parquet")
    filesystem, path = job.store.resolve(uri)
    summaries: list[dict] = []
    writer = None
    out = None
    files = Files(job.store)
    try:
        for piece in job.tasks[part]:
            keys, counts, lower = read_piece(
                job.sources,
                piece.column,
                piece.low,
                piece.high,
                piece.reads,
                files,
                # the exact histogram bins count every value: a column with a grid reads all
                changes_only=job.delta and piece.column not in job.grids,
            )
            change = None
            binned_keys, binned_counts = keys, counts  # bins add up over signed rows
            if job.delta:
                change = delta(keys, counts, lower)
                stored, stored_counts, distinct = change.changed, change.by, change.distinct
            else:
                keys, counts = merged(keys, counts)
                stored, stored_counts, distinct = keys, counts, len(keys)
                binned_keys, binned_counts = keys, counts
            if len(binned_keys) == 0 and len(stored) == 0:
                continue
            if len(stored) and writer is None:
                filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
                out = filesystem.open_output_stream(path)
                writer = pq.ParquetWriter(
                    out,
                    ranks.RANKS_SCHEMA,
                    compression="zstd",
                    store_schema=False,
                    use_dictionary=False,
                    column_encoding=schemas.sorted_keys_encoding(ranks.RANKS_SCHEMA),
                )
            local = np.cumsum(stored_counts)
            n = len(stored)
            if n:
                table = pa.table(
                    {
                        "column_index": integer_array(np.full(n, piece.column), pa.int32()),
                        "value": stored,
                        "count": int64_array(stored_counts),
                        "cumulative": int64_array(local),
                    },
                    schema=ranks.RANKS_SCHEMA,
                )
                # one column per row group, so row-group statistics bound key and cumulative
                writer.write_table(table, row_group_size=ranks.RANKS_ROW_GROUP)
            grid = job.grids.get(piece.column)
            binned = (
                bin_counts(binned_keys, binned_counts, job.dtypes[piece.column], grid).tobytes()
                if grid is not None
                else None
            )
            if piece.column not in job.frequencies:
                run_rows = listed = 0
            elif change is not None:
                run_rows, listed = _write_change_run(job, part, piece.column, change)
            else:
                run_rows = listed = _write_run(job, part, piece.column, keys, counts)
            summaries.append(
                {
                    "part": part,
                    "column_index": piece.column,
                    "distinct_count": distinct,
                    "total": int(local[-1]) if n else 0,
                    "min": stored[0].as_py() if n else None,
                    "max": stored[n - 1].as_py() if n else None,
                    "bytes": 0,
                    "histogram": binned,
                    "run_rows": run_rows,
                    "listed": listed,
                    "rank_rows": n,
                }
            )
    finally:
        files.__exit__()
        if writer is not None:
            writer.close()
        if out is not None:
            out.close()
    if summaries and writer is not None:
        summaries[0]["bytes"] = filesystem.get_file_info(path).size
    return summaries


def merge_ranges(job: MergeJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The range tasks numbered in ``batches``: their summary rows."""
    for batch in batches:
        rows = list(
            itertools.chain.from_iterable(
                _range_task(job, part) for part in batch.column(0).to_pylist()
            )
        )
        if rows:
            yield record_batch(rows, RANGE_ARROW)
