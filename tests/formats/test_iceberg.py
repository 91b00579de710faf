"""Iceberg tables through the embedded SQLite catalog and by path, checked against the
rows pyiceberg's own reader returns (and DuckDB over them)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakestats import cli
from lakestats.formats.iceberg import load_catalog
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader
from tests.conftest import mixed_table
from tests.reference import check_partition

pytestmark = pytest.mark.spark


def _iceberg_data(n: int, seed: int) -> pa.Table:
    table = mixed_table(n, seed).drop_columns(["nested", "nothing"])  # no null type in v2
    table = table.append_column("region", pc.if_else(pc.less(table["id"], n // 3), "east", "west"))
    return table


@pytest.fixture(scope="module")
def iceberg_table(tmp_path_factory: pytest.TempPathFactory):
    from pyiceberg.transforms import IdentityTransform, YearTransform

    warehouse = tmp_path_factory.mktemp("warehouse")
    catalog = load_catalog(warehouse=str(warehouse))
    catalog.create_namespace("db")
    first = _iceberg_data(600, seed=1)
    table = catalog.create_table("db.events", schema=first.schema)
    with table.update_spec() as spec:
        spec.add_field("region", IdentityTransform(), "region")
        spec.add_field("day", YearTransform(), "day_year")
    table.append(first)
    table.append(_iceberg_data(300, seed=2))
    return warehouse, catalog.load_table("db.events")


def _partitions(table, snapshot_id: int | None = None) -> dict[str, pa.Table]:
    """Rows per partition as pyiceberg reads them (the format's own reader)."""
    data = table.scan(snapshot_id=snapshot_id).to_arrow()
    years = pc.year(data["day"])
    out = {}
    for region in ("east", "west"):
        for year in sorted(set(years.to_pylist())):
            mask = pc.and_(pc.equal(data["region"], region), pc.equal(years, year))
            part = data.filter(mask)
            if part.num_rows:
                out[f"region={region},day_year={year}"] = part
    return out


@pytest.mark.parametrize("snapshot", ["current", "first"])
def test_catalog_table_matches_pyiceberg(spark, iceberg_table, capsys, snapshot: str) -> None:
    warehouse, table = iceberg_table
    snapshot_id = table.snapshots()[0].snapshot_id if snapshot == "first" else None
    args = ["analyze", "db.events", "--warehouse", str(warehouse), "--bins", "40", "--json"]
    if snapshot_id is not None:
        args += ["--snapshot", str(snapshot_id)]
    assert cli.main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    expected = _partitions(table, snapshot_id)
    assert summary["partitions_computed"] == len(expected)
    assert summary["snapshot_id"] == (snapshot_id or table.current_snapshot().snapshot_id)
    reader = StatisticsReader(
        StatisticsStore(str(table.location().removeprefix("file://") + "/_lakestats"))
    )
    assert {p.name for p in reader.version.partitions} == set(expected)
    for name, rows in expected.items():
        check_partition(
            rows,
            reader.column_statistics(name),
            lambda c, n=name: reader.frequencies(n, c),
            lambda c, n=name: reader.histogram(n, c),
        )


def test_table_opened_by_path(spark, iceberg_table, tmp_path: Path, capsys) -> None:
    _, table = iceberg_table
    location = table.location().removeprefix("file://")
    root = tmp_path / "stats"
    assert cli.main(["analyze", location, "--stats-root", str(root), "--columns", "id,ünï"]) == 0
    capsys.readouterr()
    assert cli.main(["partitions", location, "--stats-root", str(root), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)["partitions"]
    total = sum(p["row_count"] for p in listing)
    assert total == table.scan().to_arrow().num_rows
    assert {tuple(p["partition"]) for p in listing} == {("region", "day_year")}

    metadata_file = table.metadata_location.removeprefix("file://")
    root = tmp_path / "by-metadata-file"
    assert cli.main(["analyze", metadata_file, "--stats-root", str(root), "--columns", "id"]) == 0
    capsys.readouterr()
    assert cli.main(["partitions", metadata_file, "--stats-root", str(root), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["partitions"]
    assert sum(p["row_count"] for p in listed) == total
