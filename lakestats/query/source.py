"""What the estimator reads: one partition's statistics (``PartitionStatistics``) and all
the partitions of a version as columns (``PartitionSource``). The estimator asks only for
what is declared here; ``query.sources`` (statistics files, a plain list) and
``query.index_source`` (the partition index) implement it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from lakestats.stats.column_summary import ColumnSummary
from lakestats.stats.selectivity_vector import Vectors


class PartitionStatistics(Protocol):
    """What an estimate needs of one partition (the table level is one such partition)."""

    name: str
    values: dict[str, object]
    row_count: int

    def summary(self, column: str) -> ColumnSummary: ...


class PartitionSource(Protocol):
    """Every partition of a statistics version, by position.

    ``cache`` is where the estimator keeps what it derived from this source (per-term
    numbers, the listed values laid out per column): a source that lives as long as its
    version (a resident estimator's) lets later predicates reuse them."""

    cache: dict[str, object]

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> PartitionStatistics: ...

    def row_counts(self) -> np.ndarray:
        """Rows per partition (int64)."""
        ...

    def head(self, i: int) -> tuple[dict[str, object], str, int]:
        """Partition ``i``'s values, name and row count (a matching partition's first
        fields)."""
        ...

    def vectors(self, column: str) -> Vectors | None:
        """The column's scalars per partition, or None (every partition is then read
        one by one)."""
        ...

    def point_counts(self, column: str, keys: Sequence[bytes]) -> np.ndarray | None:
        """Per partition, the rows holding one of ``keys`` where complete frequencies
        count them (-1 elsewhere); None when no such counts are recorded."""
        ...

    def expect(self, columns: Sequence[str], positions: np.ndarray) -> None:
        """Only the partitions at ``positions`` will be read in full (one read per
        column where the source can)."""
        ...

    def visited_mask(self, columns: Sequence[str], positions: np.ndarray) -> np.ndarray:
        """Per position, whether the statistics of ``columns`` are in memory."""
        ...

    def mark_visited(self, columns: Sequence[str], positions: np.ndarray) -> None: ...

    def held(self, column: str) -> object | None:
        """The column's frequencies and histograms held for every partition (their listed
        values can be laid out without reading each partition), or None."""
        ...


__all__ = ["PartitionSource", "PartitionStatistics"]
