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

Every answer derives its JSON from its fields (``Answer.to_json``): a field's metadata
(``json_field``) renames, encodes, groups or omits it, so a JSON shape is read off the
class and no answer writes its own. Over 400 lines because it is the whole answer
vocabulary of the facade: one place to read every JSON shape the faces print.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, ClassVar

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
    if isinstance(value, Answer):
        return value.to_json()
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


Encode = Callable[[Any], object]
Omit = Callable[[Any], bool]


def json_field(
    *,
    name: str | None = None,
    encode: Encode | None = None,
    omit: Omit | None = None,
    group: str | None = None,
    flatten: bool = False,
    skip: bool = False,
    **kwargs: Any,  # noqa: ANN401 - dataclasses.field's own arguments (default, ...)
) -> Any:  # noqa: ANN401 - what dataclasses.field returns stands for the field's value
    """A dataclass field with how it reads in JSON: ``name`` (else the field's), ``encode``
    (else ``jsonable``), ``omit`` (given the answer: leave the key out), ``group`` (nested
    under that key), ``flatten`` (its encoded mapping's keys merged in) or ``skip``."""
    meta = {"name": name, "encode": encode, "omit": omit, "group": group,
            "flatten": flatten, "skip": skip}
    return field(metadata={"json": meta}, **kwargs)


def _none(attribute: str) -> Omit:
    return lambda answer: getattr(answer, attribute) is None


_Plan = tuple[tuple[str, str, Encode, Omit | None, str | None, bool], ...]


class Answer:
    """One ``to_json()`` for every answer, read off its fields in order (or
    ``json_order``); the plan of each class is built once, since a histogram's bins or
    an estimate's holders call it thousands of times."""

    json_order: ClassVar[tuple[str, ...] | None] = None
    _plans: ClassVar[dict[type, _Plan]] = {}

    @classmethod
    def _plan(cls) -> _Plan:
        plan = Answer._plans.get(cls)
        if plan is None:
            by_name = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
            order = cls.json_order or tuple(by_name)
            steps = []
            for attribute in order:
                meta = by_name[attribute].metadata.get("json", {})
                if meta.get("skip"):
                    continue
                steps.append((attribute, meta.get("name") or attribute,
                              meta.get("encode") or jsonable, meta.get("omit"),
                              meta.get("group"), bool(meta.get("flatten"))))
            plan = Answer._plans[cls] = tuple(steps)
        return plan

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for attribute, key, encode, omit, group, flatten in self._plan():
            if omit is not None and omit(self):
                continue
            value = encode(getattr(self, attribute))
            into = out if group is None else out.setdefault(group, {})
            if flatten:
                into.update(value)  # type: ignore[union-attr, call-overload]
            else:
                into[key] = value  # type: ignore[index]
        return out


@dataclass(frozen=True)
class Staleness(Answer):
    """How far a statistics version lags behind a snapshot of the table."""

    snapshot_id: int | None
    statistics_snapshot_id: int | None
    stale: bool
    snapshots_behind: int
    partitions_changed: int
    columns_not_inherited: tuple[str, ...]



@dataclass(frozen=True)
class TableStatistics(Answer):
    """Table-level statistics for a snapshot (``show``), with how stale they are.
    ``row_count`` is the statistics' own (of ``staleness.statistics_snapshot_id``)."""

    json_order = ("staleness", "version", "kind", "sample", "damaged_versions_skipped",
                  "row_count", "columns")

    staleness: Staleness = json_field(flatten=True)
    version: int
    row_count: int | None
    columns: tuple[Row, ...] = json_field(encode=_rows)
    kind: str | None = json_field(default=None, omit=_none("kind"))
    sample: Mapping[str, object] | None = json_field(default=None, omit=_none("kind"))
    damaged_versions_skipped: tuple[int, ...] = json_field(
        default=(), omit=lambda answer: not answer.damaged_versions_skipped
    )

    @property
    def stale(self) -> bool:
        return self.staleness.stale


    def to_arrow(self) -> pa.Table:
        return table_of(_rows(self.columns))


@dataclass(frozen=True)
class StatisticsRows(Sequence[Row], Answer):
    """Decoded statistics rows of one partition (``partition`` its name) or of the table
    (``partition`` None) in statistics version ``version``: a read-only sequence of rows,
    one per column, so ``[row] = table.statistics(None, ["x"])`` reads as before."""

    partition: str | None
    version: int
    columns: tuple[Row, ...] = json_field(encode=_rows)

    def __getitem__(self, index):  # noqa: ANN001, ANN204 - Sequence's int/slice overloads
        return self.columns[index]

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.columns)


    def to_arrow(self) -> pa.Table:
        return table_of(_rows(self.columns))


@dataclass(frozen=True)
class PartitionStatistics(Answer):
    """One partition's statistics (``show --partition``)."""

    partition: Mapping[str, object]
    name: str
    row_count: int
    version: int
    columns: tuple[Row, ...] = json_field(encode=_rows)


    def to_arrow(self) -> pa.Table:
        return table_of(_rows(self.columns))


@dataclass(frozen=True)
class Partition(Answer):
    partition: Mapping[str, object]
    name: str
    path: str
    row_count: int
    files: Mapping[str, str] = json_field(default_factory=dict, skip=True)
    """The partition's statistics files by kind, relative to the statistics root."""



@dataclass(frozen=True)
class Partitions(Answer):
    """The partitions a statistics version describes."""

    version: int
    partitions: tuple[Partition, ...]

    def __iter__(self) -> Iterator[Partition]:
        return iter(self.partitions)

    def __len__(self) -> int:
        return len(self.partitions)


    def to_arrow(self) -> pa.Table:
        return table_of([p.to_json() for p in self.partitions])


def _pairs(pairs: Sequence[tuple[object, int]]) -> list[dict[str, object]]:
    return [{"value": jsonable(v), "frequency": f} for v, f in pairs]


@dataclass(frozen=True)
class Frequencies(Answer):
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
    pairs: tuple[tuple[object, int], ...] = json_field(name="frequencies", encode=_pairs)

    def __iter__(self) -> Iterator[tuple[object, int]]:
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> tuple[object, int]:
        return self.pairs[i]


    def to_arrow(self) -> pa.Table:
        return table_of([{"value": jsonable(v), "frequency": f} for v, f in self.pairs])


@dataclass(frozen=True)
class Bin(Answer):
    """One histogram bin: ``[lower, upper)`` (the histogram's last: ``[lower, max]``)."""

    lower: object
    upper: object
    count: int



@dataclass(frozen=True)
class Histogram(Answer):
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


    def to_arrow(self) -> pa.Table:
        return table_of([b.to_json() for b in self.bins])


@dataclass(frozen=True)
class Rank(Answer):
    """Exact table-level rank of ``value`` among the column's non-null values: rows
    below, equal and above it, and its percentile (share below or equal; None when the
    column has no values)."""

    column: str = json_field(skip=True)
    value: object = json_field(skip=True)
    below: int
    equal: int
    above: int
    total: int
    percentile: float | None



@dataclass(frozen=True)
class Quantile(Answer):
    """Exact table-level quantile ``p`` (nearest rank)."""

    column: str = json_field(skip=True)
    p: float
    value: object



def _read_only(rows: Sequence[Mapping[str, object]]) -> tuple[Row, ...]:
    """``rows`` made read-only (``frozen_row``); rows that already are are kept as they
    are, checked at C speed (an estimate lists up to every partition)."""
    if set(map(type, rows)) <= {MappingProxyType}:
        return tuple(rows)
    return tuple(p if type(p) is MappingProxyType else frozen_row(p) for p in rows)


@dataclass(frozen=True)
class Estimate(Answer):
    """Rows a predicate keeps: the estimate, sound ``lower``/``upper`` bounds, whether it
    is ``exact``, per partition that can match and per top-level conjunct (``detail``)."""

    json_order = ("predicate", "row_count", "lower", "upper", "exact", "selectivity",
                  "table_rows", "partitions", "detail", "derived_version", "version",
                  "snapshot_id")

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
    derived_version: int | None = json_field(
        default=None,
        omit=_none("derived_version"),
        flatten=True,
        encode=lambda version: {"derived": True, "derived_version": version},
    )
    """Set when the count comes from statistics computed for this predicate
    (``analyze --where``)."""

    @classmethod
    def of(cls, result: Mapping[str, object], version: int, snapshot_id: int | None) -> Estimate:
        return cls(
            predicate=str(result["predicate"]),
            row_count=float(result["row_count"]),
            lower=int(result["lower"]),
            upper=int(result["upper"]),
            exact=bool(result["exact"]),
            selectivity=float(result["selectivity"]),
            table_rows=int(result["table_rows"]),
            version=version,
            snapshot_id=snapshot_id,
            partitions=_read_only(result["partitions"]),
            detail=tuple(frozen_row(d) for d in result["detail"]),
            derived_version=result.get("derived_version"),
        )


    def to_arrow(self) -> pa.Table:
        return table_of([jsonable(p) for p in self.partitions])


@dataclass(frozen=True)
class EstimateBatch(Answer):
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


    def to_arrow(self) -> pa.Table:
        """One row per predicate: its estimate and bounds."""
        return table_of(
            [
                {k: v for k, v in e.to_json().items() if k not in ("partitions", "detail")}
                for e in self.estimates
            ]
        )


@dataclass(frozen=True)
class PartitionColumns(Answer):
    partition: Mapping[str, object]
    name: str
    row_count: int
    columns: tuple[Row, ...]



@dataclass(frozen=True)
class BatchStatistics(Answer):
    """Some columns' statistics for the table and every partition ``where`` can match
    (``stats``), or those of ``analyze --where``'s derived entry (``derived``)."""

    row_count: int | None = json_field(group="table")
    version: int = json_field(group="table")
    snapshot_id: int | None = json_field(group="table")
    partitions_total: int = json_field(group="table", name="partitions")
    partitions_matched: int = json_field(group="table")
    columns: tuple[Row, ...] = json_field(group="table", encode=_rows)
    partitions: tuple[PartitionColumns, ...] | None = json_field(omit=_none("partitions"))
    derived_predicate: str | None = json_field(
        default=None,
        omit=_none("derived_predicate"),
        flatten=True,
        encode=lambda predicate: {"derived": True, "predicate": predicate},
    )

    @classmethod
    def of(
        cls, result: Mapping[str, Any], derived_predicate: str | None = None
    ) -> BatchStatistics:
        """The answer of ``lakestats.query.column_stats``' result."""
        table = result["table"]
        parts = result.get("partitions")
        return cls(
            row_count=table["row_count"],
            version=table["version"],
            snapshot_id=table["snapshot_id"],
            partitions_total=table["partitions"],
            partitions_matched=table["partitions_matched"],
            columns=tuple(frozen_row(c) for c in table["columns"]),
            partitions=None
            if parts is None
            else tuple(
                PartitionColumns(
                    partition=p["partition"],
                    name=p["name"],
                    row_count=p["row_count"],
                    columns=tuple(frozen_row(c) for c in p["columns"]),
                )
                for p in parts
            ),
            derived_predicate=derived_predicate,
        )


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
class VersionInfo(Answer):
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
    damaged: str | None = json_field(default=None, skip=True)
    derived: Mapping[str, object] | None = json_field(default=None, skip=True)

    def to_json(self) -> dict[str, object]:
        """A damaged version says only why; a derived entry is its own record."""
        if self.damaged is not None:
            return {"version": self.version, "damaged": self.damaged}
        if self.derived is not None:
            return {str(k): jsonable(v) for k, v in self.derived.items()}
        return super().to_json()



@dataclass(frozen=True)
class Versions:
    """Statistics versions oldest first, then derived entries (``history``)."""

    versions: tuple[VersionInfo, ...]

    def __iter__(self) -> Iterator[VersionInfo]:
        return iter(self.versions)

    def __len__(self) -> int:
        return len(self.versions)

    def to_json(self) -> list[dict[str, object]]:
        """A list, not an object: one record per version."""
        return [v.to_json() for v in self.versions]


    def to_arrow(self) -> pa.Table:
        return table_of(self.to_json())


@dataclass(frozen=True)
class ExpireReport(Answer):
    """What ``expire`` removed (or, ``dry_run``, would remove)."""

    dry_run: bool
    versions_removed: tuple[int, ...]
    versions_kept: tuple[int, ...]
    files_removed: int
    derived_removed: tuple[Mapping[str, object], ...]



@dataclass(frozen=True)
class ColumnInfo(Answer):
    name: str
    type: str



@dataclass(frozen=True)
class TableSummary(Answer):
    """The latest statistics version of a table at a glance: what the service lists."""

    json_order = ("version", "kind", "snapshot_id", "row_count", "size_in_bytes", "partitions",
                  "table_level", "created_at")

    version: int
    snapshot_id: int | None
    row_count: int | None
    partitions: tuple[str, ...] = json_field(encode=len)
    """The partitions' names, in the version's order (JSON: how many)."""
    table_level: bool
    created_at: str | None
    columns: tuple[ColumnInfo, ...]
    kind: str = "full"
    """``full`` (column statistics), ``noscan`` (counts from metadata), ``sampled``."""
    size_in_bytes: int | None = None
    """Bytes of the data files the rows live in."""



@dataclass(frozen=True)
class AnalyzeResult(Answer):
    """What an analyze published: a new statistics version, or nothing (``unchanged``:
    the latest version already describes the snapshot, and ``version`` is that one)."""

    json_order = ("version", "snapshot_id", "partitions_computed", "partitions_reused",
                  "partitions_repaired", "row_count", "bytes_written", "stats_root", "unchanged")

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



@dataclass(frozen=True)
class SampleResult(Answer):
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



@dataclass(frozen=True)
class SqlResult(Answer):
    """``ANALYZE TABLE …`` run by ``lakestats sql``: the version it published."""

    kind: str
    version: int
    snapshot_id: int | None
    message: str
    merged_record_count: int | None = json_field(
        default=None, omit=_none("merged_record_count")
    )
    """The row count, for a counts-only (``NOSCAN``) version."""



@dataclass(frozen=True)
class Holder(Answer):
    """A partition holding a value, and how many times."""

    partition: Mapping[str, object]
    name: str
    path: str
    frequency: int



@dataclass(frozen=True)
class PartitionsContaining(Answer):
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


    def to_arrow(self) -> pa.Table:
        return table_of([h.to_json() for h in self.partitions])


@dataclass(frozen=True)
class Alert(Answer):
    """Something a profiler would flag, found in the statistics alone (``lakestats.alerts``
    says when each kind fires). ``column`` is None for the table (``stale``)."""

    kind: str
    column: str | None
    message: str
    value: float | None = None
    """The share or count that fired it, where there is one."""



@dataclass(frozen=True)
class TableProfile(Answer):
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


    def to_arrow(self) -> pa.Table:
        return table_of([a.to_json() for a in self.alerts])


@dataclass(frozen=True)
class ServedTable(Answer):
    """A table the service serves (``GET /api/tables``, ``/api/tables/{table}``): its latest
    version's summary, or why it has none (``error``); its ``columns`` when asked for one."""

    name: str
    summary: TableSummary | None = json_field(
        default=None, flatten=True, omit=_none("summary")
    )
    error: str | None = json_field(
        default=None,
        flatten=True,
        omit=_none("error"),
        encode=lambda message: {"version": None, "error": message},
    )
    columns: tuple[ColumnInfo, ...] | None = json_field(default=None, omit=_none("columns"))


@dataclass(frozen=True)
class DerivedStatistics(Answer):
    """``analyze --where``'s derived entry as the service answers it: the statistics of the
    rows the predicate keeps, and the statistics version they belong to."""

    statistics: BatchStatistics = json_field(flatten=True)
    version: int
