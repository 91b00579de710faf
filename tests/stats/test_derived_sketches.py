"""Format version 3 stores no sketch its frequency rows determine; the table level is the same.

One generated table (ints, floats with NaN, decimals, dates, strings, nulls; partitions
whose frequencies are complete and partitions whose are not) is analyzed once (format
version 3). Its format-version-2 twin is the same files with every partition's sketches
as the version-2 writer built them: the partition accumulator run here, in process, on
each partition's data with nothing left out, written with ``lakestats.format_version`` 2.
Both are reduced by the one-task and the staged Spark reductions, and analyzed again
incrementally after a partition is added; every table-level file must be the same.
Merged HLL bytes depend on the order values arrived in, so sketches are compared by what
is read from them (HLL estimate and bounds, the quantile sketch's n and quantiles: it is
deterministic, compacted or not).
"""

from __future__ import annotations

import decimal
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.compute.reduce import ReduceJob, reduce_table
from lakestats.compute.reduce import local as reduce_local
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.leaves import Leaf
from lakestats.stats.quantile_sketch import QuantileSketch
from lakestats.stats.sketches import order_free_hll
from lakestats.stats.type_codec import parse_type
from lakestats.store import layout, manifest, schemas
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader

MAX_FREQUENCIES = 1000
ROWS = 1500
NUMERIC_ROWS = 38  # non-null numeric values per partition: 5 partitions stay under KLL_K
COMPLETE = {0: True, 1: True, 2: False, 3: True, 4: True}  # numeric: complete or all distinct
STRING_DISTINCT = {0: 700, 1: 800, 2: 6000, 3: 900, 4: 600}  # p=2: > MAX_FREQUENCIES seen


def _partition(p: int, rng: np.random.Generator) -> pa.Table:
    mask = np.ones(ROWS, dtype=bool)
    mask[rng.choice(ROWS, NUMERIC_ROWS, replace=False)] = False  # null but for NUMERIC_ROWS
    if COMPLETE[p]:
        ints = rng.integers(0, 12, ROWS) + 100 * p
    else:
        ints = rng.permutation(ROWS) * 7 + 100 * p  # all distinct among those kept
    floats = np.round(rng.normal(size=ROWS), 1 if COMPLETE[p] else 6)
    floats[rng.choice(ROWS, 200, replace=False)] = np.nan  # NaN among the kept values too
    floats[rng.choice(ROWS, 3)] = -0.0
    if not COMPLETE[p]:  # the kept floats all distinct
        floats = np.arange(ROWS) / 7.0 - p
    decimals = [decimal.Decimal(int(v)).scaleb(-2) for v in ints]
    words = rng.integers(0, STRING_DISTINCT[p], ROWS)
    strings = [f"w{v * 7919 % 10007}-{p % 2}" for v in words]  # first-seen order: unsorted
    return pa.table(
        {
            "i": pa.array(ints, mask=mask),
            "f": pa.array(floats, mask=mask),
            "d": pa.array(decimals, pa.decimal128(12, 2), mask=mask),
            "dt": pa.array(ints.astype(np.int32), mask=mask).cast(pa.date32()),
            "s": pa.array(strings),
            "c": pa.array([f"c{v}" for v in rng.integers(0, 5, ROWS)]),  # complete everywhere
        }
    )


def _write_partition(table_dir: Path, p: int) -> None:
    (table_dir / f"p={p}").mkdir(parents=True)
    pq.write_table(_partition(p, np.random.default_rng(p)), table_dir / f"p={p}" / "data.parquet")


def _as_version_2(root3: Path, root2: Path, table_dir: Path) -> None:
    """``root3`` rewritten as the version-2 writer wrote it: every sketch stored (as a
    version only scaled, ``analyze --from-sample``'s, stores them: ``every_sketch``)."""
    shutil.copytree(root3, root2)
    version = manifest.load_version(StatisticsStore(str(root2)))
    for entry in version.partitions:
        data = pq.read_table(table_dir / entry.path / "data.parquet")
        path = root2 / entry.files["statistics"]
        stored = pq.read_table(path)
        hll, kll = [], []
        for row in stored.select(["column", "type", "row_count"]).to_pylist():
            dtype = parse_type(row["type"])
            if row["column"] in data.column_names:
                values = data.column(row["column"])
            else:  # the partition column
                values = pa.array([entry.values[row["column"]]] * row["row_count"]).cast(dtype)
            column = ColumnAccumulator(Leaf(row["column"], (row["column"],), dtype))
            column.observe(values)
            result = column.finalize(1000, MAX_FREQUENCIES, every_sketch=True).row
            hll.append(result.get("hll_sketch"))
            kll.append(result.get("kll_sketch"))
        names = stored.schema.names
        stored = stored.set_column(names.index("hll_sketch"), "hll_sketch", pa.array(hll))
        stored = stored.set_column(names.index("kll_sketch"), "kll_sketch", pa.array(kll))
        pq.write_table(
            stored.replace_schema_metadata({schemas.FORMAT_VERSION_KEY: "2"}),
            path,
            compression="zstd",
            store_schema=False,
            row_group_size=schemas.STATISTICS_ROW_GROUP,
            write_statistics=False,
        )
    version_file = root2 / layout.version_path(version.version)
    data = json.loads(version_file.read_text())
    data["format_version"] = 2
    for entry in data["partitions"]:  # the manifest records each file's size (verify.py)
        if entry.get("file_sizes"):
            statistics = root2 / entry["files"]["statistics"]
            entry["file_sizes"]["statistics"] = statistics.stat().st_size
    version_file.write_text(json.dumps(data))


@pytest.fixture(scope="module")
def roots(tmp_path_factory, spark) -> tuple[Path, Path, Path]:
    base = tmp_path_factory.mktemp("derived")
    table_dir = base / "t"
    for p in range(4):
        _write_partition(table_dir, p)
    root3 = base / "v3"
    ls.open_table(str(table_dir), stats_root=str(root3)).analyze(
        max_frequencies=MAX_FREQUENCIES, spark=spark
    )
    _as_version_2(root3, base / "v2", table_dir)
    return table_dir, base / "v2", root3


def _readable(rows: list[dict]) -> list[dict]:
    """Statistics rows with the sketches replaced by what is read from them."""
    out = []
    for row in rows:
        hll, kll = row.pop("hll_sketch"), row.pop("kll_sketch")
        if hll is not None:
            sketch = order_free_hll(hll)
            row["hll"] = (sketch.get_estimate(), sketch.get_lower_bound(2),
                          sketch.get_upper_bound(2))
        if kll is not None:
            quantiles = QuantileSketch.deserialize(kll)
            ranks = np.linspace(0, 1, 21)
            # deterministic: a compacted sketch (the partition column "p") answers the same
            row["kll"] = (quantiles.n, quantiles.quantiles(ranks).tolist() if quantiles.n else [])
        out.append({k: ("NaN" if isinstance(v, float) and math.isnan(v) else v)
                    for k, v in row.items()})
    return out


def _table_files(root: Path, files: dict[str, str]) -> dict[str, object]:
    statistics = pq.read_table(root / files["statistics"]).to_pylist()
    return {
        "statistics": _readable(statistics),
        "frequencies": pq.read_table(root / files["frequencies"]),
        "histograms": pq.read_table(root / files["histograms"]),
    }


def _assert_same(a: dict[str, object], b: dict[str, object]) -> None:
    for left, right in zip(a["statistics"], b["statistics"], strict=True):
        assert left == right, left["column"]
    assert a["frequencies"].equals(b["frequencies"])
    assert a["histograms"].equals(b["histograms"])


def test_version_3_leaves_out_exactly_the_derivable_sketches(roots) -> None:
    _, root2, root3 = roots
    reader3, reader2 = (
        StatisticsReader(StatisticsStore(str(root3))),
        StatisticsReader(StatisticsStore(str(root2))),
    )
    for entry in reader3.version.partitions:
        path = root3 / entry.files["statistics"]
        metadata = pq.ParquetFile(path).metadata.metadata
        assert metadata[schemas.FORMAT_VERSION_KEY.encode()] == str(schemas.FORMAT_VERSION).encode()
        rows = reader3.statistics_table(entry.name, include_sketches=True).to_pylist()
        old = reader2.statistics_table(entry.name, include_sketches=True).to_pylist()
        for row, before in zip(rows, old, strict=True):
            complete = 0 < row["distinct_count"] == row["frequencies_count"]
            assert (row["hll_sketch"] is None) == complete, (entry.name, row["column"])
            # the version-2 twin describes the same data: only the sketches differ
            assert before["hll_sketch"] is not None
            if not complete:
                assert (before["hll_sketch"], before["kll_sketch"]) == (
                    row["hll_sketch"], row["kll_sketch"]
                )
            for key in row:
                if key not in schemas.SKETCH_COLUMNS and row[key] == row[key]:
                    assert row[key] == before[key], (entry.name, row["column"], key)
    # the generated partitions cover both cases for every column type
    incomplete = {
        row["column"]
        for entry in reader3.version.partitions
        for row in reader3.statistics_table(entry.name, include_sketches=True).to_pylist()
        if row["hll_sketch"] is not None
    }
    assert {"i", "f", "d", "dt", "s"} <= incomplete and "c" not in incomplete


@pytest.mark.parametrize("path", ["one_task", "spark_stages"])
def test_reductions_over_version_2_and_3_are_the_same(
    roots, spark, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    if path == "spark_stages":
        monkeypatch.setattr(reduce_local, "LOCAL_CELLS", 0)
    _, root2, root3 = roots
    reduced = []
    for root in (root2, root3):
        version = manifest.load_version(StatisticsStore(str(root)))
        job = ReduceJob(StatisticsStore(str(root)), version.partitions, version.columns, 1000,
                        MAX_FREQUENCIES, earlier=version)
        files, _, _ = reduce_table(spark, job, f"again-{path}")
        reduced.append(_table_files(root, files))
    _assert_same(*reduced)
    # and what analyze published (reduced from version-3 files) too
    published = manifest.load_version(StatisticsStore(str(root3)))
    _assert_same(reduced[1], _table_files(root3, published.table_files))
    by_name = {row["column"]: row for row in reduced[1]["statistics"]}
    # the sketch paths were taken: estimated distinct counts, percentiles from KLL
    for name in ("i", "f", "d", "dt", "s"):
        assert by_name[name]["distinct_count_exact"] is False, name
    for name in ("i", "f", "d", "dt"):
        assert by_name[name]["percentiles_exact"] is False, name
    assert by_name["c"]["distinct_count_exact"] is True
    # the HLL of "s" is in HLL mode (> 384 distinct per partition): the order-free path
    assert by_name["s"]["hll"][0] > 1000


def test_incremental_analyze_over_version_2_files_is_the_same(roots, spark, tmp_path) -> None:
    table_dir, root2, root3 = roots
    _write_partition(table_dir, 4)
    results = []
    try:
        for root in (root2, root3):
            copy = tmp_path / root.name
            shutil.copytree(root, copy)
            result = ls.open_table(str(table_dir), stats_root=str(copy)).analyze(
                max_frequencies=MAX_FREQUENCIES, spark=spark
            )
            assert (result.partitions_computed, result.partitions_reused) == (1, 4), root.name
            version = manifest.load_version(StatisticsStore(str(copy)))
            assert version.format_version == schemas.FORMAT_VERSION == 7
            results.append(_table_files(copy, version.table_files))
    finally:
        shutil.rmtree(table_dir / "p=4")
    _assert_same(*results)
