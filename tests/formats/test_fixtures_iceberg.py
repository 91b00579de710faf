"""Iceberg tables written by Spark (../shared/fixtures/iceberg), analyzed and compared with
what pyiceberg's reader returns, or, where it refuses, with the rows the spec defines."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats import cli
from lakestats.stats.leaves import leaves_of
from tests.reference import _close, _sql_path

pytestmark = pytest.mark.spark

TABLES = {
    "partition_integer": "data/persistent/partition_integer",
    "column_mapping": "data/persistent/column_mapping/warehouse/default.db/my_table",
    "partition_timestamptz": (
        "data/persistent/partition_timestamptz/default.db/partition_timestamptz"
    ),
}


def _expected(path: str) -> pa.Table:
    """pyiceberg's rows; for identity partitions missing from the files, the files' rows
    plus the partition value from the manifest (what the Iceberg spec says they hold)."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    from lakestats.formats.iceberg import IcebergTableFormat

    table = IcebergTableFormat.from_path(path)._table
    try:
        return table.scan().to_arrow()
    except Exception:  # noqa: BLE001 - pyiceberg refuses: rebuild from files + metadata
        target = schema_to_pyarrow(table.schema(), include_field_ids=False)
        spec = table.spec()
        parts = []
        for task in table.scan().plan_files():
            data = pq.read_table(task.file.file_path)
            for position, field in enumerate(spec.fields):
                name = table.schema().find_field(field.source_id).name
                if name not in data.column_names:
                    value = pa.array([task.file.partition[position]], target.field(name).type)[0]
                    data = data.append_column(name, pa.repeat(value, data.num_rows))
            parts.append(data.select(target.names).cast(target))
        return pa.concat_tables(parts)


@pytest.mark.parametrize("name", list(TABLES))
def test_fixture_table_matches_its_reader(
    spark,
    fixtures_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys,
    name: str,
) -> None:
    monkeypatch.chdir(fixtures_dir / "iceberg")  # the tables store relative locations
    path = TABLES[name]
    root = str(tmp_path / "stats")
    assert cli.main(["analyze", path, "--stats-root", root]) == 0
    capsys.readouterr()
    assert cli.main(["show", path, "--stats-root", root, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = _expected(path)
    assert shown["row_count"] == expected.num_rows
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("t", expected)
    rows = {c["name"]: c for c in shown["columns"]}
    for leaf in leaves_of(expected.schema):
        col = _sql_path(leaf.path)
        row = rows[leaf.name]
        total, non_null = con.execute(f"SELECT count(*), count({col}) FROM t").fetchone()
        assert (row["row_count"], row["null_count"]) == (total, total - non_null), leaf.name
        if str(leaf.type).startswith(("list", "map", "large_list")):
            continue
        lo, hi = con.execute(f"SELECT min({col}), max({col}) FROM t").fetchone()
        from lakestats.stats.keys import to_json

        assert row["min"] == to_json(lo) or _close(row["min"], lo), (leaf.name, row["min"], lo)
        assert row["max"] == to_json(hi) or _close(row["max"], hi), (leaf.name, row["max"], hi)


EQUALITY = "data/persistent/equality_deletes/warehouse/mydb"


def _spec_rows(path: str, snapshot_id: int) -> tuple[pa.Table, int]:
    """The rows the Iceberg spec says a snapshot holds, from its manifests and files read
    with pyarrow: a data row is deleted by an equality delete file with a greater sequence
    number, in an unpartitioned spec or the same partition, whose key columns equal it
    (null equal to null). Independent of lakestats's planner and join. Also returns the
    number of rows in the data files."""
    from lakestats.formats.iceberg import IcebergTableFormat

    table = IcebergTableFormat.from_path(path)._table
    schema = table.schema()
    con = duckdb.connect()
    data, deletes = [], []
    for manifest in table.snapshot_by_id(snapshot_id).manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            f = entry.data_file
            rows = pq.ParquetFile(f.file_path).read()  # no hive-path columns
            partition = str(f.partition) if table.specs()[f.spec_id].fields else ""
            if f.content.value == 0:
                data.append((rows, entry.sequence_number, partition))
            else:
                assert f.content.value == 2, "fixture has equality deletes only"
                names = [schema.find_column_name(i) for i in f.equality_ids]
                deletes.append((rows.select(names), entry.sequence_number, partition, names))
    kept = []
    for rows, sequence, partition in data:
        con.register("d", rows)
        where = []
        for index, (keys, d_seq, d_part, names) in enumerate(deletes):
            if d_seq <= sequence or (d_part and d_part != partition):
                continue
            con.register(f"x{index}", keys)
            same = " AND ".join(f'x."{n}" IS NOT DISTINCT FROM d."{n}"' for n in names)
            where.append(f"NOT EXISTS (SELECT 1 FROM x{index} x WHERE {same})")
        sql = "SELECT * FROM d" + (" WHERE " + " AND ".join(where) if where else "")
        kept.append(con.sql(sql).to_arrow_table())
    return pa.concat_tables(kept), sum(rows.num_rows for rows, _, _ in data)


@pytest.mark.parametrize("name", ["mytable", "mytable_partitioned"])
def test_equality_deletes_applied_as_the_spec_says(
    spark,
    fixtures_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys,
    name: str,
) -> None:
    from lakestats.formats.iceberg import IcebergTableFormat
    from tests.reference import assert_shown_matches

    monkeypatch.chdir(fixtures_dir / "iceberg")
    path = f"{EQUALITY}/{name}"
    metadata = IcebergTableFormat.from_path(path)._table.metadata
    snapshots = [s.snapshot_id for s in metadata.snapshots]
    root = str(tmp_path / "stats")
    for snapshot in (snapshots[2], snapshots[-1]):  # after two deletes, and the latest
        code = cli.main(["analyze", path, "--stats-root", root, "--snapshot", str(snapshot)])
        assert code == 0, capsys.readouterr().err
        capsys.readouterr()
        assert (
            cli.main(["show", path, "--stats-root", root, "--snapshot", str(snapshot), "--json"])
            == 0
        )
        shown = json.loads(capsys.readouterr().out)
        expected, physical = _spec_rows(path, snapshot)
        assert shown["snapshot_id"] == snapshot and not shown["stale"]
        assert expected.num_rows < physical  # the deletes removed rows
        assert_shown_matches(shown, expected)
