"""The table-level partition index and the batched ``stats`` query.

The index's rows must equal what every partition's own ``statistics.parquet`` says (byte
for byte), and its decoded counts and bounds what DuckDB computes over each partition's
data; after a full analyze and after incremental ones (a partition changed, one added, one
removed; then one changed alone, the one-task path). A query for some columns reads only
their row groups.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.compute.reduce import local as reduce_local
from lakestats.errors import (
    ColumnNotFoundError,
    InvalidPredicateError,
    StatisticsNotFoundError,
)
from lakestats.stats.percentiles import percentile_names
from lakestats.store import layout, manifest, partition_index, schemas
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry
from lakestats.store.reader import StatisticsReader
from tests.reference import _close

GOLDEN = Path(__file__).parents[1] / "golden"
PARTITIONS = 8
SCALARS = ["row_count", "null_count", "nan_count", "distinct_count", "min", "max"]
SCALARS += ["all_distinct", *percentile_names()]
CHECKED = ["n", "x", "word", "day", "amount", "uid"]  # compared with DuckDB


def _part(p: int, rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    days = rng.integers(0, 900, rows)
    x = rng.normal(p, 10, rows)
    x[rng.random(rows) < 0.05] = np.nan
    words = np.array(["ant", "bee", "cat", "dög", "ému", ""])
    return pa.table(
        {
            "n": pa.array(rng.integers(-50, 50 + p, rows), mask=rng.random(rows) < 0.1),
            "x": pa.array(x, mask=rng.random(rows) < 0.05),
            "word": pa.array(words[rng.integers(0, 3 + p % 4, rows)]),
            "day": pa.array(
                [dt.date(2020, 1, 1) + dt.timedelta(days=int(d)) for d in days],
            ),
            "amount": pa.array(
                [decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-9999, 9999, rows)],
                pa.decimal128(9, 2),
            ),
            "uid": pa.array(np.arange(rows) + 100_000 * seed),
            "tags": pa.array([[int(v)] * int(v % 3) for v in rng.integers(0, 9, rows)]),
        }
    )


def _write(root: Path, p: int, seed: int, rows: int = 300, name: str = "part-0") -> None:
    directory = root / f"p={p}"
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(_part(p, rows, seed), directory / f"{name}.parquet")


@pytest.fixture(params=["one_task", "spark_stages"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "spark_stages":
        monkeypatch.setattr(reduce_local, "LOCAL_CELLS", 0)
    return request.param


def _check_index(root: Path) -> manifest.Version:
    """Index rows == partition files, and decoded == DuckDB over each partition."""
    stats = root / "_lakestats"
    version = manifest.load_version(StatisticsStore(str(stats)))
    assert version.partition_index, "the version lists no partition index"
    index = pq.read_table(stats / version.partition_index)
    assert index.schema.remove_metadata() == schemas.PARTITION_INDEX_SCHEMA
    columns = [c["name"] for c in version.columns]
    assert index.num_rows == len(version.partitions) * len(columns)
    keys = list(
        zip(index["column_index"].to_pylist(), index["partition_id"].to_pylist(), strict=True)
    )
    assert keys == sorted(keys)  # by column, then partition
    rows = {(r["partition_id"], r["column_index"]): r for r in index.to_pylist()}
    for pid, entry in enumerate(version.partitions):
        own = pq.read_table(stats / entry.files["statistics"]).to_pylist()
        for ci, row in enumerate(own):
            got = rows[(pid, ci)]
            assert got["column"] == columns[ci] == row["column"]
            assert got["partition_name"] == entry.name
            assert json.loads(got["partition_values"]) == entry.values
            for name in SCALARS:
                assert got[name] == row[name], (entry.name, row["column"], name)
            complete = row["distinct_count"] is not None and row["frequencies_truncated"] is False
            assert got["frequencies_complete"] == complete
    # decoded, through the stats API, against DuckDB over the partitions' data
    answer = ls.open_table(str(root)).stats(CHECKED)
    data = pads.dataset(root, format="parquet", partitioning="hive").to_table()
    con = duckdb.connect()
    con.register("t", data)
    assert [p.name for p in answer.partitions] == [e.name for e in version.partitions]
    for part in answer.partitions:
        p = part.partition["p"]
        (total,) = con.execute("SELECT count(*) FROM t WHERE p = ?", [p]).fetchone()
        assert part.row_count == total
        for column in part.columns:
            col = column["name"]
            valid = f'"{col}" IS NOT NULL' + (f' AND NOT isnan("{col}")' if col == "x" else "")
            nulls, distinct = con.execute(
                f'SELECT count(*) - count("{col}"), count(DISTINCT "{col}") FROM t WHERE p = ?',
                [p],
            ).fetchone()
            lo, hi = con.execute(
                f'SELECT min("{col}"), max("{col}") FROM t WHERE p = ? AND {valid}', [p]
            ).fetchone()
            assert column["null_count"] == nulls, col
            if col == "x":
                (nans,) = con.execute(
                    "SELECT count(*) FILTER (WHERE isnan(x)) FROM t WHERE p = ?", [p]
                ).fetchone()
                assert column["nan_count"] == nans
            else:
                assert column["distinct_count"] == distinct, col
            assert _close(column["min"], lo) and _close(column["max"], hi), (col, column, lo)
    return version


def test_index_after_full_and_incremental_analyses(spark, tmp_path: Path, mode: str) -> None:
    root = tmp_path / "t"
    for p in range(PARTITIONS):
        _write(root, p, seed=p)
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark, max_frequencies=200, reduce_cache_from=0)
    first = _check_index(root)

    # one partition changed, one added, one removed
    _write(root, 3, seed=99, rows=40, name="part-1")
    _write(root, PARTITIONS, seed=PARTITIONS)
    shutil.rmtree(root / "p=0")
    result = handle.analyze(spark=spark, max_frequencies=200, reduce_cache_from=0)
    assert (result.partitions_computed, result.partitions_reused) == (2, PARTITIONS - 2)
    second = _check_index(root)
    assert second.partition_index != first.partition_index

    # one partition changed alone: computed and reduced in one task (with LOCAL_CELLS 0,
    # the staged reduction); unchanged groups' index parts are carried forward
    _write(root, 5, seed=7, rows=25, name="part-1")
    result = handle.analyze(spark=spark, max_frequencies=200, reduce_cache_from=0)
    assert result.partitions_computed == 1
    third = _check_index(root)
    old = {k: v for k, v in second.extra["reduce_cache"].items() if k.startswith("index-")}
    new = {k: v for k, v in third.extra["reduce_cache"].items() if k.startswith("index-")}
    assert len(new) > 1
    reused = [k for k in new if new[k] == old.get(k)]
    assert len(reused) == len(new) - 1, (old, new)  # only the changed partition's group
    assert all(third.run_id not in new[k] for k in reused)


def test_stats_query_cli_where_and_fallback(spark, tmp_path: Path, capsys) -> None:
    root = tmp_path / "t"
    for p in range(4):
        _write(root, p, seed=p)
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark)
    code = cli.main(
        ["stats", str(root), "--columns", "x,word", "--where", "p IN (1, 3)", "--by-partition",
         "--json"]
    )
    assert code == 0
    shown = json.loads(capsys.readouterr().out)
    assert [p["partition"] for p in shown["partitions"]] == [{"p": 1}, {"p": 3}]
    table = shown["table"]
    assert (table["partitions"], table["partitions_matched"]) == (4, 2)
    assert [c["name"] for c in table["columns"]] == ["x", "word"]
    data = pads.dataset(root, format="parquet", partitioning="hive").to_table().to_pandas()
    assert table["row_count"] == len(data)
    assert table["columns"][1]["distinct_count"] == data["word"].nunique()
    for part in shown["partitions"]:
        rows = data[data["p"] == part["partition"]["p"]]
        x, word = part["columns"]
        assert [x["name"], word["name"]] == ["x", "word"]
        assert word["min"] == min(rows["word"]) and word["max"] == max(rows["word"])
        assert word["frequencies_complete"] is True and word["all_distinct"] is False
        assert x["max"] == rows["x"].max() and x["min"] == rows["x"].min()

    # a version written before the index existed answers the same from the partition files
    stats = root / "_lakestats"
    number = manifest.latest_version_number(StatisticsStore(str(stats)))
    path = stats / layout.version_path(number)
    text = json.loads(path.read_text())
    del text["partition_index"]
    path.write_text(json.dumps(text))
    assert StatisticsReader(StatisticsStore(str(stats))).partition_index() is None
    cli.main(["stats", str(root), "--columns", "x,word", "--where", "p IN (1, 3)",
              "--by-partition", "--json"])
    assert json.loads(capsys.readouterr().out) == shown

    # errors: one line each
    with pytest.raises(ColumnNotFoundError, match="column 'nope' has no statistics"):
        handle.stats(["x", "nope"])
    # --where prunes by any column's min/max, nulls and frequencies, not only partition
    # columns: frequencies are complete here, so exactly the partitions that hold a match
    for where, keep in [
        ("word = 'ant'", data["word"] == "ant"),
        ("p > 1", data["p"] > 1),
        ("n > 1000 OR (p <> 3 AND word = 'cat')", (data["p"] != 3) & (data["word"] == "cat")),
        ("word IN ('zzz') OR x IS NULL", data["x"].isna()),
    ]:
        shown = handle.stats(["x"], where=where)
        got = [p.partition["p"] for p in shown.partitions]
        assert got == sorted(set(data[keep]["p"])), where
    with pytest.raises(ColumnNotFoundError, match="unknown column 'nope' in predicate"):
        handle.stats(["x"], where="nope = 1")
    with pytest.raises(InvalidPredicateError, match="'abc'"):
        handle.stats(["x"], where="x = 'abc'")
    code = cli.main(["stats", str(root), "--columns", "x", "--where", "x = 'abc'"])
    assert code != 0
    assert capsys.readouterr().err.strip().count("\n") == 0
    code = cli.main(["stats", str(root), "--columns", "nope", "--json"])
    assert code != 0
    assert capsys.readouterr().err.strip().count("\n") == 0
    fresh = tmp_path / "never"
    _write(fresh, 0, seed=1)
    with pytest.raises(StatisticsNotFoundError, match="run `lakestats analyze`"):
        ls.open_table(str(fresh)).stats(["x"])


class _Recorded:
    """A file whose reads are recorded as (offset, length)."""

    def __init__(self, handle: pa.NativeFile, reads: list[tuple[int, int]]) -> None:
        self._handle = handle
        self._reads = reads
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        at = self._handle.tell()
        data = self._handle.read(n)
        self._reads.append((at, len(data)))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()

    def size(self) -> int:
        return self._handle.size()

    def close(self) -> None:
        self.closed = True
        self._handle.close()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True


def _keys(rng: np.random.Generator, n: int) -> pa.Array:
    raw = rng.bytes(8 * n)
    return pa.array([raw[i * 8 : i * 8 + 8] for i in range(n)], pa.binary())


def _synthetic_index(path: Path, partitions: int, columns: int) -> pa.Table:
    rng = np.random.default_rng(3)
    entries = [
        PartitionEntry(f"d={i}", f"d={i}", {"d": i}, 0, 0, {}) for i in range(partitions)
    ]
    cols = [{"name": f"c{i}", "type": "int64"} for i in range(columns)]
    n = partitions * columns
    part = pa.table(
        {
            "member": pa.array(np.tile(np.arange(partitions, dtype=np.int32), columns)),
            "column_index": pa.array(np.repeat(np.arange(columns, dtype=np.int32), partitions)),
            **{
                f: pa.array(rng.integers(0, 1000, n))
                for f in ("row_count", "null_count", "nan_count", "distinct_count")
            },
            **{f: _keys(rng, n) for f in ("min", "max")},
            "frequencies_complete": pa.array(rng.random(n) < 0.5),
            "all_distinct": pa.array(rng.random(n) < 0.1),
            **{f: pa.nulls(n, pa.binary()) for f in percentile_names()},
            "mean": pa.array(rng.normal(size=n)),
        }
    ).cast(partition_index.PART_SCHEMA)
    shuffled = part.take(pa.array(rng.permutation(n)))  # parts arrive in any order
    table = partition_index.assemble([(list(range(partitions)), shuffled)], entries, cols)
    partition_index.write_index(table, str(path), StatisticsStore(str(path.parent)), partitions)
    return table


def test_reads_only_the_row_groups_of_the_columns_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "partition_index.parquet"
    table = _synthetic_index(path, partitions=3000, columns=12)  # 2 columns per row group
    metadata = pq.ParquetFile(path).metadata
    assert metadata.num_row_groups == 6
    reads: list[tuple[int, int]] = []
    opened = pa.PythonFile(_Recorded(pa.OSFile(str(path)), reads), mode="r")
    index = partition_index.PartitionIndex(pq.ParquetFile(opened, pre_buffer=True))
    footer = reads.copy()
    got = index.read([3, 7], ["null_count", "max"])
    want = table.filter(pa.compute.is_in(table["column_index"], pa.array([3, 7], pa.int32())))
    assert got.to_pylist() == want.select(got.column_names).to_pylist()
    # every byte read after the footer lies in row groups 1 and 3 (pre-buffering may
    # coalesce small holes between the chunks read), and far less than the file is read
    allowed = []
    for g in (1, 3):
        group = metadata.row_group(g)
        starts = []
        for c in range(group.num_columns):
            chunk = group.column(c)
            start = chunk.dictionary_page_offset or chunk.data_page_offset
            starts.append((start, start + chunk.total_compressed_size))
        allowed.append((min(s for s, _ in starts), max(e for _, e in starts)))
    data_reads = reads[len(footer) :]
    assert data_reads
    for at, length in data_reads:
        assert any(lo <= at and at + length <= hi for lo, hi in allowed), (at, length, allowed)
    assert sum(length for _, length in data_reads) < os.path.getsize(path) / 4


def test_partition_index_schema_matches_golden(tmp_path: Path) -> None:
    path = tmp_path / "partition_index.parquet"
    _synthetic_index(path, partitions=3, columns=2)
    text = str(pq.ParquetFile(path).schema).strip().splitlines()
    schema = "\n".join(line for line in text if not line.startswith("<pyarrow")) + "\n"
    golden = GOLDEN / "partition_index.schema.txt"
    if os.environ.get("LAKESTATS_REGEN_GOLDEN"):
        golden.write_text(schema)
    assert schema == golden.read_text()


def test_an_index_without_means_reads_them_as_nulls(tmp_path: Path) -> None:
    """Indexes written before ``mean`` joined them still answer, with null means."""
    path = tmp_path / "partition_index.parquet"
    table = _synthetic_index(path, partitions=4, columns=3)
    old = tmp_path / "old.parquet"
    pq.write_table(pq.read_table(path).drop_columns(["mean"]), old)
    index = partition_index.PartitionIndex(pq.ParquetFile(old))
    got = index.read([1], ["null_count", "mean"])
    assert got.column_names == ["partition_id", "column_index", "null_count", "mean"]
    assert got.column("mean").null_count == got.num_rows == 4
    want = table.filter(pa.compute.equal(table["column_index"], 1))
    assert got.column("null_count").to_pylist() == want.column("null_count").to_pylist()
