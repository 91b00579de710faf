"""Delta tables written in the test with deltalake (appends, a delete, an update, a
partition overwrite, schema evolution); every version compares equal to what deltalake's
own reader returns for it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute
import pytest

from lakestats import cli
from tests.reference import assert_shown_matches, show_json

pytestmark = pytest.mark.spark


def _batch(start: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "name": pa.array([f"n{i % 23}" if i % 13 else None for i in ids]),
            "amount": pa.array(rng.normal(50, 10, n), mask=rng.random(n) < 0.05),
            "region": pa.array(np.where(ids % 4 == 0, "north", "south")),
        }
    )


@pytest.fixture(scope="module")
def delta_versions(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, int]]:
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path_factory.mktemp("delta") / "t")
    versions = {}
    write_deltalake(path, _batch(0, 800, 1), partition_by=["region"])
    write_deltalake(path, _batch(800, 400, 2), mode="append")
    versions["appended"] = DeltaTable(path).version()
    DeltaTable(path).delete("id % 10 = 3")  # copy-on-write: rewritten files
    DeltaTable(path).update(updates={"amount": "amount * 2"}, predicate="id < 100")
    versions["deleted_and_updated"] = DeltaTable(path).version()
    north = _batch(2000, 200, 3).filter(pa.compute.equal(pa.compute.field("region"), "north"))
    write_deltalake(path, north, mode="overwrite", predicate="region = 'north'")
    versions["partition_overwritten"] = DeltaTable(path).version()
    extra = _batch(3000, 200, 4).append_column("qty", pa.array(np.arange(200) % 9, pa.int32()))
    write_deltalake(path, extra, mode="append", schema_mode="merge")
    versions["schema_evolved"] = DeltaTable(path).version()
    return path, versions


@pytest.mark.parametrize(
    "step", ["appended", "deleted_and_updated", "partition_overwritten", "schema_evolved"]
)
def test_version_matches_deltalake(spark, delta_versions, tmp_path: Path, capsys, step) -> None:
    from deltalake import DeltaTable

    path, versions = delta_versions
    version = versions[step]
    root = str(tmp_path / "stats")
    args = ["analyze", path, "--stats-root", root, "--snapshot", str(version)]
    assert cli.main(args) == 0, capsys.readouterr().err
    capsys.readouterr()
    shown = show_json(capsys, ["show", path, "--stats-root", root, "--snapshot", str(version)])
    expected = pa.table(DeltaTable(path, version=version).to_pyarrow_table())
    assert shown["snapshot_id"] == version and not shown["stale"]
    assert {c["name"] for c in shown["columns"]} == set(expected.column_names)
    assert_shown_matches(shown, expected)
