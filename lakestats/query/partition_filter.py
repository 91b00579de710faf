"""Which partitions a ``--where`` predicate can match: the pruning behind ``stats --where``.

``partitions_that_can_match(where, reader, unanalyzed=())`` parses ``where``
(``lakestats.query.predicates.parse``: any supported predicate over analyzed columns, partition
columns included when they were analyzed) and returns the positions of the partitions (in
``reader.version.partitions``) that ``predicates.can_match`` keeps: pruned by min/max, null
counts, complete frequencies and exact histogram bins. The scalars come from ONE read of
the partition index (the predicate's columns' row groups; ``index_source``) and prune every
partition at once (``predicates.matching_positions``); frequencies and histograms are read
only for the partitions the scalars do not settle, in one read per column of
the partition histograms when the version has them (else from their files).
"""

from __future__ import annotations

from collections.abc import Container

from lakestats.query import estimate_source, index_source, predicates
from lakestats.store.reader import StatisticsReader


def partitions_that_can_match(
    where: str, reader: StatisticsReader, unanalyzed: Container[str] = ()
) -> list[int]:
    """Positions of the partitions whose rows can satisfy ``where``."""
    pred = predicates.parse(where, estimate_source.column_types(reader), unanalyzed)
    parts = index_source.partitions_of(reader, predicates.columns_of(pred))
    return predicates.matching_positions(pred, parts)
