"""Partition sketches that are not stored because the frequency rows determine them.

From format version 3 a partition column whose ``frequencies.parquet`` lists every
distinct value (``frequencies_count == distinct_count``) stores neither its HLL nor its
KLL sketch: both are functions of the listed values and counts. The reduction needs them
only for a column that some partition did not list fully (otherwise the table-level
distinct count, percentiles and frequencies come exactly from the merged frequency rows):
it calls ``restore_sketches`` for those columns on each partition's statistics rows
before folding them, which rebuilds the sketches from the frequency rows exactly as the
partition task would have built them (the same ``sketches.hashable_values``/
``numeric_values`` feed, values in increasing order as the task's sorted value counts
have them). Rows that carry their
sketches (format versions 1 and 2, and incomplete columns) are returned untouched.

A KLL sketch "of a partition with few values" is the same case: few distinct values
means complete frequencies. A partition whose values are all distinct stores no
frequency rows and keeps its sketches (a KLL sketch of up to ``k`` values already is
its values).

Partition-level lookups never needed the sketches: distinct count and percentiles of a
partition are stored exactly (``distinct_count``, ``p01`` … ``p99``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.stats import keys, sketches
from lakestats.stats.kinds import ORDERED_NUMERIC, VALUE_KINDS, Kind, kind_of

FREQUENCY_COLUMNS = ["column_index", "value", "frequency"]
"""What ``restore_sketches`` reads of a partition's ``frequencies.parquet``."""


def frequencies_complete(distinct_count: int | None, frequencies_count: int | None) -> bool:
    """Whether a partition column's frequency rows list every distinct value (and so
    determine its sketches). All-distinct columns list none: not complete."""
    return bool(distinct_count) and frequencies_count == distinct_count


def restore_sketches(
    statistics: pa.Table,
    read_frequencies: Callable[[], pa.Table],
    dtypes: list[pa.DataType],
    columns: Collection[int] | None = None,
) -> pa.Table:
    """A partition's statistics rows (one per column, in column order) with the HLL and
    KLL sketches of complete columns rebuilt from the frequency rows where the file has
    none (only those of ``columns`` when given). ``read_frequencies`` (the partition's
    ``FREQUENCY_COLUMNS``) is called only when some sketch is missing, so older files cost
    no extra read."""
    missing = missing_sketches(statistics, dtypes)
    if columns is not None:
        missing = [c for c in missing if c in columns]
    if not missing:
        return statistics
    hll = statistics.column("hll_sketch").to_pylist()
    kll = statistics.column("kll_sketch").to_pylist()
    for c, (hll_c, kll_c) in rebuilt_sketches(read_frequencies(), dtypes, missing).items():
        hll[c], kll[c] = hll_c, kll_c
    names = statistics.schema.names
    out = statistics.set_column(
        names.index("hll_sketch"), "hll_sketch", pa.array(hll, pa.binary())
    )
    return out.set_column(names.index("kll_sketch"), "kll_sketch", pa.array(kll, pa.binary()))


def rebuilt_sketches(
    frequencies: pa.Table, dtypes: list[pa.DataType], columns: list[int]
) -> dict[int, tuple[bytes | None, bytes | None]]:
    """The HLL and KLL sketches of ``columns`` from a partition's complete frequency rows."""
    index = frequencies.column("column_index").to_numpy(zero_copy_only=False)
    out = {}
    for c in columns:
        # rows are grouped by column in column order: one column's rows are one run
        start, stop = np.searchsorted(index, [c, c + 1])
        out[c] = _sketches_of(frequencies.slice(int(start), int(stop - start)), dtypes[c])
    return out


def listed_all(statistics: pa.Table) -> np.ndarray:
    """Per row (column) of a partition's statistics: whether its frequency rows list every
    value (or it has no counted non-null value): the one rule, which ``stats/table_fold.py``
    folds too."""
    distinct = statistics.column("distinct_count")
    counted = distinct.is_valid().to_numpy(zero_copy_only=False)
    distinct = distinct.fill_null(0).to_numpy(zero_copy_only=False)
    stored = statistics.column("frequencies_count").fill_null(0).to_numpy(zero_copy_only=False)
    non_null = pc.subtract(
        statistics.column("row_count"), statistics.column("null_count")
    ).to_numpy(zero_copy_only=False)
    return ~(counted & (non_null > 0) & (stored < distinct))


def missing_sketches(statistics: pa.Table, dtypes: list[pa.DataType]) -> list[int]:
    """Columns whose sketches were left out because their frequencies are complete."""
    no_hll = statistics.column("hll_sketch").is_null().to_numpy(zero_copy_only=False)
    no_kll = statistics.column("kll_sketch").is_null().to_numpy(zero_copy_only=False)
    candidates = np.flatnonzero(no_hll & no_kll)
    if not len(candidates):
        return []
    distinct = statistics.column("distinct_count").to_pylist()
    stored = statistics.column("frequencies_count").to_pylist()
    return [
        int(c)
        for c in candidates
        if kind_of(dtypes[c]) in VALUE_KINDS and frequencies_complete(distinct[c], stored[c])
    ]


def _sketches_of(rows: pa.Table, dtype: pa.DataType) -> tuple[bytes | None, bytes | None]:
    """The HLL and KLL sketches the partition task builds from these values and counts:
    NaN left out, values in increasing order (keys sort like values)."""
    kind = kind_of(dtype)
    order = pc.sort_indices(rows.column("value"))
    encoded = rows.column("value").take(order).combine_chunks()
    counts = rows.column("frequency").take(order).to_numpy(zero_copy_only=False)
    values = keys.decode_array(encoded, sketches.value_type(dtype))
    if kind == Kind.FLOATING:
        keep = ~pc.is_nan(values).to_numpy(zero_copy_only=False)
        values, counts = values.filter(pa.array(keep)), counts[keep]
    if len(values) == 0:
        return None, None
    hll = sketches.hll_of(sketches.hashable_values(values, kind))
    kll = None
    if kind in ORDERED_NUMERIC:
        numeric = sketches.numeric_values(values, kind).astype(np.float64)
        kll = sketches.kll_of(numeric, counts.astype(np.int64))
    return hll, kll
