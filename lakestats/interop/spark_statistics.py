"""lakestats' statistics as Spark's optimizer reads them, worked out in plain Python: Spark's
catalog column statistics (what ``ANALYZE TABLE … FOR ALL COLUMNS`` with histograms stores;
``lakestats.spark.register`` sets them on a v1 table) and the files lakestats' Spark
component (``jvm/``) reads when Spark scans a snapshot of an Iceberg, Delta, Hudi or Paimon
table: ``<stats root>/spark/v<version>_<snapshot id>.json`` (docs/spark.md). The JVM side
uses only a file whose name carries exactly the snapshot the scan reads. The analyze job
writes the file once it has published the version, whichever face asked; whole or not at
all, and a failure is a warning, never a failed analyze. ``expire`` removes the files of
removed versions.

The histogram is cut from the best table-level source lakestats has, in this order:

* ``frequencies``: every value with its exact count (``frequencies_exact``, not truncated): the
  bins' edges are exact nearest-rank percentiles and each bin's ``ndv`` an exact count;
* ``histogram``: the stored equi-width histogram; cumulative counts cut into equal-count bins,
  interpolating linearly inside an equi-width bin (a bin holding one lattice point, as
  integer columns with few values get, is a point mass, not interpolated);
* ``percentiles``: p01 … p99 with min and max, linear in between.

Catalog timestamps are UTC wall-clock strings (Spark parses stored statistics with a UTC
formatter, whatever the session time zone). Over 400 lines on purpose: Spark's encoding of
statistics and the file that carries it.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from lakestats.formats.base import TableFormat
from lakestats.stats.type_codec import parse_type
from lakestats.store import layout
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import Version
from lakestats.store.reader import StatisticsReader

DEFAULT_BINS = 254  # spark.sql.statistics.histogram.numBins
INTEGRAL = {"byte": 1, "short": 2, "int": 4, "long": 8}
FIXED_SIZE = {**INTEGRAL, "float": 4, "double": 8, "date": 4, "timestamp": 8,
              "timestamp_ntz": 8, "boolean": 1}  # fmt: skip
LATTICE = {*INTEGRAL, "date", "timestamp", "timestamp_ntz"}
"""Types whose values are whole numbers as Spark's histograms hold them (days, microseconds)."""
HISTOGRAM_TYPES = {*INTEGRAL, "float", "double", "decimal", "date", "timestamp", "timestamp_ntz"}
MAX_FREQUENCY_POINTS = 200_000  # beyond, the stored histogram is the source (decoding cost)
EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)



@dataclass
class ColumnStatistics:
    """One column's catalog statistics, values in Spark's external string forms."""

    name: str
    spark_type: str
    distinct_count: int | None
    null_count: int
    min: str | None
    max: str | None
    avg_len: int
    max_len: int
    histogram_source: str | None = None  # frequencies | histogram | percentiles
    histogram_height: float | None = None
    histogram_bins: list[tuple[float, float, int]] = field(default_factory=list)

    def spark_map(self) -> dict[str, str]:
        """The ``<col>.<key>`` map ``CatalogColumnStat.fromMap`` reads (histogram apart)."""
        out = {"version": "2", "nullCount": str(self.null_count), "avgLen": str(self.avg_len),
               "maxLen": str(self.max_len)}  # fmt: skip
        if self.distinct_count is not None:
            out["distinctCount"] = str(self.distinct_count)
        if self.min is not None and self.max is not None:
            out["min"], out["max"] = self.min, self.max
        return {f"{self.name}.{k}": v for k, v in out.items()}




class Lookups(Protocol):
    """One statistics version's table-level frequencies and histograms."""

    def frequencies(self, column: str) -> list[tuple[object, int]]: ...

    def histogram(self, column: str) -> list[dict[str, object]]: ...

    def configured_bins(self) -> int: ...


def catalog_columns(
    rows: Iterable[Mapping[str, object]],
    spark_types: dict[str, str] | None,
    reader: Lookups,
    num_bins: int = DEFAULT_BINS,
) -> tuple[list[ColumnStatistics], dict[str, str]]:
    """The catalog statistics of the columns Spark keeps them for, and why the others get
    none. ``spark_types`` (column -> Spark type, from a Spark table) decides which columns
    Spark has; by default every top-level column Spark's Parquet reader would show."""
    rows = list(rows)
    columns: list[ColumnStatistics] = []
    skipped: dict[str, str] = {}
    for row in rows:
        column = row["column"]
        ours = spark_type_of(row["type"])
        theirs = ours if spark_types is None else spark_types.get(column)
        if len(row.get("column_path") or [column]) > 1:
            skipped[column] = "a struct field: Spark keeps statistics of top-level columns only"
        elif ours is None:
            skipped[column] = f"type {row['type']} has no column statistics in Spark"
        elif theirs is None:
            skipped[column] = "not a column of a type Spark keeps statistics for in its table"
        elif not _compatible(ours, theirs):
            skipped[column] = f"Spark reads it as {theirs}, lakestats saw {row['type']}"
        else:
            columns.append(_column(row, theirs, reader, num_bins))
    for column, spark_type in (spark_types or {}).items():
        if column not in {r["column"] for r in rows}:
            skipped.setdefault(column, f"no lakestats statistics ({spark_type})")
    return columns, skipped


def spark_type_of(type_text: str) -> str | None:
    """The Spark type Spark's Parquet reader gives a column of this Arrow type (None: none
    that column statistics support)."""
    dtype = parse_type(type_text)
    if not isinstance(dtype, pa.DataType):
        return None
    if pat.is_dictionary(dtype):
        dtype = dtype.value_type
    simple = {pa.int8(): "byte", pa.int16(): "short", pa.int32(): "int", pa.int64(): "long",
              pa.uint8(): "short", pa.uint16(): "int", pa.uint32(): "long",
              pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean",
              pa.date32(): "date", pa.date64(): "date"}  # fmt: skip
    if dtype in simple:
        return simple[dtype]
    if pat.is_decimal(dtype):
        return "decimal"
    if pat.is_timestamp(dtype):
        return "timestamp" if dtype.tz else "timestamp_ntz"
    if pat.is_string(dtype) or pat.is_large_string(dtype) or pat.is_string_view(dtype):
        return "string"
    if pat.is_binary(dtype) or pat.is_large_binary(dtype) or pat.is_fixed_size_binary(dtype):
        return "binary"
    return None


def _floating(type_text: str) -> bool:
    dtype = parse_type(type_text)
    if isinstance(dtype, pa.DataType) and pat.is_dictionary(dtype):
        dtype = dtype.value_type
    return isinstance(dtype, pa.DataType) and pat.is_floating(dtype)


def _compatible(ours: str, theirs: str) -> bool:
    if ours == theirs:
        return True
    return ours in INTEGRAL and theirs in INTEGRAL  # e.g. a partition column inferred as int


def _column(
    row: dict, spark_type: str, reader: Lookups, num_bins: int
) -> ColumnStatistics:
    floating = _floating(row["type"])
    non_null = row["row_count"] - row["null_count"]
    if spark_type in ("string", "binary"):
        # Spark's ANALYZE: ceil(avg(length)), max(length); min/max are not kept for these
        avg_len = math.ceil(row["avg_length"]) if row.get("avg_length") is not None else 20
        max_len = int(row["max_length"] or 0)
        low = high = None
    else:
        avg_len = max_len = 16 if spark_type == "decimal" and _wide(row["type"]) else (
            FIXED_SIZE.get(spark_type, 8))  # fmt: skip
        low, high = (_external(row[k], spark_type) for k in ("min", "max"))
    out = ColumnStatistics(
        name=row["column"],
        spark_type=spark_type,
        distinct_count=row.get("distinct_count"),
        null_count=row["null_count"],
        min=low,
        max=high,
        avg_len=avg_len,
        max_len=max_len,
    )
    if spark_type in HISTOGRAM_TYPES and non_null > 0 and row["min"] is not None:
        pieces, source = _pieces(row, floating, spark_type, reader)
        if pieces is not None:
            pieces = _infinities_as_points(pieces)
            out.histogram_height, out.histogram_bins = equi_height(pieces, num_bins)
            out.histogram_source = source
    return out


def _wide(type_text: str) -> bool:
    dtype = parse_type(type_text)
    return getattr(dtype, "precision", 0) > 18  # Spark's DecimalType.defaultSize: 8 or 16


def _external(value: object, spark_type: str) -> str | None:
    """A value as Spark's ``CatalogColumnStat.toExternalString`` writes it (timestamps in
    UTC: Spark parses stored statistics with a UTC formatter, whatever the session zone)."""
    if value is None:
        return None
    if spark_type in INTEGRAL:
        return str(int(value))
    if spark_type in ("float", "double"):
        number = float(value)
        if math.isnan(number):
            return None
        return "Infinity" if number == math.inf else "-Infinity" if number == -math.inf else (
            repr(number))  # fmt: skip
    if spark_type == "decimal":
        return format(Decimal(value), "f")
    if spark_type == "boolean":
        return "true" if value else "false"
    if spark_type == "date":
        return value.isoformat()
    if spark_type == "timestamp":
        return _timestamp_text(value.astimezone(dt.UTC))
    if spark_type == "timestamp_ntz":
        return _timestamp_text(value)
    return None


def _timestamp_text(value: dt.datetime) -> str:
    """``yyyy-MM-dd HH:mm:ss.SSSSSS`` with a four-digit year (``strftime("%Y")`` writes
    year 1 as ``1``, which Spark's parser refuses)."""
    return f"{value.year:04d}-" + value.strftime("%m-%d %H:%M:%S.%f")


def _double(value: object, spark_type: str) -> float:
    """A value as Spark's histogram holds it (``EstimationUtils.toDouble`` of the internal
    value): days for dates, microseconds for timestamps."""
    if spark_type == "date":
        return float((value - EPOCH_DATE).days)
    if spark_type == "timestamp":
        return float((value - EPOCH_UTC) // dt.timedelta(microseconds=1))
    if spark_type == "timestamp_ntz":
        return float((value - EPOCH_NAIVE) // dt.timedelta(microseconds=1))
    return float(value)


@dataclass
class Pieces:
    """A column's value distribution: rows uniform over ``[lo, hi]`` per piece (a point mass
    when ``lo == hi``), with an ndv per piece; in increasing order."""

    lo: np.ndarray
    hi: np.ndarray
    count: np.ndarray
    ndv: np.ndarray


def _pieces(
    row: dict, floating: bool, spark_type: str, reader: Lookups
) -> tuple[Pieces | None, str | None]:
    column = row["column"]
    distinct = row.get("distinct_count") or 1
    # a one-partition table's level is its partition's row, whose counts are its own: exact
    # (the ``*_exact`` flags are the reduction's, absent there)
    complete = row.get("frequencies_exact") is not False and not row.get("frequencies_truncated")
    complete = complete and distinct <= MAX_FREQUENCY_POINTS
    if complete and not row.get("all_distinct"):
        pairs = [
            (_double(v, spark_type), c)
            for v, c in reader.frequencies(column)
            if not (isinstance(v, float) and math.isnan(v))
        ]
        if pairs:
            pairs.sort()
            values = np.array([p[0] for p in pairs])
            counts = np.array([p[1] for p in pairs], dtype=np.float64)
            return Pieces(values, values, counts, np.ones(len(values))), "frequencies"
    bins = reader.histogram(column) if row.get("histogram_bins") else []
    if bins:
        top = _double(row["max"], spark_type)
        lo = np.array([_double(b["lower"], spark_type) for b in bins])
        hi = np.minimum(np.array([_double(b["upper"], spark_type) for b in bins]), top)
        counts = np.array([b["count"] for b in bins], dtype=np.float64)
        lo, hi = np.minimum(lo, hi), hi
        # one lattice point per bin (integer widths, fewer points than bins): a point mass
        configured = reader.configured_bins()
        if not floating and row.get("histogram_exact") is not False and len(bins) < configured:
            hi = lo.copy()
        if spark_type in LATTICE:
            # a bin [v, v + 1) of whole numbers holds v alone, exact counts or not: spread
            # over the interval, Spark's join estimate met fractions of keys that cannot be
            # (TPC-H Q7's nation keys: 21,101 estimated, 4.8 million rows; 14x slower)
            single = (hi - lo <= 1) & (lo == np.floor(lo))
            hi = np.where(single, lo, hi)
        total = counts.sum()
        ndv = np.where(hi == lo, 1.0, np.minimum(counts, distinct * counts / max(total, 1)))
        keep = counts > 0
        return Pieces(lo[keep], hi[keep], counts[keep], ndv[keep]), "histogram"
    names = ("min", "p01", "p05", "p25", "p50", "p75", "p95", "p99", "max")
    ranks = (0, 1, 5, 25, 50, 75, 95, 99, 100)
    marks = [(q, row.get(n)) for q, n in zip(ranks, names, strict=True)]
    marks = [(q, _double(v, spark_type)) for q, v in marks if v is not None]
    if len(marks) < 2:
        return None, None
    non_null = row["row_count"] - row["null_count"] - (row.get("nan_count") or 0)
    qs = np.array([q for q, _ in marks], dtype=np.float64)
    xs = np.array([x for _, x in marks])
    counts = np.diff(qs) / 100.0 * non_null
    ndv = np.maximum(1.0, distinct * np.diff(qs) / 100.0)
    return Pieces(xs[:-1], xs[1:], counts, ndv), "percentiles"


def _infinities_as_points(pieces: Pieces) -> Pieces:
    """±infinity (a float column's, or a bin or percentile reaching it) as point masses at
    ±infinity: rows cannot be spread over an infinite range (its arithmetic is NaN)."""
    infinite = ~np.isfinite(pieces.lo) | ~np.isfinite(pieces.hi)
    if not infinite.any():
        return pieces
    lo, hi, ndv = pieces.lo.copy(), pieces.hi.copy(), pieces.ndv.copy()
    at = np.where(np.isfinite(lo), hi, lo)  # the infinite end (-inf first)
    lo[infinite], hi[infinite], ndv[infinite] = at[infinite], at[infinite], 1.0
    return Pieces(lo, hi, pieces.count, ndv)


def equi_height(pieces: Pieces, num_bins: int) -> tuple[float, list[tuple[float, float, int]]]:
    """Spark's equi-height histogram of a distribution: ``num_bins`` bins of ``height`` rows,
    edges at the ``i / num_bins`` quantiles (nearest rank on point masses, linear inside a
    piece), ``ndv`` of bin ``i`` counted over ``(edge i, edge i+1]`` (the first bin includes
    its lower edge; a bin with equal edges has ndv 1), as Spark's ANALYZE computes them."""
    total = float(pieces.count.sum())
    cum = np.cumsum(pieces.count)
    before = cum - pieces.count
    targets = np.arange(1, num_bins) * (total / num_bins)
    index = np.minimum(np.searchsorted(cum, targets - 1e-9 * total, side="left"), len(cum) - 1)
    share = np.clip((targets - before[index]) / pieces.count[index], 0.0, 1.0)
    low, high = pieces.lo[index], pieces.hi[index]
    with np.errstate(invalid="ignore"):  # point masses (±inf among them) take no share
        inner = np.where(low == high, low, low + share * (high - low))
    edges = np.concatenate([[pieces.lo[0]], inner, [pieces.hi[-1]]])
    edges = np.maximum.accumulate(edges)
    bins = []
    for i in range(num_bins):
        lo, hi = float(edges[i]), float(edges[i + 1])
        ndv = 1 if lo == hi else _ndv_between(pieces, lo, hi, first=i == 0)
        bins.append((lo, hi, ndv))
    return total / num_bins, bins


def _ndv_between(pieces: Pieces, lo: float, hi: float, first: bool) -> int:
    """Distinct values in ``(lo, hi]`` (``[lo, hi]`` for the first bin)."""
    points = pieces.lo == pieces.hi
    at = pieces.lo
    inside = (at > lo) | (first & (at == lo))
    exact = float(pieces.ndv[points & inside & (at <= hi)].sum())
    spread = ~points  # finite (``_infinities_as_points``); the points' NaNs are dropped
    with np.errstate(invalid="ignore"):
        width = np.where(spread, pieces.hi - pieces.lo, 1.0)
        cover = np.minimum(hi, pieces.hi) - np.maximum(lo, pieces.lo)
        overlap = np.clip(cover, 0.0, None) / width
    estimated = float((pieces.ndv * overlap)[spread].sum())
    return max(1, round(exact + estimated))


def json_number(value: float) -> float | str:
    """A bin edge in JSON: ±infinity and NaN as Spark writes them (``Infinity``)."""
    if math.isfinite(value):
        return value
    return "Infinity" if value > 0 else "-Infinity" if value < 0 else "NaN"


# -- the Spark component's files --------------------------------------------------------
FORMAT = "lakestats-spark-statistics"
SNAPSHOT_FORMATS = {"iceberg", "delta", "hudi", "paimon"}
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredLookups:
    """A version's table-level frequencies, histograms and data bytes, read from the store."""

    reader: StatisticsReader

    @classmethod
    def of(cls, store: StatisticsStore, version: int) -> StoredLookups:
        return cls(StatisticsReader(store, version))

    def frequencies(self, column: str) -> list[tuple[object, int]]:
        return self.reader.frequencies(None, column)

    def histogram(self, column: str) -> list[dict[str, object]]:
        return self.reader.histogram(None, column)

    def configured_bins(self) -> int:
        options = self.reader.version.analyze_options
        return int(options.bins or 0) if options is not None else 0

    def data_bytes(self) -> int:
        return int(self.reader.version.merged_record_size or 0)


def build(table: TableFormat, store: StatisticsStore, version: Version) -> dict[str, object]:
    """The file's content for ``version`` (one with table-level statistics)."""
    reader = StatisticsReader(store, version.version)
    rows = reader.column_statistics(None, [c["name"] for c in version.columns])
    found, skipped = catalog_columns(rows, None, StoredLookups(reader))
    columns = {}
    for column in found:
        entry: dict[str, object] = {"type": column.spark_type, "stats": column.spark_map()}
        bins = column.histogram_bins
        if bins and not uniform(bins):
            entry["histogram"] = {
                "height": column.histogram_height,
                "bins": [[json_number(lo), json_number(hi), n] for lo, hi, n in bins],
                "source": column.histogram_source,
            }
        columns[column.name] = entry
    return {
        "format": FORMAT,
        "format_version": 1,
        "table_format": table.format_name,
        "location": table.location,
        "version": version.version,
        "snapshot_id": version.snapshot_id,
        "row_count": version.merged_record_count,
        "size_in_bytes": int(version.merged_record_size or 0),
        "columns": columns,
        "skipped": skipped,
    }


UNIFORM_TOLERANCE = 0.25
"""A histogram whose every bin's width is within this share of the mean width says no more
than min and max do."""
UNIFORM_DEVIATION = 0.05
"""Nor does one whose every edge lies within this share of the range from where evenly
spread values put it (a few evenly common whole numbers: points and steps)."""


def uniform(bins: list[tuple[float, float, int]]) -> bool:
    """Whether equi-height ``bins`` describe values spread evenly between min and max. Such
    a histogram adds nothing to a filter's estimate (Spark interpolates min/max the same
    way) and makes joins worse: Spark estimates an equi-join from both keys' histograms and
    does not shrink a key's histogram after a filter on another column (TPC-H lineitem's
    self-join on l_orderkey after a filter on l_quantity: q-error 10.1 with the histogram,
    1.22 without; bench/interop.py). Ids, keys and sequence numbers are such columns."""
    widths = [hi - lo for lo, hi, _ in bins]
    if len(widths) < 4 or not all(math.isfinite(w) for w in widths):
        return False
    mean = sum(widths) / len(widths)
    if mean > 0 and all(abs(w / mean - 1) <= UNIFORM_TOLERANCE for w in widths[1:-1]):
        return True
    # a few whole numbers as evenly common (a nation key: 25 values): the bins are points
    # and steps, each edge within a step of where an even spread puts it
    low, high = bins[0][0], bins[-1][1]
    span = high - low
    steps = len(bins)
    return span > 0 and all(
        abs(hi - (low + span * (i + 1) / steps)) <= UNIFORM_DEVIATION * span
        for i, (_, hi, _) in enumerate(bins)
    )


def path_of(store: StatisticsStore, version: Version) -> str | None:
    """Where ``version``'s file goes (None: no snapshot, as a Parquet directory's, which
    ``spark-register`` covers, or no table-level statistics)."""
    if version.snapshot_id is None or not version.table_files:
        return None
    return store.join(*layout.spark_file(version.version, version.snapshot_id).split("/"))


def publish(table: TableFormat, store: StatisticsStore, version: Version) -> str | None:
    """Write ``version``'s file; its path, or None when the table's format gets none."""
    path = path_of(store, version) if table.format_name in SNAPSHOT_FORMATS else None
    if path is None:
        return None
    store.write_bytes_atomic(path, json.dumps(build(table, store, version)).encode())
    return path


def publish_quietly(table: TableFormat, store: StatisticsStore, version: Version) -> str | None:
    """``publish`` after the version is published: a failure is logged, never raised (the
    analyze itself succeeded; Spark then keeps its own defaults for that snapshot)."""
    try:
        return publish(table, store, version)
    except Exception as exc:  # noqa: BLE001 - advice for another engine, never fatal
        log.warning("statistics for Spark not written: %s", exc)
        return None
