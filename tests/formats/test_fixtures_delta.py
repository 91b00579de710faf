"""Delta tables written by Spark and delta-rs (../shared/fixtures/delta), compared with what
deltalake's own reader returns; tables needing features not supported yet are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from lakestats import cli
from tests.reference import analyze_and_show, assert_shown_matches, show_json

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    "name",
    ["delta-0.8.0-partitioned", "delta-2.2.0-partitioned-types", "simple_table_with_checkpoint"],
)
def test_delta_table_matches_deltalake(
    spark,
    fixtures_dir: Path,
    tmp_path: Path,
    capsys,
    name: str,
) -> None:
    from deltalake import DeltaTable

    path = str(fixtures_dir / "delta" / name)
    shown = analyze_and_show(capsys, path, str(tmp_path / "stats"))
    expected = pa.table(DeltaTable(path).to_pyarrow_table())
    assert [c["name"] for c in shown["columns"]] == expected.column_names
    assert_shown_matches(shown, expected)


def test_delta_time_travel(spark, fixtures_dir: Path, tmp_path: Path, capsys) -> None:
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
    name: str,
) -> None:
    from deltalake import DeltaTable, QueryBuilder

    path = str(fixtures_dir / "delta" / name)
    shown = analyze_and_show(capsys, path, str(tmp_path / "stats"))
    result = QueryBuilder().register("t", DeltaTable(path)).execute("SELECT * FROM t")
    expected = pa.table(result.read_all())  # 8 live of 10 physical rows with DVs
    # logical names, not physical ones
    assert {c["name"] for c in shown["columns"]} == set(expected.column_names)
    assert_shown_matches(shown, expected)


def test_delta_as_of_timestamp(spark, fixtures_dir: Path, tmp_path: Path, capsys) -> None:
    """``--as-of`` picks the version current at that time (deltalake's history)."""
    import datetime as dt

    from deltalake import DeltaTable

    path = str(fixtures_dir / "delta" / "simple_table_with_checkpoint")
    stamps = {h["version"]: h["timestamp"] for h in DeltaTable(path).history()}
    between = stamps[5] + (stamps[6] - stamps[5]) // 2  # after version 5, before 6
    iso = dt.datetime.fromtimestamp(between / 1000, dt.UTC).isoformat()
    root = str(tmp_path / "stats")
    assert cli.main(["analyze", path, "--stats-root", root, "--as-of", iso, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    expected = pa.table(DeltaTable(path, version=5).to_pyarrow_table())
    assert (summary["snapshot_id"], summary["row_count"]) == (5, expected.num_rows)
    shown = show_json(capsys, ["show", path, "--stats-root", root, "--as-of", str(between)])
    assert shown["snapshot_id"] == 5 and not shown["stale"]
    assert_shown_matches(shown, expected)

    before = str(stamps[0] - 1)
    assert cli.main(["analyze", path, "--stats-root", root, "--as-of", before]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no snapshot at or before" in err[0], err
    with pytest.raises(SystemExit) as exit_info:  # argparse: one error line
        cli.main(["show", path, "--stats-root", root, "--as-of", "yesterday"])
    assert exit_info.value.code != 0 and "ISO-8601" in capsys.readouterr().err


def test_deletion_vectors_keep_the_fast_path(fixtures_dir: Path) -> None:
    """Files with a deletion vector are read directly and filtered by its keep mask; the
    plan knows the live row count and its fingerprint covers the vector."""
    from deltalake import DeltaTable, QueryBuilder

    from lakestats.formats import open_table
    from lakestats.formats.base import Slice
    from lakestats.formats.delta import DV_MARKER, DeltaReader

    path = str(fixtures_dir / "delta" / "table-with-dv-small")
    table = open_table(path)
    reader = table.reader()
    assert isinstance(reader, DeltaReader)  # not delta-rs's engine
    (plan,) = table.plan()
    live = QueryBuilder().register("t", DeltaTable(path)).execute("SELECT * FROM t").read_all()
    assert plan.row_count == pa.table(live).num_rows == 8
    assert [f.path for f in plan.delete_files] == [plan.data_files[0].path + DV_MARKER]
    rows = reader.read(Slice(plan, plan.data_files), None)
    assert sorted(rows.to_pylist(), key=str) == sorted(pa.table(live).to_pylist(), key=str)


def test_deletion_vectors_apply_under_percent_encoded_directories(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    """Spark writes ':' in partition directories as '%3A'; delta-rs spells that file's
    deletion vector URL encoded once more. The vector must still apply (8 live rows)."""
    import shutil

    from deltalake import DeltaTable, QueryBuilder

    from lakestats.formats import open_table
    from lakestats.formats.base import Slice

    source = fixtures_dir / "delta" / "table-with-dv-small"
    copy = tmp_path / "dv"
    shutil.copytree(source, copy)
    name = next(p.name for p in source.glob("part-*.parquet"))
    (copy / "x y%3A").mkdir()
    (copy / name).rename(copy / "x y%3A" / name)
    for log in (copy / "_delta_log").glob("*.json"):
        log.write_text(log.read_text().replace(f'"path":"{name}"', f'"path":"x%20y%253A/{name}"'))
    live = pa.table(
        QueryBuilder().register("t", DeltaTable(str(copy))).execute("SELECT * FROM t").read_all()
    )
    assert live.num_rows == 8
    table = open_table(str(copy))
    (plan,) = table.plan()
    assert plan.row_count == 8 and len(plan.delete_files) == 1
    rows = table.reader().read(Slice(plan, plan.data_files), None)
    assert sorted(rows.to_pylist(), key=str) == sorted(live.to_pylist(), key=str)


def test_column_mapping_by_name_keeps_the_fast_path(fixtures_dir: Path) -> None:
    """Files hold physical names; the direct reader relabels them to the logical schema."""
    from deltalake import DeltaTable, QueryBuilder

    from lakestats.formats import open_table
    from lakestats.formats.base import Slice
    from lakestats.formats.delta import DeltaReader

    path = str(fixtures_dir / "delta" / "table_with_column_mapping")
    table = open_table(path)
    reader = table.reader()
    assert isinstance(reader, DeltaReader) and reader.physical
    rows = pa.concat_tables(
        [reader.read(Slice(p, p.data_files), None) for p in table.plan()]
    ).select(["Company Very Short", "Super Name"])
    live = pa.table(
        QueryBuilder().register("t", DeltaTable(path)).execute("SELECT * FROM t").read_all()
    )
    assert sorted(rows.to_pylist(), key=str) == sorted(live.to_pylist(), key=str)


def test_relabel_renames_nested_fields_at_every_depth() -> None:
    """Struct fields inside structs, lists and maps get their logical names back."""
    from lakestats.formats.delta_columns import physical_type, relabel

    def named(name: str, spec: object) -> dict:
        return {
            "name": name,
            "type": spec,
            "metadata": {"delta.columnMapping.physicalName": f"p_{name}"},
        }

    inner = {"type": "struct", "fields": [named("x", "string")]}
    spec = {
        "type": "struct",
        "fields": [
            named("s", inner),
            named("l", {"type": "array", "elementType": inner}),
            named("m", {"type": "map", "keyType": "string", "valueType": inner}),
        ],
    }
    inner_type = pa.struct([pa.field("x", pa.string())])
    logical = pa.struct(
        [
            pa.field("s", inner_type),
            pa.field("l", pa.list_(inner_type)),
            pa.field("m", pa.map_(pa.string(), inner_type)),
        ]
    )
    physical = physical_type(spec, logical)
    assert [f.name for f in physical] == ["p_s", "p_l", "p_m"]
    assert physical.field("p_s").type.field(0).name == "p_x"
    stored = [
        {"p_s": {"p_x": "a"}, "p_l": [{"p_x": "b"}, None], "p_m": [("k", {"p_x": "c"})]},
        None,
        {"p_s": None, "p_l": [], "p_m": None},
    ]
    expected = [
        {"s": {"x": "a"}, "l": [{"x": "b"}, None], "m": [("k", {"x": "c"})]},
        None,
        {"s": None, "l": [], "m": None},
    ]
    array = pa.array(stored, type=physical)
    for start in (0, 1):  # whole and sliced
        out = relabel(array.slice(start), logical)
        assert out.type == logical and out.to_pylist() == expected[start:]
