"""The same input, the same bytes, end to end: ``analyze`` of one snapshot written twice into
two statistics roots gives byte-identical statistics files, whichever face ran it (the CLI
on a ``local[1]`` Spark, the Python API on the tests' ``local[2]``), in whichever order the
table listed its partitions, however the slices were spread over Spark tasks (one task
for all, or one each, finishing in any order) and with partitions split into slices whose
states (KLL, HLL, theta sketches) a second stage merges. Estimated statistics are present
(frequencies truncated: estimated distinct counts and percentiles), and so are column
groups, a sample (``sample create --rows``, whose allocation has ties) with the statistics
estimated from it (``--from-sample``), and an Iceberg table's Puffin file; ``--exact``'s
staged counts, ranks and table files on four cores and on two. Tables: a
hive-partitioned Parquet directory of every kind of column, Delta and Iceberg.

A file's path names the run that wrote it (``partitions/<p>/<run id>/``); paths are
compared with each run id replaced by what it is (``run1``: version 1's run). Records
*about* a run name it in their bytes: ``ABOUT_THE_RUN`` says which and why, and they are
compared with run ids, times and UUIDs replaced. Nothing is left out (``--from-sample``'s
own analysis of the sample is deleted when its run ends).
The partition histograms' parts are cache entries keyed by a hash of their inputs' paths:
they are compared by their bytes, and named by them.

``tests/compute/test_same_bytes.py`` covers the reduction alone under every runner; this
covers the per-partition job, the faces and the sample around it.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.compute.analyze import stages
from lakestats.formats.base import TableFormat
from lakestats.formats.delta import DeltaTableFormat
from lakestats.formats.iceberg import IcebergTableFormat
from lakestats.formats.parquet_dir import ParquetTableFormat
from tests.conftest import mixed_table

pytestmark = pytest.mark.spark

OPTIONS = {"bins": 32, "max_frequencies": 40}  # few frequencies: most columns estimated
GROUP = ["small int", "flag"]
FLAGS = ["--bins", "32", "--max-frequencies", "40", "--column-groups", ",".join(GROUP)]
ROWS = 3_000
SAMPLE_ROWS = 901  # 4 partitions of 700 rows: equal remainders, ties broken by path

ABOUT_THE_RUN = {
    re.compile(r"^versions/v\d{8}\.json$"): "a version's manifest names its run, the "
    "time it was published, its files' paths (which carry the run id) and an Iceberg "
    "table's Puffin file (named by a UUID, as Iceberg names its metadata files)",
    re.compile(r"^sample/sample\.json$"): "the sample's manifest names its run, the time it "
    "was drawn and its files' paths",
    re.compile(r"/partition_histogram_parts\.parquet$"): "the directory of the partition "
    "histograms' parts names each part by path: the run that wrote it (a later version "
    "lists an earlier run's parts) and its cache key, a hash of its inputs' paths",
}
"""Files whose bytes name the run; compared after replacing run ids, times and part names."""

RUN_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{8}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")
PART = re.compile(r"phist-[0-9a-f]{32}")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def parquet_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five partitions (four of 700 rows, one of 200), each of several files."""
    root = tmp_path_factory.mktemp("same_bytes") / "mixed"
    table = mixed_table(ROWS, seed=5)
    table = table.append_column("part", pc.cast(pc.divide(table["id"], 700), pa.string()))
    for i, start in enumerate(range(0, ROWS, 400)):
        pq.write_to_dataset(table.slice(start, 400), root, partition_cols=["part"],
                            basename_template=f"f{i}-{{i}}.parquet")
    return root


@pytest.fixture(scope="module")
def delta_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A partitioned Delta table written in five appends: several files per partition."""
    from deltalake import write_deltalake

    root = tmp_path_factory.mktemp("same_bytes") / "delta"
    rng = np.random.default_rng(8)
    for start in range(0, ROWS, 600):
        ids = np.arange(start, start + 600)
        write_deltalake(str(root), pa.table({
            "id": ids,
            "small int": pa.array(rng.integers(-50, 50, 600).astype(np.int32)),
            "x": rng.normal(0, 100, 600),
            "word": [f"w{v}" for v in rng.integers(0, 500, 600)],
            "flag": rng.random(600) < 0.3,
            "day": pa.array(rng.integers(0, 3_000, 600).astype(np.int32)).cast(pa.date32()),
            "part": [f"r{i % 3}" for i in ids],
        }), mode="append", partition_by=["part"])
    return root


def _listed_backwards(monkeypatch: pytest.MonkeyPatch, kind: type[TableFormat]) -> None:
    """The format lists its partitions in the reverse of its own order."""
    plan = kind.plan
    monkeypatch.setattr(kind, "plan", lambda self, snapshot=None: plan(self, snapshot)[::-1])


def _one_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every slice of the per-partition job in one Spark task, one after another."""
    monkeypatch.setattr(stages, "task_count", lambda slices, total, job, slots: 1)


def _run_names(root: Path) -> dict[str, str]:
    """Each run id under ``root`` -> what it is (``run2``: version 2's run; ``sample``)."""
    names = {}
    for manifest in root.rglob("versions/v*.json"):
        where = manifest.parent.parent.relative_to(root).as_posix().replace("/", "-")
        label = f"{where}-" if where != "." else ""
        names[json.loads(manifest.read_text())["run_id"]] = f"{label}run{int(manifest.stem[1:])}"
    sample = root / "sample" / "sample.json"
    if sample.exists():
        names[json.loads(sample.read_text())["run_id"]] = "sample"
    return names


def _named(text: str, runs: dict[str, str], parts: dict[str, str]) -> str:
    text = RUN_ID.sub(lambda m: runs[m.group()], text)
    return PART.sub(lambda m: parts[m.group()], text)


def _statistics_files(root: Path, skip: str | None = None) -> dict[str, bytes]:
    """Every file under ``root`` by its path with run ids named; a part by its bytes'
    digest; a file about the run with run ids, times, UUIDs and part names replaced."""
    runs = _run_names(root)
    files = [p for p in sorted(root.rglob("*")) if p.is_file()]
    files = [p for p in files if not (skip and p.relative_to(root).as_posix().startswith(skip))]
    parts = {
        p.name: f"phist-{hashlib.sha256(p.read_bytes()).hexdigest()[:32]}"
        for p in files if PART.fullmatch(p.name)
    }
    found = {}
    for path in files:
        relative = path.relative_to(root).as_posix()
        data = path.read_bytes()
        if any(pattern.search(relative) for pattern in ABOUT_THE_RUN):
            if relative.endswith(".parquet"):
                data = json.dumps(pq.read_table(path).to_pylist()).encode()
            text = UUID.sub("UUID", TIME.sub("TIME", data.decode()))
            data = _named(text, runs, parts).encode()
        found[_named(relative, runs, parts)] = data
    return found


def _assert_same(first: dict[str, bytes], second: dict[str, bytes]) -> None:
    assert sorted(first) == sorted(second)
    different = [name for name in first if first[name] != second[name]]
    assert not different, different


def _assert_estimated(root: Path, run: str = "run1") -> None:
    """The table level holds estimated statistics and the sketches behind them."""
    runs = {name: run_id for run_id, name in _run_names(root).items()}
    statistics = pq.read_table(root / "table" / runs[run] / "statistics.parquet")
    assert not all(statistics.column("distinct_count_exact").to_pylist())
    assert not all(statistics.column("percentiles_exact").to_pylist())
    assert any(statistics.column("kll_sketch").to_pylist())
    assert any(statistics.column("hll_sketch").to_pylist())


def test_cli_on_one_core_and_api_on_two_write_the_same_bytes(
    spark, parquet_table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli_root, api_root = tmp_path / "cli", tmp_path / "api"
    done = subprocess.run(
        [sys.executable, "-m", "lakestats.cli", "analyze", str(parquet_table), "--stats-root",
         str(cli_root), "--master", "local[1]", *FLAGS],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    _listed_backwards(monkeypatch, ParquetTableFormat)
    _one_task(monkeypatch)
    ls.open_table(str(parquet_table), stats_root=str(api_root)).analyze(
        spark=spark, column_groups=[GROUP], **OPTIONS
    )
    _assert_estimated(cli_root)
    written = _statistics_files(cli_root)
    assert any(name.endswith("/groups.parquet") for name in written)
    _assert_same(written, _statistics_files(api_root))


@pytest.fixture(scope="module")
def iceberg_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A partitioned Iceberg table (embedded catalog) written in three appends: its name
    and warehouse. Its partition files carry theta sketches, merged into its Puffin file."""
    from pyiceberg.transforms import IdentityTransform

    from lakestats.formats.iceberg import load_catalog

    warehouse = str(tmp_path_factory.mktemp("same_bytes") / "warehouse")
    catalog = load_catalog(warehouse=warehouse)
    catalog.create_namespace("db")
    rng = np.random.default_rng(9)

    def rows(start: int, count: int) -> pa.Table:
        return pa.table({
            "id": np.arange(start, start + count),
            "small int": pa.array(rng.integers(-50, 50, count).astype(np.int32)),
            "x": rng.normal(0, 100, count),
            "word": [f"w{v}" for v in rng.integers(0, 500, count)],
            "flag": rng.random(count) < 0.3,
            "part": [f"r{i % 3}" for i in range(start, start + count)],
        })

    table = catalog.create_table("db.sales", schema=rows(0, 1).schema)
    with table.update_spec() as spec:
        spec.add_field("part", IdentityTransform(), "part")
    for start in range(0, ROWS, 1_000):
        table.append(rows(start, 1_000))
    return "db.sales", warehouse


def _analyze_and_sample(handle: ls.LakestatsTable, spark, *, sample: bool) -> dict[str, bytes]:
    """Partitions split into one slice per file; then a sample and the statistics of it.
    An Iceberg table's Puffin file (the next analyze replaces it): its bytes."""
    handle.analyze(spark=spark, column_groups=[GROUP], max_slice_bytes=1, **OPTIONS)
    if sample:
        handle.sample.create(spark=spark, rows=SAMPLE_ROWS, seed=3)
        handle.analyze(spark=spark, from_sample=True, **OPTIONS)
    if not isinstance(handle.format, IcebergTableFormat):
        return {}
    from lakestats.interop.puffin import statistics_files

    [path] = statistics_files(handle.format).values()
    return {"puffin": Path(path.removeprefix("file://")).read_bytes()}


def _opener(
    request: pytest.FixtureRequest, kind: type[TableFormat]
) -> Callable[[Path], ls.LakestatsTable]:
    """How a case opens its table with a statistics root of its own."""
    if kind is IcebergTableFormat:
        name, warehouse = request.getfixturevalue("iceberg_table")
        return lambda root: ls.open_table(name, stats_root=str(root), warehouse=warehouse)
    fixture = "parquet_table" if kind is ParquetTableFormat else "delta_table"
    table = request.getfixturevalue(fixture)
    return lambda root: ls.open_table(str(table), stats_root=str(root))


@pytest.mark.parametrize(
    ("kind", "sample"),
    [(ParquetTableFormat, True), (DeltaTableFormat, False), (IcebergTableFormat, False)],
    ids=["parquet", "delta", "iceberg"],
)
def test_listing_order_and_task_layout_write_the_same_bytes(
    spark, kind: type[TableFormat], sample: bool, tmp_path: Path,
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
) -> None:
    open_with = _opener(request, kind)
    first_puffin = _analyze_and_sample(open_with(tmp_path / "first"), spark, sample=sample)
    with monkeypatch.context() as patched:
        _listed_backwards(patched, kind)
        _one_task(patched)
        second_puffin = _analyze_and_sample(open_with(tmp_path / "second"), spark, sample=sample)

    _assert_estimated(tmp_path / "first")
    first = _statistics_files(tmp_path / "first")
    if sample:  # the sample's rows and the version estimated from them
        assert {"sample/data/part=0/sample.parquet", "table/run2/statistics.parquet"} <= set(first)
    _assert_same(first, _statistics_files(tmp_path / "second"))
    assert first_puffin == second_puffin


def test_exact_on_four_cores_and_on_two_writes_the_same_bytes(
    spark, parquet_table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``analyze --exact``: its staged value counts, ranks, table frequencies (only
    repeated values) and patched table statistics are the same bytes from the CLI on four
    cores as from the API on two, partitions listed backwards, every slice in one task; and
    every file of them is zstd-compressed."""
    cli_root, api_root = tmp_path / "cli", tmp_path / "api"
    done = subprocess.run(
        [sys.executable, "-m", "lakestats.cli", "analyze", str(parquet_table), "--stats-root",
         str(cli_root), "--master", "local[4]", "--exact", *FLAGS[:4]],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    _listed_backwards(monkeypatch, ParquetTableFormat)
    _one_task(monkeypatch)
    ls.open_table(str(parquet_table), stats_root=str(api_root)).analyze(
        spark=spark, exact=True, **OPTIONS
    )
    written = _statistics_files(cli_root)
    assert any(name.endswith("/ranks/index.parquet") for name in written)
    assert any(name.endswith("/values.parquet") for name in written)
    runs = {name: run_id for run_id, name in _run_names(cli_root).items()}
    table = pq.read_table(cli_root / "table" / runs["run1"] / "statistics.parquet")
    assert any(table.column("duplicates_only").to_pylist())  # some column was rewritten
    _assert_same(written, _statistics_files(api_root))
    _assert_compressed(cli_root)


def _assert_compressed(root: Path) -> None:
    """Every column chunk of every Parquet file under ``root`` (partition files, staged
    values, rank parts, partition histogram parts, table files) is zstd-compressed, as
    docs/storage-format.md says."""
    parquet = [p for p in root.rglob("*") if p.is_file() and _starts_with(p, b"PAR1")]
    assert any(PART.fullmatch(p.name) for p in parquet)
    for path in parquet:
        metadata = pq.ParquetFile(path).metadata
        for group in range(metadata.num_row_groups):
            for index in range(metadata.num_columns):
                chunk = metadata.row_group(group).column(index)
                assert chunk.compression == "ZSTD", (path, chunk.path_in_schema)


def _starts_with(path: Path, magic: bytes) -> bool:
    with path.open("rb") as file:
        return file.read(len(magic)) == magic
