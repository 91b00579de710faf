"""Iceberg tables written in the test through pyiceberg with merge-on-read position
deletes, copy-on-write deletes, an overwrite, schema evolution (rename, add, drop) and
partition-spec evolution; every snapshot compares equal to pyiceberg's own scan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lakestats.formats.iceberg import IcebergTableFormat, load_catalog
from tests.iceberg_deletes import add_position_deletes
from tests.reference import assert_shown_matches, show_json

pytestmark = pytest.mark.spark


def _batch(start: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    amount = rng.normal(100, 30, n)
    return pa.table(
        {
            "id": ids,
            "name": pa.array([f"n{i % 37}" if i % 11 else None for i in ids]),
            "amount": pa.array(amount, mask=rng.random(n) < 0.1),
            "region": pa.array(np.where(ids % 3 == 0, "east", "west")),
        }
    )


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict[str, int]]:
    """The table and its snapshots by what each did."""
    from pyiceberg.transforms import BucketTransform, IdentityTransform
    from pyiceberg.types import IntegerType

    catalog = load_catalog(warehouse=str(tmp_path_factory.mktemp("warehouse")))
    catalog.create_namespace("db")
    first = _batch(0, 900, seed=1)
    table = catalog.create_table(
        "db.evolving", schema=first.schema, properties={"format-version": "2"}
    )
    with table.update_spec() as spec:
        spec.add_field("region", IdentityTransform(), "region")
    snapshots = {}
    table.append(first)
    snapshots["append"] = table.current_snapshot().snapshot_id
    files = sorted(t.file.file_path for t in table.scan().plan_files())
    table = add_position_deletes(table, {files[0]: list(range(0, 300, 7)), files[1]: [0, 1, 2]})
    snapshots["position_deletes"] = table.current_snapshot().snapshot_id
    with table.update_schema() as schema:
        schema.rename_column("amount", "price")
        schema.add_column("qty", IntegerType())
        schema.delete_column("name")
    second = (
        _batch(900, 600, seed=2).drop_columns(["name"]).rename_columns(["id", "price", "region"])
    )
    second = second.append_column("qty", pa.array(np.arange(600) % 5, pa.int32()))
    table.append(second.select(["id", "price", "region", "qty"]))
    snapshots["schema_evolved"] = table.current_snapshot().snapshot_id
    with table.update_spec() as spec:
        spec.add_field("id", BucketTransform(4), "id_bucket")
    third = (
        _batch(1500, 400, seed=3).drop_columns(["name"]).rename_columns(["id", "price", "region"])
    )
    third = third.append_column("qty", pa.array(np.arange(400) % 7, pa.int32()))
    table.append(third.select(["id", "price", "region", "qty"]))
    snapshots["spec_evolved"] = table.current_snapshot().snapshot_id
    table.delete("id >= 1800")  # copy-on-write: rewrites files
    table.overwrite(
        third.select(["id", "price", "region", "qty"]).slice(0, 50), overwrite_filter="id < 100"
    )
    snapshots["deleted_and_overwritten"] = table.current_snapshot().snapshot_id
    return table.refresh(), snapshots


@pytest.mark.parametrize(
    "step",
    ["append", "position_deletes", "schema_evolved", "spec_evolved", "deleted_and_overwritten"],
)
def test_snapshot_matches_pyiceberg(spark, evolved, tmp_path: Path, capsys, step: str) -> None:
    from lakestats import cli

    table, snapshots = evolved
    snapshot = snapshots[step]
    path = table.metadata_location
    root = str(tmp_path / "stats")
    args = ["analyze", path, "--stats-root", root, "--snapshot", str(snapshot)]
    assert cli.main(args) == 0, capsys.readouterr().err
    capsys.readouterr()
    shown = show_json(capsys, ["show", path, "--stats-root", root, "--snapshot", str(snapshot)])
    expected = table.scan(snapshot_id=snapshot).to_arrow()
    assert [c["name"] for c in shown["columns"]] == expected.column_names
    assert_shown_matches(shown, expected)


def test_position_deletes_remove_rows_and_evolution_is_planned(evolved) -> None:
    table, snapshots = evolved
    opened = IcebergTableFormat.from_path(table.metadata_location)
    deleted = opened.plan(snapshots["position_deletes"])
    assert sum(len(p.delete_files) for p in deleted) == 2
    assert all(p.row_count is None for p in deleted if p.delete_files)  # deletes: unknown
    rows = table.scan(snapshot_id=snapshots["position_deletes"]).to_arrow().num_rows
    assert rows == 900 - len(range(0, 300, 7)) - 3
    latest = opened.plan()
    assert {p.spec_id for p in latest} == {1, 2}  # files written under two specs
    names = {k for p in latest for k, _ in p.key}
    assert names == {"region", "id_bucket"}
    ids = opened.field_ids(snapshots["schema_evolved"])
    assert ids["price"] == opened.field_ids(snapshots["append"])["amount"]  # renamed, same id
    assert "name" not in ids and "qty" in ids


def test_equality_deletes_on_a_later_dropped_column_still_apply(
    spark,
    tmp_path: Path,
    capsys,
) -> None:
    """Spec: a delete column later dropped from the table "must still be used when applying
    the equality deletes"; null in a delete row matches null. Reference: the rows computed
    here with pyarrow from what was written."""
    import pyarrow.compute as pc

    from lakestats import cli
    from tests.iceberg_deletes import add_equality_deletes

    catalog = load_catalog(warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    first = _batch(0, 300, seed=5).drop_columns(["region"])
    table = catalog.create_table("db.eq", schema=first.schema, properties={"format-version": "2"})
    table.append(first)
    keys = pa.table({"name": pa.array(["n3", None, "n7"])})
    table = add_equality_deletes(table, keys)
    table = add_equality_deletes(table, pa.table({"id": pa.array([10, 11, 12], pa.int64())}))
    with table.update_schema() as schema:
        schema.delete_column("name")
    second = _batch(300, 100, seed=6).select(["id", "amount"])
    table.append(second)
    table = table.refresh()

    names = first.column("name")
    deleted = pc.or_kleene(
        pc.fill_null(pc.is_in(names, pa.array(["n3", "n7"])), False), pc.is_null(names)
    )
    deleted = pc.or_(deleted, pc.is_in(first.column("id"), pa.array([10, 11, 12], pa.int64())))
    expected = pa.concat_tables([first.filter(pc.invert(deleted)).select(["id", "amount"]), second])
    assert 0 < expected.num_rows < first.num_rows + second.num_rows
    root = str(tmp_path / "stats")
    path = table.metadata_location
    assert cli.main(["analyze", path, "--stats-root", root]) == 0, capsys.readouterr().err
    capsys.readouterr()
    shown = show_json(capsys, ["show", path, "--stats-root", root])
    assert [c["name"] for c in shown["columns"]] == ["id", "amount"]
    assert_shown_matches(shown, expected)


def test_as_of_follows_the_snapshot_log_not_rolled_back_snapshots(tmp_path: Path) -> None:
    """After a rollback to s1, the table's state "now" is s1, though s2 is newer."""
    import time

    from lakestats.api import snapshot_as_of

    catalog = load_catalog(warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    data = _batch(0, 10, seed=1)
    table = catalog.create_table("db.rb", schema=data.schema)
    table.append(data)
    s1 = table.current_snapshot().snapshot_id
    table.append(data)
    s2 = table.current_snapshot().snapshot_id
    time.sleep(0.01)
    table.manage_snapshots().set_current_snapshot(s1).commit()
    opened = IcebergTableFormat.from_path(table.refresh().metadata_location)
    assert {s.snapshot_id for s in opened.snapshots()} == {s1, s2}
    assert snapshot_as_of(opened, int(time.time() * 1000)) == s1
    written = table.snapshot_by_id(s2).timestamp_ms
    assert snapshot_as_of(opened, written) == s2  # when s2 was written, it was current
