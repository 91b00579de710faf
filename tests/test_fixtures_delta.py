"""Delta tables written by Spark and delta-rs (../shared/fixtures/delta), compared with what
deltalake's own reader returns; tables needing features not supported yet are refused."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from lakestats import cli
from lakestats.stats.keys import to_json
from lakestats.stats.leaves import leaves_of
from tests.reference import _sql_path

pytestmark = pytest.mark.spark


def _analyze_and_show(capsys: pytest.CaptureFixture, path: str, root: str) -> dict:
    assert cli.main(["analyze", path, "--stats-root", root]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert cli.main(["show", path, "--stats-root", root, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _assert_matches(shown: dict, expected: pa.Table) -> None:
    """Row count, and per column null count, min and max equal DuckDB's over ``expected``."""
    assert shown["row_count"] == expected.num_rows
    con = duckdb.connect()
    con.register("t", expected)
    rows = {c["name"]: c for c in shown["columns"]}
    for leaf in leaves_of(expected.schema):
        col = _sql_path(leaf.path)
        total, non_null, lo, hi = con.execute(
            f"SELECT count(*), count({col}), min({col}), max({col}) FROM t"
        ).fetchone()
        row = rows[leaf.name]
        assert (row["row_count"], row["null_count"]) == (total, total - non_null), leaf.name
        assert (row["min"], row["max"]) == (to_json(lo), to_json(hi)), leaf.name


@pytest.mark.parametrize(
    "name",
    ["delta-0.8.0-partitioned", "delta-2.2.0-partitioned-types", "simple_table_with_checkpoint"],
)
def test_delta_table_matches_deltalake(
    spark,
    fixtures_dir: Path,
    tmp_path: Path,
    capsys,  # noqa: ANN001
    name: str,
) -> None:
    from deltalake import DeltaTable

    path = str(fixtures_dir / "delta" / name)
    shown = _analyze_and_show(capsys, path, str(tmp_path / "stats"))
    expected = pa.table(DeltaTable(path).to_pyarrow_table())
    assert [c["name"] for c in shown["columns"]] == expected.column_names
    _assert_matches(shown, expected)


def test_delta_time_travel(spark, fixtures_dir: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from deltalake import DeltaTable

    path = str(fixtures_dir / "delta" / "simple_table_with_checkpoint")
    root = str(tmp_path / "stats")
    assert cli.main(["analyze", path, "--stats-root", root, "--snapshot", "5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["snapshot_id"] == 5
    assert summary["row_count"] == pa.table(DeltaTable(path, version=5).to_pyarrow_table()).num_rows


@pytest.mark.parametrize("name", ["table-with-dv-small", "table_with_column_mapping"])
def test_deletion_vectors_and_column_mapping_read_as_delta_rs_reads_them(
    spark,
    fixtures_dir: Path,
    tmp_path: Path,
    capsys,
    name: str,  # noqa: ANN001
) -> None:
    from deltalake import DeltaTable, QueryBuilder

    path = str(fixtures_dir / "delta" / name)
    shown = _analyze_and_show(capsys, path, str(tmp_path / "stats"))
    result = QueryBuilder().register("t", DeltaTable(path)).execute("SELECT * FROM t")
    expected = pa.table(result.read_all())  # 8 live of 10 physical rows with DVs
    # logical names, not physical ones
    assert {c["name"] for c in shown["columns"]} == set(expected.column_names)
    _assert_matches(shown, expected)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("hudi/v6_nonpartitioned", "Hudi"),
        ("paimon/warehouse/default.db/test_pk_vector_golden", "Paimon"),
    ],
)
def test_formats_not_supported_yet_are_refused(
    fixtures_dir: Path, tmp_path: Path, capsys, path: str, kind: str
) -> None:
    code = cli.main(["analyze", str(fixtures_dir / path), "--stats-root", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and kind in err[0], err
