"""An incremental reduction with one changed partition.

It rewrites the partition histograms of the changed group only: every other group's part
file is listed by its previous path and keeps its bytes and modification time; and its
table-level answers (statistics, frequencies, histograms, partition index, partition
histogram rows) equal those of a full reduction of the same partitions without a cache,
but for the merged KLL sketches and the percentiles read from them (KLL compactions are
randomized: two full reductions differ there too). Run by both runners: in one task and
as Spark stages.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats.compute.reduce import ReduceJob, reduce_table
from lakestats.compute.reduce import local as reduce_local
from lakestats.compute.reduce.cache import PARTS_PREFIX
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.leaves import leaf_array, leaves_of
from lakestats.store import layout, writer
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry

PARTITIONS = 40  # eight groups
RANDOMIZED: set[str] = set()  # deterministic sketches: nothing left out


def _table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = 150 + 10 * (seed % 7)
    return pa.table(
        {
            "i": rng.integers(0, 40 + seed, n),
            "f": rng.normal(seed, 3, n),
            "id": np.arange(n) + seed * 1000,
            "s": pa.array(rng.integers(0, 12, n).astype(str)),
        }
    )


def _files(root: Path, seed: int, run: str) -> dict[str, str]:
    table = _table(seed)
    results = []
    for leaf in leaves_of(table.schema):
        accumulator = ColumnAccumulator(leaf)
        accumulator.observe(leaf_array(table, leaf))
        results.append(accumulator.finalize(16, 30))
    files = layout.partition_files(f"p={seed}", run)
    writer.write_partition(
        results, [], 16, {k: layout.absolute(str(root), v) for k, v in files.items()},
        StatisticsStore(str(root)),
    )
    return files


@pytest.fixture(params=["one_task", "spark_stages"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "spark_stages":
        monkeypatch.setattr(reduce_local, "LOCAL_CELLS", 0)
    return request.param


def _answers(root: Path, run: str, files: dict[str, str], cache: dict[str, str]) -> dict:
    """Every table-level file of a reduction, as rows (frequencies sorted)."""
    out = {}
    for kind, relative in files.items():
        rows = pq.read_table(root / relative).to_pylist()
        if kind == "statistics":
            rows = [{k: v for k, v in r.items() if k not in RANDOMIZED} for r in rows]
        if kind == "frequencies":
            rows.sort(key=lambda r: (r["column"], r["value"]))
        out[kind] = rows
    out["index"] = pq.read_table(root / layout.partition_index_file(run)).to_pylist()
    directory = pq.read_table(root / layout.partition_histogram_parts_file(run))
    parts = {}
    for path, ids in zip(directory["part"].to_pylist(),
                         directory["partition_ids"].to_pylist(), strict=True):
        for row in pq.read_table(root / path).to_pylist():
            parts[(row.pop("column_index"), ids[row.pop("member")])] = row
    out["partition histograms"] = parts
    return out


def _digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def test_one_changed_partition_rewrites_one_group(spark, tmp_path: Path, mode: str) -> None:
    root = tmp_path / "_lakestats"
    entries = [
        PartitionEntry(f"p={p}", f"p={p}", {"p": p}, _table(p).num_rows, 0, _files(root, p, "a"))
        for p in range(PARTITIONS)
    ]
    columns = [
        {"name": leaf.name, "type": str(leaf.type)} for leaf in leaves_of(_table(0).schema)
    ]
    store = StatisticsStore(str(root))
    job = ReduceJob(store, entries, columns, 16, 30, cache_from_partitions=0)
    first, _, cache = reduce_table(spark, job, "first")
    parts = {k: v for k, v in cache.items() if k.startswith(PARTS_PREFIX)}
    assert len(parts) == 8
    before = {v: _digest(root / v) for v in parts.values()}

    # partition 7 changes: new files with other data
    changed = list(entries)
    changed[7] = dataclasses.replace(entries[7], files=_files(root, 1007, "b"),
                                     row_count=_table(1007).num_rows)
    job = ReduceJob(StatisticsStore(str(root)), changed, columns, 16, 30, [], cache, 0)
    files, _, second = reduce_table(spark, job, "second")
    now = {k: v for k, v in second.items() if k.startswith(PARTS_PREFIX)}
    assert len(now) == 8
    kept = [k for k in now if now[k] == parts.get(k)]
    assert len(kept) == 7, (parts, now)
    for k in kept:  # listed as they were: same file, same bytes, not rewritten
        assert _digest(root / now[k]) == before[now[k]]
    (new,) = (v for k, v in now.items() if k not in kept)
    assert new.startswith("table/second/")
    assert sorted(p.name for p in (root / "table" / "second").rglob(f"{PARTS_PREFIX}*")) == [
        Path(new).name
    ]

    # the same partitions reduced from scratch answer the same
    full, _, _ = reduce_table(
        spark, ReduceJob(store, changed, columns, 16, 30, cache_from_partitions=0), "full"
    )
    got, want = _answers(root, "second", files, second), _answers(root, "full", full, {})
    assert got.keys() == want.keys()
    for kind in got:
        assert got[kind] == want[kind], kind
    assert first != files
