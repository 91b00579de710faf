"""What one reduction reduces: the description every task of it receives.

Contract: a ``ReduceJob`` names the statistics root, the version's partitions (with their
files) and columns, the histogram bins, the frequency limit, the user-defined statistics
the previous version's group cache entries, whether the version is kept (``kept``) and
where its partitions' frequency and histogram rows are (``rows``: this run's hand-off
files, or the previous version's parts for partitions it reuses). It is pickled to Spark
tasks and holds no task state: what a task reads ahead lives in its own ``ReadAhead``
(``fold.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from lakestats.stats.type_codec import parse_type
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry, Version
from lakestats.store.partition_rows import PartitionRows


@dataclass
class ReduceJob:
    store: StatisticsStore
    partitions: list[PartitionEntry]
    columns: list[dict[str, str]]
    bins: int
    max_frequencies: int
    statistics: list = field(default_factory=list)  # user-defined SummaryStatistic
    cache: dict[str, str] = field(default_factory=dict)  # group cache key -> relative path
    cache_from_partitions: int = 64  # AnalyzeOptions.reduce_cache_from
    earlier: Version | None = None  # the version reused partitions come from
    kept: bool = True
    """False for a version nothing builds on or looks up by partition (``analyze
    --from-sample``'s analysis of the sample, only scaled): no group cache, partition
    index or partition histogram parts are written for it."""

    def __post_init__(self) -> None:
        self.rows = PartitionRows(self.store, self.earlier)

    def read_file(self, relative: str, columns: list[str] | None = None) -> pa.Table:
        """One Parquet file under the root (``relative`` to it), whole or some columns."""
        filesystem, path = self.store.resolve(self.store.path(relative))
        with filesystem.open_input_file(path) as handle:
            return pq.ParquetFile(handle, pre_buffer=True).read(columns=columns, use_threads=False)

    def read_rows(
        self, entry: PartitionEntry, kind: str, columns: list[str] | None = None
    ) -> pa.Table:
        """A partition's ``frequencies`` or ``histograms`` rows (``store/partition_rows``)."""
        return self.rows.read(entry, kind, columns)

    def dtype(self, index: int) -> pa.DataType:
        return parse_type(self.columns[index]["type"])
