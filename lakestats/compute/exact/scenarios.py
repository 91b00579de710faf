"""Which exact scenario each column takes, from partition summaries only (no data read).

* ``EXACT``: every partition listed all of its values: the reduction is already exact.
* ``DISJOINT`` (#0): every partition is all-distinct and no two partitions' ``[min, max]``
  overlap (a sort and sweep over the P intervals), so no value repeats: the table's
  distinct count is the sum of the partitions' non-null counts.
* ``AGGREGATE`` (#2): the sum of partition distinct counts is at most ``threshold``: every
  (value, count) is aggregated exactly.
* ``BATCHED`` (#3): beyond ``threshold``: the same aggregation in batches by value range.

Every scenario but ``EXACT`` lists only the values counted more than once in the table
frequencies (``duplicates_only``): the ranks hold every value's count, and a value left out
occurs once. (Scenario #1, ``near_unique``, once told those columns apart; it is gone since
every column lists only its repeated values.)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from lakestats import config


class Scenario(StrEnum):
    EXACT = "exact"
    DISJOINT = "disjoint"
    AGGREGATE = "aggregate"
    BATCHED = "batched"


@dataclass(frozen=True)
class ExactSettings:
    """Thresholds of the scenario choice (environment: ``LAKESTATS_EXACT_*``)."""

    threshold: int = 2**32 - 1  # sum of partition distinct counts for #2
    batch_values: int = 2**32 - 1  # distinct values per batch in #3
    range_rows: int = 2_000_000  # staged value rows merged by one range task (memory bound)

    @classmethod
    def from_environment(cls) -> ExactSettings:
        """These defaults, overridden by the ``exact_*`` settings (``lakestats.config``)."""
        chosen = config.settings()
        given = {
            "threshold": chosen.exact_threshold,
            "batch_values": chosen.exact_batch_values,
            "range_rows": chosen.exact_range_rows,
        }
        return cls(**{k: v for k, v in given.items() if v is not None})  # type: ignore[arg-type]

    def batches(self, distinct_sum: int) -> int:
        """``b`` of scenario #3: batches needed so each holds at most ``batch_values``."""
        return max(1, -(-distinct_sum // max(1, self.batch_values)))


@dataclass(frozen=True)
class PartitionSummary:
    """One partition's summary of one column (a ``partition_index.parquet`` row)."""

    non_null: int
    distinct: int
    all_distinct: bool
    listed_all: bool  # its frequencies file lists every value
    min_key: bytes | None
    max_key: bytes | None


def intervals_disjoint(intervals: list[tuple[bytes, bytes]]) -> bool:
    """Whether no two closed ``[min, max]`` key intervals share a point (sort and sweep)."""
    ordered = sorted(intervals)
    return all(ordered[i][1] < ordered[i + 1][0] for i in range(len(ordered) - 1))


def choose(parts: list[PartitionSummary], settings: ExactSettings) -> Scenario:
    present = [p for p in parts if p.non_null > 0]
    if all(p.listed_all for p in present):
        return Scenario.EXACT
    if all(p.all_distinct for p in present) and intervals_disjoint(
        [(p.min_key, p.max_key) for p in present if p.min_key is not None]
    ):
        return Scenario.DISJOINT
    if sum(p.distinct for p in present) <= settings.threshold:
        return Scenario.AGGREGATE
    return Scenario.BATCHED
