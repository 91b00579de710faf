"""Per-partition staged value counts: what ``analyze --exact`` keeps for the exact table level.

A partition task already holds the exact value counts of every column. Where its
``frequencies.parquet`` does not list every value (truncated, or all-distinct and so
listing nothing), the task also writes ``values.parquet`` next to its three files: one
row per (column, distinct value) with the value's order-preserving key and its count,
sorted by column then key. Each row group holds one column (at most ``VALUES_ROW_GROUP``
rows) and has statistics on ``column_index`` and ``value``, so a reader slices a column's key
range by the footer alone. The table-level exact step (``compute/exact``) merges these by
key range instead of re-scanning the data, and an incremental analyze reuses them with the
partition: the changed partitions contribute new files, the others their old ones.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakestats.stats import keys
from lakestats.stats.accumulator import ColumnAccumulator, ColumnResult
from lakestats.stats.arrays import int64_array
from lakestats.stats.key_sums import sort_order
from lakestats.stats.kinds import VALUE_KINDS

VALUES_SCHEMA = pa.schema(
    [
        pa.field("column_index", pa.int32(), nullable=False),
        pa.field("value", pa.binary(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
    ]
)
VALUES_ROW_GROUP = 8192
"""Rows per row group: a range task reads whole groups, so at most one group per file and
range end is read beyond the range (small groups keep that overhead low)."""


def needs_staging(row: dict[str, object]) -> bool:
    """Whether a partition's stored frequencies miss some of the column's values."""
    distinct = row.get("distinct_count")
    return bool(distinct) and (row.get("frequencies_count") or 0) < int(distinct)


def staged_values(accumulators: list[ColumnAccumulator], results: list[ColumnResult]) -> pa.Table:
    """The full value counts of every column whose frequencies file is incomplete."""
    parts = []
    for index, (accumulator, result) in enumerate(zip(accumulators, results, strict=True)):
        if accumulator.kind not in VALUE_KINDS or not needs_staging(result.row):
            continue
        values, counts = accumulator.value_counts()
        if len(values) == 0:
            continue
        encoded = keys.encode(values).cast(pa.binary())
        counted = pa.array(np.asarray(counts, dtype=np.int64))
        if not accumulator.values_sorted:  # keys keep the order of the values they encode
            order = int64_array(sort_order(encoded))
            encoded, counted = encoded.take(order), counted.take(order)
        parts.append(
            pa.table(
                {
                    "column_index": pa.array(np.full(len(values), index, dtype=np.int32)),
                    "value": encoded,
                    "count": counted,
                },
                schema=VALUES_SCHEMA,
            )
        )
    return pa.concat_tables(parts) if parts else VALUES_SCHEMA.empty_table()
