"""Column groups of ``analyze --from-sample``: a sample partition's ``groups.parquet``
scaled to the population it was drawn from, as its other statistics are
(``sample.scale``): counts × N/n with the binomial interval's upper bound, the distinct
combinations by ``select_estimator`` on the sample's frequency of frequencies (where the
sample listed all of its combinations; else its own count, a lower bound), dependency
degrees as the sample's. A scaled list is never complete: a combination the sample did
not see may still hold up to the interval's upper bound of a count of zero."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pyarrow as pa

from lakestats.compute.sample.scale import (
    PARTITION_REPLICATES,
    frequency_interval,
    frequency_intervals,
)
from lakestats.stats.group_rows import GroupRow
from lakestats.stats.ndv import select_estimator
from lakestats.store import group_files
from lakestats.store.handle import StatisticsStore


def scale_group(row: GroupRow, N: int, n: int) -> GroupRow:
    """One row of ``groups.parquet`` computed on ``n`` sampled rows of ``N``."""
    if n <= 0 or n == N:
        return row
    r = N / n
    sampled = row.listed.column("count").to_numpy(zero_copy_only=False)
    counts = [round(c * r) for c in sampled.tolist()]
    uppers = [max(s, math.ceil(u))
              for u, s in zip(frequency_intervals(sampled, n, N)[2].tolist(), counts, strict=True)]
    unseen = math.ceil(frequency_interval(0, n, N)[2])
    seen = row.distinct_count
    if not row.truncated and len(sampled):
        profile = np.bincount(sampled.astype(np.int64))[1:]
        _, estimate, (lower, upper) = select_estimator(profile, n, N,
                                                       replicates=PARTITION_REPLICATES)
        distinct = (max(seen, round(estimate)), max(seen, math.floor(lower)),
                    max(seen, math.ceil(upper)))
    else:
        distinct = (seen, seen, max(seen, min(N, seen + N - n)))
    listed = row.listed.set_column(row.listed.schema.get_field_index("count"), "count",
                                   pa.array(counts, pa.int64()))
    listed = listed.set_column(listed.schema.get_field_index("upper"), "upper",
                               pa.array(uppers, pa.int64()))
    return dataclasses.replace(
        row,
        row_count=N,
        distinct_count=distinct[0],
        distinct_lower=distinct[1],
        distinct_upper=distinct[2],
        distinct_exact=False,
        truncated=True,
        unlisted_rows=max(0, N - sum(counts)),
        unlisted_max=max(unseen, math.ceil(row.unlisted_max * r)),
        listed=listed,
        dependencies=tuple(dataclasses.replace(d, supporting_rows=round(d.supporting_rows * r))
                           for d in row.dependencies),
    )


def scale_groups(
    source_root: StatisticsStore, target_root: StatisticsStore, source: str, target: str,
    N: int, n: int,
) -> int:
    """The scaled copy of one partition's ``groups.parquet``; bytes written."""
    scaled = [scale_group(row, N, n) for row in group_files.read_groups(source_root, source)]
    return group_files.write_groups(scaled, target_root.path(target), target_root)
