"""The same input, the same bytes: a reduction's table-level files are byte-identical
whichever runner reduces (one task or Spark stages), however many tasks the stages use,
in whichever order the partitions are listed, and whether group states come from the
cache or are folded anew, estimated percentiles and sketches included (their quantile
sketch is deterministic and merged in path and group order)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lakestats.compute.reduce import ReduceJob, reduce_table
from lakestats.compute.reduce import local as reduce_local
from lakestats.compute.reduce import spark as reduce_spark
from lakestats.stats.leaves import leaves_of
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry
from tests.compute.test_reduce_incremental import _files, _table

PARTITIONS = 40


def _entries(root: Path) -> list[PartitionEntry]:
    return [
        PartitionEntry(f"p={p}", f"p={p}", {"p": p}, _table(p).num_rows, 0, _files(root, p, "a"))
        for p in range(PARTITIONS)
    ]


def _reduce(spark, root: Path, entries: list[PartitionEntry], run: str,
            cache: dict[str, str] | None = None) -> tuple[dict[str, bytes], dict[str, str]]:
    columns = [{"name": leaf.name, "type": str(leaf.type)} for leaf in leaves_of(_table(0).schema)]
    job = ReduceJob(StatisticsStore(str(root)), entries, columns, 16, 30, [], cache or {}, 0)
    files, _, used = reduce_table(spark, job, run)
    return {kind: (root / relative).read_bytes() for kind, relative in files.items()}, used


def test_every_runner_and_order_writes_the_same_bytes(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "_lakestats"
    entries = _entries(root)
    one_task, cache = _reduce(spark, root, entries, "one")
    assert _reduce(spark, root, entries, "again")[0] == one_task
    # the statistics carry estimated percentiles (some partition's frequencies are partial)
    statistics = pq.read_table(root / "table" / "one" / "statistics.parquet")
    assert not all(statistics.column("percentiles_exact").to_pylist())
    assert any(statistics.column("kll_sketch").to_pylist())

    # incremental: every group's states from the cache
    assert _reduce(spark, root, entries, "cached", cache)[0] == one_task

    monkeypatch.setattr(reduce_local, "LOCAL_CELLS", 0)  # Spark stages
    for parallelism in (1, 2, 8):
        monkeypatch.setattr(reduce_spark, "default_parallelism", lambda _s, p=parallelism: p)
        assert _reduce(spark, root, entries, f"stages{parallelism}")[0] == one_task, parallelism

    # listed in another order: the same statistics (positions name the partitions elsewhere)
    shuffled = [dataclasses.replace(e) for e in reversed(entries)]
    got = _reduce(spark, root, shuffled, "reversed")[0]
    assert got["statistics"] == one_task["statistics"]
    assert got["histograms"] == one_task["histograms"]
