"""Pruning a group's frequency candidates with sound bounds.

Contract: ``prune`` keeps ``group_keep(max_frequencies)`` candidates of each column whose
frequencies are incomplete, ranking by count then value (so which are kept does not depend
on row order), and rewrites bounds so that, after every group's rows are summed per value,
``total + sum(bound) + sum(marker bounds)`` is still an upper bound of each value's count
(``stats/table_frequencies.finalize_frequencies`` reads them so).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.compute.reduce.combine import column_batches
from lakestats.stats.top_values import top_set
from lakestats.threads import thread_map

KEEP_FACTOR = 1.5
"""A group keeps ``KEEP_FACTOR x max_frequencies`` candidates of each incomplete column
(Elasticsearch's default ``shard_size`` is the same 1.5 x). Measured on Zipf tables
(``bench/keep_factor.py``): 1.5 x bounds the top values as tightly as 2 x (widths within
1 %), 1 x loosens them by 20-25 %; every candidate kept costs the final merge a row."""


def group_keep(max_frequencies: int) -> int:
    return int(KEEP_FACTOR * max_frequencies)


def prune(combined: pa.Table, incomplete: np.ndarray, slack: np.ndarray, keep: int) -> pa.Table:
    """Keep a group's ``keep`` most frequent candidates of each incomplete column.

    Bounds stay sound: for a value this group did not keep, its count here is at most
    ``V`` (the largest upper bound among the values dropped, or the group's slack for
    values no partition listed). Kept rows carry ``bound = slack - bound_present - V`` and
    one row with a null value carries ``V``, so that after the rows are summed per value
    the upper bound is ``total + sum(bound) + sum(V)`` (see ``finalize_frequencies``).
    ``combined`` has one row per (column, value). Candidates rank by count, ties by value
    (as the stored frequencies do), so which are kept does not depend on row order: a group
    combined in any order, or incrementally, keeps the same rows.
    """
    ceiling = slack.astype(np.int64).copy()  # batches hold disjoint columns

    def prune_batch(batch: tuple[pa.Table, bool]) -> pa.Table:
        rows, one_column = batch
        index = rows.column("column_index").to_numpy(zero_copy_only=False).astype(np.int64)
        counts = rows.column("count").to_numpy(zero_copy_only=False).astype(np.int64)
        present = rows.column("bound").to_numpy(zero_copy_only=False).astype(np.int64)
        target = incomplete[index]
        over = incomplete & (np.bincount(index, minlength=len(incomplete)) > keep)
        at = np.flatnonzero(over[index])  # rows of the columns with more than ``keep``
        dropped = np.zeros(len(index), dtype=bool)
        if len(at):
            subset = rows if len(at) == len(index) else rows.take(pa.array(at))
            dropped[at] = ~kept_rows(subset, index[at], counts[at], keep, one_column)
            upper = counts + slack[index] - present
            np.maximum.at(ceiling, index[dropped], upper[dropped])
        bound = np.where(target, slack[index] - present - ceiling[index], present)
        return rows.set_column(3, "bound", pa.array(bound)).filter(pa.array(~dropped))

    pruned = thread_map(prune_batch, column_batches(combined), weight=lambda b: len(b[0]))
    columns = np.nonzero(incomplete)[0]
    markers = pa.table(
        {
            "column_index": pa.array(columns.astype(np.int32)),
            "value": pa.nulls(len(columns), pa.binary()),
            "count": pa.array(np.zeros(len(columns), dtype=np.int64)),
            "bound": pa.array(ceiling[columns]),
        }
    )
    return pa.concat_tables([t.cast(markers.schema) for t in pruned] + [markers])


def kept_rows(
    rows: pa.Table, index: np.ndarray, counts: np.ndarray, keep: int, one_column: bool
) -> np.ndarray:
    """Whether each row is among the ``keep`` first of its column by (count desc, value)."""
    kept = np.zeros(len(index), dtype=bool)
    if one_column:  # the k-th count found in O(n); values compared only among its ties
        kept[top_set(counts, rows.column("value"), keep)] = True
        return kept
    order = pc.sort_indices(
        rows,
        sort_keys=[("column_index", "ascending"), ("count", "descending"), ("value", "ascending")],
    ).to_numpy(zero_copy_only=False)
    sorted_index = index[order]
    rank = np.arange(len(order)) - np.searchsorted(sorted_index, sorted_index)
    kept[order] = rank < keep
    return kept
