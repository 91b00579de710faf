"""Table-level statistics reduced from partition files, against DuckDB over the whole table:
equal where the roll-up says it is exact, within the reported bounds where it is not."""

from __future__ import annotations

import bisect
import json
import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.compute.reduce import local as reduce_local
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.leaves import leaves_of
from lakestats.stats.percentiles import PERCENTILES
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader
from tests.conftest import mixed_table
from tests.reference import _close, _norm, _sql_path

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module", params=["one_task", "spark_stages"])
def analyzed(spark, tmp_path_factory: pytest.TempPathFactory, request):
    """The table analyzed with the small-table reduction (one task) and with the staged
    Spark reduction that large tables use; every test below checks both."""
    root = tmp_path_factory.mktemp("table-level") / "t"
    table = mixed_table(3000, seed=21).drop_columns(["nothing"])
    rng = np.random.default_rng(4)
    table = table.append_column(
        "city", pa.array(rng.choice(["oslo", "rome", "lima", "kyiv"], 3000))
    )
    part = pa.array(np.repeat(np.arange(6), 500).astype(str))
    pq.write_to_dataset(table.append_column("part", part), root, partition_cols=["part"])
    handle = ls.open_table(str(root))
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "spark_stages":
            patch.setattr(reduce_local, "LOCAL_CELLS", 0)
        handle.analyze(spark=spark, bins=50, max_frequencies=200)
    whole = pads.dataset(root, format="parquet", partitioning="hive").to_table()
    return root, handle, whole


def test_table_level_matches_duckdb(analyzed) -> None:
    root, handle, whole = analyzed
    reader = StatisticsReader(StatisticsStore(str(root / "_lakestats")))
    rows = {r["column"]: r for r in reader.column_statistics(None)}
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("t", whole)
    n_exact = n_bounded = 0
    for leaf in leaves_of(whole.schema):
        row = rows[leaf.name]
        col = _sql_path(leaf.path)
        kind = kind_of(leaf.type)
        total, non_null = con.execute(f"SELECT count(*), count({col}) FROM t").fetchone()
        assert (row["row_count"], row["null_count"]) == (total, total - non_null), leaf.name
        if kind in (Kind.NESTED, Kind.NULL, Kind.OTHER):
            continue
        where = f"{col} IS NOT NULL" + (f" AND NOT isnan({col})" if kind == Kind.FLOATING else "")
        lo, hi, counted = con.execute(
            f"SELECT min({col}), max({col}), count(*) FROM t WHERE {where}"
        ).fetchone()
        assert _close(row["min"], lo) and _close(row["max"], hi), leaf.name
        if kind in (Kind.INTEGER, Kind.FLOATING, Kind.DECIMAL):
            s, mean, var = con.execute(
                f"SELECT sum({col}::DOUBLE), avg({col}::DOUBLE), var_samp({col}::DOUBLE) "
                f"FROM t WHERE {where}"
            ).fetchone()
            for name, value in (("sum", s), ("mean", mean), ("variance", var)):
                assert _close(row[name], value, rel=1e-6), (leaf.name, name)
        distinct = con.execute(f"SELECT count(DISTINCT {col}) FROM t").fetchone()[0]
        if row["distinct_count_exact"]:
            assert row["distinct_count"] == distinct, leaf.name
            n_exact += 1
        else:
            assert row["distinct_count_lower"] <= distinct <= row["distinct_count_upper"], (
                leaf.name,
                distinct,
                row,
            )
            n_bounded += 1
        values = sorted(v for (v,) in con.execute(f"SELECT {col} FROM t WHERE {where}").fetchall())
        if kind in (Kind.INTEGER, Kind.FLOATING, Kind.DECIMAL, Kind.TEMPORAL) and values:
            _check_percentiles(leaf.name, row, values)
            _check_histogram(leaf.name, row, handle.histogram(leaf.name).rows(), values, kind)
        _check_frequencies(con, leaf.name, col, row, handle.frequencies(leaf.name))
        _check_upper_bounds(con, reader, leaf, col)
    assert n_exact >= 4 and n_bounded >= 4  # both roll-up paths were exercised


def _check_percentiles(name: str, row: dict, values: list) -> None:
    n = len(values)
    for p in PERCENTILES:
        got = row[f"p{p:02d}"]
        rank = max(1, math.ceil(n * p / 100))
        if row["percentiles_exact"]:
            assert _close(got, values[rank - 1]), (name, p)
        else:
            # the value returned sits within the KLL rank error of the requested rank
            below, upto = bisect.bisect_left(values, got), bisect.bisect_right(values, got)
            slack = (row["percentile_rank_error"] * 3 + 1 / n) * n + 1
            assert below - slack <= rank <= upto + slack, (name, p, got, below, upto, rank)


def _check_histogram(name: str, row: dict, bins: list, values: list, kind: Kind) -> None:
    assert sum(b["count"] for b in bins) == len(values), name
    if not row["histogram_exact"]:
        return
    for i, b in enumerate(bins):
        last = i == len(bins) - 1
        start = 0 if (i == 0 and kind == Kind.FLOATING) else bisect.bisect_left(values, b["lower"])
        stop = len(values) if last else bisect.bisect_left(values, b["upper"])
        assert b["count"] == stop - start, (name, i)


def _check_frequencies(con, name: str, col: str, row: dict, stored: list) -> None:
    truth = {
        _norm(v): c
        for v, c in con.execute(
            f"SELECT {col}, count(*) FROM t WHERE {col} IS NOT NULL GROUP BY ALL"
        ).fetchall()
    }
    counts = [c for _, c in stored]
    assert counts == sorted(counts, reverse=True), name
    if row["frequencies_exact"] and not row["frequencies_truncated"]:
        if not row["all_distinct"]:
            assert {_norm(v): c for v, c in stored} == truth, name
        return
    for value, count in stored:
        assert count <= truth[_norm(value)], (name, value)


def _check_upper_bounds(con, reader: StatisticsReader, leaf, col: str) -> None:
    """Every stored table-level frequency brackets the true count: lower <= true <= upper."""
    from lakestats.stats.keys import decode

    handle = reader.parquet_file(reader.table_entry(), "frequencies")
    table = handle.read().to_pylist()
    index = reader.column_index(leaf.name)
    truth = {
        _norm(v): c
        for v, c in con.execute(
            f"SELECT {col}, count(*) FROM t WHERE {col} IS NOT NULL GROUP BY ALL"
        ).fetchall()
    }
    for row in table:
        if row["column_index"] != index:
            continue
        true = truth[_norm(decode(row["value"], leaf.type))]
        upper = row["frequency_upper"]
        assert row["frequency"] <= true, leaf.name
        assert (upper is None and row["frequency"] == true) or upper >= true, (leaf.name, row)


def test_partitions_containing_and_bounds(analyzed, capsys) -> None:
    root, handle, whole = analyzed
    assert (
        cli.main(
            ["partitions-containing", str(root), "--column", "city", "--value", "rome", "--json"]
        )
        == 0
    )
    holders = json.loads(capsys.readouterr().out)["partitions"]
    expected = {}
    for part in range(6):
        mask = pc.and_(pc.equal(whole["part"], part), pc.equal(whole["city"], "rome"))
        count = pc.sum(mask.cast(pa.int64())).as_py()
        if count:
            expected[f"part={part}"] = count
    assert {h["name"]: h["frequency"] for h in holders} == expected
    assert len(handle.partitions_containing("city", "nowhere")) == 0
    typed = handle.partitions_containing("city", "rome")
    assert {h.name: h.frequency for h in typed} == expected
    assert typed.to_json() == {"column": "city", "value": "rome",
                               "version": handle.latest_version(),
                               "partitions": holders}
    top = handle.frequencies("small int")
    assert top and all(isinstance(v, int) for v, _ in top)


def test_history_and_paimon_export(analyzed, capsys) -> None:
    root, handle, whole = analyzed
    assert cli.main(["history", str(root), "--json"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert history[-1]["merged_record_count"] == whole.num_rows
    for field in (
        "snapshot_id",
        "schema_id",
        "merged_record_count",
        "merged_record_size",
        "partitions_computed",
        "partitions_reused",
        "created_at",
    ):
        assert field in history[-1]
    assert cli.main(["export-paimon", str(root)]) == 0
    paimon = json.loads(capsys.readouterr().out)
    assert paimon["mergedRecordCount"] == whole.num_rows
    city = paimon["colStats"]["city"]
    assert city == {
        "distinctCount": 4,
        "min": "kyiv",
        "max": "rome",
        "nullCount": 0,
        "avgLen": 4,
        "maxLen": 4,
    }


def test_statistics_system_view(spark, analyzed) -> None:
    from lakestats.spark_view import register_statistics_view

    root, handle, whole = analyzed
    view = register_statistics_view(spark, handle, name="sales")
    rows = spark.sql(f"SELECT * FROM `{view}` ORDER BY version").collect()
    assert rows[-1]["merged_record_count"] == whole.num_rows
    city = rows[-1]["col_stats"]["city"]
    assert (city["distinct_count"], city["min"], city["max"], city["null_count"]) == (
        4,
        "kyiv",
        "rome",
        0,
    )


@pytest.mark.parametrize("local_cells", [0, reduce_local.LOCAL_CELLS])
def test_bounds_hold_when_partitions_keep_only_top_values(
    spark,
    tmp_path,
    monkeypatch: pytest.MonkeyPatch,
    local_cells: int,
) -> None:
    """Truncated partition frequencies and per-task pruning: every stored table-level
    frequency still brackets the true count (staged Spark reduction and one task)."""
    monkeypatch.setattr(reduce_local, "LOCAL_CELLS", local_cells)
    rng = np.random.default_rng(9)
    root = tmp_path / "skewed"
    parts = []
    for p in range(8):
        values = rng.zipf(1.3, 4000) % 3000
        part = pa.table(
            {"v": pa.array(values, pa.int64()), "s": pa.array((values % 997).astype(str))}
        )
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(part, root / f"p={p}" / "d.parquet")
        parts.append(part)
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark, max_frequencies=20)
    reader = StatisticsReader(StatisticsStore(str(root / "_lakestats")))
    whole = pa.concat_tables(parts)
    con = duckdb.connect()
    con.register("t", whole)
    rows = {r["column"]: r for r in reader.column_statistics(None)}
    for leaf in leaves_of(whole.schema):
        assert rows[leaf.name]["frequencies_exact"] is False
        stored = handle.frequencies(leaf.name)
        assert len(stored) == 20
        _check_upper_bounds(con, reader, leaf, _sql_path(leaf.path))
    truth = pc.value_counts(whole["v"]).to_pylist()
    best = max(truth, key=lambda d: d["counts"])
    assert stored and handle.frequencies("v")[0][0] == best["values"]


def test_exact_table_histogram_keeps_large_integers_exact(spark, tmp_path) -> None:
    """Integers beyond 2**53 (nanosecond timestamps, hashed ids) bin without float rounding."""
    base = 2**62 + 1
    root = tmp_path / "big"
    for p in range(2):
        (root / f"p={p}").mkdir(parents=True)
        values = [base + 3 * i + p for i in range(5)] * 2  # repeats: frequencies complete
        pq.write_table(pa.table({"v": pa.array(values, pa.int64())}), root / f"p={p}" / "d.parquet")
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark, bins=1000)
    [row] = handle.statistics(None, ["v"])
    assert row["histogram_exact"] is True and row["min"] == base
    bins = handle.histogram("v").rows()
    assert bins[0]["lower"] == base
    # base + 0, 1, 3, 4, ..., 12, 13, each twice: one bin per integer
    assert [b["count"] for b in bins] == [2, 2, 0] * 4 + [2, 2]
