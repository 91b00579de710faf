"""Stored samples of Iceberg, Delta, Paimon and Parquet tables: the sample is written as a
sibling table of the table's format, and refresh reads only the data files that changed.

References: each format's own reader (pyiceberg scans, deltalake's ``DeltaTable``,
pypaimon's read builder, pyarrow for Parquet) for the table's rows and files and for the
sibling table read back; a fresh ``sample create`` at the new snapshot for the refresh
(the same bottom-k by hash gives the identical sample); file sizes from the file system.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.store.sample import HASH_COLUMN, read_file

pytestmark = pytest.mark.spark

RATE, SEED = 0.1, 3
REGIONS = ("a", "b", "c")


def _rows(start: int, count: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + count, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "amount": rng.normal(50, 9, count),
            "region": pa.array([REGIONS[i % 3] for i in ids], pa.string()),
        }
    )


def _local(uri: str) -> Path:
    return Path(uri.removeprefix("file://"))


def _drawn(table: ls.LakestatsTable) -> dict[str, pa.Table]:
    """The sample's rows per partition (with their hashes), from its own files."""
    data = table.sample.manifest().to_json()
    return {
        p["path"]: read_file(table.store, p["file"]) for p in data["partitions"] if p["file"]
    }


def _by_region(rows: pa.Table) -> dict[str, np.ndarray]:
    return {
        region: np.sort(rows.filter(pc.equal(rows["region"], region))["id"].to_numpy())
        for region in REGIONS
    }


def _check_sample(table: ls.LakestatsTable, rows: pa.Table) -> dict[str, np.ndarray]:
    """Stratification exact: round(rate * N_p) rows per partition, all of them table rows
    of that partition. Returns the sampled ids per region."""
    truth = _by_region(rows)
    drawn = _drawn(table)
    ids = {}
    for region in REGIONS:
        sample = drawn[f"region={region}"]
        ids[region] = np.sort(sample["id"].to_numpy())
        assert sample.num_rows == int(np.floor(RATE * truth[region].size + 0.5))
        assert np.isin(ids[region], truth[region]).all()
        assert (sample["region"].to_numpy(zero_copy_only=False) == region).all()
    return ids


def _refresh_equals_create(
    table: ls.LakestatsTable, fresh: ls.LakestatsTable, changed: dict[str, int], spark
) -> dict:
    """Refresh reads exactly the changed files and draws what a fresh create draws.
    Returns what the refresh recorded (``changes``)."""
    result = table.sample.refresh(spark=spark)
    assert result.files_read == len(changed), (result, sorted(changed))
    assert result.bytes_read == sum(changed.values())
    changes = table.sample.manifest().to_json()["changes"]
    assert changes["files_read"] == len(changed)
    fresh.sample.create(fraction=RATE, seed=SEED, spark=spark)
    mine, theirs = _drawn(table), _drawn(fresh)
    assert set(mine) == set(theirs)
    for path in mine:
        assert mine[path][HASH_COLUMN].equals(theirs[path][HASH_COLUMN])
        assert mine[path]["id"].equals(theirs[path]["id"])
    again = table.sample.refresh(spark=spark)  # nothing changed: nothing read
    assert (again.files_read, again.bytes_read, again.partitions_sampled) == (0, 0, 0)
    return changes


def test_iceberg_sibling_and_file_level_refresh(spark, tmp_path: Path) -> None:
    from pyiceberg.table import StaticTable
    from pyiceberg.transforms import IdentityTransform

    from lakestats.formats.iceberg import load_catalog

    catalog = load_catalog(warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    base = catalog.create_table("db.sales", schema=_rows(0, 1, 0).schema)
    with base.update_spec() as spec:
        spec.add_field("region", IdentityTransform(), "region")
    for i in range(3):
        base.append(_rows(i * 3_000, 3_000, i))
    warehouse = str(tmp_path / "warehouse")
    table = ls.open_table("db.sales", str(tmp_path / "stats"), warehouse=warehouse)
    table.sample.create(fraction=RATE, seed=SEED, spark=spark)
    base = catalog.load_table("db.sales")
    ids = _check_sample(table, base.scan().to_arrow())
    sibling = table.sample.manifest().to_json()["sibling"]
    assert sibling["format"] == "iceberg"
    read_back = StaticTable.from_metadata(sibling["metadata_location"])
    assert [f.name for f in read_back.spec().fields] == ["region"]
    assert read_back.schema().as_arrow().names == ["id", "amount", "region"]
    copy = read_back.scan().to_arrow()
    assert {r: v.tolist() for r, v in _by_region(copy).items()} == {
        r: v.tolist() for r, v in ids.items()
    }
    assert read_back.current_snapshot().snapshot_id == sibling["snapshot_id"]

    def files() -> dict[str, int]:
        table = catalog.load_table("db.sales")
        return {t.file.file_path: t.file.file_size_in_bytes for t in table.scan().plan_files()}

    before = files()
    base.append(_rows(9_000, 300, 9))  # a new file per region
    catalog.load_table("db.sales").delete("id < 30")  # rewrites the first files (copy on write)
    after = files()
    changed = {path: size for path, size in after.items() if path not in before}
    assert len(changed) == 6
    fresh = ls.open_table("db.sales", str(tmp_path / "fresh"), warehouse=warehouse)
    changes = _refresh_equals_create(table, fresh, changed, spark)
    assert changes["partitions_updated"] == ["region=a", "region=b", "region=c"]
    removed = {path for path in before if path not in after}
    assert changes["change_log_files"] == len(changed) + len(removed) == 9  # from the manifests
    shown = table.sample.manifest().to_json()
    current = catalog.load_table("db.sales")
    assert shown["snapshot_id"] == current.current_snapshot().snapshot_id
    ids = _check_sample(table, current.scan().to_arrow())
    read_back = StaticTable.from_metadata(shown["sibling"]["metadata_location"])
    # the sibling keeps its own history; a refresh that changed nothing did not write it
    assert read_back.current_snapshot().snapshot_id == shown["sibling"]["snapshot_id"]
    assert len(read_back.snapshots()) == 2  # create's append, refresh's one overwrite
    assert {r: v.tolist() for r, v in _by_region(read_back.scan().to_arrow()).items()} == {
        r: v.tolist() for r, v in ids.items()
    }
    # the sample table deleted by hand: the next create writes it again
    shutil.rmtree(Path(shown["sibling"]["location"]))
    table.sample.create(fraction=RATE, seed=SEED, spark=spark)
    again = StaticTable.from_metadata(
        table.sample.manifest().to_json()["sibling"]["metadata_location"]
    )
    assert {r: v.tolist() for r, v in _by_region(again.scan().to_arrow()).items()} == {
        r: v.tolist() for r, v in ids.items()
    }


def test_delta_sibling_and_file_level_refresh(spark, tmp_path: Path, capsys) -> None:
    from deltalake import DeltaTable, write_deltalake

    uri = str(tmp_path / "sales")
    for i in range(3):
        write_deltalake(uri, _rows(i * 3_000, 3_000, i), mode="append", partition_by=["region"])
    table = ls.open_table(uri, str(tmp_path / "stats"))
    table.sample.create(fraction=RATE, seed=SEED, spark=spark)
    ids = _check_sample(table, DeltaTable(uri).to_pyarrow_table())
    sibling = table.sample.manifest().to_json()["sibling"]
    read_back = DeltaTable(sibling["location"])
    assert read_back.metadata().partition_columns == ["region"]
    assert read_back.version() == sibling["version"] == 0
    copy = read_back.to_pyarrow_table()
    assert {r: v.tolist() for r, v in _by_region(copy).items()} == {
        r: v.tolist() for r, v in ids.items()
    }

    def files() -> dict[str, int]:
        return {u: _local(u).stat().st_size for u in DeltaTable(uri).file_uris()}

    before = files()
    write_deltalake(uri, _rows(9_000, 300, 9), mode="append", partition_by=["region"])
    DeltaTable(uri).delete("id < 30")  # rewrites the first files
    changed = {u: size for u, size in files().items() if u not in before}
    assert len(changed) == 6
    changes = _refresh_equals_create(
        table, ls.open_table(uri, str(tmp_path / "fresh")), changed, spark
    )
    assert changes["partitions_updated"] == ["region=a", "region=b", "region=c"]
    assert changes["change_log_files"] == 9  # the log's 6 adds and 3 removes
    ids = _check_sample(table, DeltaTable(uri).to_pyarrow_table())
    read_back = DeltaTable(table.sample.manifest().to_json()["sibling"]["location"])
    assert read_back.version() == 1
    capsys.readouterr()
    assert cli.main(["sample", "show", uri, "--stats-root", str(tmp_path / "stats")]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert (
        shown[-1]
        == f"stored as: delta table {table.sample.manifest().to_json()['sibling']['location']}"
    )
    assert {r: v.tolist() for r, v in _by_region(read_back.to_pyarrow_table()).items()} == {
        r: v.tolist() for r, v in ids.items()
    }


def _paimon_read(path: str) -> pa.Table:
    from pypaimon.table.file_store_table import FileStoreTable

    builder = FileStoreTable.from_path(path).new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def _paimon_commit(table, rows: pa.Table, overwrite: dict | None = None) -> None:
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder = builder.overwrite(overwrite)
    write = builder.new_write()
    write.write_arrow(rows)
    builder.new_commit().commit(write.prepare_commit())
    write.close()


def test_paimon_sibling_and_file_level_refresh(spark, tmp_path: Path) -> None:
    from pypaimon import CatalogFactory, Schema
    from pypaimon.table.file_store_table import FileStoreTable

    catalog = CatalogFactory.create({"warehouse": str(tmp_path / "warehouse")})
    catalog.create_database("default", True)
    schema = _rows(0, 1, 0).schema
    catalog.create_table("default.sales", Schema.from_pyarrow_schema(schema, ["region"]), False)
    base = catalog.get_table("default.sales")
    for i in range(3):
        _paimon_commit(base, _rows(i * 3_000, 3_000, i))
    path = str(tmp_path / "warehouse" / "default.db" / "sales")
    table = ls.open_table(path, str(tmp_path / "stats"))
    table.sample.create(fraction=RATE, seed=SEED, spark=spark)
    ids = _check_sample(table, _paimon_read(path))
    sibling = table.sample.manifest().to_json()["sibling"]
    assert sibling["format"] == "paimon"
    assert FileStoreTable.from_path(sibling["location"]).partition_keys == ["region"]
    copy = _paimon_read(sibling["location"])
    assert {r: v.tolist() for r, v in _by_region(copy).items()} == {
        r: v.tolist() for r, v in ids.items()
    }

    def files() -> dict[str, int]:
        builder = FileStoreTable.from_path(path).new_read_builder()
        metas = [f for s in builder.new_scan().plan().splits() for f in s.files]
        return {os.path.normpath(m.external_path or m.file_path): m.file_size for m in metas}

    before = files()
    _paimon_commit(catalog.get_table("default.sales"), _rows(9_000, 300, 9))  # appends
    everything = _paimon_read(path)
    kept_b = everything.filter(
        pc.and_(pc.equal(everything["region"], "b"), pc.greater_equal(everything["id"], 30))
    )
    _paimon_commit(catalog.get_table("default.sales"), kept_b, {"region": "b"})  # rewritten
    changed = {p: size for p, size in files().items() if p not in before}
    assert len(changed) == 3  # new files of a and c, the rewrite of b
    fresh = ls.open_table(path, str(tmp_path / "fresh"))
    changes = _refresh_equals_create(table, fresh, changed, spark)
    assert changes["partitions_resampled"] == ["region=b"]  # rewritten wholesale
    assert changes["partitions_updated"] == ["region=a", "region=c"]
    # the delta manifests: 3 appended files, b's 3 old files and the one appended to it
    # (both removed by the overwrite), and the overwrite's new file
    assert changes["change_log_files"] == 7
    ids = _check_sample(table, _paimon_read(path))
    copy = _paimon_read(table.sample.manifest().to_json()["sibling"]["location"])
    assert {r: v.tolist() for r, v in _by_region(copy).items()} == {
        r: v.tolist() for r, v in ids.items()
    }


def test_parquet_refresh_reads_only_changed_files(spark, tmp_path: Path) -> None:
    root = tmp_path / "sales"
    for i in range(3):
        rows = _rows(i * 3_000, 3_000, i)
        for region in REGIONS:
            (root / f"region={region}").mkdir(parents=True, exist_ok=True)
            part = rows.filter(pc.equal(rows["region"], region)).drop_columns(["region"])
            pq.write_table(part, root / f"region={region}" / f"part-{i}.parquet")

    def everything() -> pa.Table:
        parts = []
        for f in sorted(root.glob("region=*/*.parquet")):
            part = pq.ParquetFile(f).read()
            region = f.parent.name.split("=")[1]
            parts.append(part.append_column("region", pa.array([region] * part.num_rows)))
        return pa.concat_tables(parts)

    table = ls.open_table(str(root), str(tmp_path / "stats"))
    table.sample.create(fraction=RATE, seed=SEED, spark=spark)
    _check_sample(table, everything())
    assert (
        table.sample.manifest().to_json()["sibling"] is None
    )  # the Parquet directory is the sample table
    # an appended file in a, a rewritten file in b (30 rows deleted), a removed file in c
    new = root / "region=a" / "part-9.parquet"
    pq.write_table(_rows(9_000, 300, 9).drop_columns(["region"]), new)
    old = pq.ParquetFile(root / "region=b" / "part-1.parquet").read()
    (root / "region=b" / "part-1.parquet").unlink()
    rewritten = root / "region=b" / "part-1b.parquet"
    pq.write_table(old.slice(30), rewritten)
    (root / "region=c" / "part-2.parquet").unlink()
    changed = {str(p): p.stat().st_size for p in (new, rewritten)}
    fresh = ls.open_table(str(root), str(tmp_path / "fresh"))
    changes = _refresh_equals_create(table, fresh, changed, spark)
    assert changes["partitions_resampled"] == []
    assert changes["partitions_updated"] == ["region=a", "region=b", "region=c"]
    assert changes["change_log_files"] is None  # no log: the file lists were compared
    _check_sample(table, everything())
    shown = table.sample.manifest().to_json()
    assert all(
        not any(k.endswith("part-2.parquet") for k in p["units"])
        for p in shown["partitions"]
        if p["path"] == "region=c"
    )


class _Sibling:
    """One format's table and its sample table, read by the format's own library."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind, self.tmp = kind, tmp_path
        if kind == "iceberg":
            from pyiceberg.transforms import IdentityTransform

            from lakestats.formats.iceberg import load_catalog

            self.catalog = load_catalog(warehouse=str(tmp_path / "warehouse"))
            self.catalog.create_namespace("db")
            base = self.catalog.create_table("db.sales", schema=_rows(0, 1, 0).schema)
            with base.update_spec() as spec:
                spec.add_field("region", IdentityTransform(), "region")
            self.name = "db.sales"
        elif kind == "delta":
            self.name = str(tmp_path / "sales")
        else:
            from pypaimon import CatalogFactory, Schema

            self.catalog = CatalogFactory.create({"warehouse": str(tmp_path / "warehouse")})
            self.catalog.create_database("default", True)
            schema = Schema.from_pyarrow_schema(_rows(0, 1, 0).schema, ["region"])
            self.catalog.create_table("default.sales", schema, False)
            self.name = str(tmp_path / "warehouse" / "default.db" / "sales")

    def open(self) -> ls.LakestatsTable:
        extra = {"warehouse": str(self.tmp / "warehouse")} if self.kind == "iceberg" else {}
        return ls.open_table(self.name, str(self.tmp / "stats"), **extra)

    def append(self, rows: pa.Table) -> None:
        if self.kind == "iceberg":
            self.catalog.load_table(self.name).append(rows)
        elif self.kind == "delta":
            from deltalake import write_deltalake

            write_deltalake(self.name, rows, mode="append", partition_by=["region"])
        else:
            _paimon_commit(self.catalog.get_table("default.sales"), rows)

    def drop(self, region: str) -> None:
        """Delete every row of one partition (the partition leaves the table)."""
        if self.kind == "iceberg":
            self.catalog.load_table(self.name).delete(f"region = '{region}'")
        elif self.kind == "delta":
            from deltalake import DeltaTable

            DeltaTable(self.name).delete(f"region = '{region}'")
        else:
            commit = self.catalog.get_table("default.sales").new_batch_write_builder().new_commit()
            commit.truncate_partitions([{"region": region}])
            commit.close()

    def sibling_rows(self, record: dict) -> pa.Table:
        if self.kind == "iceberg":
            from pyiceberg.table import StaticTable

            return StaticTable.from_metadata(record["metadata_location"]).scan().to_arrow()
        if self.kind == "delta":
            from deltalake import DeltaTable

            return DeltaTable(record["location"]).to_pyarrow_table()
        return _paimon_read(record["location"])

    def sibling_files(self, record: dict) -> dict[str, dict[str, tuple[int, int]]]:
        """The sample table's live data files per region: path -> (inode, mtime)."""
        if self.kind == "iceberg":
            from pyiceberg.table import StaticTable

            table = StaticTable.from_metadata(record["metadata_location"])
            paths = [t.file.file_path for t in table.scan().plan_files()]
        elif self.kind == "delta":
            from deltalake import DeltaTable

            paths = DeltaTable(record["location"]).file_uris()
        else:
            from pypaimon.table.file_store_table import FileStoreTable

            builder = FileStoreTable.from_path(record["location"]).new_read_builder()
            splits = builder.new_scan().plan().splits()
            paths = [m.external_path or m.file_path for s in splits for m in s.files]
        out: dict[str, dict[str, tuple[int, int]]] = {}
        for path in paths:
            local = _local(path)
            region = next(p.split("=", 1)[1] for p in local.parts if p.startswith("region="))
            stat = local.stat()
            out.setdefault(region, {})[str(local)] = (stat.st_ino, stat.st_mtime_ns)
        return out

    def sibling_snapshots(self, record: dict) -> int:
        if self.kind == "iceberg":
            from pyiceberg.table import StaticTable

            return len(StaticTable.from_metadata(record["metadata_location"]).snapshots())
        if self.kind == "delta":
            from deltalake import DeltaTable

            return DeltaTable(record["location"]).version() + 1
        from pypaimon.table.file_store_table import FileStoreTable

        latest = FileStoreTable.from_path(record["location"]).snapshot_manager()
        return latest.get_latest_snapshot().id


def _sample_ids(table: ls.LakestatsTable) -> dict[str, list[int]]:
    return {r: v.tolist() for r, v in _by_region(pa.concat_tables(_drawn(table).values())).items()}


@pytest.mark.parametrize("kind", ["iceberg", "delta", "paimon"])
def test_refresh_rewrites_only_the_changed_partitions_of_the_sibling(
    spark, tmp_path: Path, kind: str
) -> None:
    """After a refresh that touched one partition, the sample table read by the format's own
    reader holds exactly the sample's rows, in one new snapshot, and the other partitions'
    data files are the very files they were (same inode and modification time)."""
    fmt = _Sibling(kind, tmp_path)
    for i in range(3):
        fmt.append(_rows(i * 3_000, 3_000, i))
    table = fmt.open()
    table.sample.create(fraction=RATE, seed=SEED, spark=spark)
    record = table.sample.manifest().to_json()["sibling"]
    files, snapshots = fmt.sibling_files(record), fmt.sibling_snapshots(record)
    assert sorted(files) == list(REGIONS)

    only_a = _rows(9_000, 900, 9)
    fmt.append(only_a.filter(pc.equal(only_a["region"], "a")))  # one partition changes
    table.sample.refresh(spark=spark)
    shown = table.sample.manifest().to_json()
    assert shown["changes"]["partitions_updated"] == ["region=a"]
    record = shown["sibling"]
    assert fmt.sibling_snapshots(record) == snapshots + 1
    after = fmt.sibling_files(record)
    assert after["b"] == files["b"] and after["c"] == files["c"]  # not rewritten
    assert set(after["a"]).isdisjoint(files["a"])
    assert {r: v.tolist() for r, v in _by_region(fmt.sibling_rows(record)).items()} == (
        _sample_ids(table)
    )

    table.sample.refresh(spark=spark)  # nothing changed: the sibling is left alone
    assert table.sample.manifest().to_json()["sibling"] == record
    assert fmt.sibling_files(record) == after

    fmt.drop("c")  # a partition leaves the table: its sample leaves the sibling
    table.sample.refresh(spark=spark)
    shown = table.sample.manifest().to_json()
    assert shown["changes"]["partitions_removed"] == ["region=c"]
    record = shown["sibling"]
    final = fmt.sibling_files(record)
    assert sorted(final) == ["a", "b"]
    assert final["a"] == after["a"] and final["b"] == after["b"]
    rows = fmt.sibling_rows(record)
    assert {r: v.tolist() for r, v in _by_region(rows).items()} == _sample_ids(table)
    assert rows.num_rows == shown["sample_rows"]


def _iceberg_table(tmp_path: Path) -> tuple[str, dict]:
    from pyiceberg.transforms import IdentityTransform

    from lakestats.formats.iceberg import load_catalog

    warehouse = str(tmp_path / "warehouse")
    catalog = load_catalog(warehouse=warehouse)
    catalog.create_namespace("db")
    base = catalog.create_table("db.sales", schema=_rows(0, 1, 0).schema)
    with base.update_spec() as spec:
        spec.add_field("region", IdentityTransform(), "region")
    base.append(_rows(0, 3_000, 0))
    return "db.sales", {"warehouse": warehouse}


def _delta_table(tmp_path: Path) -> tuple[str, dict]:
    from deltalake import write_deltalake

    uri = str(tmp_path / "sales")
    write_deltalake(uri, _rows(0, 3_000, 0), partition_by=["region"])
    return uri, {}


def _paimon_table(tmp_path: Path) -> tuple[str, dict]:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(tmp_path / "warehouse")})
    catalog.create_database("default", True)
    schema = Schema.from_pyarrow_schema(_rows(0, 1, 0).schema, ["region"])
    catalog.create_table("default.sales", schema, False)
    _paimon_commit(catalog.get_table("default.sales"), _rows(0, 3_000, 0))
    return str(tmp_path / "warehouse" / "default.db" / "sales"), {}


def _parquet_table(tmp_path: Path) -> tuple[str, dict]:
    import pyarrow.dataset as ds

    uri = tmp_path / "sales"
    ds.write_dataset(
        _rows(0, 3_000, 0),
        uri,
        format="parquet",
        partitioning=["region"],
        partitioning_flavor="hive",
    )
    return str(uri), {}


@pytest.mark.parametrize("make", [_iceberg_table, _delta_table, _paimon_table, _parquet_table])
def test_from_sample_keeps_column_identity(make, spark, tmp_path: Path, capsys) -> None:
    """A sampled version describes the table's own columns (names, types and, where the
    format has them, field ids) exactly as a full analyze records them, so it is not stale
    and `show` prints every column (an Iceberg table once got no field ids: every column
    'changed since the snapshot', `show` empty and marked stale)."""
    name, where = make(tmp_path)
    full = ls.open_table(name, str(tmp_path / "full"), **where)
    full.analyze(spark=spark)
    table = ls.open_table(name, str(tmp_path / "stats"), **where)
    table.sample.create(fraction=0.5, seed=SEED, spark=spark)
    table.analyze(from_sample=True, spark=spark)
    assert table.reader().version.columns == full.reader().version.columns
    answer = table.table_statistics()
    assert not answer.stale, answer
    assert answer.staleness.columns_not_inherited == ()
    assert [c["column"] for c in answer.columns] == ["id", "amount", "region"]
    capsys.readouterr()
    argv = ["show", name, "--stats-root", str(tmp_path / "stats")]
    assert cli.main(argv + [f"--warehouse={v}" for v in where.values()]) == 0
    shown = capsys.readouterr().out
    assert "stale" not in shown
    for column in ("id", "amount", "region"):
        assert column in shown
