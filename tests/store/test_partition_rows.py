"""A partition's frequency and histogram rows have one home from format 6, the table
level's partition histogram parts, and every version is complete: also a partitions-only
analyze (no table-level reduction) and an incremental one publish them, the run's hand-off
files are gone once it published, and the rows read back (``store/partition_rows``) are
those of a full analyze, in the documented order (decreasing count, ties by value), with
DuckDB's counts."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

import lakestats.api as ls
from lakestats.store import manifest, schemas
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader

PARTITIONS = 6
COLUMNS = ("k", "f", "s")


def _write(root: Path, p: int, seed: int, rows: int = 120, name: str = "part-0") -> None:
    rng = np.random.default_rng(seed)
    directory = root / f"p={p}"
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table({
            "k": pa.array(rng.integers(0, 12 + p, rows)),  # ties among counts
            "f": pa.array(np.round(rng.normal(p, 1, rows), 1)),
            "s": pa.array([f"w{v}" for v in rng.integers(0, 50, rows)]),
        }),
        directory / f"{name}.parquet",
    )


def _answers(table: Path, stats: Path) -> dict[str, object]:
    reader = StatisticsReader(StatisticsStore(str(stats)))
    out: dict[str, object] = {}
    for entry in reader.version.partitions:
        for column in COLUMNS:
            out[f"{entry.name} {column}"] = reader.frequencies(entry.name, column)
            out[f"{entry.name} {column} top 3"] = reader.frequencies(entry.name, column, top=3)
        for column in ("k", "f"):
            out[f"{entry.name} {column} histogram"] = reader.histogram(entry.name, column)
        out[f"{entry.name} most frequent"] = reader.most_frequent(entry.name)
    return out


def _check(table: Path, stats: Path, full: Path) -> manifest.Version:
    """``stats`` (partitions only) answers every partition lookup as the full analyze
    ``full`` does; its entries list only their statistics; no hand-off file is left; the
    listed counts are DuckDB's and in the documented order."""
    version = manifest.load_version(StatisticsStore(str(stats)))
    assert version.format_version == schemas.FORMAT_VERSION == 7
    assert version.partition_histogram_parts
    assert all(set(e.files) == {"statistics"} for e in version.partitions)
    assert not [p for p in (stats / "_staging").rglob("*") if p.is_file()]
    assert _answers(table, stats) == _answers(table, full)
    reader = StatisticsReader(StatisticsStore(str(stats)))
    con = duckdb.connect()
    con.register("t", pads.dataset(table, format="parquet", partitioning="hive").to_table())
    for entry in version.partitions:
        for index, column in enumerate(COLUMNS):
            rows = reader.frequency_rows(entry, index)
            pairs = list(zip(rows["value"].to_pylist(), rows["frequency"].to_pylist(),
                             strict=True))
            assert pairs == sorted(pairs, key=lambda kv: (-kv[1], kv[0]))  # ties by value
            truth = dict(con.execute(
                f"SELECT {column}, count(*) FROM t WHERE p = ? GROUP BY {column}",
                [entry.values["p"]]).fetchall())
            for value, count in reader.frequencies(entry.name, column):
                assert truth[value] == count, (entry.name, column, value)
    return version


def test_partitions_only_and_incremental_analyses_publish_every_row(
    spark, tmp_path: Path
) -> None:
    table = tmp_path / "t"
    for p in range(PARTITIONS):
        _write(table, p, seed=p)
    stats, full = tmp_path / "partitions", tmp_path / "full"
    ls.open_table(str(table), stats_root=str(stats)).analyze(
        spark=spark, table_level=False, bins=8, max_frequencies=10)
    ls.open_table(str(table), stats_root=str(full)).analyze(spark=spark, bins=8,
                                                            max_frequencies=10)
    first = _check(table, stats, full)
    assert first.table_files is None

    # one partition changed: computed alone, the others' rows read from the parts
    _write(table, 2, seed=42, rows=30, name="part-1")
    result = ls.open_table(str(table), stats_root=str(stats)).analyze(
        spark=spark, table_level=False, bins=8, max_frequencies=10)
    assert result.partitions_computed == 1
    ls.open_table(str(table), stats_root=str(full)).analyze(spark=spark, bins=8,
                                                            max_frequencies=10)
    _check(table, stats, full)

    # and a table-level analyze over the partitions-only version reuses its partitions
    result = ls.open_table(str(table), stats_root=str(stats)).analyze(
        spark=spark, bins=8, max_frequencies=10)
    assert result.partitions_computed == 0
    third = _check(table, stats, full)
    assert third.table_files
    ours, theirs = (StatisticsReader(StatisticsStore(str(r))) for r in (stats, full))
    assert ours.statistics_table(None).equals(theirs.statistics_table(None))
    for column in COLUMNS:
        assert ours.frequencies(None, column) == theirs.frequencies(None, column)
    for where in ("k = 3 AND s = 'w7'", "f > 2.5", "s IN ('w1', 'w2') AND k < 4"):
        for source in ("index", "files"):
            assert ls.open_table(str(table), stats_root=str(stats)).estimate(
                where, source=source).to_json()["partitions"] == ls.open_table(
                str(table), stats_root=str(full)).estimate(
                where, source=source).to_json()["partitions"]
