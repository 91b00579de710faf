"""Alerts from statistics alone: what a profiler would flag, without reading the data.

Each rule looks at one column's stored table-level statistics (and, for drift, its
per-partition statistics): a constant or all-null column, a high null share, a candidate
key, high cardinality, heavy skew, a dominant zero or empty string, NaN, min/max far
outside the percentiles, a distribution that moved in the latest partition, and stale
statistics. The thresholds live in ``THRESHOLDS`` (one place; ``docs/preview.md`` lists
them from here) so a reader can tell exactly when an alert fires.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from lakestats.answers import Alert, Staleness
from lakestats.display import number

Row = Mapping[str, object]


def _limit(default: float, meaning: str) -> float:
    return field(default=default, metadata={"meaning": meaning})


@dataclass(frozen=True)
class Thresholds:
    """When each alert fires. Shares are fractions of the rows (nulls) or of the non-null
    values (everything else)."""

    high_null_share: float = _limit(
        0.5, "`high_nulls`: at least this share of the rows is null (not all of them)"
    )
    high_cardinality_share: float = _limit(
        0.5, "`high_cardinality`: distinct values are at least this share of the non-null "
        "values of a text or binary column that is not unique"
    )
    skew_top_share: float = _limit(
        0.5, "`skewed`: the most frequent value holds at least this share of the non-null "
        "values, in a column with more than two distinct values"
    )
    imbalance_share: float = _limit(
        0.8, "`skewed`, for a column of two distinct values: the more frequent one holds at "
        "least this share of the non-null values"
    )
    dominant_share: float = _limit(
        0.5, "`zeros` / `empty`: zero or the empty string holds at least this share of the "
        "non-null values"
    )
    outlier_iqr: float = _limit(
        3.0, "`outliers`: min or max lies more than this many interquartile ranges outside "
        "[p25, p75] (Tukey's far-out fence)"
    )
    drift_null_share: float = _limit(
        0.25, "`drift`: the latest partition's null share differs from the other "
        "partitions' by at least this much (absolute)"
    )
    drift_mean_stddevs: float = _limit(
        1.0, "`drift`: the latest partition's mean lies at least this many standard "
        "deviations (of the other partitions' values) from their mean (not judged for a "
        "unique integer or text column, an identifier: new keys move its mean by "
        "construction)"
    )
    drift_min_partitions: int = _limit(  # type: ignore[assignment]
        3, "`drift` is judged only with at least this many partitions"
    )

    def rows(self) -> list[tuple[str, object, str]]:
        """(name, value, meaning) of every threshold, for the docs."""
        return [(f.name, getattr(self, f.name), f.metadata["meaning"]) for f in fields(self)]


THRESHOLDS = Thresholds()

TEXT_TYPES = ("string", "large_string", "string_view", "binary", "large_binary")
FLOAT_TYPES = ("float", "double", "halffloat")


def _shown(value: object) -> str:
    """A value in a message: text quoted, numbers with six significant digits."""
    return repr(value) if isinstance(value, str) else number(value)


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def _number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def column_alerts(
    row: Row, top: tuple[object, int] | None = None, limits: Thresholds = THRESHOLDS
) -> list[Alert]:
    """The alerts of one column from its table-level statistics row and, for skew and
    dominant values, its most frequent value and count (``top``)."""
    name = str(row.get("column", row.get("name")))
    rows = int(row.get("row_count") or 0)
    nulls = int(row.get("null_count") or 0)
    non_null = rows - nulls
    distinct = row.get("distinct_count")
    out: list[Alert] = []

    def alert(kind: str, message: str, value: float | None = None) -> None:
        out.append(Alert(kind=kind, column=name, message=message, value=value))

    if rows == 0:
        return out
    if nulls == rows:
        alert("all_null", "every value is null", 1.0)
        return out
    null_share = _share(nulls, rows)
    if null_share >= limits.high_null_share:
        alert("high_nulls", f"{null_share:.0%} of the rows are null", null_share)
    if distinct == 1:
        also = " (and nulls)" if nulls else ""
        alert("constant", f"one value: {_shown(row.get('min'))}{also}")
        return out
    if _unique(row, non_null):
        key = "a candidate key" if nulls == 0 else "unique apart from nulls"
        if row.get("distinct_count_exact") is False and not row.get("all_distinct"):
            key += " (estimated: the distinct count's bounds reach every value)"
        alert("unique", f"every value is distinct: {key}", 1.0)
    elif distinct is not None and str(row.get("type")) in TEXT_TYPES:
        share = _share(int(distinct), non_null)  # type: ignore[arg-type]
        if share >= limits.high_cardinality_share:
            alert("high_cardinality", f"{share:.0%} of the values are distinct", share)
    if row.get("nan_count"):
        alert("nan", f"{int(row['nan_count']):,} NaN value(s)", float(row["nan_count"]))
    if top is not None and non_null:
        value, count = top
        share = _share(count, non_null)
        if value == 0 and not isinstance(value, bool) and share >= limits.dominant_share:
            alert("zeros", f"{share:.0%} of the values are zero", share)
        elif value == "" and share >= limits.dominant_share:
            alert("empty", f"{share:.0%} of the values are the empty string", share)
        elif ((distinct or 0) > 2 and share >= limits.skew_top_share) or (
            distinct == 2 and share >= limits.imbalance_share
        ):
            alert("skewed", f"{_shown(value)} holds {share:.0%} of the values", share)
    out.extend(_outliers(name, row, limits))
    return out


def _unique(row: Row, non_null: int) -> bool:
    """Every non-null value distinct: recorded (``all_distinct``), counted exactly, or,
    for an estimated count, within its bounds (the upper bound reaches every value)."""
    if non_null < 2:
        return False
    if row.get("all_distinct"):
        return True
    distinct = row.get("distinct_count")
    if row.get("distinct_count_exact") is False:
        upper = row.get("distinct_count_upper")
        return upper is not None and int(upper) >= non_null  # type: ignore[arg-type]
    return distinct is not None and int(distinct) >= non_null  # type: ignore[arg-type]


def _outliers(name: str, row: Row, limits: Thresholds) -> list[Alert]:
    marks = [_number(row.get(k)) for k in ("min", "p25", "p75", "max")]
    if any(m is None for m in marks):
        return []
    low, q1, q3, high = marks  # type: ignore[misc]
    iqr = q3 - q1
    if iqr <= 0:
        return []
    far = limits.outlier_iqr * iqr
    found = []
    if high > q3 + far:
        found.append(f"max {_shown(row['max'])} is {(high - q3) / iqr:,.0f} IQR above p75")
    if low < q1 - far:
        found.append(f"min {_shown(row['min'])} is {(q1 - low) / iqr:,.0f} IQR below p25")
    if not found:
        return []
    return [Alert(kind="outliers", column=name, message="; ".join(found))]


def drift_alerts(
    table: Row, last: Row, partition: str, partitions: int, limits: Thresholds = THRESHOLDS
) -> list[Alert]:
    """Whether the last partition (in key order: the newest, for a time-partitioned table)
    moved away from the rest: its null share, or its mean against the spread of the other
    partitions' values. The rest is the table level minus that partition (counts subtract;
    mean and variance by Chan et al.'s parallel formulas), so one partition's statistics
    are read, not every partition's."""
    if partitions < limits.drift_min_partitions:
        return []
    name = str(table.get("column", table.get("name")))
    rows_t, rows_l = int(table.get("row_count") or 0), int(last.get("row_count") or 0)
    nulls_t, nulls_l = int(table.get("null_count") or 0), int(last.get("null_count") or 0)
    if rows_t - rows_l <= 0 or rows_l <= 0:
        return []
    found = []
    before = _share(nulls_t - nulls_l, rows_t - rows_l)
    now = _share(nulls_l, rows_l)
    if abs(now - before) >= limits.drift_null_share:
        found.append(f"nulls {before:.0%} → {now:.0%}")
    mean_t, mean_l = _number(table.get("mean")), _number(last.get("mean"))
    var_t, var_l = _number(table.get("variance")), _number(last.get("variance"))
    nan_t, nan_l = int(table.get("nan_count") or 0), int(last.get("nan_count") or 0)
    n_t, n_l = rows_t - nulls_t - nan_t, rows_l - nulls_l - nan_l
    n_r = n_t - n_l
    # an identifier's mean moves by construction (new ids): unique and not a measurement
    key = _unique(table, rows_t - nulls_t) and str(table.get("type")) not in FLOAT_TYPES
    if not key and None not in (mean_t, mean_l, var_t, var_l) and n_r > 0 and n_l > 0:
        mean_r = (n_t * mean_t - n_l * mean_l) / n_r  # type: ignore[operator]
        delta = mean_l - mean_r  # type: ignore[operator]
        m2_r = var_t * n_t - var_l * n_l - delta * delta * n_r * n_l / n_t  # type: ignore[operator]
        spread = math.sqrt(max(m2_r, 0.0) / n_r)
        if spread > 0 and abs(delta) >= limits.drift_mean_stddevs * spread:
            found.append(
                f"mean {number(mean_r)} → {number(mean_l)} "
                f"({abs(delta) / spread:.1f} standard deviations of the rest)"
            )
    if not found:
        return []
    return [Alert(kind="drift", column=name, message=f"{partition}: " + ", ".join(found))]


def staleness_alert(staleness: Staleness) -> list[Alert]:
    if not staleness.stale:
        return []
    return [
        Alert(
            kind="stale",
            column=None,
            message=(
                "the table changed since its statistics ("
                + ", ".join(
                    [f"{staleness.snapshots_behind} snapshot(s)"] * bool(staleness.snapshots_behind)
                    + [f"{staleness.partitions_changed} partition(s)"]
                    * bool(staleness.partitions_changed)
                    or ["its files"]
                )
                + "): run analyze"
            ),
        )
    ]
