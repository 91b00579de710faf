"""Paimon tables (Java-written fixtures in ../shared/fixtures/paimon, and tables written here
with pypaimon) analyzed through the CLI equal what pypaimon's own reader returns, at the
latest and at an older snapshot; append tables take the direct pyarrow path."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from lakestats import cli
from lakestats.formats import open_table
from lakestats.formats.paimon import PaimonReader, PaimonTableFormat
from tests.reference import assert_shown_matches

pytestmark = pytest.mark.spark

FIXTURES = ["test_pk_full_text_golden", "test_pk_global_index_golden", "test_pk_vector_golden"]


def pypaimon_read(path: str, snapshot_id: int | None = None) -> pa.Table:
    """The rows pypaimon's own reader returns for the table (at a snapshot)."""
    from pypaimon.table.file_store_table import FileStoreTable

    table = FileStoreTable.from_path(path)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def analyze_show(capsys, path: str, root: str, snapshot_id: int | None = None) -> dict:
    """``lakestats analyze [--snapshot N]`` then ``lakestats show --json``."""
    extra = [] if snapshot_id is None else ["--snapshot", str(snapshot_id)]
    assert cli.main(["analyze", path, "--stats-root", root, *extra]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert cli.main(["show", path, "--stats-root", root, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def check(capsys, path: str, root: str, snapshot_id: int | None = None) -> dict:
    shown = analyze_show(capsys, path, root, snapshot_id)
    expected = pypaimon_read(path, snapshot_id)
    assert [c["name"] for c in shown["columns"]] == expected.column_names
    # a VECTOR (fixed-size list of floats) is a nested column to lakestats: counts and
    # lengths, no min or max (DuckDB would order the arrays lexicographically)
    nested = [f.name for f in expected.schema if pa.types.is_nested(f.type)]
    assert_shown_matches(shown, expected.drop_columns(nested))
    for row in (c for c in shown["columns"] if c["name"] in nested):
        column = expected.column(row["name"])
        assert (row["row_count"], row["null_count"]) == (len(column), column.null_count)
        assert row["min"] is None and row["max"] is None
    return shown


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_matches_pypaimon(spark, fixtures_dir: Path, tmp_path: Path, capsys, name) -> None:
    path = str(fixtures_dir / "paimon" / "warehouse" / "default.db" / name)
    table = open_table(path)
    assert isinstance(table, PaimonTableFormat)
    snapshots = table.snapshots()
    latest = table.current_snapshot_id()
    assert latest == snapshots[-1].snapshot_id and [s.schema_id for s in snapshots] == [0] * len(
        snapshots
    )
    shown = check(capsys, path, str(tmp_path / "latest"))
    assert shown["row_count"] == pypaimon_read(path).num_rows > 0
    # each column's type as Paimon wrote it in the table's schema file
    schema = json.loads((Path(path) / "schema" / "schema-0").read_text())
    written = {f["name"]: f["type"] for f in schema["fields"]}
    table_types = {c["name"]: c["table_type"] for c in shown["columns"]}
    assert table_types.keys() == written.keys()
    for column, kind in written.items():  # a nested type is a JSON object in the file
        expected = kind if isinstance(kind, str) else kind["type"]
        assert table_types[column].startswith(expected), (column, kind)
    # an older snapshot that has rows (a level-0 commit is invisible with deletion vectors)
    older = (
        max(
            s.snapshot_id
            for s in snapshots
            if s.snapshot_id < latest and pypaimon_read(path, s.snapshot_id).num_rows
        )
        if len(snapshots) > 2
        else snapshots[0].snapshot_id
    )
    check(capsys, path, str(tmp_path / "older"), older)


def commit(table, data: pa.Table) -> None:
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(data)
    builder.new_commit().commit(write.prepare_commit())
    write.close()


def catalog(tmp_path: Path):
    from pypaimon import CatalogFactory

    warehouse = CatalogFactory.create({"warehouse": str(tmp_path / "warehouse")})
    warehouse.create_database("default", True)
    return warehouse


APPEND = pa.schema(
    [
        ("id", pa.int64()),
        ("day", pa.date32()),
        ("amount", pa.float64()),
        ("price", pa.decimal128(12, 2)),
        ("name", pa.string()),
        ("at", pa.timestamp("us")),
        ("ok", pa.bool_()),
    ]
)


def append_rows(ids: range, days: list[dt.date | None]) -> pa.Table:
    return pa.table(
        {
            "id": list(ids),
            "day": [days[i % len(days)] for i in ids],
            "amount": [None if i % 7 == 0 else i * 1.5 for i in ids],
            "price": [decimal.Decimal(i).scaleb(-2) for i in ids],
            "name": [None if i % 5 == 0 else f"n{i % 11}" for i in ids],
            "at": [dt.datetime(2024, 1, 1) + dt.timedelta(hours=i) for i in ids],
            "ok": [i % 3 == 0 for i in ids],
        },
        schema=APPEND,
    )


def test_append_table_fast_path(spark, tmp_path: Path, capsys) -> None:
    from pypaimon import Schema

    warehouse = catalog(tmp_path)
    schema = Schema.from_pyarrow_schema(APPEND, partition_keys=["day"])
    warehouse.create_table("default.events", schema, False)
    table = warehouse.get_table("default.events")
    d1, d2 = dt.date(2024, 1, 1), dt.date(2024, 1, 2)
    commit(table, append_rows(range(0, 100), [d1, d2]))
    commit(table, append_rows(range(100, 160), [d2, None]))
    path = str(tmp_path / "warehouse" / "default.db" / "events")

    shown = check(capsys, path, str(tmp_path / "latest"))
    assert shown["row_count"] == 160
    check(capsys, path, str(tmp_path / "older"), 1)

    fmt = open_table(path)
    plans = fmt.plan()
    assert [p.name for p in plans] == [
        "day=2024-01-01",
        "day=2024-01-02",
        "day=__DEFAULT_PARTITION__",
    ]
    assert [p.values for p in plans] == [
        {"day": "2024-01-01"},
        {"day": "2024-01-02"},
        {"day": None},
    ]
    assert [p.row_count for p in plans] == [50, 80, 30]  # exact: no merge
    assert len(plans[1].data_files) == 2  # one file per commit
    reader = fmt.reader()
    assert isinstance(reader, PaimonReader) and reader.merged == frozenset()  # all raw
    slices = [s for p in plans for s in fmt.slices(p, 1)]
    assert len(slices) == 4  # one per data file, read directly
    one = reader.read(slices[0], ["name", "id"])
    assert one.column_names == ["id", "name"]  # table order, only the columns asked for
    assert fmt.snapshots()[0].snapshot_id == 1 and fmt.schema_id(1) == 0


PK = pa.schema(
    [
        ("id", pa.int64()),
        ("region", pa.string()),
        ("score", pa.int32()),
        ("note", pa.string()),
        ("op", pa.string()),
    ]
)


def pk_rows(rows: list[tuple]) -> pa.Table:
    return pa.table(list(zip(*rows, strict=True)), schema=PK)


def test_primary_key_table_updates_and_deletes(spark, tmp_path: Path, capsys) -> None:
    from pypaimon import Schema

    warehouse = catalog(tmp_path)
    options = {"bucket": "2", "rowkind.field": "op"}
    schema = Schema.from_pyarrow_schema(
        PK, partition_keys=["region"], primary_keys=["id", "region"], options=options
    )
    warehouse.create_table("default.users", schema, False)
    table = warehouse.get_table("default.users")
    first = [(i, ["eu", "us"][i % 2], i * 10, f"v1-{i}", "+I") for i in range(40)]
    commit(table, pk_rows(first))
    commit(table, pk_rows([(i, ["eu", "us"][i % 2], -i, None, "+U") for i in range(0, 40, 3)]))
    commit(table, pk_rows([(i, ["eu", "us"][i % 2], 0, "gone", "-D") for i in range(0, 40, 4)]))
    commit(table, pk_rows([(i, "apac", i, f"new-{i}", "+I") for i in range(100, 110)]))
    path = str(tmp_path / "warehouse" / "default.db" / "users")

    shown = check(capsys, path, str(tmp_path / "latest"))
    assert shown["row_count"] == 40 - 10 + 10  # merged by key: updates replace, deletes remove
    check(capsys, path, str(tmp_path / "older"), 2)

    fmt = open_table(path)
    plans = {p.name: p for p in fmt.plan()}
    assert set(plans) == {"region=apac", "region=eu", "region=us"}
    reader = fmt.reader()
    assert reader.merged == {"region=eu", "region=us"}  # several level-0 files: merged by key
    assert plans["region=eu"].row_count is None  # not known before merging
    assert plans["region=apac"].row_count == 10
    merged = fmt.slices(plans["region=eu"], 1)
    assert len(merged) == 1 and merged[0].files == plans["region=eu"].data_files
    rows = pickle.loads(pickle.dumps(reader)).read(merged[0], None)
    assert rows.num_rows == 10 and "_VALUE_KIND" not in rows.column_names


def test_deletion_vectors_change_the_fingerprint(spark, tmp_path: Path, capsys) -> None:
    """pypaimon writes deletion vectors for data-evolution append tables (deletes by row)."""
    from pypaimon import Schema

    warehouse = catalog(tmp_path)
    options = {
        "row-tracking.enabled": "true",
        "data-evolution.enabled": "true",
        "deletion-vectors.enabled": "true",
    }
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("v", pa.float64())])
    warehouse.create_table(
        "default.dv", Schema.from_pyarrow_schema(schema, ["region"], options=options), False
    )
    table = warehouse.get_table("default.dv")
    regions = ["eu", "us"]
    data = {"id": list(range(20)), "region": [regions[i % 2] for i in range(20)]}
    commit(table, pa.table({**data, "v": [i / 2 for i in range(20)]}, schema=schema))
    before = {p.name: p.fingerprint() for p in open_table(str(Path(table.table_path))).plan()}
    table = warehouse.get_table("default.dv")
    builder = table.new_batch_write_builder()
    predicates = table.new_read_builder().new_predicate_builder()
    builder.new_commit().commit(
        builder.new_update().delete_by_predicate(predicates.less_than("id", 6))
    )
    path = table.table_path

    shown = check(capsys, path, str(tmp_path / "latest"))
    assert shown["row_count"] == 14
    check(capsys, path, str(tmp_path / "older"), 1)
    plans = open_table(path).plan()
    assert all(p.delete_files for p in plans) and [p.row_count for p in plans] == [7, 7]
    assert all(before[p.name] != p.fingerprint() for p in plans)


def test_missing_snapshot_is_one_line(fixtures_dir: Path, tmp_path: Path, capsys) -> None:
    path = str(fixtures_dir / "paimon" / "warehouse" / "default.db" / FIXTURES[0])
    root = str(tmp_path / "stats")
    assert cli.main(["analyze", path, "--stats-root", root, "--snapshot", "99"]) != 0
    assert "snapshot 99" in capsys.readouterr().err
