"""What a person reads in a terminal or a pipe: every text output fits 80 columns without
cutting a value to nothing, counts read one way (``12,000``), histogram edges show the
digits that tell them apart and the last bin is closed, a stale ``show`` names the
snapshot its statistics describe, ``stats`` prints the columns asked for. References:
DuckDB over the same data, the JSON answers of the same commands."""

from __future__ import annotations

import json
import re

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake

import lakestats.api as ls
from lakestats import cli, display

pytestmark = pytest.mark.spark
ROWS = 12_000


@pytest.fixture(scope="module")
def delta(spark, tmp_path_factory: pytest.TempPathFactory):
    """A Delta table of 12,000 rows in 3 partitions with a wide row (long names, long
    strings), analyzed at version 0."""
    rng = np.random.default_rng(7)
    path = str(tmp_path_factory.mktemp("text") / "orders")
    rows = pa.table(
        {
            "region": pa.array(rng.choice(["north", "south", "east"], ROWS)),
            "an_unusually_long_column_name_for_quantities": rng.integers(0, 1000, ROWS),
            "price": np.round(rng.uniform(0, 50, ROWS), 2),
            "comment": pa.array([f"a rather long comment number {i:08d}" for i in range(ROWS)]),
        }
    )
    write_deltalake(path, rows, partition_by=["region"])
    ls.open_table(path).analyze(spark=spark, bins=20)
    con = duckdb.connect()
    con.register("t", rows)
    return path, con


def _run(capsys, args: list[str]) -> str:
    capsys.readouterr()
    assert cli.main(args) == 0
    return capsys.readouterr().out


def _fits(text: str, width: int = 80) -> None:
    too_long = [line for line in text.splitlines() if len(line) > width]
    assert not too_long, too_long


def test_show_fits_80_columns_in_a_pipe(delta, capsys, monkeypatch) -> None:
    path, con = delta
    monkeypatch.setenv("COLUMNS", "80")
    text = _run(capsys, ["show", path])
    _fits(text)
    header = next(line for line in text.splitlines() if line.lstrip().startswith("column"))
    for kept in ("column", "nulls", "distinct", "min", "max"):
        assert kept in header  # dropped by priority, these stay
    assert "left out at 80 columns" in text
    for name in ("region", "price", "comment"):
        assert any(line.lstrip().startswith(name) for line in text.splitlines())
    (distinct,) = con.execute("SELECT count(DISTINCT price) FROM t").fetchone()
    price = next(line for line in text.splitlines() if line.lstrip().startswith("price "))
    assert f"{distinct:,}" in price or "≈" in price
    assert f"{ROWS:,} rows" in " ".join(text.split())  # separators, as everywhere (wrapped)
    wide = _run(capsys, ["show", path, "--partition", "region=north"])
    _fits(wide)


def test_stale_title_names_the_statistics_snapshot(spark, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    path = str(tmp_path / "orders")
    rows = pa.table({"region": ["a", "b"] * 600, "n": list(range(1_200))})
    write_deltalake(path, rows, partition_by=["region"])
    ls.open_table(path).analyze(spark=spark)
    before = ls.open_table(path).table_statistics()
    assert not before.stale and before.row_count == 1_200
    write_deltalake(path, rows.slice(0, 1), mode="append", partition_by=["region"])
    level = ls.open_table(path).table_statistics()
    assert level.stale and level.row_count == 1_200  # the statistics' own rows
    text = " ".join(_run(capsys, ["show", path]).split())
    assert "snapshot 0, 1,200 rows" in text  # not the new snapshot with the old rows
    assert "[stale: the table is at snapshot 1, 1 snapshots behind]" in text
    shown = json.loads(_run(capsys, ["show", path, "--json"]))
    assert (shown["snapshot_id"], shown["statistics_snapshot_id"]) == (1, 0)


def test_stats_text_prints_the_columns_asked_for(delta, capsys, monkeypatch) -> None:
    path, con = delta
    monkeypatch.setenv("COLUMNS", "80")
    args = ["stats", path, "--columns", "price,region"]
    text = _run(capsys, [*args, "--by-partition"])
    _fits(text)
    data = json.loads(_run(capsys, [*args, "--by-partition", "--json"]))
    lines = text.splitlines()
    for column in data["table"]["columns"]:
        assert any(re.match(rf"\s*\(table\)\s+{column['name']}\s", x) for x in lines)
    for part in data["partitions"]:
        (low, high) = con.execute(
            "SELECT min(price), max(price) FROM t WHERE region = ?", [part["partition"]["region"]]
        ).fetchone()
        [line] = [x for x in lines if x.lstrip().startswith(part["name"]) and " price " in x]
        assert display.number(low) in line and display.number(high) in line


def test_histogram_edges_read_and_last_bin_closed(delta, capsys) -> None:
    path, con = delta
    text = _run(capsys, ["histogram", path, "--column", "price"])
    answer = json.loads(_run(capsys, ["histogram", path, "--column", "price", "--json"]))
    lines = text.splitlines()
    assert len(lines) == len(answer["bins"]) == answer["histogram_bins"]
    assert lines[-1].startswith("[") and "]" in lines[-1].split()[1]
    assert all(line.split()[1].endswith(")") for line in lines[:-1])
    edges = [line.split("  ")[0] for line in lines]
    assert len(set(edges)) == len(edges)
    assert max(len(e) for e in edges) < 30  # not 17 digits per edge
    counts = [int(line.split()[-1].replace(",", "")) for line in lines]
    assert counts == [b["count"] for b in answer["bins"]]
    (non_null,) = con.execute("SELECT count(price) FROM t").fetchone()
    assert sum(counts) == non_null
    part = _run(capsys, ["histogram", path, "--column", "price", "--start", "0", "--stop", "3"])
    assert all(line.split()[1].endswith(")") for line in part.splitlines())  # not the last


def test_bin_labels_round_to_what_tells_edges_apart() -> None:
    bins = [(0.1 + 0.2, 0.6000000000000001), (0.6000000000000001, 0.9), (0.9, 0.9)]
    assert display.bin_labels(bins) == ["[0.3, 0.6)", "[0.6, 0.9)", "[0.9, 0.9]"]
    close = [(1.0, 1.0001), (1.0001, 2.0)]
    assert display.bin_labels(close) == ["[1, 1.0001)", "[1.0001, 2]"]
    assert display.count(600572) == "600,572"


@pytest.mark.parametrize("format_name", ["iceberg", "delta", "parquet"])
def test_types_shown_as_the_tables_own(format_name, spark, tmp_path, capsys, monkeypatch) -> None:
    """``show`` prints each column's type as the table's format writes it beside the Arrow
    type; the reference is the format's own schema (pyiceberg, deltalake, the Parquet
    footer)."""
    import pyarrow.parquet as pq

    monkeypatch.setenv("COLUMNS", "200")
    rows = pa.table({
        "k": pa.array([1, 2], pa.int64()),
        "at": pa.array([1, 2], pa.timestamp("us", tz="UTC")),
        "s": ["a", "b"],
    })
    if format_name == "iceberg":
        from lakestats.formats.iceberg import load_catalog

        catalog = load_catalog(warehouse=str(tmp_path))
        catalog.create_namespace("db")
        native = catalog.create_table("db.t", schema=rows.schema)
        native.append(rows)
        name, extra = "db.t", ["--warehouse", str(tmp_path)]
        truth = {f.name: str(f.field_type) for f in native.schema().fields}
    elif format_name == "delta":
        from deltalake import DeltaTable

        name, extra = str(tmp_path / "t"), []
        write_deltalake(name, rows)
        truth = {f.name: f.type.type for f in DeltaTable(name).schema().fields}
    else:
        (tmp_path / "t").mkdir()
        pq.write_table(rows, tmp_path / "t" / "0.parquet")
        name, extra = str(tmp_path / "t"), []
        schema = pq.ParquetFile(tmp_path / "t" / "0.parquet").schema
        truth = {}
        for i in range(len(schema)):
            column = schema.column(i)
            logical = column.logical_type.type
            truth[column.path] = column.physical_type if logical == "NONE" else logical
    ls.open_table(name, warehouse=extra[1] if extra else None).analyze(spark=spark)
    shown = json.loads(_run(capsys, ["show", name, *extra, "--json"]))
    assert {c["name"]: c["table_type"] for c in shown["columns"]} == truth
    text = _run(capsys, ["show", name, *extra])
    line = next(x for x in text.splitlines() if x.lstrip().startswith("at "))
    assert f"{truth['at']} (timestamp[us, tz=UTC])" in line
