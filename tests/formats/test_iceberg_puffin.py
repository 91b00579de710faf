"""Iceberg Puffin statistics published by analyze: read back with pyiceberg's own Puffin
reader and the ``datasketches`` package, hashes checked against a value-by-value
reference (``mmh3`` over Iceberg's single-value serialization)."""

from __future__ import annotations

import json
from pathlib import Path

import datasketches as ds
import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakestats import cli, fs
from lakestats.formats.iceberg import load_catalog
from lakestats.stats import theta
from lakestats.store import manifest
from lakestats.store.handle import StatisticsStore
from tests.conftest import mixed_table
from tests.stats.test_theta import _java_bytes

pytestmark = pytest.mark.spark

THETA = "apache-datasketches-theta-v1"


def _data(n: int, seed: int) -> pa.Table:
    table = mixed_table(n, seed).drop_columns(["nested", "nothing"])  # no null type in v2
    wide = np.random.default_rng(seed).integers(0, 10**9, n)
    table = table.append_column("wide", pa.array(wide.astype(str)))  # all but distinct
    return table.append_column(
        "region", pc.if_else(pc.less(table["id"], n // 3), "east", "west")
    )


@pytest.fixture
def table(tmp_path: Path):
    from pyiceberg.transforms import IdentityTransform

    catalog = load_catalog(warehouse=str(tmp_path))
    catalog.create_namespace("db")
    first = _data(6_000, seed=1)
    created = catalog.create_table("db.events", schema=first.schema)
    with created.update_spec() as spec:
        spec.add_field("region", IdentityTransform(), "region")
    created.append(first)
    return tmp_path, catalog


def _analyze(warehouse: Path, capsys, *extra: str) -> dict:
    args = ["analyze", "db.events", "--warehouse", str(warehouse), "--json",
            "--max-frequencies", "100", *extra]
    assert cli.main(args) == 0
    return json.loads(capsys.readouterr().out)


def _puffin(table, snapshot_id: int):
    from pyiceberg.table.puffin import PuffinFile

    [statistics] = [s for s in table.metadata.statistics if s.snapshot_id == snapshot_id]
    data = fs.read_bytes(statistics.statistics_path)
    assert statistics.file_size_in_bytes == len(data)
    puffin = PuffinFile(data)
    payload = data[-(statistics.file_footer_size_in_bytes) :]
    assert payload[:4] == b"PFA1" and payload[-4:] == b"PFA1"
    assert data[:4] == b"PFA1"
    assert puffin.footer.properties["created-by"].startswith("lakestats")
    return statistics, puffin


def _reference_hashes(values: pa.Array, iceberg_type: str) -> list[int]:
    """Java's hashes, value by value (lakestats folds -0.0 into 0.0 and NaNs into one)."""
    kind = iceberg_type.split("(")[0].split("[")[0]
    if kind == "timestamptz":
        kind, values = "timestamp", values.cast(pa.timestamp("us"))
    out = set()
    for value in values.drop_null().to_pylist():
        if kind in ("float", "double") and value == 0.0:
            value = 0.0
        raw = _java_bytes(value, iceberg_type if kind == "decimal" else kind)
        if raw:
            out.add(mmh3.hash64(raw, seed=9001, signed=False)[0] >> 1)
    hashes = sorted(h for h in out if h)
    return hashes[: theta.K]


def _check_blobs(table, snapshot_id: int, rows: pa.Table, exact: bool) -> dict[str, int]:
    statistics, puffin = _puffin(table, snapshot_id)
    schema = table.schema()
    by_id = {f.field_id: f for f in schema.fields}
    assert [b.type for b in statistics.blob_metadata] == [THETA] * len(puffin.footer.blobs)
    ndvs = {}
    for listed, blob in zip(statistics.blob_metadata, puffin.footer.blobs, strict=True):
        assert blob.type == THETA and blob.snapshot_id == snapshot_id
        assert listed.fields == blob.fields and listed.properties == blob.properties
        assert blob.sequence_number == table.metadata.snapshot_by_id(snapshot_id).sequence_number
        field = by_id[blob.fields[0]]
        sketch = ds.compact_theta_sketch.deserialize(puffin.get_blob_payload(blob))
        assert sketch.get_seed_hash() == theta.SEED_HASH
        column = rows.column(field.name).combine_chunks()
        if pa.types.is_floating(column.type):  # lakestats: -0.0 is 0.0, NaN one value
            column = pc.add(column, pa.scalar(0.0, column.type))
        true = pc.count_distinct(column).as_py()
        non_empty = pc.count_distinct(
            column.filter(pc.not_equal(pc.binary_length(column), 0))
        ).as_py() if pa.types.is_string(column.type) or pa.types.is_binary(column.type) else true
        # 3 standard deviations: at 2, one column of this fixed seed lies just outside
        assert sketch.get_lower_bound(3) <= non_empty <= sketch.get_upper_bound(3), field.name
        assert sorted(sketch) == _reference_hashes(column, str(field.field_type)), field.name
        ndv = int(blob.properties["ndv"])
        if exact:
            assert ndv == true, field.name
        ndvs[field.name] = ndv
    return ndvs


def test_analyze_commits_a_puffin_file_engines_read(spark, table, capsys) -> None:
    warehouse, catalog = table
    summary = _analyze(warehouse, capsys, "--exact")
    loaded = catalog.load_table("db.events")  # pyiceberg still loads the table
    snapshot = loaded.current_snapshot().snapshot_id
    assert summary["snapshot_id"] == snapshot
    assert [s.snapshot_id for s in loaded.metadata.statistics] == [snapshot]
    rows = loaded.scan().to_arrow()
    ndvs = _check_blobs(loaded, snapshot, rows, exact=True)
    top = {"id", "small int", "f64", "f32", "ünï", "dec38", "dec15", "day", "ts", "ts_tz",
           "flag", "blob", "all_null", "all_null_text", "col.with.dot", "wide", "region"}
    assert set(ndvs) == top  # every top-level primitive column, nothing nested
    assert ndvs["id"] == 6_000 and ndvs["all_null"] == 0

    # the version records it; a second analyze after an append commits for the new
    # snapshot (only the changed partitions recomputed) and keeps the first
    root = loaded.location().removeprefix("file://") + "/_lakestats"
    first = manifest.load_version(StatisticsStore(str(root)), None)
    first_path = first.extra["puffin"]["path"]
    assert first.extra["puffin"]["snapshot_id"] == snapshot
    loaded.append(_data(600, seed=2).filter(pc.equal(pc.field("region"), "west")))
    again = _analyze(warehouse, capsys, "--exact")
    assert again["partitions_computed"] == 1
    reloaded = catalog.load_table("db.events")
    new_snapshot = reloaded.current_snapshot().snapshot_id
    assert {s.snapshot_id for s in reloaded.metadata.statistics} == {snapshot, new_snapshot}
    _check_blobs(reloaded, new_snapshot, reloaded.scan().to_arrow(), exact=True)

    # expire the old snapshot in the table, then lakestats' expiry removes its Puffin file
    reloaded.maintenance.expire_snapshots().by_id(snapshot).commit()
    assert fs.exists(first_path)
    assert cli.main(["expire", "db.events", "--warehouse", str(warehouse)]) == 0
    capsys.readouterr()
    assert not fs.exists(first_path)
    final = catalog.load_table("db.events")
    assert [s.snapshot_id for s in final.metadata.statistics] == [new_snapshot]


def test_inherited_version_republishes_for_the_new_snapshot(spark, table, capsys) -> None:
    warehouse, catalog = table
    _analyze(warehouse, capsys)
    loaded = catalog.load_table("db.events")
    before = loaded.current_snapshot().snapshot_id
    with loaded.transaction() as tx, tx.update_snapshot().fast_append():
        pass  # an empty commit: a new snapshot with the same files
    loaded = catalog.load_table("db.events")
    snapshot = loaded.current_snapshot().snapshot_id
    assert snapshot != before
    summary = _analyze(warehouse, capsys)
    assert summary["partitions_computed"] == 0
    assert summary["snapshot_id"] == snapshot
    loaded = catalog.load_table("db.events")
    assert snapshot in {s.snapshot_id for s in loaded.metadata.statistics}
    _check_blobs(loaded, snapshot, loaded.scan().to_arrow(), exact=False)


def test_option_off_writes_nothing(spark, table, capsys) -> None:
    warehouse, catalog = table
    _analyze(warehouse, capsys, "--no-puffin")
    loaded = catalog.load_table("db.events")
    assert loaded.metadata.statistics == []
    metadata = Path(loaded.location().removeprefix("file://")) / "metadata"
    assert not list(metadata.glob("*.stats"))
    # turned on again: partitions without theta sketches are not reused
    summary = _analyze(warehouse, capsys)
    assert summary["partitions_computed"] == 2 and summary["partitions_reused"] == 0
    loaded = catalog.load_table("db.events")
    snapshot = loaded.current_snapshot().snapshot_id
    _check_blobs(loaded, snapshot, loaded.scan().to_arrow(), exact=False)


def test_reanalysis_of_the_same_snapshot_replaces_its_file(spark, table, capsys) -> None:
    warehouse, catalog = table
    _analyze(warehouse, capsys)
    first = catalog.load_table("db.events").metadata.statistics
    _analyze(warehouse, capsys, "--bins", "20")  # other options: a new version, same snapshot
    second = catalog.load_table("db.events").metadata.statistics
    assert [s.snapshot_id for s in second] == [s.snapshot_id for s in first]
    assert second[0].statistics_path != first[0].statistics_path
    assert not fs.exists(first[0].statistics_path)  # lakestats' own file, replaced: deleted
    assert fs.exists(second[0].statistics_path)
