"""The facade's answers: frozen, typed, each with one ``to_json()``.

Every ``LakestatsTable`` lookup returns one of these, and the faces only render them: the
CLI's ``--json`` prints ``to_json()``, the HTTP route answers it, the text output and the
pages lay out its fields. So ``lakestats frequencies --json`` and ``GET …/frequencies`` are
one shape by construction. Values inside are decoded Python values (``Decimal``,
``datetime``, ``bytes``…); ``to_json()`` turns them into JSON values with the conventions
of ``lakestats.stats.keys.to_json`` (decimals and 64-bit-unsafe integers as text,
timestamps as ISO-8601, bytes as base64, NaN/±inf as strings). Tabular answers also have
``to_arrow()``.

A statistics row (one column's statistics) stays a read-only mapping: its fields are the
stored statistics, user-defined ones included, so their set is open.

Over 400 lines because it is the whole answer vocabulary of the facade, one small frozen
class per answer: one place to read every JSON shape the faces print.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pyarrow as pa

from lakestats.stats.keys import to_json as value_json

Row = Mapping[str, Any]


def jsonable(value: object) -> object:
    """A JSON-ready copy of ``value`` (mappings, sequences and decoded leaves)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value  # the common leaves first: a wide answer has thousands
    if kind is float:
        return value if math.isfinite(value) else value_json(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value_json(value)


def frozen_row(row: Mapping[str, object]) -> Row:
    return MappingProxyType(dict(row))


def column_json(row: Row) -> dict[str, object]:
    """A statistics row as JSON: ``name`` first, no ``column``/``column_path``."""
    out: dict[str, object] = {"name": row.get("column", row.get("name"))}
    for key, value in row.items():
        if key not in ("column", "column_path", "name"):
            out[key] = jsonable(value)
    return out


def table_of(rows: Sequence[Mapping[str, object]]) -> pa.Table:
    """JSON rows as an Arrow table; a field whose values mix types becomes text."""
    if not rows:
        return pa.table({})
    names = list(dict.fromkeys(k for r in rows for k in r))
    arrays = {}
    for name in names:
        values = [r.get(name) for r in rows]
        try:
            arrays[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
    return pa.table(arrays)


def _rows(columns: Sequence[Row]) -> list[dict[str, object]]:
    return [column_json(r) for r in columns]


@dataclass(frozen=True)
class Staleness:
    """How far a statistics version lags behind a snapshot of the table."""

    snapshot_id: int | None
    statistics_snapshot_id: int | None
    stale: bool
    snapshots_behind: int
    partitions_changed: int
    columns_not_inherited: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "snapshot_id": self.snapshot_id,
            "statistics_snapshot_id": self.statistics_snapshot_id,
            "stale": self.stale,
            "snapshots_behind": self.snapshots_behind,
            "partitions_changed": self.partitions_changed,
            "columns_not_inherited": list(self.columns_not_inherited),
        }


@dataclass(frozen=True)
class TableStatistics:
    """Table-level statistics for a snapshot (``show``), with how stale they are.
    ``row_count`` is the statistics' own (of ``staleness.statistics_snapshot_id``)."""

    staleness: Staleness
    version: int
    row_count: int | None
    columns: tuple[Row, ...]
    kind: str | None = None
    sample: Mapping[str, object] | None = None
    damaged_versions_skipped: tuple[int, ...] = ()

    @property
    def stale(self) -> bool:
        return self.staleness.stale

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {**self.staleness.to_json(), "version": self.version}
        if self.kind is not None:
            out["kind"] = self.kind
            out["sample"] = jsonable(self.sample)
        if self.damaged_versions_skipped:
            out["damaged_versions_skipped"] = list(self.damaged_versions_skipped)
        out["row_count"] = self.row_count
        out["columns"] = _rows(self.columns)
        return out

    def to_arrow(self) -> pa.Table:
        return table_of(_rows(self.columns))


@dataclass(frozen=True)
class StatisticsRows(Sequence[Row]):
    """Decoded statistics rows of one partition (``partition`` its name) or of the table
    (``partition`` None) in statistics version ``version``: a read-only sequence of rows,
    one per column, so ``[row] = table.statistics(None, ["x"])`` reads as before."""

    partition: str | None
    version: int
    columns: tuple[Row, ...]

    def __getitem__(self, index):  # noqa: ANN001, ANN204 - Sequence's int/slice overloads
        return self.columns[index]

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.columns)

    def to_json(self) -> dict[str, object]:
        return {
            "partition": self.partition,
            "version": self.version,
            "columns": _rows(self.columns),
        }

    def to_arrow(self) -> pa.Table:
        return table_of(_rows(self.columns))


@dataclass(frozen=True)
class PartitionStatistics:
    """One partition's statistics (``show --partition``)."""

    partition: Mapping[str, object]
    name: str
    row_count: int
    version: int
    columns: tuple[Row, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "partition": jsonable(self.partition),
            "name": self.name,
            "row_count": self.row_count,
            "version": self.version,
            "columns": _rows(self.columns),
        }

    def to_arrow(self) -> pa.Table:
        return table_of(_rows(self.columns))


@dataclass(frozen=True)
class Partition:
    partition: Mapping[str, object]
    name: str
    path: str
    row_count: int
    files: Mapping[str, str] = field(default_factory=dict)
    """The partition's statistics files by kind, relative to the statistics root."""

    def to_json(self) -> dict[str, object]:
        return {
            "partition": jsonable(self.partition),
            "name": self.name,
            "path": self.path,
            "row_count": self.row_count,
        }


@dataclass(frozen=True)
class Partitions:
    """The partitions a statistics version describes."""

    version: int
    partitions: tuple[Partition, ...]

    def __iter__(self) -> Iterator[Partition]:
        return iter(self.partitions)

    def __len__(self) -> int:
        return len(self.partitions)

    def to_json(self) -> dict[str, object]:
        return {"version": self.version, "partitions": [p.to_json() for p in self.partitions]}

    def to_arrow(self) -> pa.Table:
        return table_of([p.to_json() for p in self.partitions])


@dataclass(frozen=True)
class Frequencies:
    """A column's most frequent values with their counts, and whether the list is whole:
    ``truncated`` (a top-k), ``duplicates_only`` (values seen once are left out,
    ``omitted`` of them), ``exact`` (False: counts are estimates, e.g. merged from
    truncated partition lists or scaled from a sample)."""

    column: str
    partition: str | None
    version: int
    row_count: int | None
    distinct_count: int | None
    all_distinct: bool | None
    truncated: bool
    omitted: int | None
    duplicates_only: bool
    exact: bool
    pairs: tuple[tuple[object, int], ...]

    def __iter__(self) -> Iterator[tuple[object, int]]:
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> tuple[object, int]:
        return self.pairs[i]

    def to_json(self) -> dict[str, object]:
        return {
            "column": self.column,
            "partition": self.partition,
            "version": self.version,
            "row_count": self.row_count,
            "distinct_count": self.distinct_count,
            "all_distinct": self.all_distinct,
            "truncated": self.truncated,
            "omitted": self.omitted,
            "duplicates_only": self.duplicates_only,
            "exact": self.exact,
            "frequencies": [{"value": jsonable(v), "frequency": f} for v, f in self.pairs],
        }

    def to_arrow(self) -> pa.Table:
        return table_of([{"value": jsonable(v), "frequency": f} for v, f in self.pairs])


@dataclass(frozen=True)
class Bin:
    """One histogram bin: ``[lower, upper)`` (the histogram's last: ``[lower, max]``)."""

    lower: object
    upper: object
    count: int

    def to_json(self) -> dict[str, object]:
        return {"lower": jsonable(self.lower), "upper": jsonable(self.upper), "count": self.count}


@dataclass(frozen=True)
class Histogram:
    """Bins ``[start, stop)`` of a column's equi-width histogram of ``histogram_bins``;
    the histogram's last bin is closed (``[lower, max]``). ``exact`` False: re-binned or
    scaled counts."""

    column: str
    partition: str | None
    version: int
    histogram_bins: int
    start: int
    stop: int
    exact: bool
    bins: tuple[Bin, ...]

    def __iter__(self) -> Iterator[Bin]:
        return iter(self.bins)

    def __len__(self) -> int:
        return len(self.bins)

    def __getitem__(self, i: int) -> Bin:
        return self.bins[i]

    def rows(self) -> list[dict[str, object]]:
        """The bins as records of decoded values (``lower``, ``upper``, ``count``)."""
        return [{"lower": b.lower, "upper": b.upper, "count": b.count} for b in self.bins]

    @property
    def counts(self) -> list[int]:
        return [b.count for b in self.bins]

    @property
    def ends_with_last_bin(self) -> bool:
        return bool(self.bins) and self.stop >= self.histogram_bins

    def to_json(self) -> dict[str, object]:
        return {
            "column": self.column,
            "partition": self.partition,
            "version": self.version,
            "histogram_bins": self.histogram_bins,
            "start": self.start,
            "stop": self.stop,
            "exact": self.exact,
            "bins": [b.to_json() for b in self.bins],
        }

    def to_arrow(self) -> pa.Table:
        return table_of([b.to_json() for b in self.bins])


@dataclass(frozen=True)
class Rank:
    """Exact table-level rank of ``value`` among the column's non-null values: rows
    below, equal and above it, and its percentile (share below or equal; None when the
    column has no values)."""

    column: str
    value: object
    below: int
    equal: int
    above: int
    total: int
    percentile: float | None

    def to_json(self) -> dict[str, object]:
        return {
            "below": self.below,
            "equal": self.equal,
            "above": self.above,
            "total": self.total,
            "percentile": self.percentile,
        }


@dataclass(frozen=True)
class Quantile:
    """Exact table-level quantile ``p`` (nearest rank)."""

    column: str
    p: float
    value: object

    def to_json(self) -> dict[str, object]:
        return {"p": self.p, "value": jsonable(self.value)}


def estimate_partition(
    partition: Mapping[str, object],
    name: str,
    partition_rows: int,
    row_count: float,
    lower: int,
    upper: int,
    exact: bool,
    method: str,
) -> Row:
    """One partition that can match, as ``Estimate.partitions`` lists it."""
    return MappingProxyType({
        "partition": partition, "name": name, "partition_rows": partition_rows,
        "row_count": row_count, "lower": lower, "upper": upper, "exact": exact,
        "method": method,
    })


def estimate_conjunct(
    predicate: str, row_count: float, lower: int, upper: int, exact: bool, selectivity: float
) -> Row:
    """One top-level conjunct's estimate, as ``Estimate.detail`` lists it."""
    return MappingProxyType({
        "predicate": predicate, "row_count": row_count, "lower": lower, "upper": upper,
        "exact": exact, "selectivity": selectivity,
    })


@dataclass(frozen=True)
class Estimate:
    """Rows a predicate keeps: the estimate, sound ``lower``/``upper`` bounds, whether it
    is ``exact``, per partition that can match and per top-level conjunct (``detail``)."""

    predicate: str
    row_count: float
    lower: int
    upper: int
    exact: bool
    selectivity: float
    table_rows: int
    version: int
    snapshot_id: int | None
    partitions: tuple[Row, ...]
    detail: tuple[Row, ...]
    derived_version: int | None = None
    """Set when the count comes from statistics computed for this predicate
    (``analyze --where``)."""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "predicate": self.predicate,
            "row_count": self.row_count,
            "lower": self.lower,
            "upper": self.upper,
            "exact": self.exact,
            "selectivity": self.selectivity,
            "table_rows": self.table_rows,
            "partitions": [jsonable(p) for p in self.partitions],
            "detail": [jsonable(d) for d in self.detail],
        }
        if self.derived_version is not None:
            out["derived"] = True
            out["derived_version"] = self.derived_version
        out["version"] = self.version
        out["snapshot_id"] = self.snapshot_id
        return out

    def to_arrow(self) -> pa.Table:
        return table_of([jsonable(p) for p in self.partitions])


@dataclass(frozen=True)
class EstimateBatch:
    """Several predicates' ``Estimate``s against one statistics version
    (``LakestatsTable.estimate_many``), in the order asked."""

    estimates: tuple[Estimate, ...]
    version: int
    snapshot_id: int | None

    def __len__(self) -> int:
        return len(self.estimates)

    def __iter__(self) -> Iterator[Estimate]:
        return iter(self.estimates)

    def __getitem__(self, i: int) -> Estimate:
        return self.estimates[i]

    def to_json(self) -> dict[str, object]:
        return {
            "estimates": [e.to_json() for e in self.estimates],
            "version": self.version,
            "snapshot_id": self.snapshot_id,
        }

    def to_arrow(self) -> pa.Table:
        """One row per predicate: its estimate and bounds."""
        return table_of(
            [
                {k: v for k, v in e.to_json().items() if k not in ("partitions", "detail")}
                for e in self.estimates
            ]
        )


@dataclass(frozen=True)
class PartitionColumns:
    partition: Mapping[str, object]
    name: str
    row_count: int
    columns: tuple[Row, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "partition": jsonable(self.partition),
            "name": self.name,
            "row_count": self.row_count,
            "columns": [jsonable(c) for c in self.columns],
        }


@dataclass(frozen=True)
class BatchStatistics:
    """Some columns' statistics for the table and every partition ``where`` can match
    (``stats``), or those of ``analyze --where``'s derived entry (``derived``)."""

    row_count: int | None
    version: int
    snapshot_id: int | None
    partitions_total: int
    partitions_matched: int
    columns: tuple[Row, ...]
    partitions: tuple[PartitionColumns, ...] | None
    derived_predicate: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "table": {
                "row_count": self.row_count,
                "version": self.version,
                "snapshot_id": self.snapshot_id,
                "partitions": self.partitions_total,
                "partitions_matched": self.partitions_matched,
                "columns": _rows(self.columns),
            }
        }
        if self.partitions is not None:
            out["partitions"] = [p.to_json() for p in self.partitions]
        if self.derived_predicate is not None:
            out["derived"] = True
            out["predicate"] = self.derived_predicate
        return out

    def to_arrow(self) -> pa.Table:
        """One row per partition and column."""
        return table_of(
            [
                {"partition": p.name, "row_count": p.row_count, **jsonable(c)}
                for p in self.partitions or ()
                for c in p.columns
            ]
        )


@dataclass(frozen=True)
class VersionInfo:
    """One entry of ``history``: a statistics version, a damaged one (``damaged`` says
    why), or a derived entry (``kind`` ``derived``, with its ``predicate``)."""

    version: int
    snapshot_id: int | None = None
    schema_id: int | None = None
    merged_record_count: int | None = None
    merged_record_size: int | None = None
    partitions_computed: int | None = None
    partitions_reused: int | None = None
    created_at: str | None = None
    kind: str | None = None
    damaged: str | None = None
    derived: Mapping[str, object] | None = None

    def to_json(self) -> dict[str, object]:
        if self.damaged is not None:
            return {"version": self.version, "damaged": self.damaged}
        if self.derived is not None:
            return dict(jsonable(self.derived))  # type: ignore[arg-type]
        return {
            "version": self.version,
            "snapshot_id": self.snapshot_id,
            "schema_id": self.schema_id,
            "merged_record_count": self.merged_record_count,
            "merged_record_size": self.merged_record_size,
            "partitions_computed": self.partitions_computed,
            "partitions_reused": self.partitions_reused,
            "created_at": self.created_at,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class Versions:
    """Statistics versions oldest first, then derived entries (``history``)."""

    versions: tuple[VersionInfo, ...]

    def __iter__(self) -> Iterator[VersionInfo]:
        return iter(self.versions)

    def __len__(self) -> int:
        return len(self.versions)

    def to_json(self) -> list[dict[str, object]]:
        return [v.to_json() for v in self.versions]

    def to_arrow(self) -> pa.Table:
        return table_of(self.to_json())


@dataclass(frozen=True)
class ExpireReport:
    """What ``expire`` removed (or, ``dry_run``, would remove)."""

    dry_run: bool
    versions_removed: tuple[int, ...]
    versions_kept: tuple[int, ...]
    files_removed: int
    derived_removed: tuple[Mapping[str, object], ...]

    def to_json(self) -> dict[str, object]:
        return {
            "dry_run": self.dry_run,
            "versions_removed": list(self.versions_removed),
            "versions_kept": list(self.versions_kept),
            "files_removed": self.files_removed,
            "derived_removed": [jsonable(d) for d in self.derived_removed],
        }


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "type": self.type}


@dataclass(frozen=True)
class TableSummary:
    """The latest statistics version of a table at a glance: what the service lists."""

    version: int
    snapshot_id: int | None
    row_count: int | None
    partitions: tuple[str, ...]
    """The partitions' names, in the version's order."""
    table_level: bool
    created_at: str | None
    columns: tuple[ColumnInfo, ...]
    kind: str = "full"
    """``full`` (column statistics), ``noscan`` (counts from metadata), ``sampled``."""
    size_in_bytes: int | None = None
    """Bytes of the data files the rows live in."""

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "kind": self.kind,
            "snapshot_id": self.snapshot_id,
            "row_count": self.row_count,
            "size_in_bytes": self.size_in_bytes,
            "partitions": len(self.partitions),
            "table_level": self.table_level,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class AnalyzeResult:
    """What an analyze published: a new statistics version, or nothing (``unchanged``:
    the latest version already describes the snapshot, and ``version`` is that one)."""

    version: int
    snapshot_id: int | None
    partitions_computed: int
    partitions_reused: int
    row_count: int
    bytes_written: int
    stats_root: str
    partitions_repaired: int = 0
    """Reusable, but a file was missing or damaged: recomputed."""
    unchanged: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "snapshot_id": jsonable(self.snapshot_id),
            "partitions_computed": self.partitions_computed,
            "partitions_reused": self.partitions_reused,
            "partitions_repaired": self.partitions_repaired,
            "row_count": self.row_count,
            "bytes_written": self.bytes_written,
            "stats_root": self.stats_root,
            "unchanged": self.unchanged,
        }


@dataclass(frozen=True)
class SampleResult:
    """What ``sample create`` or ``sample refresh`` drew and read."""

    snapshot_id: int | None
    population: int
    sample_rows: int
    partitions_sampled: int
    """Partitions a task worked on (units read, or resampled)."""
    partitions_kept: int
    partitions_removed: int
    bytes_read: int
    """Bytes of the table's data files read."""
    resampled_because: str | None = None
    files_read: int = 0
    """The table's data files read."""
    partitions_resampled: int = 0
    """Read in full: new, rewritten wholesale, or their reserve used up."""
    state_bytes_read: int = 0
    """Bytes of the sample's own files read (refresh)."""

    def to_json(self) -> dict[str, object]:
        return {
            "snapshot_id": jsonable(self.snapshot_id),
            "population": self.population,
            "sample_rows": self.sample_rows,
            "partitions_sampled": self.partitions_sampled,
            "partitions_kept": self.partitions_kept,
            "partitions_removed": self.partitions_removed,
            "bytes_read": self.bytes_read,
            "resampled_because": self.resampled_because,
            "files_read": self.files_read,
            "partitions_resampled": self.partitions_resampled,
            "state_bytes_read": self.state_bytes_read,
        }


@dataclass(frozen=True)
class SqlResult:
    """``ANALYZE TABLE …`` run by ``lakestats sql``: the version it published."""

    kind: str
    version: int
    snapshot_id: int | None
    message: str
    merged_record_count: int | None = None
    """The row count, for a counts-only (``NOSCAN``) version."""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "kind": self.kind,
            "version": self.version,
            "snapshot_id": jsonable(self.snapshot_id),
            "message": self.message,
        }
        if self.merged_record_count is not None:
            out["merged_record_count"] = self.merged_record_count
        return out


@dataclass(frozen=True)
class Holder:
    """A partition holding a value, and how many times."""

    partition: Mapping[str, object]
    name: str
    path: str
    frequency: int

    def to_json(self) -> dict[str, object]:
        return {
            "partition": jsonable(self.partition),
            "name": self.name,
            "path": self.path,
            "frequency": self.frequency,
        }


@dataclass(frozen=True)
class PartitionsContaining:
    """The partitions whose rows hold ``value`` in ``column`` (from stored frequencies)."""

    column: str
    value: str
    """The value as it was asked, as text."""
    version: int
    partitions: tuple[Holder, ...]

    def __iter__(self) -> Iterator[Holder]:
        return iter(self.partitions)

    def __len__(self) -> int:
        return len(self.partitions)

    def to_json(self) -> dict[str, object]:
        return {
            "column": self.column,
            "value": self.value,
            "version": self.version,
            "partitions": [h.to_json() for h in self.partitions],
        }

    def to_arrow(self) -> pa.Table:
        return table_of([h.to_json() for h in self.partitions])


@dataclass(frozen=True)
class Alert:
    """Something a profiler would flag, found in the statistics alone (``lakestats.alerts``
    says when each kind fires). ``column`` is None for the table (``stale``)."""

    kind: str
    column: str | None
    message: str
    value: float | None = None
    """The share or count that fired it, where there is one."""

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "column": self.column,
            "message": self.message,
            "value": jsonable(self.value),
        }


@dataclass(frozen=True)
class TableProfile:
    """A table at a glance (``lakestats profile``, the top of its page): its size, how
    fresh and how exact its statistics are, and the alerts."""

    version: int
    snapshot_id: int | None
    row_count: int | None
    columns: int
    partitions: int
    data_bytes: int | None
    """Bytes of the table's data files."""
    statistics_bytes: int
    """Bytes of the files of this statistics version."""
    created_at: str | None
    staleness: Staleness
    exact_figures: int
    """Distinct counts, percentiles, histograms and frequency lists that are exact."""
    estimated_figures: int
    alerts: tuple[Alert, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "snapshot_id": self.snapshot_id,
            "row_count": self.row_count,
            "columns": self.columns,
            "partitions": self.partitions,
            "data_bytes": self.data_bytes,
            "statistics_bytes": self.statistics_bytes,
            "created_at": self.created_at,
            "staleness": self.staleness.to_json(),
            "exact_figures": self.exact_figures,
            "estimated_figures": self.estimated_figures,
            "alerts": [a.to_json() for a in self.alerts],
        }

    def to_arrow(self) -> pa.Table:
        return table_of([a.to_json() for a in self.alerts])
