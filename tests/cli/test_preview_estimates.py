"""Estimates are marked where a person reads statistics, exact values are not: ``lakestats
show`` without ``--json`` and the demo's table-level view, rendered and read back as text,
against the stored flags and bounds and DuckDB's exact counts."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console

import lakestats.api as ls
from lakestats import cli, demo

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def analyzed(spark, tmp_path_factory: pytest.TempPathFactory):
    """``key`` and ``price`` have too many values for the frequencies kept: their table
    distinct counts, percentiles and histograms are estimates; ``flag`` stays exact."""
    rng = np.random.default_rng(10)
    root = tmp_path_factory.mktemp("preview") / "orders"
    parts = []
    for p in range(4):
        part = pa.table(
            {
                "key": pa.array(rng.integers(0, 1_000_000, 3000), pa.int64()),
                "price": pa.array(rng.integers(0, 500_000, 3000) / 100),
                "flag": pa.array(rng.choice(["A", "N", "R"], 3000)),
            }
        )
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(part, root / f"p={p}" / "d.parquet")
        parts.append(part)
    ls.open_table(str(root)).analyze(spark=spark, max_frequencies=50)
    con = duckdb.connect()
    labelled = [t.append_column("p", pa.array([i] * t.num_rows)) for i, t in enumerate(parts)]
    con.register("t", pa.concat_tables(labelled))
    return root, con


def _show(capsys, args: list[str]) -> str:
    assert cli.main(["show", *args]) == 0
    return capsys.readouterr().out


def _line(text: str, column: str) -> str:
    [line] = [x for x in text.splitlines() if x.strip("│┃ ").startswith(column + " ")]
    return line


def test_show_marks_table_level_estimates(analyzed, capsys, monkeypatch) -> None:
    root, con = analyzed
    monkeypatch.setenv("COLUMNS", "250")
    stored = {c["name"]: c for c in json.loads(_show(capsys, [str(root), "--json"]))["columns"]}
    text = _show(capsys, [str(root)])
    for column in ("key", "price"):
        row = stored[column]
        assert row["distinct_count_exact"] is False and row["percentiles_exact"] is False
        (truth,) = con.execute(f"SELECT count(DISTINCT {column}) FROM t").fetchone()
        lower, upper = row["distinct_count_lower"], row["distinct_count_upper"]
        assert lower <= truth <= upper
        spread = max(upper - row["distinct_count"], row["distinct_count"] - lower)
        expected = f"≈{row['distinct_count']:,} ±{spread / row['distinct_count'] * 100:.1f} %"
        line = _line(text, column)
        assert expected in line, (expected, line)
        median = f"{row['p50']:.6g}" if column == "price" else str(row["p50"])
        rank = f"≈{median} ±{row['percentile_rank_error'] * 100:.1f} % rank"
        assert rank in line, (rank, line)
        assert row["histogram_exact"] is False, column
        assert "≈ " in line.split(rank)[1], line  # the re-binned histogram's sparkline
    exact = _line(text, "flag")
    (truth,) = con.execute("SELECT count(DISTINCT flag) FROM t").fetchone()
    assert stored["flag"]["distinct_count_exact"] is True and "≈" not in exact
    assert f" {truth} " in exact
    assert stored["p"]["histogram_exact"] is True and "≈" not in _line(text, "p")


def test_show_of_a_partition_marks_nothing(analyzed, capsys, monkeypatch) -> None:
    root, con = analyzed
    monkeypatch.setenv("COLUMNS", "250")
    text = _show(capsys, [str(root), "--partition", "p=1"])
    assert "≈" not in text and "±" not in text
    for column in ("key", "price"):
        (truth,) = con.execute(f"SELECT count(DISTINCT {column}) FROM t WHERE p = 1").fetchone()
        assert f" {truth:,} " in _line(text, column)  # the exact count, unmarked


def test_demo_table_level_view_marks_estimates(analyzed) -> None:
    root, con = analyzed
    console = Console(record=True, width=250)
    demo.render_table_level(ls.open_table(str(root)), 4, console)
    text = console.export_text()
    table = ls.open_table(str(root)).table_statistics()
    rows = {r["column"]: r for r in table.columns}
    key = _line(text, "key")
    assert f"≈{rows['key']['distinct_count']:,} ±" in key
    # table-level frequencies of key are lower bounds; of flag exact counts (DuckDB's)
    assert "≥" in key
    flag = _line(text, "flag")
    counts = dict(con.execute("SELECT flag, count(*) FROM t GROUP BY flag").fetchall())
    top = max(counts, key=counts.get)
    assert f"{top} ({counts[top]:,})" in flag and "≈" not in flag and "≥" not in flag


def _rows(capsys, args: list[str]) -> list[str]:
    assert cli.main(args) == 0
    return capsys.readouterr().out.splitlines()


def test_frequencies_and_histogram_text_mark_estimated_counts(analyzed, capsys) -> None:
    """``lakestats frequencies``/``histogram`` print ``≈`` before counts the stored flags
    call estimates (the table level of a truncated column), nothing before exact ones
    (a partition's own counts, a column every partition listed whole), and the counts
    themselves are the JSON answer's."""
    root, con = analyzed
    for column, exact in (("key", False), ("flag", True)):
        args = ["frequencies", str(root), "--column", column, "--top", "5"]
        lines = _rows(capsys, args)
        answer = json.loads("\n".join(_rows(capsys, [*args, "--json"])))
        counts = [r["frequency"] for r in answer["frequencies"]]
        marks = {line.split()[0].startswith("≈") for line in lines}
        assert marks == {not exact}, (column, lines)
        assert [int(line.split()[0].lstrip("≈").replace(",", "")) for line in lines] == counts
    truth = dict(con.execute("SELECT flag, count(*) FROM t WHERE p = 0 GROUP BY 1").fetchall())
    lines = _rows(capsys, ["frequencies", str(root), "--column", "flag", "--partition", "p=0"])
    assert {line.split()[1]: int(line.split()[0].replace(",", "")) for line in lines} == truth
    table_bins = _rows(capsys, ["histogram", str(root), "--column", "price"])
    assert table_bins and all(line.split()[-1].startswith("≈") for line in table_bins)
    partition_bins = _rows(capsys, ["histogram", str(root), "--column", "price", "--partition",
                                    "p=1"])
    counts = [int(line.split()[-1].replace(",", "")) for line in partition_bins]  # no mark
    (rows,) = con.execute("SELECT count(*) FROM t WHERE p = 1").fetchone()
    assert sum(counts) == rows
