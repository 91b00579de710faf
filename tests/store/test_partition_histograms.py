"""The table-level partition histograms (a directory and one part per group) and the
estimates that read them.

The parts are the one home of every partition's frequency and histogram rows (entries
list only their statistics file): what the store reads back for a partition
(``store/partition_rows``) is the part's rows, every listed count is DuckDB's count of that
value in the partition, the histogram counts sum to DuckDB's non-null, non-NaN count of
the partition and, where the partition's frequencies are complete, its counts are
DuckDB's value counts; after a full
analyze and after incremental ones, where the unchanged groups' part files are listed as
they are and only the changed group's part is written. Estimates through the index and
the parts equal the per-partition path's, number for number, hold DuckDB's true counts in
their bounds and read no partition's rows one partition at a time; a part gone is one
clear error, and the next analyze repairs it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
import unittest.mock
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.compute.reduce import local as reduce_local
from lakestats.query import partition_filter
from lakestats.stats.kinds import Kind, kind_of
from lakestats.stats.type_codec import parse_type
from lakestats.store import (
    histogram_parts,
    layout,
    manifest,
    part_keys,
    partition_histograms,
    partition_rows,
    schemas,
)
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader

GOLDEN = Path(__file__).parents[1] / "golden"
PARTITIONS = 12


def _part(p: int, rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    f = rng.normal(p / 4, 1, rows)
    f[rng.random(rows) < 0.04] = np.nan
    cents = rng.integers(0, 8 + 3 * p, rows) * 5
    return pa.table(
        {
            "i": pa.array(rng.zipf(1.6, rows) % 9 + p % 3, mask=rng.random(rows) < 0.1),
            "n": pa.array(rng.integers(-200, 200 + 40 * p, rows), mask=rng.random(rows) < 0.05),
            "f": pa.array(f, mask=rng.random(rows) < 0.05),
            "amount": pa.array(
                [decimal.Decimal(int(v)).scaleb(-2) for v in cents], pa.decimal128(9, 2)
            ),
            "day": pa.array(
                [dt.date(2020, 1, 1) + dt.timedelta(days=int(d + 20 * p))
                 for d in rng.integers(0, 60, rows)],
                pa.date32(),
            ),
            "s": pa.array(np.array(["ant", "bee", "cat", "dog"])[rng.integers(0, 4, rows)]),
        }
    )


def _write(root: Path, p: int, seed: int, rows: int = 200, name: str = "part-0") -> None:
    directory = root / f"p={p}"
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(_part(p, rows, seed), directory / f"{name}.parquet")


def _con(root: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.register("t", pads.dataset(root, format="parquet", partitioning="hive").to_table())
    return con


@pytest.fixture(params=["one_task", "spark_stages"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "spark_stages":
        monkeypatch.setattr(reduce_local, "LOCAL_CELLS", 0)
    return request.param


def _rows_of(stats: Path, version: manifest.Version) -> tuple[pa.Table, list[str]]:
    """Every part's rows with the version's ``partition_id`` (from the directory), and the
    parts' paths; each part is sorted by column then member and has the golden schema."""
    directory = pq.read_table(stats / version.partition_histogram_parts)
    assert directory.schema.remove_metadata() == schemas.PARTITION_HISTOGRAM_PARTS_SCHEMA
    tables, paths = [], directory["part"].to_pylist()
    for path, ids in zip(paths, directory["partition_ids"].to_pylist(), strict=True):
        part = pq.read_table(stats / path)
        assert part.schema.remove_metadata() == schemas.PARTITION_HISTOGRAMS_SCHEMA
        keys = list(zip(part["column_index"].to_pylist(), part["member"].to_pylist(),
                        strict=True))
        assert keys == sorted(keys)
        ids_of = np.asarray(ids, np.int32)[part["member"].to_numpy()]
        tables.append(part.add_column(0, "partition_id", pa.array(ids_of)))
    return pa.concat_tables(tables), paths


def _check_file(root: Path) -> manifest.Version:
    """Part rows == partition files; histogram sums and complete frequencies == DuckDB."""
    stats = root / "_lakestats"
    version = manifest.load_version(StatisticsStore(str(stats)))
    assert version.partition_histogram_parts, "the version lists no partition histograms"
    table, paths = _rows_of(stats, version)
    held = [
        i for i, c in enumerate(version.columns)
        if kind_of(parse_type(c["type"])) in partition_histograms.HELD_KINDS
    ]
    assert [version.columns[i]["name"] for i in held] == [
        "i", "n", "f", "amount", "day", "s", "p"]
    keys = sorted(zip(table["column_index"].to_pylist(), table["partition_id"].to_pylist(),
                      strict=True))
    assert keys == [(c, p) for c in held for p in range(len(version.partitions))]
    # every part is a group cache entry of the version (so later versions can list it)
    cache = version.extra["reduce_cache"]
    assert sorted(paths) == sorted(v for k, v in cache.items() if k.startswith("phist-"))
    rows = {(r["partition_id"], r["column_index"]): r for r in table.to_pylist()}
    con = _con(root)
    reader = StatisticsReader(StatisticsStore(str(stats)))
    for pid, entry in enumerate(version.partitions):
        # the parts are the one home of a partition's frequency and histogram rows
        assert set(entry.files) == {"statistics"}, entry.files
        own = pq.ParquetFile(stats / entry.files["statistics"]).read().to_pylist()
        p = entry.values["p"]
        for ci in held:
            got, row = rows[(pid, ci)], own[ci]
            name = row["column"]
            for field in ("frequencies_count", "frequencies_truncated", "frequencies_min",
                          "histogram_lower", "histogram_width"):
                assert got[field] == row[field], (entry.name, name, field)
            frequencies = reader.frequency_rows(entry, ci)
            assert len(frequencies) == (row["frequencies_count"] or 0), (entry.name, name)
            assert frequencies["frequency"].to_pylist() == sorted(
                frequencies["frequency"].to_pylist(), reverse=True)  # top-k is a prefix
            listed = sorted(zip(frequencies["value"].to_pylist(),
                                frequencies["frequency"].to_pylist(), strict=True))
            # every listed count is the partition's count of that value (DuckDB)
            truth = dict(con.execute(
                f"SELECT {name}, count(*) FROM t WHERE p = ? AND {name} IS NOT NULL "
                f"GROUP BY {name}", [p]).fetchall())
            nan = sum(c for v, c in truth.items() if v != v)  # NaN: one value, never equal
            for value, count in reader.frequencies(entry, name):
                assert (nan if value != value else truth[value]) == count, (entry.name, value)
            # strings keep binary keys; 8-byte keys and decimal keys of int64 values are
            # stored as order-preserving ints (decimals: the unscaled values)
            if name == "s":
                assert got["frequency_ints"] is None
                keys = got["frequency_values"]
            else:
                assert got["frequency_values"] is None
                width = part_keys.key_width(
                    parse_type(version.columns[ci]["type"]))
                keys = part_keys.ints_as_keys(np.array(got["frequency_ints"]), width)
                assert got["frequency_ints"] == sorted(got["frequency_ints"])
            assert list(zip(keys, got["frequency_counts"], strict=True)) == listed
            if row["histogram_bins"] is None:  # a string column: no histogram
                assert got["histogram_counts"] is None, (entry.name, name)
            else:
                counts = reader.histogram_counts(entry, name).to_pylist()
                counts = counts[: row["histogram_bins"]]
                assert got["histogram_counts"] == [c or 0 for c in counts]
                valid = f"{name} IS NOT NULL" + (" AND NOT isnan(f)" if name == "f" else "")
                (non_null,) = con.execute(
                    f"SELECT count(*) FROM t WHERE p = ? AND {valid}", [p]).fetchone()
                assert sum(got["histogram_counts"]) == non_null, (entry.name, name)
            if row["distinct_count"] is not None and not row["frequencies_truncated"] and (
                not row["all_distinct"]
            ):
                truth = con.execute(
                    f"SELECT count(*) FROM t WHERE p = ? AND {name} IS NOT NULL "
                    f"GROUP BY {name}", [p]).fetchall()
                assert sorted(got["frequency_counts"]) == sorted(c for (c,) in truth), name
    return version


def test_file_after_full_and_incremental_analyses(spark, tmp_path: Path, mode: str) -> None:
    root = tmp_path / "t"
    for p in range(PARTITIONS):
        _write(root, p, seed=p)
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark, bins=8, max_frequencies=24)
    first = _check_file(root)

    # one partition changed, one added, one removed
    _write(root, 3, seed=99, rows=40, name="part-1")
    _write(root, PARTITIONS, seed=PARTITIONS)
    shutil.rmtree(root / "p=0")
    handle.analyze(spark=spark, bins=8, max_frequencies=24)
    second = _check_file(root)
    assert second.partition_histogram_parts != first.partition_histogram_parts

    # one partition changed alone: the other groups' part files are listed as they are,
    # untouched, and only the changed group's part is written
    stats = root / "_lakestats"
    old = {k: v for k, v in second.extra["reduce_cache"].items() if k.startswith("phist-")}
    stamps = {v: (stats / v).stat().st_mtime_ns for v in old.values()}
    _write(root, 5, seed=7, rows=25, name="part-1")
    assert handle.analyze(spark=spark, bins=8, max_frequencies=24).partitions_computed == 1
    third = _check_file(root)
    new = {k: v for k, v in third.extra["reduce_cache"].items() if k.startswith("phist-")}
    assert len(new) > 1
    reused = [k for k in new if new[k] == old.get(k)]
    assert len(reused) == len(new) - 1, (old, new)
    assert all((stats / new[k]).stat().st_mtime_ns == stamps[new[k]] for k in reused)
    written = sorted((stats / "table" / third.run_id).rglob("phist-*"))
    assert [p.relative_to(stats).as_posix() for p in written] == [
        v for k, v in new.items() if k not in reused
    ]


@pytest.fixture(scope="module")
def analyzed(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("phist") / "t"
    for p in range(PARTITIONS):
        _write(root, p, seed=100 + p, rows=30 + 25 * p)
    ls.open_table(str(root)).analyze(spark=spark, bins=8, max_frequencies=24)
    return root


PREDICATES = [
    "i = 3",
    "f > 0.5",
    "i = 3 AND f > 0.5",
    "i IN (1, 2, 7) AND amount > 0.20",
    "i IN (1, 2, 7, 99) AND n IS NOT NULL",
    "n BETWEEN -10 AND 150 AND day >= DATE '2020-03-01'",
    "i = 4 AND n IS NULL",
    "f IS NULL AND i > 2",
    "amount = 0.25 AND i < 5",
    "amount IN (0.10, 0.20, 0.35) AND day < DATE '2020-05-01'",
    "day = DATE '2020-02-03' AND i >= 1",
    "n = 7 AND s = 'bee'",
    "f > 1.5 AND f < 3 AND i <> 2",
    "i NOT IN (2, 3) AND amount <= 0.40 AND day > DATE '2020-04-15'",
    "f = 'NaN' AND i = 1",
]


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _spy(opened: list[str]):
    """Record the kinds of a partition's frequency or histogram rows read one partition at
    a time (``store/partition_rows``), not through the parts' column reads."""
    original = partition_rows.PartitionRows.read

    def spy(self, entry, kind, columns=None):
        if entry.name:  # a partition's rows, not the table level's
            opened.append(kind)
        return original(self, entry, kind, columns)

    return unittest.mock.patch.object(partition_rows.PartitionRows, "read", spy)


@pytest.mark.parametrize("where", PREDICATES)
def test_estimates_equal_the_partition_files_and_hold_the_truth(analyzed: Path,
                                                                where: str) -> None:
    opened: list[str] = []
    with _spy(opened):
        via_file = ls.open_table(str(analyzed)).estimate(where).to_json()
    assert not {"histograms", "frequencies"} & set(opened), (where, opened)
    via_partitions = ls.open_table(str(analyzed)).estimate(where, source="files").to_json()
    assert _close(via_file, via_partitions), (where, via_file, via_partitions)
    con = _con(analyzed)
    truth = dict(con.execute(f"SELECT p, count(*) FROM t WHERE {where} GROUP BY p").fetchall())
    total = sum(truth.values())
    assert via_file["lower"] <= total <= via_file["upper"], (where, total)
    if via_file["exact"]:
        assert via_file["row_count"] == total
    by_partition = {p["partition"]["p"]: p for p in via_file["partitions"]}
    for p, count in truth.items():
        got = by_partition[p]
        assert got["lower"] <= count <= got["upper"], (where, p, count, got)
        if got["exact"]:
            assert got["row_count"] == count


def test_a_missing_part_is_one_clear_error_and_analyze_repairs_it(
    spark, analyzed: Path, tmp_path: Path, mode: str
) -> None:
    """The parts are the rows' one home: a part gone (deleted by hand, say) is an error
    that says to re-analyze those partitions, never an answer without their rows; the
    next incremental analyze recomputes exactly them."""
    copy = tmp_path / "t"  # analyzed here: a copy's data files are other files
    for p in range(PARTITIONS):
        _write(copy, p, seed=100 + p, rows=30 + 25 * p)
    ls.open_table(str(copy)).analyze(spark=spark, bins=8, max_frequencies=24)
    stats = copy / "_lakestats"
    where = "i = 3 AND f > 0.5"
    new = ls.open_table(str(analyzed)).estimate(where).to_json()
    version = manifest.load_version(StatisticsStore(str(stats)))
    _, paths = _rows_of(stats, version)
    os.remove(stats / paths[0])
    directory = pq.read_table(stats / version.partition_histogram_parts)
    lost = [version.partitions[i] for i in directory["partition_ids"][0].as_py()]
    kept = [e for e in version.partitions if e not in lost]
    reader = StatisticsReader(StatisticsStore(str(stats)))
    with pytest.raises(partition_rows.MissingPartitionRowsError, match="re-analyze") as caught:
        reader.frequencies(lost[0].name, "i")
    assert isinstance(caught.value, ls.LakestatsError) and "\n" not in str(caught.value)
    assert lost[0].path in str(caught.value)
    assert reader.frequencies(kept[0].name, "i")  # the other parts answer
    with pytest.raises(ls.LakestatsError, match="re-analyze"):
        ls.open_table(str(copy)).estimate(where)
    result = ls.open_table(str(copy)).analyze(spark=spark, bins=8, max_frequencies=24)
    assert result.partitions_computed == result.partitions_repaired == len(lost)
    assert _close({**ls.open_table(str(copy)).estimate(where).to_json(), "version": 0},
                  {**new, "version": 0})


@pytest.mark.parametrize("where", ["i = 3 AND f > 0.5", "amount = 0.25", "f > 2.5",
                                   "day = DATE '2020-02-03' AND i >= 1"])
def test_partition_filter_matches_duckdb(analyzed: Path, where: str) -> None:
    """``stats --where``: every partition holding a matching row is kept; one read of the
    index and of this file, no partition file."""
    reader = StatisticsReader(StatisticsStore(str(analyzed / "_lakestats")))
    opened: list[str] = []
    with _spy(opened):
        kept = partition_filter.partitions_that_can_match(where, reader)
    assert opened == []
    con = _con(analyzed)
    holding = {p for (p,) in con.execute(f"SELECT DISTINCT p FROM t WHERE {where}").fetchall()}
    names = {reader.version.partitions[i].values["p"] for i in kept}
    assert holding <= names, (where, holding - names)
    # the same partitions as the per-partition path: the version without the file
    from lakestats.query import predicate, sources
    from lakestats.query.partition_estimate import can_match

    pred = predicate.parse(where, sources.column_types(reader))
    files = sources.partitions_of(reader, predicate.columns_of(pred))
    assert kept == [i for i, part in enumerate(files) if can_match(pred, part)]


COLUMNS = [{"name": "a", "type": "int64"}, {"name": "s", "type": "string"},
           {"name": "b", "type": "double"}]
K1, K2 = b"\x80" + bytes(6) + b"\x01", b"\x80" + bytes(6) + b"\x02"  # 1 and 2 as keys


def _inputs(partitions: int, big: bool = False) -> tuple[list, list, list]:
    """Synthetic partition files (statistics fields, histograms, frequencies) of
    ``COLUMNS``; ``big``: the first partition has a count that does not fit in int32."""
    rng = np.random.default_rng(5)
    stats, hists, freqs = [], [], []
    for _ in range(partitions):
        stats.append(pa.table({
            "frequencies_count": pa.array([2, 1, 0], pa.int64()),
            "frequencies_truncated": [False, False, False],
            "frequencies_min": pa.array([None, None, None], pa.int64()),
            "histogram_lower": [b"\x80" + bytes(7), None, b"\xc0" + bytes(7)],
            "histogram_width": [1.0, None, 0.5],
            "histogram_bins": pa.array([3, None, 2], pa.int32()),
        }))
        hists.append(pa.table({"a": pa.array(rng.integers(0, 9, 3)),
                               "b": pa.array([4, 5, None], pa.int64())}))
        big_count = 2**33 if big and not stats[1:] else 0  # the first partition's only
        freqs.append(pa.table({"column": ["a", "s", "a"], "value": [K2, b"x", K1],
                               "frequency": pa.array([3, 4, 5 + big_count], pa.int64())}))
    return stats, hists, freqs


def _synthetic(root: Path, partitions: int, big: bool = False,
               ) -> partition_histograms.PartitionHistograms:
    """Two parts, members interleaved (even and odd partition ids), and their directory."""
    stats, hists, freqs = _inputs(partitions, big)
    halves = [list(range(0, partitions, 2)), list(range(1, partitions, 2))]
    listed = []
    for k, members in enumerate(halves):
        rows = histogram_parts.histograms_part(
            COLUMNS, *[[x[i] for i in members] for x in (stats, hists, freqs)])
        (root / f"part-{k}").write_bytes(histogram_parts.write_part(rows, partitions))
        listed.append((members, f"part-{k}"))
    histogram_parts.write_directory(
        listed, str(root / "directory.parquet"), StatisticsStore(str(root))
    )
    directory = pq.read_table(root / "directory.parquet")
    return partition_histograms.PartitionHistograms(
        StatisticsStore(str(root)), directory, partitions,
        lambda filesystem, path: filesystem.open_input_file(path))


def test_parts_hold_few_rows_per_row_group_and_read_by_partition_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schemas, "PARTITION_HISTOGRAMS_GROUP_ROWS", 16)
    opened = _synthetic(tmp_path, 40)
    part = pq.read_table(tmp_path / "part-1")
    assert part.num_rows == 60  # a, s and b of 20 members
    first = part.to_pylist()[0]
    assert (first["member"], first["column_index"]) == (0, 0)
    assert first["frequency_values"] is None  # an int64 column: its keys as ints
    assert first["frequency_ints"] == [1, 2]  # the key's word with its top bit flipped
    assert part_keys.ints_as_keys(first["frequency_ints"]) == [K1, K2]
    assert first["frequency_counts"] == [5, 3]
    handle = pq.ParquetFile(tmp_path / "part-1")
    groups = [handle.read_row_group(g).to_pydict() for g in range(handle.num_row_groups)]
    assert [len(g["member"]) for g in groups] == [16, 4, 16, 4, 16, 4]
    assert all(len(set(g["column_index"])) == 1 for g in groups)
    # version ids 17, 20, 39: members 8 (odd part), 10 (even part), 19 (odd part)
    got = opened.read(2, [39, 17, 20], ["histogram_counts", "frequency_counts"])
    assert sorted(got["partition_id"].to_pylist()) == [17, 20, 39]
    assert got["histogram_counts"].to_pylist() == [[4, 5]] * 3
    assert got["frequency_counts"].to_pylist() == [[]] * 3
    got = opened.read(0, [17], ["frequency_ints", "frequency_counts", "histogram_counts"])
    direct = pq.read_table(tmp_path / "part-1").to_pylist()[8]
    assert (direct["member"], direct["column_index"]) == (8, 0)
    assert got.to_pylist() == [{"partition_id": 17, "column_index": 0,
                                "frequency_ints": direct["frequency_ints"],
                                "frequency_counts": [5, 3],
                                "histogram_counts": direct["histogram_counts"]}]
    # the string column: its binary keys, no histogram
    got = opened.read(1, [17], ["frequency_values", "frequency_counts", "histogram_counts"])
    assert got.to_pylist() == [{"partition_id": 17, "column_index": 1,
                                "frequency_values": [b"x"], "frequency_counts": [4],
                                "histogram_counts": None}]
    assert opened.holds(Kind.STRING) and opened.holds(Kind.INTEGER)
    # a directory written before string columns were held says so by saying nothing
    older = partition_histograms.PartitionHistograms(
        StatisticsStore(str(tmp_path)),
        pq.read_table(tmp_path / "directory.parquet").replace_schema_metadata(None), 40,
        lambda filesystem, path: filesystem.open_input_file(path))
    assert older.holds(Kind.INTEGER) and not older.holds(Kind.STRING)
    # a table of few partitions: whole columns share a row group (8 // 4 = 2 of them)
    monkeypatch.setattr(schemas, "PARTITION_HISTOGRAMS_GROUP_ROWS", 8)
    _synthetic(tmp_path, 4)
    handle = pq.ParquetFile(tmp_path / "part-0")
    assert [len(set(handle.read_row_group(g)["column_index"].to_pylist()))
            for g in range(handle.num_row_groups)] == [2, 1]
    # more partitions: one column per row group, however small the part
    _synthetic(tmp_path, 6)
    assert pq.ParquetFile(tmp_path / "part-0").num_row_groups == 3
    # whole columns share a row group only while their lists stay small: a lookup of a
    # column of few values never decodes a column of thousands
    monkeypatch.setattr(schemas, "PARTITION_HISTOGRAMS_GROUP_BYTES", 8)
    opened = _synthetic(tmp_path, 4)
    handle = pq.ParquetFile(tmp_path / "part-0")
    assert handle.num_row_groups == 3
    assert [len(set(handle.read_row_group(g)["column_index"].to_pylist())) for g in (0, 1, 2)] == [
        1, 1, 1
    ]
    got = opened.read(0, [2], ["frequency_ints", "frequency_counts"])
    assert got.to_pylist() == [
        {"partition_id": 2, "column_index": 0, "frequency_ints": [1, 2], "frequency_counts": [5, 3]}
    ]


def test_keys_as_ints_keep_the_key_order() -> None:
    """8-byte keys of every kind stored as ints: same order, and back to the same bytes."""
    from lakestats.stats import keys

    rng = np.random.default_rng(3)
    arrays = [
        pa.array(rng.integers(-2**62, 2**62, 300)),
        pa.array(np.concatenate([rng.normal(0, 1e6, 300), [np.inf, -np.inf, np.nan, 0.0]])),
        pa.array(rng.integers(0, 2**63, 300, dtype=np.uint64) * 2, pa.uint64()),
        pa.array(rng.integers(-10**6, 10**6, 300).astype("datetime64[us]")),
    ]
    for array in arrays:
        encoded = keys.encode(array)
        as_ints = partition_histograms.keys_as_ints(encoded)
        stored = encoded.to_pylist()
        assert part_keys.ints_as_keys(as_ints) == stored
        assert np.argsort(as_ints, kind="stable").tolist() == sorted(
            range(len(stored)), key=lambda i: (stored[i], i))


@pytest.mark.parametrize("dtype", [pa.decimal128(20, 2), pa.decimal128(38, 0),
                                   pa.decimal256(60, 3), pa.decimal64(12, 2)])
def test_decimal_keys_as_ints_keep_the_key_order(dtype: pa.DataType) -> None:
    """Decimal keys (``stats/keys.py``) of values whose unscaled integer fits in an int64
    are stored as that integer: the same order, back to the same bytes; the others are
    said not to fit."""
    from lakestats.stats import keys

    rng = np.random.default_rng(11)
    unscaled = [0, 1, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**17, -(10**17)]
    unscaled += rng.integers(-2**62, 2**62, 200).tolist()
    top = 10**dtype.precision
    unscaled = [u for u in unscaled if -top < u < top]
    values = [decimal.Decimal(u).scaleb(-dtype.scale) for u in unscaled]
    encoded = keys.encode(pa.array(values, dtype))
    width = part_keys.key_width(dtype)
    ints, fits = partition_histograms.decimal_keys_as_ints(encoded, width)
    assert fits.tolist() == [-(2**63) <= u < 2**63 for u in unscaled]
    assert ints[fits].tolist() == [u for u in unscaled if -(2**63) <= u < 2**63]
    stored = encoded.filter(pa.array(fits)).to_pylist()
    assert part_keys.ints_as_keys(ints[fits], width) == stored
    as_array = part_keys.int_keys(ints[fits], width)  # NumPy S{width}
    assert as_array.dtype.itemsize == width
    assert as_array.tobytes() == b"".join(stored)
    assert partition_histograms.key_ints(encoded.to_pylist(), width).tolist() == (
        ints[fits].tolist())
    assert np.argsort(ints[fits], kind="stable").tolist() == sorted(
        range(len(stored)), key=lambda i: (stored[i], i))


def test_a_decimal_row_with_a_value_beyond_int64_stays_binary(tmp_path: Path) -> None:
    """A member whose decimal keys all fit holds ints; one with a larger value keeps
    the binary keys (each row one list); read back, both give the partitions' keys."""
    from lakestats.stats import keys

    dtype = pa.decimal128(38, 0)
    columns = [{"name": "d", "type": "decimal128(38, 0)"}]
    small = keys.encode(pa.array([decimal.Decimal(5), decimal.Decimal(-7)], dtype))
    large = keys.encode(pa.array([decimal.Decimal(3), decimal.Decimal(2**64)], dtype))
    stats = [pa.table({"frequencies_count": pa.array([2], pa.int64()),
                       "frequencies_truncated": [False],
                       "frequencies_min": pa.array([None], pa.int64()),
                       "histogram_lower": pa.array([None], pa.binary()),
                       "histogram_width": pa.array([None], pa.float64()),
                       "histogram_bins": pa.array([None], pa.int32())})] * 2
    hists = [pa.table({"x": pa.array([], pa.int64())})] * 2
    freqs = [pa.table({"column": ["d", "d"], "value": v, "frequency": pa.array([1, 2])})
             for v in (small, large)]
    rows = histogram_parts.histograms_part(columns, stats, hists, freqs).to_pylist()
    assert rows[0]["frequency_values"] is None and rows[0]["frequency_ints"] == [-7, 5]
    assert rows[1]["frequency_ints"] is None
    assert rows[1]["frequency_values"] == sorted(large.to_pylist())
    width = part_keys.key_width(dtype)
    assert part_keys.ints_as_keys(rows[0]["frequency_ints"], width) == sorted(
        small.to_pylist())
    # the directory lists decimals as int-keyed: a reader of binary decimal keys only
    # (part format 3) does not find ``decimal`` and reads the partitions' files
    (tmp_path / "part-0").write_bytes(histogram_parts.write_part(
        histogram_parts.histograms_part(columns, stats, hists, freqs), 2))
    histogram_parts.write_directory(
        [([0, 1], "part-0")], str(tmp_path / "directory.parquet"), StatisticsStore(str(tmp_path)))
    directory = pq.read_table(tmp_path / "directory.parquet")
    held = directory.schema.metadata[partition_histograms.HELD_KEY].decode().split(",")
    assert "decimal:int64" in held and "decimal" not in held
    opened = partition_histograms.PartitionHistograms(
        StatisticsStore(str(tmp_path)), directory, 2,
        lambda filesystem, path: filesystem.open_input_file(path))
    assert opened.holds(Kind.DECIMAL)
    got = opened.read(0, [0, 1], ["frequency_values", "frequency_ints", "frequency_counts"])
    assert got.to_pylist() == [
        {"partition_id": 0, "column_index": 0, "frequency_values": None,
         "frequency_ints": [-7, 5], "frequency_counts": [2, 1]},
        {"partition_id": 1, "column_index": 0, "frequency_values": sorted(large.to_pylist()),
         "frequency_ints": None, "frequency_counts": [1, 2]},
    ]


def test_keys_of_another_width_stay_binary() -> None:
    stats, hists, freqs = _inputs(1)
    freqs = [f.set_column(1, "value", pa.array([b"\x02", b"x", b"\x01"])) for f in freqs]
    row = histogram_parts.histograms_part(COLUMNS, stats, hists, freqs).to_pylist()[0]
    assert (row["frequency_values"], row["frequency_ints"]) == ([b"\x01", b"\x02"], None)
    assert row["frequency_counts"] == [5, 3]


def test_a_count_beyond_int32_makes_that_part_int64(tmp_path: Path) -> None:
    opened = _synthetic(tmp_path, 4, big=True)
    wide, narrow = pq.read_table(tmp_path / "part-0"), pq.read_table(tmp_path / "part-1")
    assert wide.schema.field("frequency_counts").type == pa.list_(pa.int64())
    assert narrow.schema.field("frequency_counts").type == pa.list_(pa.int32())
    got = opened.read(0, [0, 1, 2, 3], ["frequency_counts", "histogram_counts"])
    counts = dict(zip(got["partition_id"].to_pylist(), got["frequency_counts"].to_pylist(),
                      strict=True))
    assert counts == {0: [5 + 2**33, 3], 1: [5, 3], 2: [5, 3], 3: [5, 3]}
    # read alone, a part keeps its own type
    assert opened.read(0, [1], ["frequency_counts"]).schema.field(
        "frequency_counts").type == pa.list_(pa.int32())


def test_partition_histograms_schemas_match_golden(tmp_path: Path) -> None:
    _synthetic(tmp_path, 3)
    for name, path in (("partition_histograms", tmp_path / "part-0"),
                       ("partition_histogram_parts", tmp_path / "directory.parquet")):
        text = str(pq.ParquetFile(path).schema).strip().splitlines()
        schema = "\n".join(line for line in text if not line.startswith("<pyarrow")) + "\n"
        golden = GOLDEN / f"{name}.schema.txt"
        if os.environ.get("LAKESTATS_REGEN_GOLDEN"):
            golden.write_text(schema)
        assert schema == golden.read_text(), name


def test_expire_keeps_the_parts_a_kept_version_lists(analyzed: Path, tmp_path: Path) -> None:
    """``expire`` removes unreferenced files (age 0 here), never the listed directory and
    parts: also when the version's group cache does not list them (a NOSCAN version that
    outlived the analysis whose cache it reused)."""
    copy = tmp_path / "t"
    shutil.copytree(analyzed, copy)
    stats = copy / "_lakestats"
    version = manifest.load_version(StatisticsStore(str(stats)))
    _, paths = _rows_of(stats, version)
    stray = stats / "table" / "old-run" / "groups" / "phist-stray"
    stray.parent.mkdir(parents=True)
    stray.write_bytes((stats / paths[0]).read_bytes())
    # the (only) version's manifest rewritten without its group cache
    assert manifest.version_numbers(StatisticsStore(str(stats))) == [version.version]
    path = stats / layout.version_path(version.version)
    text = json.loads(path.read_text())
    del text["extra"]["reduce_cache"]
    path.write_text(json.dumps(text))
    result = ls.open_table(str(copy)).expire(retain_last=1, orphan_age_minutes=0)
    assert (stats / version.partition_histogram_parts).exists()
    assert all((stats / p).exists() for p in paths)
    assert not stray.exists(), result


def test_key_value_order_is_lexsort() -> None:
    """The part's row order (member x column key, then value) equals NumPy's lexsort,
    with keys past 16 bits and with repeated (key, value) pairs (lexsort's tie order),
    for values of a wide range and of a range that leaves room to pack the key beside."""
    from lakestats.store.histogram_parts import _key_value_order

    rng = np.random.default_rng(3)
    top = np.iinfo(np.int64)
    for trial in range(600):
        n = int(rng.integers(0, 400))
        key = rng.integers(0, 6 if trial % 3 else 70_000, n)
        if trial % 4 < 2:
            value = rng.integers(-4, 4, n) * (2**62 // 4)
        else:  # narrow: packed with the key; at the ends of int64 too
            value = rng.integers(-500, 500, n) + rng.choice([0, top.min + 600, top.max - n - 600])
        if trial % 2:  # unique pairs, as frequency files have
            value = value + np.arange(n)
        assert np.array_equal(_key_value_order(key, value), np.lexsort((value, key)))


@pytest.mark.parametrize("partitions", [3, 4, 6, 40])
def test_equal_row_groups_in_one_call_are_the_groups_written_one_by_one(
    partitions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``write_part`` writes equal row groups with one ``write_table`` call: the bytes are
    those of writing each row group on its own (pyarrow's writer, slice by slice)."""
    monkeypatch.setattr(schemas, "PARTITION_HISTOGRAMS_GROUP_ROWS", 4)
    stats, hists, freqs = _inputs(partitions)
    rows = histogram_parts.histograms_part(COLUMNS, stats, hists, freqs)
    got = histogram_parts.write_part(rows, partitions)
    handle = pq.ParquetFile(pa.BufferReader(got))
    sizes = [handle.metadata.row_group(g).num_rows for g in range(handle.num_row_groups)]
    assert sum(sizes) == rows.num_rows
    for g in range(handle.num_row_groups):  # whole columns, or GROUP_ROWS of a long one
        columns = handle.read_row_group(g)["column_index"].to_pylist()
        assert len(set(columns)) == 1 or len(columns) <= 4
    class OneByOne(pq.ParquetWriter):  # every write_table call cut into its row groups
        def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None:
            size = row_group_size or max(1, table.num_rows)
            for start in range(0, max(1, table.num_rows), size):
                super().write_table(table.slice(start, size), row_group_size=size)

    monkeypatch.setattr(pq, "ParquetWriter", OneByOne)
    assert histogram_parts.write_part(rows, partitions) == got
