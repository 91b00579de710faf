"""A reduction reads a partition file the same way whether it was read ahead or not."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lakestats.compute.reduce.fold import ReadAhead
from lakestats.compute.reduce.job import ReduceJob
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry


def test_read_ahead_file_reads_like_the_file(tmp_path: Path) -> None:
    table = pa.table({"a": [1, 2], "b": ["x", "y"]})
    pq.write_table(table, tmp_path / "histograms.parquet")
    entry = PartitionEntry("p=1", "p=1", {}, 2, 0, {"histograms": "histograms.parquet"})
    job = ReduceJob(StatisticsStore(str(tmp_path)), [entry], [], 1000, 10)
    plain = ReadAhead(job)
    ahead = ReadAhead(job)
    ahead.tables["histograms.parquet"] = table
    for columns in (None, ["b"], ["a", "missing"]):
        want = plain.read(entry, "histograms", columns)
        got = ahead.read(entry, "histograms", columns)
        assert got.column_names == want.column_names, columns
        assert got.to_pylist() == want.to_pylist()
