"""A staged reduction's first pass combines a changed group's frequency rows from the files
it holds; the frequencies stage then prunes them: the same rows as folding the files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from lakestats.compute.reduce.cache import GroupCache
from lakestats.compute.reduce.fold import ReadAhead
from lakestats.compute.reduce.frequency_rows import fold_frequency_rows
from lakestats.compute.reduce.job import ReduceJob
from lakestats.stats import holders
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.leaves import leaf_array, leaves_of
from lakestats.store import layout, writer
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry


def _partitions(root: Path, count: int) -> tuple[list[PartitionEntry], list[dict[str, str]]]:
    entries, columns = [], []
    for p in range(count):
        rng = np.random.default_rng(p)
        n = 300 + 50 * p
        table = pa.table(
            {
                "small": rng.integers(0, 40, n),  # listed whole
                "wide": rng.integers(0, 10**6, n) if p % 2 else rng.integers(0, 20, n),
                "word": pa.array(rng.integers(0, 12, n).astype(str)),  # holders
                "name": pa.array([f"n{v}" for v in rng.integers(0, 400, n)]),
            }
        )
        files = layout.partition_files(f"p={p}", "t")
        results = []
        for leaf in leaves_of(table.schema):
            accumulator = ColumnAccumulator(leaf)
            accumulator.observe(leaf_array(table, leaf))
            results.append(accumulator.finalize(100, 60))  # 60 values at most: truncated
        uris = {k: layout.absolute(str(root), v) for k, v in files.items()}
        writer.write_partition(results, [], n, uris, StatisticsStore(str(root)))
        entries.append(PartitionEntry(f"p={p}", f"p={p}", {"p": p}, n, 0, files))
        columns = [{"name": leaf.name, "type": str(leaf.type)} for leaf in leaves_of(table.schema)]
    return entries, columns


def _sorted(table: pa.Table) -> list[tuple]:
    return sorted(
        (r["column_index"], r["value"] is None, r["value"] or b"", r["count"], r["bound"],
         sorted(r["holder_list"] or []))
        for r in table.to_pylist()
    )


def test_first_pass_combined_rows_give_the_folded_rows(tmp_path: Path) -> None:
    entries, columns = _partitions(tmp_path, 7)
    job = ReduceJob(StatisticsStore(str(tmp_path)), entries, columns, 100, 20,
                    cache_from_partitions=0)  # cached however few the partitions
    members = list(range(len(entries)))
    for incomplete in ([False, True, False, True], [False, False, False, False],
                       [True, True, True, True]):
        flags = np.array(incomplete)
        groups = GroupCache(job, "table/run/groups", ReadAhead(job))
        with groups.holding(members, groups.first_pass_kinds(members)):
            groups.ensure_combined_rows(members)  # the first pass
        entry = tmp_path / "table/run/groups" / groups._combined_key(members)
        assert entry.exists()
        got = groups.frequency_rows(members, flags)
        assert not entry.exists()
        want = holders.to_version(fold_frequency_rows(job, ReadAhead(job), members, flags),
                                  members)
        assert _sorted(got) == _sorted(want)
        assert any(r["holder_list"] for r in got.to_pylist()) == (not flags[2])
        # the entry is read once and removed; without it the rows come from the files
        again = GroupCache(job, "table/run/groups", ReadAhead(job))
        assert _sorted(again.frequency_rows(members, flags)) == _sorted(want)


def test_frequency_rows_are_cached_where_pruning_paid(tmp_path: Path) -> None:
    """A group whose columns are all complete keeps every row: its entry would repeat its
    partition files, so none is written (the next reduction reads the files); pruned rows
    are written, and read back as they were."""
    entries, columns = _partitions(tmp_path, 7)
    job = ReduceJob(StatisticsStore(str(tmp_path)), entries, columns, 100, 20,
                    cache_from_partitions=0)
    members = list(range(len(entries)))
    for incomplete, cached in (([False] * 4, False), ([True] * 4, True)):
        flags = np.array(incomplete)
        groups = GroupCache(job, "table/run/groups", ReadAhead(job))
        want = _sorted(groups.frequency_rows(members, flags))
        key = groups._frequencies_key(members, flags)
        assert (tmp_path / "table/run/groups" / key).exists() == cached
        assert (key in groups.flush()) == cached
        if cached:
            job.cache = {key: f"table/run/groups/{key}"}
            assert _sorted(GroupCache(job, "table/next/groups", ReadAhead(job))
                           .frequency_rows(members, flags)) == want
