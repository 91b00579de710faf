"""The lookups' answers: a version's statistics rows, partitions, frequencies, histograms,
exact ranks and quantiles, and how stale the statistics are."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lakestats.answers.base import (
    Answer,
    Listing,
    Row,
    Tabular,
    as_json,
    jsonable,
    omit_none,
    rows_json,
)


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
class TableStatistics(Tabular):
    """Table-level statistics for a snapshot (``show``), with how stale they are.
    ``row_count`` is the statistics' own (of ``staleness.statistics_snapshot_id``)."""

    items_field = "columns"

    json_order = ("staleness", "version", "kind", "sample", "damaged_versions_skipped",
                  "row_count", "columns")

    staleness: Staleness = field(metadata=as_json(flatten=True))
    version: int
    row_count: int | None
    columns: tuple[Row, ...] = field(metadata=as_json(encode=rows_json))
    kind: str | None = field(default=None, metadata=as_json(omit=omit_none("kind")))
    sample: Mapping[str, object] | None = field(
        default=None,
        metadata=as_json(omit=omit_none("kind")),
    )
    damaged_versions_skipped: tuple[int, ...] = field(
        default=(),
        metadata=as_json(omit=lambda answer: not answer.damaged_versions_skipped),
    )

    @property
    def stale(self) -> bool:
        return self.staleness.stale


@dataclass(frozen=True)
class StatisticsRows(Listing[Row], Sequence[Row]):
    """Decoded statistics rows of one partition (``partition`` its name) or of the table
    (``partition`` None) in statistics version ``version``: a read-only sequence of rows,
    one per column, so ``[row] = table.statistics(None, ["x"])`` reads as before."""

    items_field = "columns"

    partition: str | None
    version: int
    columns: tuple[Row, ...] = field(metadata=as_json(encode=rows_json))


@dataclass(frozen=True)
class PartitionStatistics(Tabular):
    """One partition's statistics (``show --partition``)."""

    items_field = "columns"

    partition: Mapping[str, object]
    name: str
    row_count: int
    version: int
    columns: tuple[Row, ...] = field(metadata=as_json(encode=rows_json))


@dataclass(frozen=True)
class Partition(Answer):
    partition: Mapping[str, object]
    name: str
    path: str
    row_count: int
    files: Mapping[str, str] = field(default_factory=dict, metadata=as_json(skip=True))
    """The partition's statistics files by kind, relative to the statistics root."""


@dataclass(frozen=True)
class Partitions(Listing[Partition]):
    """The partitions a statistics version describes."""

    items_field = "partitions"

    version: int
    partitions: tuple[Partition, ...]


def _pairs(pairs: Sequence[tuple[object, int]]) -> list[dict[str, object]]:
    return [{"value": jsonable(v), "frequency": f} for v, f in pairs]


@dataclass(frozen=True)
class Frequencies(Listing[tuple[object, int]]):
    """A column's most frequent values with their counts, and whether the list is whole:
    ``truncated`` (a top-k), ``duplicates_only`` (values seen once are left out,
    ``omitted`` of them), ``exact`` (False: counts are estimates, e.g. merged from
    truncated partition lists or scaled from a sample)."""

    items_field = "pairs"

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
    pairs: tuple[tuple[object, int], ...] = field(
        metadata=as_json(name="frequencies", encode=_pairs),
    )


@dataclass(frozen=True)
class Bin(Answer):
    """One histogram bin: ``[lower, upper)`` (the histogram's last: ``[lower, max]``)."""

    lower: object
    upper: object
    count: int


@dataclass(frozen=True)
class Histogram(Listing[Bin]):
    """Bins ``[start, stop)`` of a column's equi-width histogram of ``histogram_bins``;
    the histogram's last bin is closed (``[lower, max]``). ``exact`` False: re-binned or
    scaled counts."""

    items_field = "bins"

    column: str
    partition: str | None
    version: int
    histogram_bins: int
    start: int
    stop: int
    exact: bool
    bins: tuple[Bin, ...]

    def rows(self) -> list[dict[str, object]]:
        """The bins as records of decoded values (``lower``, ``upper``, ``count``)."""
        return [{"lower": b.lower, "upper": b.upper, "count": b.count} for b in self.bins]

    @property
    def counts(self) -> list[int]:
        return [b.count for b in self.bins]

    @property
    def ends_with_last_bin(self) -> bool:
        return bool(self.bins) and self.stop >= self.histogram_bins


@dataclass(frozen=True)
class Rank(Answer):
    """Exact table-level rank of ``value`` among the column's non-null values: rows
    below, equal and above it, and its percentile (share below or equal; None when the
    column has no values)."""

    column: str = field(metadata=as_json(skip=True))
    value: object = field(metadata=as_json(skip=True))
    below: int
    equal: int
    above: int
    total: int
    percentile: float | None


@dataclass(frozen=True)
class Quantile(Answer):
    """Exact table-level quantile ``p`` (nearest rank)."""

    column: str = field(metadata=as_json(skip=True))
    p: float
    value: object


@dataclass(frozen=True)
class Holder(Answer):
    """A partition holding a value, and how many times."""

    partition: Mapping[str, object]
    name: str
    path: str
    frequency: int


@dataclass(frozen=True)
class PartitionsContaining(Listing[Holder]):
    """The partitions whose rows hold ``value`` in ``column`` (from stored frequencies)."""

    items_field = "partitions"

    column: str
    value: str
    """The value as it was asked, as text."""
    version: int
    partitions: tuple[Holder, ...]
