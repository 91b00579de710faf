"""The answers about a table as a whole: its versions (``history``), what an analyze, a
sample or an expire did, its summary and profile, and the service's list of tables."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from lakestats.answers.base import (
    Answer,
    Tabular,
    as_json,
    jsonable,
    omit_none,
    table_of,
)
from lakestats.answers.statistics import Staleness


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
    damaged: str | None = field(default=None, metadata=as_json(skip=True))
    derived: Mapping[str, object] | None = field(default=None, metadata=as_json(skip=True))

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
    partitions: tuple[str, ...] = field(metadata=as_json(encode=len))
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
    merged_record_count: int | None = field(
        default=None,
        metadata=as_json(omit=omit_none("merged_record_count")),
    )
    """The row count, for a counts-only (``NOSCAN``) version."""


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
class TableProfile(Tabular):
    """A table at a glance (``lakestats profile``, the top of its page): its size, how
    fresh and how exact its statistics are, and the alerts."""

    items_field = "alerts"

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


@dataclass(frozen=True)
class ServedTable(Answer):
    """A table the service serves (``GET /api/tables``, ``/api/tables/{table}``): its latest
    version's summary, or why it has none (``error``); its ``columns`` when asked for one."""

    name: str
    summary: TableSummary | None = field(
        default=None,
        metadata=as_json(flatten=True, omit=omit_none("summary")),
    )
    error: str | None = field(
        default=None,
        metadata=as_json(
            flatten=True,
            omit=omit_none("error"),
            encode=lambda message: {"version": None, "error": message},
        ),
    )
    columns: tuple[ColumnInfo, ...] | None = field(
        default=None,
        metadata=as_json(omit=omit_none("columns")),
    )
