"""Exact counts a table's metadata knows, for ``analyze --from-sample``: null counts, min
and max of top-level columns from the data files' Parquet footers.

Used only where a partition's rows are exactly its data files' rows (no delete files, no
merge on read: the plan's row count equals the files' record counts) and for formats whose
files name columns as the table does (Parquet directories, Delta without column mapping,
Hudi base files). Footers say nothing of NaN (they skip it), and writers may truncate long
strings, so string and binary bounds are marked inexact (``bounds_exact`` false); a column
without statistics in any row group keeps the sample's values (``bounds_from`` "sample").
Iceberg manifests and Paimon file metas carry the same facts; they are not read here yet.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.errors import DataFileError
from lakestats.formats.base import PartitionPlan
from lakestats.stats.keys import encode

FORMATS = ("parquet", "delta", "hudi")


def usable(format_name: str, plan: PartitionPlan) -> bool:
    counts = [f.record_count for f in plan.data_files]
    return (
        format_name in FORMATS
        and not plan.delete_files
        and all(f.path.endswith(".parquet") for f in plan.data_files)
        and (plan.row_count is None or None in counts or plan.row_count == sum(counts))
    )


def footer_rows(plan: PartitionPlan, s3: fs.S3Options | None = None) -> int:
    """A partition's rows from its files' Parquet footers (where ``usable``)."""
    return sum(_footer(plan, data.path, s3).num_rows for data in plan.data_files)


def _footer(plan: PartitionPlan, uri: str, s3: fs.S3Options | None) -> pq.FileMetaData:
    """One data file's footer; an unreadable file is one line naming it and its partition."""
    filesystem, path = fs.resolve(uri, s3)
    try:
        with filesystem.open_input_file(path) as handle:
            return pq.ParquetFile(handle).metadata
    except (OSError, pa.ArrowInvalid) as exc:
        raise DataFileError(
            f"cannot read the footer of data file {uri} of partition {plan.name or '(all)'}: "
            f"{str(exc).splitlines()[0].rstrip('.')}; repair or remove the file"
        ) from exc


def footer_bounds(
    plan: PartitionPlan, columns: dict[str, pa.DataType], s3: fs.S3Options | None = None
) -> dict[str, dict[str, object]]:
    """``{column: {null_count, min, max, exact}}`` (min/max as order-preserving keys) for
    the top-level columns every row group of every file has statistics for."""
    nulls: dict[str, int] = dict.fromkeys(columns, 0)
    lows: dict[str, list] = {c: [] for c in columns}
    highs: dict[str, list] = {c: [] for c in columns}
    missing: set[str] = set()
    for data in plan.data_files:
        metadata = _footer(plan, data.path, s3)
        positions = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
        for name in columns:
            if name not in positions:
                missing.add(name)
                continue
            for g in range(metadata.num_row_groups):
                stats = metadata.row_group(g).column(positions[name]).statistics
                if stats is None or not stats.has_null_count:
                    missing.add(name)
                    break
                nulls[name] += stats.null_count
                if stats.has_min_max:
                    bounds = _physical_bounds(stats, columns[name])
                    if bounds is None:
                        missing.add(name)
                        break
                    lows[name].append(bounds[0])
                    highs[name].append(bounds[1])
                elif stats.null_count != metadata.row_group(g).num_rows:
                    missing.add(name)
                    break
    out = {}
    for name, dtype in columns.items():
        if name in missing:
            continue
        try:
            low = _key(lows[name], dtype, min)
            high = _key(highs[name], dtype, max)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            continue  # a physical value Arrow cannot take as the column's type
        text = pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
        binary = pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype)
        out[name] = {"null_count": nulls[name], "min": low, "max": high,
                     "exact": not (text or binary)}
    return out


def _physical_bounds(stats: pq.Statistics, dtype: pa.DataType) -> tuple[object, object] | None:
    """A row group's min and max as Python values. Arrow cannot convert the statistics of
    decimals stored as INT32/INT64 (what Spark, DuckDB and Trino write up to 18 digits):
    those are the unscaled integers, scaled here; None for any other statistics Arrow
    cannot read (the column then keeps the sample's bounds)."""
    try:
        return stats.min, stats.max
    except pa.ArrowNotImplementedError:
        low, high = stats.min_raw, stats.max_raw
        if pa.types.is_decimal(dtype) and isinstance(low, int) and isinstance(high, int):
            return Decimal(low).scaleb(-dtype.scale), Decimal(high).scaleb(-dtype.scale)
        return None


def _key(values: list, dtype: pa.DataType, pick) -> bytes | None:  # noqa: ANN001
    if not values:
        return None
    keys = encode(pa.array(values, type=dtype)).to_pylist()
    return pick(k for k in keys if k is not None)
