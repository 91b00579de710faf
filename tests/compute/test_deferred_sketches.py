"""The reduction rebuilds the sketches format 3 leaves out only where the table level needs them.

Partition files are written in process (the partition accumulator and writer, as analyze
does), so a column's frequencies are complete in some partitions and truncated in others,
and reduced in one process (``reduce_locally``, the same stages as on Spark). References:
DuckDB over the same data (``count(DISTINCT)``, ``quantile_disc``, ``GROUP BY``), and for
estimated columns the HLL sketch of every distinct value of the table built directly (the
union of partition sketches has the same registers, so the same order-free estimate) and
the KLL rank error around DuckDB's ranks. Calls to the rebuild are counted, to show it is
skipped when every partition listed all values and done when one did not, including an
incremental reduction whose complete groups come from the cache.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats.compute.reduce import ReduceJob, fold
from lakestats.compute.reduce.local import reduce_locally
from lakestats.stats import derived_sketches, sketches
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.kinds import Kind
from lakestats.stats.leaves import leaf_array, leaves_of
from lakestats.stats.type_codec import decode_value
from lakestats.store import layout, writer
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry

MAX_FREQUENCIES = 300
ROWS = 1200
PARTS = 8  # four groups of partitions


def _data(p: int, truncated: bool) -> pa.Table:
    rng = np.random.default_rng(p + (100 if truncated else 0))
    # complete: at most 60 distinct values; truncated: ~1,000 distinct (> MAX_FREQUENCIES),
    # repeats included, so neither complete nor all distinct
    spread = 1000 if truncated else 60
    ints = rng.integers(0, spread, ROWS) * 7919 + p
    words = rng.integers(0, spread, ROWS)
    return pa.table(
        {
            "i": pa.array(ints, pa.int64()),
            "s": pa.array([f"w{w}" for w in words]),
            "c": pa.array([f"c{w}" for w in rng.integers(0, 5, ROWS)]),  # complete everywhere
        }
    )


def _write(root: Path, name: str, table: pa.Table) -> dict[str, str]:
    files = layout.partition_files(name, "test")
    results = []
    for leaf in leaves_of(table.schema):
        accumulator = ColumnAccumulator(leaf)
        accumulator.observe(leaf_array(table, leaf))
        results.append(accumulator.finalize(1000, MAX_FREQUENCIES))
    uris = {k: layout.absolute(str(root), v) for k, v in files.items()}
    writer.write_partition(results, [], 1000, uris, StatisticsStore(str(root)))
    return files


def _entries(root: Path, tables: dict[int, pa.Table], tag: str) -> list[PartitionEntry]:
    return [
        PartitionEntry(
            path=f"p={p}",
            name=f"p={p}",
            values={"p": p},
            row_count=t.num_rows,
            size_bytes=0,
            files=_write(root, f"p={p}-{tag}", t),
        )
        for p, t in tables.items()
    ]


COLUMNS = [{"name": "i", "type": "int64"}, {"name": "s", "type": "string"},
           {"name": "c", "type": "string"}]


@pytest.fixture
def rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many partitions' sketches the reduction rebuilt from frequency rows."""
    calls: list[int] = []
    real = derived_sketches.rebuilt_sketches

    def counting(frequencies, dtypes, columns):
        calls.append(len(columns))
        return real(frequencies, dtypes, columns)

    monkeypatch.setattr(fold, "rebuilt_sketches", counting)  # deferred, rebuilt late
    monkeypatch.setattr(derived_sketches, "rebuilt_sketches", counting)  # in the fold
    return calls


def _reduce(root: Path, entries: list[PartitionEntry], run: str, cache=None):
    job = ReduceJob(
        StatisticsStore(str(root)), entries, COLUMNS, 1000, MAX_FREQUENCIES, [], cache or {}, 0
    )
    files = layout.table_files(run)
    _, used = reduce_locally(job, files, run)
    rows = pq.read_table(root / files["statistics"]).to_pylist()
    return {r["column"]: r for r in rows}, used, files


def _con(tables: dict[int, pa.Table]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.register("t", pa.concat_tables(list(tables.values())))
    return con


def _check_exact(con, rows: dict, root: Path, files: dict[str, str]) -> None:
    for column in ("i", "s", "c"):
        row = rows[column]
        (distinct,) = con.execute(f"SELECT count(DISTINCT {column}) FROM t").fetchone()
        assert (row["distinct_count"], row["distinct_count_exact"]) == (distinct, True), column
        assert row["hll_sketch"] is None and row["kll_sketch"] is None, column
        stored = pq.read_table(root / files["frequencies"]).to_pylist()
        counts = {r["value"]: r["frequency"] for r in stored if r["column"] == column}
        assert len(counts) == min(distinct, MAX_FREQUENCIES), column
    (median, p99) = con.execute(
        "SELECT quantile_disc(i, 0.5), quantile_disc(i, 0.99) FROM t"
    ).fetchone()
    reader_row = _decoded(root, files)["i"]
    assert (reader_row["p50"], reader_row["p99"], reader_row["percentiles_exact"]) == (
        median, p99, True,
    )


def _decoded(root: Path, files: dict[str, str]) -> dict[str, dict]:
    rows = pq.read_table(root / files["statistics"]).to_pylist()
    for row in rows:
        for name in ("min", "max", "p01", "p05", "p25", "p50", "p75", "p95", "p99"):
            row[name] = decode_value(row[name], row["type"])
    return {r["column"]: r for r in rows}


def _check_estimated(con, rows: dict, root: Path, files: dict[str, str]) -> None:
    """Truncated somewhere: HLL and KLL of every partition, the complete ones rebuilt."""
    for column in ("i", "s"):
        row = rows[column]
        assert row["distinct_count_exact"] is False, column
        values = con.sql(f"SELECT DISTINCT {column} FROM t").to_arrow_table().column(0)
        kind = Kind.INTEGER if column == "i" else Kind.STRING
        direct = sketches.order_free_hll(
            sketches.hll_of(sketches.hashable_values(values.combine_chunks(), kind))
        )
        assert row["distinct_count"] == round(direct.get_estimate()), column
        assert row["distinct_count_lower"] <= len(values) <= row["distinct_count_upper"], column
    # KLL percentile of "i": its DuckDB rank is within the sketch's rank error of 0.5
    p50 = _decoded(root, files)["i"]["p50"]
    (below, total) = con.execute(f"SELECT count(*) FILTER (i < {p50}), count(*) FROM t").fetchone()
    (at_most,) = con.execute(f"SELECT count(*) FILTER (i <= {p50}) FROM t").fetchone()
    error = rows["i"]["percentile_rank_error"]
    assert below / total - error <= 0.5 <= at_most / total + error
    assert rows["c"]["distinct_count_exact"] is True  # complete everywhere: exact


def test_all_complete_rebuilds_no_sketch(tmp_path: Path, rebuilds: list[int]) -> None:
    tables = {p: _data(p, truncated=False) for p in range(PARTS)}
    rows, _, files = _reduce(tmp_path, _entries(tmp_path, tables, "a"), "r1")
    assert rebuilds == []
    _check_exact(_con(tables), rows, tmp_path, files)


def test_mixed_rebuilds_the_complete_partitions_sketches(
    tmp_path: Path, rebuilds: list[int]
) -> None:
    tables = {p: _data(p, truncated=p == 3) for p in range(PARTS)}
    entries = _entries(tmp_path, tables, "a")
    rows, _, files = _reduce(tmp_path, entries, "r1")
    # the seven complete partitions' "i" and "s" sketches (not "c": exact without them)
    assert sorted(rebuilds) == [2] * (PARTS - 1)
    _check_estimated(_con(tables), rows, tmp_path, files)


def test_incremental_with_cached_complete_groups(tmp_path: Path, rebuilds: list[int]) -> None:
    tables = {p: _data(p, truncated=False) for p in range(PARTS)}
    entries = _entries(tmp_path, tables, "a")
    _, cache, _ = _reduce(tmp_path, entries, "r1")
    assert rebuilds == []
    # one partition now keeps only its top values: the cached complete groups' states
    # have no sketches, and the deferred-sketches stage rebuilds them
    tables[5] = _data(5, truncated=True)
    entries[5] = _entries(tmp_path, {5: tables[5]}, "b")[0]
    rows, _, files = _reduce(tmp_path, entries, "r2", cache)
    assert sorted(rebuilds) == [2] * (PARTS - 1)
    _check_estimated(_con(tables), rows, tmp_path, files)
    # and back to complete: exact again, from the cache and the new files, no rebuild
    rebuilds.clear()
    tables[5] = _data(5, truncated=False)
    entries[5] = _entries(tmp_path, {5: tables[5]}, "c")[0]
    rows, _, files = _reduce(tmp_path, entries, "r3", cache)
    assert rebuilds == []
    _check_exact(_con(tables), rows, tmp_path, files)
