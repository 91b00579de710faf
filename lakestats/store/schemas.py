"""The schemas of the three statistics files: the one place they are defined.

``statistics.parquet``: one row per column (struct leaves flattened), in table order,
one column per summary statistic below, then one column per user-defined statistic.
``min``, ``max``, ``p01`` … ``p99`` and ``histogram_lower`` are order-preserving binary
keys (``lakestats.stats.keys``) decoded with the column's ``type``.

``frequencies.parquet``: ``column``, ``value`` (binary key), ``frequency``; ordered by
column (table order), then decreasing frequency, ties by increasing value.

``histograms.parquet``: ``bin`` then one ``int64`` count column per numeric, decimal
and temporal table column, one row per bin in increasing bin minimum; a column with
fewer bins than rows is padded with nulls. Bin edges come from ``histogram_lower``,
``histogram_width`` and ``histogram_bins`` in ``statistics.parquet``.
"""

from __future__ import annotations

import pyarrow as pa

from lakestats.stats.percentiles import percentile_names
from lakestats.stats.statistic_fields import STATISTIC_FIELDS

FORMAT_VERSION = 7
"""On-disk format version, in each version manifest (``format_version``) and in each
file's key-value metadata (``lakestats.format_version``). 1: the first files (no key in
the files). 2: the key; zstd levels and encodings chosen by ``bench/size.py`` (below).
3: a partition column whose frequencies are complete stores no HLL or KLL sketch (null;
``stats/derived_sketches.py`` rebuilds them from its frequency rows in the reduction).
4: ``statistics.parquet`` gains ``duplicates_only`` (table level, ``analyze --exact``
scenarios #0 and #1; null elsewhere): the table ``frequencies.parquet`` lists exactly the
values occurring more than once, and is marked ``frequencies_truncated`` with
``frequencies_omitted`` the number of values occurring once (version 3 marked it complete).
5: ``kll_sketch`` holds ``stats/quantile_sketch.py``'s deterministic sketch (DataSketches'
KLL before: read and converted); the same input gives the same bytes in every file.
6: a partition's frequency and histogram rows live only in the table level's partition
histogram parts (``store/partition_rows.py``): its entry lists no ``frequencies.parquet``
or ``histograms.parquet`` (except an unpartitioned table's, whose files are the table's).
7: ``analyze --exact`` lists only the repeated values (``duplicates_only``) of every column it
rewrites, not only of scenarios #0 and #1; an incremental ``--exact`` over a version 6 root
rewrites those columns' table frequencies whole once instead of layering over a list of
every value. Every version is read by the same code: a file without a column reads it as null."""

FORMAT_VERSION_KEY = "lakestats.format_version"

# zstd levels measured by bench/size.py (pyarrow's default is 1): frequency rows shrink by
# a third at level 6; statistics rows are mostly sketches that no level compresses further;
# histogram counts are written DELTA_BINARY_PACKED (a third smaller than plain or dictionary)
STATISTICS_ZSTD_LEVEL = 3
FREQUENCIES_ZSTD_LEVEL = 6
HISTOGRAMS_ZSTD_LEVEL = 3

STATISTICS_SCHEMA = pa.schema(STATISTIC_FIELDS)
"""``statistics.parquet`` (the built-in columns are ``lakestats.stats.statistic_fields``)."""

SKETCH_COLUMNS = ("hll_sketch", "kll_sketch", "theta_sketch")
"""Large columns a lookup does not read unless asked."""

STATISTICS_ROW_GROUP = 1024
"""Rows (table columns) per row group. One group for up to 1,024 columns: its non-sketch
column chunks are contiguous, so a lookup of any columns costs one coalesced read."""

FREQUENCIES_SCHEMA = pa.schema(
    [
        pa.field("column", pa.string(), nullable=False),
        pa.field("value", pa.binary(), nullable=False),
        pa.field("frequency", pa.int64(), nullable=False),
    ]
)

FREQUENCIES_ROW_GROUP = 8192
"""Rows per row group; the index in the file's metadata maps a column to its groups."""

FREQUENCY_VALUE_ENCODING = {"value": "DELTA_BYTE_ARRAY", "frequency": "DELTA_BINARY_PACKED"}
"""How every ``frequencies.parquet`` (partition, table level, sample) encodes its keys and
counts: neighbouring keys share their leading bytes (order-preserving big-endian keys, by
value within a column where the rows are sorted), which DELTA_BYTE_ARRAY stores once; a
fifth smaller than plain + zstd on bench/size.py's tables. Counts, in decreasing order,
differ little from row to row: DELTA_BINARY_PACKED bit-packs the differences (the exact
step's table frequencies at scale 10: 17 % smaller and 15 % faster to write than plain +
zstd). Readers decode any encoding: no format version change."""

PARTITION_COUNTS_ENCODING = {"partition_counts.list.element": "DELTA_BINARY_PACKED"}
"""The table-level ``frequencies.parquet``'s per-partition counts: small numbers, bit-packed
(most of BYTE_STREAM_SPLIT's saving, and unlike BYTE_STREAM_SPLIT on 64-bit integers, read by
every Parquet reader: Spark 3.5's parquet-java 1.13 included; this file is the documented
format other engines may read)."""


def frequencies_encoding(schema: pa.Schema) -> dict[str, str]:
    """The column encodings of a ``frequencies.parquet`` of ``schema`` (partition, table
    level or sample)."""
    extra = PARTITION_COUNTS_ENCODING if "partition_counts" in schema.names else {}
    return {**FREQUENCY_VALUE_ENCODING, **extra}

SORTED_KEYS_ENCODING = {
    "value": "DELTA_BYTE_ARRAY",
    "count": "DELTA_BINARY_PACKED",
    "cumulative": "DELTA_BINARY_PACKED",
    "frequency": "DELTA_BINARY_PACKED",
}
"""How the exact step's key-sorted files encode their columns (staged ``values.parquet``,
rank parts, frequency runs; each writer takes the names its schema has): sorted keys share
prefixes and counts are small or increasing, so at TPC-H scale 10 rank parts are 58 %
smaller and written 2x faster than with dictionary pages (a dictionary of near-unique keys
is built, then abandoned), staged values 24 % smaller and written 2.3x faster."""


def sorted_keys_encoding(schema: pa.Schema) -> dict[str, str]:
    """``SORTED_KEYS_ENCODING`` for the columns ``schema`` has."""
    return {k: v for k, v in SORTED_KEYS_ENCODING.items() if k in schema.names}

TABLE_FREQUENCIES_SCHEMA = pa.schema(
    [
        *FREQUENCIES_SCHEMA,
        pa.field("column_index", pa.int32(), nullable=False),
        # upper bound of the frequency when some partitions kept only their top values
        pa.field("frequency_upper", pa.int64()),
        # which partitions hold the value (indices into the version's partition list):
        # dense counts for values present in many partitions, sparse ids+counts otherwise
        pa.field("partition_counts", pa.list_(pa.int64())),
        pa.field("partition_ids", pa.list_(pa.int32())),
        pa.field("partition_id_counts", pa.list_(pa.int64())),
    ]
)
"""Table-level ``frequencies.parquet``: the partition file's columns plus bounds and, for
categorical columns, each value's count per partition."""

GROUPS_SCHEMA = pa.schema(
    [
        pa.field("group", pa.string(), nullable=False),  # the columns, comma-separated
        pa.field("columns", pa.list_(pa.string()), nullable=False),
        pa.field("types", pa.list_(pa.string()), nullable=False),  # to decode the keys
        pa.field("row_count", pa.int64(), nullable=False),
        # distinct value combinations (null a value like any other): exact in a partition,
        # at table level exact when every partition listed all of its combinations, else
        # the union of the partitions' HLL sketches kept within the bounds
        pa.field("distinct_count", pa.int64(), nullable=False),
        pa.field("distinct_lower", pa.int64(), nullable=False),
        pa.field("distinct_upper", pa.int64(), nullable=False),
        pa.field("distinct_exact", pa.bool_(), nullable=False),
        # not every combination is listed: unlisted_rows rows (an upper bound at table
        # level) belong to combinations not listed, none of which has more than unlisted_max
        pa.field("truncated", pa.bool_(), nullable=False),
        pa.field("unlisted_rows", pa.int64(), nullable=False),
        pa.field("unlisted_max", pa.int64(), nullable=False),
        # the most common combinations, by decreasing count then increasing keys: one
        # order-preserving key per column (stats/keys.py; null: a null value)
        pa.field("values", pa.list_(pa.list_(pa.binary())), nullable=False),
        pa.field("counts", pa.list_(pa.int64()), nullable=False),
        # the count's upper bound (table level: partitions that did not list it may hold
        # up to their unlisted_max rows of it; equal to counts in a partition file)
        pa.field("counts_upper", pa.list_(pa.int64()), nullable=False),
        # functional dependencies: the fraction of rows whose determinant values always
        # come with one dependent value (PostgreSQL's degree; table level: weighted by rows)
        pa.field(
            "dependencies",
            pa.list_(
                pa.struct(
                    [
                        pa.field("determinant", pa.list_(pa.string())),
                        pa.field("dependent", pa.string()),
                        pa.field("degree", pa.float64()),
                        pa.field("supporting_rows", pa.int64()),
                    ]
                )
            ),
            nullable=False,
        ),
        # the combinations' HLL sketch (stats/column_groups.combination_hashes) when not
        # every combination is listed: the table level's distinct count unites them
        pa.field("hll_sketch", pa.binary()),
    ]
)
"""``groups.parquet`` (``analyze --column-groups``), of a partition and of the table level:
one row per declared column group, then per pair found automatically
(``stats/column_groups.py``, ``stats/auto_groups.py``)."""

HISTOGRAM_BIN_FIELD = pa.field("bin", pa.int32(), nullable=False)


def statistics_schema(custom: list[tuple[str, pa.DataType]]) -> pa.Schema:
    schema = STATISTICS_SCHEMA
    for name, dtype in custom:
        schema = schema.append(pa.field(name, dtype))
    return schema


def histograms_schema(columns: list[str]) -> pa.Schema:
    return pa.schema([HISTOGRAM_BIN_FIELD, *[pa.field(name, pa.int64()) for name in columns]])


PARTITION_INDEX_SCHEMA = pa.schema(
    [
        pa.field("partition_id", pa.int32(), nullable=False),  # position in the version
        pa.field("partition_name", pa.string(), nullable=False),  # k=v,k2=v2 ('' unpartitioned)
        pa.field("partition_values", pa.string(), nullable=False),  # the manifest's, as JSON
        pa.field("column_index", pa.int32(), nullable=False),
        pa.field("column", pa.string(), nullable=False),
        pa.field("row_count", pa.int64(), nullable=False),
        pa.field("null_count", pa.int64(), nullable=False),
        pa.field("nan_count", pa.int64()),
        pa.field("distinct_count", pa.int64()),
        pa.field("min", pa.binary()),
        pa.field("max", pa.binary()),
        # the partition's frequencies.parquet lists every distinct value (or, with
        # all_distinct, every value occurs once): counts of a value are exact
        pa.field("frequencies_complete", pa.bool_()),
        pa.field("all_distinct", pa.bool_()),
        *[pa.field(name, pa.binary()) for name in percentile_names()],
        # the partition's mean (numeric columns): the column page's heat map shows its drift;
        # indexes written before it have no such column (read as nulls)
        pa.field("mean", pa.float64()),
    ]
)
"""Table-level ``partition_index.parquet``: one row per partition x column, the partition's
scalar statistics, sorted by ``column_index`` then ``partition_id``. Row groups hold whole
columns (one column each, or several when partitions are few), and only ``column_index``
has row-group statistics, so "these columns for every partition" reads those row groups."""

PARTITION_INDEX_GROUP_ROWS = 8192
"""A row group holds ``max(1, this // partitions)`` whole columns: one column per group
from 8,192 partitions up, fewer, larger groups for narrow tables."""


PARTITION_HISTOGRAMS_SCHEMA = pa.schema(
    [
        pa.field("member", pa.int32(), nullable=False),  # position in the part's group
        pa.field("column_index", pa.int32(), nullable=False),
        # the partition's statistics.parquet fields its frequencies are read with
        pa.field("frequencies_count", pa.int64()),
        pa.field("frequencies_truncated", pa.bool_()),
        pa.field("frequencies_min", pa.int64()),
        # the partition's frequency rows of the column, by increasing value: the binary
        # keys of a string, binary or boolean column, or (null values) the 8-byte keys
        # of an integer, floating or temporal column as int64 (big-endian word, top bit
        # flipped: the same order) and, since part format 4, a decimal column's keys as
        # their int64 unscaled values when all fit (else binary), then the counts
        pa.field("frequency_values", pa.list_(pa.binary())),
        pa.field("frequency_ints", pa.list_(pa.int64())),
        pa.field("frequency_counts", pa.list_(pa.int32())),
        # its histogram: lower edge (key), width and the counts (null: no histogram)
        pa.field("histogram_lower", pa.binary()),
        pa.field("histogram_width", pa.float64()),
        pa.field("histogram_counts", pa.list_(pa.int32())),
    ]
)
"""One part of the table-level partition histograms (``store/partition_histograms.py``):
one row per member partition of a reduction group x held column (integer, floating,
decimal, temporal; string, binary and boolean since part format 3), what an estimate
reads of the partition's ``frequencies.parquet`` and ``histograms.parquet`` for that
column. Sorted by ``column_index`` then ``member``; a row
group holds ``PARTITION_HISTOGRAMS_GROUP_ROWS // partitions`` whole columns of the table's
partitions (at least one; at most that many rows, a longer column is split), and only
``column_index`` and ``member`` have row-group statistics.
Counts are int32, or int64 in a part where some count does not fit; counts are written
BYTE_STREAM_SPLIT (part format 4) at zstd level 1, ``frequency_ints`` DELTA_BINARY_PACKED,
frequency values (sorted keys) DELTA_BYTE_ARRAY at zstd level 9, no dictionaries, zstd."""

PARTITION_HISTOGRAMS_GROUP_ROWS = 1024
"""Rows per row group of a part, and over the table's partitions, of one column's row
groups in all parts (see ``PARTITION_HISTOGRAMS_SCHEMA``)."""

PARTITION_HISTOGRAMS_GROUP_BYTES = 64 * 1024
"""Whole columns share a row group of a part only while their list elements (frequency
values and counts, histogram counts; 8 bytes each) stay under this: a lookup of a column
with few values then never decodes a column of thousands (lineitem's ``l_discount``
beside ``l_extendedprice``)."""

PARTITION_HISTOGRAM_PARTS_SCHEMA = pa.schema(
    [
        pa.field("part", pa.string(), nullable=False),  # relative to the statistics root
        # the version's partition ids of the part's members, in member order
        pa.field("partition_ids", pa.list_(pa.int32()), nullable=False),
    ]
)
"""Table-level ``partition_histogram_parts.parquet``: a version's parts of partition
histograms, one row per part."""


# Exact ranks (``analyze --exact``, ``store/ranks.py``): range parts and their index.
RANKS_SCHEMA = pa.schema(
    [
        pa.field("column_index", pa.int32(), nullable=False),
        pa.field("value", pa.binary(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
        pa.field("cumulative", pa.int64(), nullable=False),
    ]
)

RANKS_INDEX_SCHEMA = pa.schema(
    [
        pa.field("part", pa.int32(), nullable=False),
        pa.field("column_index", pa.int32(), nullable=False),
        pa.field("distinct_count", pa.int64(), nullable=False),
        pa.field("total", pa.int64(), nullable=False),
        pa.field("min", pa.binary(), nullable=False),
        pa.field("max", pa.binary(), nullable=False),
    ]
)
