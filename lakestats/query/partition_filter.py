"""Which partitions a ``--where`` predicate can match: the pruning behind ``stats --where``.

``partitions_that_can_match(where, reader, unanalyzed=())`` parses ``where`` (any
supported predicate over analyzed columns, partition columns included when they were
analyzed) and returns the positions of the partitions (in ``reader.version.partitions``)
whose statistics do not rule it out: min/max, null counts, complete frequencies and exact
histogram bins (``estimate.matching_positions``). The scalars come from ONE read of the
partition index (the predicate's columns' row groups; ``index_source``) and prune every
partition at once; frequencies and histograms are read only for the partitions the
scalars do not settle, in one read per column of the partition histograms when the
version has them (else from their files).
"""

from __future__ import annotations

from collections.abc import Container

from lakestats.query import index_source, predicate, sources
from lakestats.query.estimate import matching_positions
from lakestats.store.reader import StatisticsReader


def partitions_that_can_match(
    where: str, reader: StatisticsReader, unanalyzed: Container[str] = ()
) -> list[int]:
    """Positions of the partitions whose rows can satisfy ``where``."""
    pred = predicate.parse(where, sources.column_types(reader), unanalyzed)
    parts = index_source.partitions_of(reader, predicate.columns_of(pred))
    return matching_positions(pred, parts)
