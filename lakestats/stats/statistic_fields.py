"""The built-in statistics of a column, named and typed: one row of ``statistics.parquet``
(``lakestats.store.schemas.STATISTICS_SCHEMA`` is built from them; user-defined statistics
follow). Here, in ``stats``, because the registry of user-defined statistics refuses these
names and must not reach up into the store."""

from __future__ import annotations

import pyarrow as pa

from lakestats.stats.percentiles import percentile_names

STATISTIC_FIELDS: tuple[pa.Field, ...] = (
    pa.field("column", pa.string(), nullable=False),
    pa.field("column_path", pa.list_(pa.string())),
    pa.field("type", pa.string(), nullable=False),
    pa.field("row_count", pa.int64(), nullable=False),
    pa.field("null_count", pa.int64(), nullable=False),
    pa.field("nan_count", pa.int64()),
    pa.field("distinct_count", pa.int64()),
    pa.field("all_distinct", pa.bool_()),
    pa.field("min", pa.binary()),
    pa.field("max", pa.binary()),
    pa.field("sum", pa.float64()),
    pa.field("mean", pa.float64()),
    pa.field("variance", pa.float64()),
    pa.field("stddev", pa.float64()),
    pa.field("min_length", pa.int64()),
    pa.field("avg_length", pa.float64()),
    pa.field("max_length", pa.int64()),
    pa.field("true_count", pa.int64()),
    *[pa.field(name, pa.binary()) for name in percentile_names()],
    pa.field("frequencies_count", pa.int64()),
    pa.field("frequencies_truncated", pa.bool_()),
    pa.field("frequencies_omitted", pa.int64()),
    pa.field("frequencies_min", pa.int64()),
    pa.field("histogram_lower", pa.binary()),
    pa.field("histogram_width", pa.float64()),
    pa.field("histogram_bins", pa.int32()),
    pa.field("hll_sketch", pa.binary()),
    pa.field("kll_sketch", pa.binary()),
    # Iceberg tables (analyze --puffin, the default): the compact theta sketch of the
    # values hashed as Iceberg does (``stats/theta.py``), where the frequencies are not
    # complete (complete ones determine it); the Puffin blob is their union
    pa.field("theta_sketch", pa.binary()),
    # table level only (null in partition files): how exact the roll-up is
    pa.field("distinct_count_exact", pa.bool_()),
    pa.field("distinct_count_lower", pa.int64()),
    pa.field("distinct_count_upper", pa.int64()),
    pa.field("percentiles_exact", pa.bool_()),
    pa.field("percentile_rank_error", pa.float64()),
    pa.field("histogram_exact", pa.bool_()),
    pa.field("frequencies_exact", pa.bool_()),
    # analyze --exact, scenarios #0/#1: frequencies.parquet lists exactly the values that
    # occur more than once; every other value of the column occurs at most once
    pa.field("duplicates_only", pa.bool_()),
)

BUILTIN_NAMES = frozenset(f.name for f in STATISTIC_FIELDS)
