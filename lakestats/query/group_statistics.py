"""The shapes the column-group estimator works with, apart from it so that its helpers
(``group_unlisted``) can name them: one group's statistics as ``groups.parquet`` holds them,
what a conjunct allows of one column, and the rows of a group's list that match."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lakestats.query.predicate.sets import ColumnSet


@dataclass(frozen=True)
class GroupStatistics:
    """One group's table-level row of ``groups.parquet``."""

    columns: tuple[str, ...]
    row_count: int
    distinct_count: int
    distinct_lower: int
    distinct_upper: int
    distinct_exact: bool
    truncated: bool
    unlisted_rows: int
    unlisted_max: int
    values: tuple[tuple[bytes | None, ...], ...]
    counts: tuple[int, ...]
    counts_upper: tuple[int, ...]
    # functional-dependency degrees: (determinant columns in group order, dependent) -> f
    degrees: Mapping[tuple[tuple[str, ...], str], float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return ",".join(self.columns)


@dataclass(frozen=True)
class GroupCount:
    """Rows of a group's listed statistics that satisfy the constrained columns."""

    rows: int  # listed rows matching
    upper: int  # and what the unlisted combinations can add
    exact: bool


@dataclass(frozen=True)
class Wanted:
    """What a conjunct allows of one column: its key set (Kleene TRUE) and, for an
    equality or IN list, its keys (the combinations it can name are then countable)."""

    allowed: ColumnSet
    points: frozenset[bytes] | None

    def accepts(self, key: bytes | None) -> bool:
        if key is None:
            return self.allowed.null == "T"
        if self.points is not None:
            return key in self.points
        return any(r.contains(key) for r in self.allowed.true)
