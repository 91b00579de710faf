"""Statistics written by the previous on-disk format versions stay readable.

Format version 1 files are written here exactly as the version-1 writer wrote them
(``pq.write_table`` with zstd at pyarrow's default level, no key-value metadata); the
same partitions in the current format version are what ``analyze`` writes now (version 2
with its sketches: ``tests/stats/test_derived_sketches.py``). Lookups and a
table-level reduction over either must give the same answers.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasketches as ds
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.compute.reduce.job import ReduceJob
from lakestats.compute.reduce.local import reduce_locally
from lakestats.stats.quantile_sketch import QuantileSketch
from lakestats.store import layout, manifest, partition_rows, schemas
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader

# the version-1 writer's options per file (lakestats/store/writer.py before version 2)
V1_OPTIONS = {
    "statistics": {"row_group_size": 1024, "write_statistics": False},
    "frequencies": {
        "row_group_size": 8192,
        "write_statistics": ["column_index"],
        "use_dictionary": ["column"],
    },
    "histograms": {"write_statistics": False, "use_dictionary": False},
}


def _write_v1(path: Path) -> None:
    table = pq.ParquetFile(path).read()
    if "duplicates_only" in table.column_names:  # added in version 4
        table = table.drop_columns(["duplicates_only"])
    pq.write_table(table, path, compression="zstd", store_schema=False, **V1_OPTIONS[path.stem])


def _as_format_5(new: Path, old: Path) -> None:
    """A copy of the root ``new`` as format 5 wrote it: every partition's frequency and
    histogram rows also in its own ``frequencies.parquet`` and ``histograms.parquet``
    (written as the format-5 writer wrote them), listed in its entry."""
    shutil.copytree(new, old)
    version = manifest.load_version(StatisticsStore(str(new)))
    rows = partition_rows.PartitionRows(StatisticsStore(str(new)), version)
    version_file = old / layout.version_path(version.version)
    data = json.loads(version_file.read_text())
    for raw, entry in zip(data["partitions"], version.partitions, strict=True):
        assert set(entry.files) == {"statistics"}  # format 6: the parts hold the rest
        for kind, options in (("frequencies", V1_OPTIONS["frequencies"]),
                              ("histograms", V1_OPTIONS["histograms"])):
            relative = entry.files["statistics"].replace("statistics.parquet",
                                                         f"{kind}.parquet")
            table = rows.read(entry, kind).replace_schema_metadata(
                {schemas.FORMAT_VERSION_KEY: "5"})
            pq.write_table(table, old / relative, compression="zstd", **options)
            raw["files"][kind] = relative
            raw["file_sizes"][kind] = (old / relative).stat().st_size
    data["format_version"] = 5
    version_file.write_text(json.dumps(data))


@pytest.fixture(scope="module")
def roots(tmp_path_factory, spark) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("versions")
    table_dir = base / "t"
    rng = np.random.default_rng(8)
    for p in range(3):
        n = 60  # every KLL sketch, and their union, holds all values: no random compaction
        (table_dir / f"p={p}").mkdir(parents=True)
        pq.write_table(
            pa.table(
                {
                    "k": pa.array(rng.integers(0, 30, n)),
                    "f": pa.array(np.round(rng.normal(size=n), 1)),
                    "s": pa.array([f"w{v}" for v in rng.integers(0, 40, n)]),
                    "u": pa.array(np.arange(n) + 100 * p),
                }
            ),
            table_dir / f"p={p}" / "data.parquet",
        )
    new = base / "v6"
    # few frequencies: "s" and "k" are truncated, so the table level merges sketches
    ls.open_table(str(table_dir), stats_root=str(new)).analyze(max_frequencies=8, spark=spark)
    old = base / "v1"
    _as_format_5(new, old)
    version_file = old / layout.version_path(1)
    data = json.loads(version_file.read_text())
    data["format_version"] = 1
    version_file.write_text(json.dumps(data))
    for path in (old / "partitions").rglob("*.parquet"):
        _write_v1(path)
    return old, new


def test_files_record_their_format_version(roots) -> None:
    old, new = roots
    for path in (new / "partitions").rglob("*.parquet"):
        metadata = pq.ParquetFile(path).metadata.metadata
        assert metadata[schemas.FORMAT_VERSION_KEY.encode()] == str(schemas.FORMAT_VERSION).encode()
    for path in (old / "partitions").rglob("*.parquet"):
        assert pq.ParquetFile(path).metadata.metadata is None
    assert (
        manifest.load_version(StatisticsStore(str(new))).format_version
        == schemas.FORMAT_VERSION
        == 7
    )
    assert manifest.load_version(StatisticsStore(str(old))).format_version == 1


def test_lookups_and_reduction_read_a_version_5_root_the_same(roots, tmp_path: Path) -> None:
    """Format 5 listed every partition's frequency and histogram files (the parts held a
    copy): they are read from there, and answer as format 6's parts do."""
    _, new = roots
    five = tmp_path / "v5"
    _as_format_5(new, five)
    older, newer = (StatisticsReader(StatisticsStore(str(r))) for r in (five, new))
    assert older.version.format_version == 5
    for entry in newer.version.partitions:
        assert set(older.partition(entry.name).files) == {
            "statistics", "frequencies", "histograms"}
        assert older.most_frequent(entry.name) == newer.most_frequent(entry.name)
        for column in ("k", "f", "s", "u"):
            assert older.frequencies(entry.name, column) == newer.frequencies(entry.name, column)
            assert older.frequencies(entry.name, column, top=3) == newer.frequencies(
                entry.name, column, top=3)
        for column in ("k", "f", "u"):
            assert older.histogram(entry.name, column) == newer.histogram(entry.name, column)
    table = str(Path(new).parent / "t")
    for where in ("k = 3", "f > 0.2 AND s = 'w7'", "u BETWEEN 20 AND 130"):
        for source in ("index", "files"):
            assert ls.open_table(table, stats_root=str(five)).estimate(
                where, source=source).to_json() == ls.open_table(
                table, stats_root=str(new)).estimate(where, source=source).to_json()
    reduced_old, reduced_new = _reduce(five), _reduce(new)
    for kind in ("statistics", "frequencies", "histograms"):
        assert reduced_old[kind].equals(reduced_new[kind]), kind


def test_lookups_read_version_1_files_the_same(roots) -> None:
    old, new = (StatisticsReader(StatisticsStore(str(root))) for root in roots)
    for entry in new.version.partitions:
        older = old.statistics_table(entry.name, include_sketches=True)
        newer = new.statistics_table(entry.name, include_sketches=True)
        assert "duplicates_only" not in older.column_names  # added in version 4
        assert older.equals(newer.drop_columns(["duplicates_only"]))
        for column in ("k", "f", "s", "u"):
            assert old.frequencies(entry.name, column) == new.frequencies(entry.name, column)
        for column in ("k", "f", "u"):
            assert old.histogram(entry.name, column) == new.histogram(entry.name, column)
    # and the files hold what the data says
    data = pq.read_table(Path(roots[0]).parent / "t" / "p=1" / "data.parquet")
    [row] = old.column_statistics("p=1", ["k"])
    assert (row["min"], row["max"]) == (min(data["k"].to_pylist()), max(data["k"].to_pylist()))


def _reduce(root: Path) -> dict[str, pa.Table]:
    version = manifest.load_version(StatisticsStore(str(root)))
    job = ReduceJob(StatisticsStore(str(root)), version.partitions, version.columns, 1000, 8,
                    earlier=version)
    files = layout.table_files("again")
    reduce_locally(job, files, "again")
    return {kind: pq.read_table(root / path) for kind, path in files.items()}


def test_reduction_over_version_1_files_is_the_same(roots) -> None:
    old, new = roots
    reduced_old, reduced_new = _reduce(old), _reduce(new)
    for kind in ("statistics", "frequencies", "histograms"):
        assert reduced_old[kind].equals(reduced_new[kind]), kind
    statistics = reduced_new["statistics"].to_pylist()
    by_name = {row["column"]: row for row in statistics}
    # the truncated columns really went through the sketches (not the exact path)
    assert by_name["s"]["frequencies_exact"] is False
    assert by_name["s"]["distinct_count_exact"] is False
    # and the reduction equals the one analyze published with version-2 files
    published = StatisticsReader(StatisticsStore(str(new))).statistics_table(
        None, include_sketches=True
    )
    assert published.equals(reduced_new["statistics"])


def _datasketches_kll(data: bytes | None) -> bytes | None:
    """A sketch's bytes as the format-4 writer stored them: DataSketches' KLL of its items
    (each sketch here holds all its values uncompacted, so both hold the same)."""
    if data is None:
        return None
    sketch = QuantileSketch.deserialize(data)
    assert sketch.retained == sketch.n
    old = ds.kll_doubles_sketch(200)
    if sketch.n:
        old.update(np.concatenate(sketch.levels))
    return old.serialize()


def test_reduction_over_version_4_sketches_is_the_same(roots, tmp_path: Path) -> None:
    """Format 4 stored DataSketches' KLL bytes in ``kll_sketch``: read and converted."""
    _, new = roots
    old = tmp_path / "v4"
    _as_format_5(new, old)
    version_file = old / layout.version_path(1)
    data = json.loads(version_file.read_text())
    data["format_version"] = 4
    version_file.write_text(json.dumps(data))
    converted = 0
    for path in (old / "partitions").rglob("statistics.parquet"):
        table = pq.ParquetFile(path).read()
        sketches = [_datasketches_kll(b) for b in table.column("kll_sketch").to_pylist()]
        converted += sum(b is not None for b in sketches)
        at = table.schema.get_field_index("kll_sketch")
        table = table.set_column(at, "kll_sketch", pa.array(sketches, pa.binary()))
        table = table.replace_schema_metadata({schemas.FORMAT_VERSION_KEY: "4"})
        pq.write_table(table, path, compression="zstd")
    assert converted
    reduced_old, reduced_new = _reduce(old), _reduce(new)
    for kind in ("statistics", "frequencies", "histograms"):
        assert reduced_old[kind].equals(reduced_new[kind]), kind
