"""Frequency rows summed per (column, value), in Arrow, by column.

Contract: ``combine`` sums a group's ``COMBINED_ARROW`` rows per (column, value);
``aggregate_column`` is what Spark's ``groupBy(column_index, value)`` computes in the
distributed reduction (``spark.py``), for one column, in Arrow: per value the summed count
and bound and the concatenated holder lists (``wire.AGGREGATED_ARROW``).
``split_by_column`` and ``column_batches`` cut rows by column without copying, so each
aggregation runs on one column (or on several light ones together) on its own thread.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.stats.arrays import empty_table
from lakestats.threads import thread_map

COMBINED_ARROW = pa.schema(
    [
        ("column_index", pa.int32()),
        ("value", pa.binary()),
        ("count", pa.int64()),
        ("bound", pa.int64()),
    ]
)
EMPTY_COMBINED = empty_table(COMBINED_ARROW)

HEAVY_ROWS = 20_000
"""A column with this many rows is aggregated on its own (one hash table per column is
cheaper than one keyed on both); the others together (one aggregation, not one each)."""


def combine(tables: list[pa.Table]) -> pa.Table:
    """Rows summed per (column, value)."""

    def combine_batch(batch: tuple[pa.Table, bool]) -> pa.Table:
        rows, one_column = batch
        keys = ["value"] if one_column else ["column_index", "value"]
        grouped = rows.group_by(keys, use_threads=False).aggregate(
            [("count", "sum"), ("bound", "sum")]
        )
        index = (
            pa.array(np.full(grouped.num_rows, rows.column("column_index")[0].as_py(), np.int32))
            if one_column
            else grouped.column("column_index")
        )
        return pa.table(
            {
                "column_index": index,
                "value": grouped.column("value"),
                "count": grouped.column("count_sum"),
                "bound": grouped.column("bound_sum"),
            }
        )

    batches = column_batches(pa.concat_tables([t.cast(COMBINED_ARROW) for t in tables]))
    return pa.concat_tables(thread_map(combine_batch, batches, weight=lambda b: len(b[0])))


def column_batches(rows: pa.Table) -> list[tuple[pa.Table, bool]]:
    """``rows`` in batches of disjoint columns, each with whether it holds one column."""
    parts = split_by_column(rows)
    heavy = [(p, True) for p in parts if p.num_rows >= HEAVY_ROWS]
    light = [p for p in parts if p.num_rows < HEAVY_ROWS]
    if len(light) == 1:
        heavy.append((light[0], True))
    elif light:
        heavy.append((pa.concat_tables(light), False))
    return heavy


def split_by_column(rows: pa.Table) -> list[pa.Table]:
    """One table per column index, in ascending column order, without copying: each run of
    rows with one column index is a slice, and a column's slices are its chunks."""
    index = rows.column("column_index").to_numpy(zero_copy_only=False)
    cuts = np.flatnonzero(np.diff(index)) + 1
    runs: dict[int, list[pa.Table]] = {}
    for start, stop in zip([0, *cuts.tolist()], [*cuts.tolist(), len(index)], strict=True):
        if stop > start:
            runs.setdefault(int(index[start]), []).append(rows.slice(start, stop - start))
    return [pa.concat_tables(runs[c]) for c in sorted(runs)]


def aggregate_column(rows: pa.Table) -> pa.Table:
    """One column's frequency rows summed per value, holder lists concatenated."""
    column_index = rows.column("column_index")[0].as_py()
    totals = rows.group_by(["value"], use_threads=False).aggregate(
        [("count", "sum"), ("bound", "sum")]
    )
    n = totals.num_rows
    lists = rows.column("holder_list").combine_chunks()
    if lists.null_count == len(lists):  # no holders (not categorical, or not exact)
        holders: pa.Array = pa.ListArray.from_arrays(
            pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], pa.int64())
        )
    else:
        holders = _holders_of(rows, lists, totals.column("value"))
    return pa.table(
        {
            "column_index": pa.array(np.full(n, column_index, dtype=np.int32)),
            "value": totals.column("value"),
            "total": totals.column("count_sum"),
            "bound_present": totals.column("bound_sum"),
            "holders": holders,
        }
    )


def _holders_of(rows: pa.Table, lists: pa.ListArray, values: pa.ChunkedArray) -> pa.Array:
    """Each value's holder lists concatenated, aligned with ``values`` (empty if none)."""
    parents = pc.list_parent_indices(lists)
    holders = (
        pa.table({"value": rows.column("value").take(parents), "holder": pc.list_flatten(lists)})
        .group_by(["value"], use_threads=False)
        .aggregate([("holder", "list")])
    )
    # Arrow joins carry no list columns: join a row number of ``holders`` instead
    numbered = pa.table(
        {
            "value": holders.column("value"),
            "_row": pa.array(np.arange(holders.num_rows, dtype=np.int64)),
        }
    )
    position = pa.table(
        {"value": values, "_at": pa.array(np.arange(len(values), dtype=np.int64))}
    ).join(numbered, ["value"], join_type="left outer")
    at = position.column("_at").to_numpy(zero_copy_only=False)
    row = position.column("_row").take(pa.array(np.argsort(at, kind="stable")))
    taken = holders.column("holder_list").combine_chunks().take(row)
    empty = pa.array([[]] * len(values), pa.list_(pa.int64()))
    return pc.if_else(pc.is_null(taken), empty, taken)
