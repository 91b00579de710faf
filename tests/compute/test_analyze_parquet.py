"""End to end on Spark: a hive-partitioned Parquet directory analyzed through the CLI,
every partition's statistics looked up and compared with DuckDB."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.stats import keys
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader
from tests.conftest import mixed_table
from tests.reference import check_partition

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def parquet_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tables") / "mixed"
    table = mixed_table(1500, seed=11)
    part = pc.if_else(pc.less(table["id"], 1000), "big", "small")
    part = pc.if_else(pc.equal(table["id"], 1499), "single", part)
    table = table.append_column("part", part)
    pq.write_to_dataset(table, root, partition_cols=["part"])
    empty = root / "part=empty"
    empty.mkdir()
    pq.write_table(mixed_table(0), empty / "empty.parquet")
    return root


def _run(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_analyze_and_look_up_every_partition(spark, parquet_table: Path, capsys) -> None:
    code, out, err = _run(capsys, "analyze", str(parquet_table), "--bins", "64", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["partitions_computed"] == 4
    assert summary["row_count"] == 1500
    assert summary["version"] == ls.open_table(str(parquet_table)).latest_version()
    assert (summary["unchanged"], summary["bytes_written"] > 0) == (False, True)
    again = ls.open_table(str(parquet_table)).analyze(bins=64, spark=spark)  # nothing changed
    assert again.to_json() == {**summary, "partitions_computed": 0, "partitions_reused": 4,
                               "bytes_written": 0, "unchanged": True}

    code, out, _ = _run(capsys, "partitions", str(parquet_table), "--json")
    listing = json.loads(out)["partitions"]
    assert sorted(p["partition"]["part"] for p in listing) == ["big", "empty", "single", "small"]
    for entry in ls.open_table(str(parquet_table)).partitions():
        # format 6: the table level's parts hold the frequency and histogram rows
        assert sorted(entry.files) == ["statistics"]
        for uri in entry.files.values():
            assert Path(uri.removeprefix("file://")).is_file()

    dataset = pads.dataset(parquet_table, format="parquet", partitioning="hive")
    reader = StatisticsReader(StatisticsStore(str(parquet_table / "_lakestats")))
    for entry in listing:
        name = entry["partition"]["part"]
        expected = dataset.to_table(filter=pc.field("part") == name)
        assert entry["row_count"] == expected.num_rows
        spec = f"part={name}"
        rows = reader.column_statistics(spec)
        check_partition(
            expected,
            rows,
            lambda column, spec=spec: reader.frequencies(spec, column),
            lambda column, spec=spec: reader.histogram(spec, column),
        )


def test_show_json_follows_the_cli_contract(spark, parquet_table: Path, capsys) -> None:
    _run(capsys, "analyze", str(parquet_table))
    code, out, _ = _run(
        capsys,
        "show",
        str(parquet_table),
        "--partition",
        "part=big",
        "--columns",
        "f64,ünï,dec38,ts_tz,blob",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["row_count"] == 1000
    names = [c["name"] for c in data["columns"]]
    assert names == ["f64", "ünï", "dec38", "ts_tz", "blob"]
    f64, text, dec, ts, blob = data["columns"]
    table = pads.dataset(parquet_table, format="parquet", partitioning="hive").to_table(
        filter=pc.field("part") == "big"
    )
    floats = table["f64"].drop_null()
    finite = floats.filter(pc.invert(pc.is_nan(floats)))
    assert f64["nan_count"] == pc.sum(pc.is_nan(floats)).as_py()
    assert (f64["min"], f64["max"]) == tuple(
        keys.to_json(v.as_py()) for v in pc.min_max(finite).values()
    )
    assert f64["mean"] in ("NaN", "Infinity", "-Infinity")  # ±inf in the data
    assert dec["min"] == str(pc.min(table["dec38"]).as_py())
    assert ts["min"] == pc.min(table["ts_tz"]).as_py().isoformat()
    assert blob["min"] == keys.to_json(pc.min(table["blob"]).as_py())
    assert text["max_length"] == 5000

    code, out, _ = _run(
        capsys,
        "frequencies",
        str(parquet_table),
        "--partition",
        "part=big",
        "--column",
        "ünï",
        "--top",
        "3",
        "--json",
    )
    top = json.loads(out)["frequencies"]
    counts = pc.value_counts(table["ünï"].drop_null()).to_pylist()
    counts.sort(key=lambda d: (-d["counts"], d["values"].encode()))
    assert top == [{"value": d["values"], "frequency": d["counts"]} for d in counts[:3]]

    code, out, _ = _run(
        capsys,
        "histogram",
        str(parquet_table),
        "--partition",
        "part=big",
        "--column",
        "day",
        "--json",
    )
    bins = json.loads(out)["bins"]
    assert sum(b["count"] for b in bins) == table["day"].drop_null().__len__()
    assert bins[0]["lower"] == str(pc.min(table["day"]).as_py())


def test_only_requested_columns(spark, parquet_table: Path, tmp_path: Path, capsys) -> None:
    code, out, err = _run(
        capsys,
        "analyze",
        str(parquet_table),
        "--stats-root",
        str(tmp_path / "s"),
        "--columns",
        "id,nested",
        "--json",
    )
    assert code == 0, err
    reader = StatisticsReader(StatisticsStore(str(tmp_path / "s")))
    assert [c["name"] for c in reader.columns] == ["id", "nested.x", "nested.`name.with.dot`"]
    rows = reader.column_statistics("part=small")
    assert rows[0]["row_count"] == 499


def test_large_partition_is_sliced_and_merges_exactly(spark, tmp_path: Path) -> None:
    """Many files per partition and a tiny slice size: slices merge to the same result."""
    import lakestats.api as ls

    root = tmp_path / "sliced"
    table = mixed_table(1200, seed=5).drop_columns(["nested", "items", "props"])
    for i in range(4):
        pq.write_table(table.slice(i * 300, 300), root / f"f{i}.parquet") if root.exists() else (
            root.mkdir(),
            pq.write_table(table.slice(i * 300, 300), root / f"f{i}.parquet"),
        )
    handle = ls.open_table(str(root), stats_root=str(tmp_path / "a"))
    handle.analyze(max_slice_bytes=1, bins=32)
    whole = ls.open_table(str(root), stats_root=str(tmp_path / "b"))
    whole.analyze(bins=32)
    sliced_rows = handle.statistics()
    whole_rows = whole.statistics()
    for a, b in zip(sliced_rows, whole_rows, strict=True):
        for key, value in a.items():
            if isinstance(value, float):
                assert value == pytest.approx(b[key], rel=1e-9, nan_ok=True), key
            else:
                assert value == b[key], key
    check_partition(
        pa.Table.from_batches(pq.ParquetDataset(root).read().to_batches()),
        sliced_rows,
        lambda c: list(handle.frequencies(c)),
        lambda c: handle.histogram(c).rows(),
    )


def _edge_table(root: Path) -> Path:
    """A ``decimal(38, 10)`` column at its limits (values of ±(10^28 -
    10^-10), the largest it holds) and a struct ``x`` holding ``y`` beside a top-level
    column named ``x.y``; three partitions of 3,000 rows."""
    import numpy as np

    rng = np.random.default_rng(29)
    big = "9" * 28 + "." + "9" * 10
    for p in range(3):
        n = 3000
        amounts = []
        for _ in range(n):
            r = rng.random()
            if r < 0.3:
                amounts.append(big)
            elif r < 0.5:
                amounts.append("-" + big)
            elif r < 0.55:
                amounts.append(None)
            else:
                whole = int(rng.integers(-(10**15), 10**15))
                amounts.append(f"{whole}{int(rng.integers(0, 10**12)):012d}."
                               f"{int(rng.integers(0, 10**10)):010d}")
        table = pa.table({
            "amount": pa.array(amounts).cast(pa.decimal128(38, 10)),
            "x": pa.array([{"y": int(v)} for v in rng.integers(0, 10, n)]),
            "x.y": pa.array([f"s{v}" for v in rng.integers(0, 50, n)]),
        })
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(table, root / f"p={p}" / "0.parquet")
    return root


@pytest.mark.parametrize("max_frequencies", ["10000", "100"])
def test_extreme_decimals_and_dotted_names(
    spark, tmp_path: Path, capsys, max_frequencies: str
) -> None:
    """Both analyze (was: ``table-level reduction failed: ArrowInvalid: Decimal type with
    precision 39`` when the table level's percentiles come from a sketch, and the ``x.y``
    leaves lost at table level). Every partition equals DuckDB; at table level the sum and
    mean (float64, never overflowing) equal DuckDB's over DOUBLE, the sketch's percentiles
    stay inside [min, max], and each ``x.y`` is addressable: ``x.y`` is the struct leaf,
    the column is shown backtick-quoted and written ``"x.y"`` in predicates."""
    import duckdb

    root = _edge_table(tmp_path / "t")
    code, _, err = _run(capsys, "analyze", str(root), "--max-frequencies", max_frequencies)
    assert code == 0, err
    dataset = pads.dataset(root, format="parquet", partitioning="hive")
    reader = StatisticsReader(StatisticsStore(str(root / "_lakestats")))
    if max_frequencies == "10000":  # exact per-partition statistics: the whole reference
        for p in range(3):
            spec = f"p={p}"
            check_partition(
                dataset.to_table(filter=pc.field("p") == p).drop_columns(["p"]),
                [r for r in reader.column_statistics(spec) if r["column"] != "p"],
                lambda column, spec=spec: reader.frequencies(spec, column),
                lambda column, spec=spec: reader.histogram(spec, column),
            )
    con = duckdb.connect()
    con.register("t", dataset.to_table())
    rows = {r["column"]: r for r in reader.column_statistics(None)}
    assert {"amount", "x.y", "`x.y`"} <= set(rows)
    amount = rows["amount"]
    low, high, total, mean = con.execute(
        "SELECT min(amount), max(amount), sum(amount::DOUBLE), avg(amount::DOUBLE) FROM t"
    ).fetchone()
    assert (amount["min"], amount["max"]) == (low, high)
    assert amount["sum"] == pytest.approx(total, rel=1e-9)
    assert amount["mean"] == pytest.approx(mean, rel=1e-9)
    for name in ("p01", "p25", "p50", "p75", "p99"):
        assert low <= amount[name] <= high, name
    assert rows["x.y"]["type"] == "int64" and rows["`x.y`"]["type"] == "string"
    for column, sql in (("x.y", "x.y"), ("`x.y`", '"x.y"')):
        (distinct,) = con.execute(f"SELECT count(DISTINCT {sql}) FROM t").fetchone()
        assert rows[column]["distinct_count"] == distinct, column
        stored = dict(reader.frequencies(None, column))
        truth = dict(con.execute(f"SELECT {sql}, count(*) FROM t GROUP BY 1").fetchall())
        if max_frequencies == "10000":
            assert stored == truth, column
    for where in ("x.y = 3", "\"x.y\" = 's7'", "x.y = 3 AND \"x.y\" = 's7'", "amount > 0"):
        code, out, err = _run(capsys, "estimate", str(root), "--where", where, "--json")
        assert code == 0, (where, err)
        got = json.loads(out)
        (truth,) = con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchone()
        assert got["lower"] <= truth <= got["upper"], (where, got)
    code, out, err = _run(capsys, "show", str(root), "--columns", "x.y,`x.y`", "--json")
    assert code == 0, err
    assert [c["name"] for c in json.loads(out)["columns"]] == ["x.y", "`x.y`"]


def test_a_file_rewritten_in_place_with_the_same_size_is_a_change(spark, tmp_path: Path) -> None:
    """A plain Parquet directory can rewrite a file under the same name: one with the same
    byte size (fixed-width values, no compression) is still seen as changed by its
    modification time, and its partition is recomputed from the new rows."""
    root = tmp_path / "rewritten"
    for part, start in (("a", 0), ("b", 100)):
        (root / f"p={part}").mkdir(parents=True)
        _fixed_size_file(root / f"p={part}" / "data.parquet", start)
    table = ls.open_table(str(root))
    assert table.analyze(spark=spark).partitions_computed == 2
    target = root / "p=a" / "data.parquet"
    size, modified = target.stat().st_size, target.stat().st_mtime_ns
    _fixed_size_file(target, 5000)
    assert target.stat().st_size == size  # the name and the size alike: only the time differs
    os.utime(target, ns=(modified + 10**9, modified + 10**9))
    again = ls.open_table(str(root)).analyze(spark=spark)
    assert (again.partitions_computed, again.partitions_reused) == (1, 1)
    reader = StatisticsReader(StatisticsStore(str(root / "_lakestats")))
    check_partition(  # the new rows, checked against the file itself
        pq.read_table(target),
        reader.column_statistics("p=a"),
        lambda column: reader.frequencies("p=a", column),
        lambda column: reader.histogram("p=a", column),
    )


def _fixed_size_file(path: Path, start: int) -> None:
    values = pa.array(range(start, start + 50), pa.int64())
    pq.write_table(pa.table({"v": values}), path, compression="none", use_dictionary=False,
                   write_statistics=False)
