"""The exact step's range merge without Spark: sources, cut ranges, range tasks, frequency runs.

Several partitions' staged ``values.parquet`` (written by ``store.writer.write_values``,
several row groups per column) plus one partition whose columns are listed in its
``frequencies.parquet`` are cut into small ranges and merged by the range tasks called
directly; the result is compared with pyarrow's ``group_by`` over every source's rows:
the rank parts (keys in order, counts, local cumulative counts), the ranges' disjointness
and bounded size, and the rewritten table frequencies (every value, or only the repeated
ones, by decreasing count then key; the untouched column's rows kept as they were).
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lakestats.compute.exact import frequencies, merge, ranges, sources
from lakestats.stats import keys
from lakestats.stats.key_sums import grouped
from lakestats.stats.value_counts import VALUES_ROW_GROUP, VALUES_SCHEMA
from lakestats.store import layout, ranks, schemas, writer
from lakestats.store.handle import StatisticsStore
from lakestats.store.manifest import PartitionEntry
from lakestats.store.partition_rows import PartitionRows

COLUMNS = ["a", "s", "kept"]  # "kept": a column whose table frequencies stay as they were


def _staged(rng: np.random.Generator, n: int) -> tuple[pa.Table, pa.Table]:
    """A partition's staged value counts of columns 0 (integers) and 1 (strings)."""
    ints = pc.value_counts(pa.array(rng.integers(0, 40_000, n)))
    words = pc.value_counts(pa.array([f"w{x}" for x in rng.zipf(1.2, n // 4) % 30_000]))
    parts = []
    for column, counted in ((0, ints), (1, words)):
        encoded = keys.encode(counted.field("values")).cast(pa.binary())
        order = pc.sort_indices(encoded)
        parts.append(
            pa.table(
                {
                    "column_index": pa.array(np.full(len(encoded), column, dtype=np.int32)),
                    "value": encoded.take(order),
                    "count": counted.field("counts").cast(pa.int64()).take(order),
                },
                schema=VALUES_SCHEMA,
            )
        )
    table = pa.concat_tables(parts)
    return table, table


def _listed(root, name: str, rng: np.random.Generator) -> tuple[sources.Source, pa.Table]:
    """A partition whose three columns are all listed in its frequencies file."""
    counted = pc.value_counts(pa.array(rng.integers(0, 40_000, 300)))
    ints = keys.encode(counted.field("values")).cast(pa.binary())
    words = pa.array([f"w{i}".encode() for i in range(0, 60, 3)], pa.binary())
    kept = pa.array([b"x", b"y"], pa.binary())
    rows = pa.table(
        {
            "column_index": pa.array(
                [0] * len(ints) + [1] * len(words) + [2] * len(kept), pa.int32()
            ),
            "value": pa.concat_arrays([ints, words, kept]),
            "frequency": pa.concat_arrays(
                [
                    counted.field("counts").cast(pa.int64()),
                    pa.array(np.arange(len(words)) % 3 + 1, pa.int64()),
                    pa.array([5, 1], pa.int64()),
                ]
            ),
        }
    )
    directory = root / "partitions" / name
    directory.mkdir(parents=True)
    pq.write_table(rows, directory / "frequencies.parquet", write_statistics=["column_index"])
    distinct = [len(ints), len(words), len(kept)]
    pq.write_table(
        pa.table(
            {
                "row_count": pa.array(distinct, pa.int64()),
                "null_count": pa.array([0, 0, 0], pa.int64()),
                "distinct_count": pa.array(distinct, pa.int64()),
                "frequencies_count": pa.array(distinct, pa.int64()),
            }
        ),
        directory / "statistics.parquet",
    )
    source = sources.Source("", 1, f"partitions/{name}/statistics.parquet",
                            *_files(root, name))
    contribution = (
        rows.rename_columns(["column_index", "value", "count"])
        .filter(pc.less(rows.column("column_index"), 2))
        .cast(VALUES_SCHEMA)
    )
    return source, contribution


def _staged_source(root, name: str, table: pa.Table) -> sources.Source:
    directory = root / "partitions" / name
    directory.mkdir(parents=True)
    writer.write_values(table, str(directory / "values.parquet"), StatisticsStore(str(root)))
    counts = [int(pc.sum(pc.equal(table.column("column_index"), c)).as_py() or 0) for c in (0, 1)]
    pq.write_table(
        pa.table(
            {
                "row_count": pa.array([*counts, 0], pa.int64()),
                "null_count": pa.array([0, 0, 0], pa.int64()),
                "distinct_count": pa.array([*counts, 0], pa.int64()),
                "frequencies_count": pa.array([0, 0, 0], pa.int64()),
            }
        ),
        directory / "statistics.parquet",
    )
    return sources.Source(
        f"partitions/{name}/values.parquet",
        1,
        f"partitions/{name}/statistics.parquet",
        *_files(root, name),
    )


def _files(root, name: str) -> tuple[PartitionEntry, PartitionRows]:
    """A partition entry listing its files, and where its frequency rows are read."""
    files = {kind: f"partitions/{name}/{kind}.parquet" for kind in ("statistics", "frequencies")}
    entry = PartitionEntry(path=name, name=name, values={}, row_count=0, size_bytes=0,
                           files=files)
    return entry, PartitionRows(StatisticsStore(str(root)), None)


def test_range_merge_equals_group_by(tmp_path) -> None:
    rng = np.random.default_rng(5)
    chosen, contributions = [], []
    for p in range(4):
        table, contribution = _staged(rng, 30_000)
        chosen.append(_staged_source(tmp_path, f"p={p}", table))
        contributions.append(contribution)
    listed, contribution = _listed(tmp_path, "p=9", rng)
    chosen.append(listed)
    contributions.append(contribution)
    wanted = frozenset({0, 1})
    outline = pa.Table.from_batches(
        list(
            sources.outline(
                StatisticsStore(str(tmp_path)),
                chosen,
                wanted,
                iter([pa.record_batch({"id": list(range(5))})]),
            )
        )
    )
    # several row groups per staged column: ranges slice by row-group statistics
    assert max(outline.column("num_rows").to_pylist()) <= VALUES_ROW_GROUP
    assert pc.count_distinct(outline.column("row_group")).as_py() > 2
    groups: dict[int, list[ranges.Group]] = {}
    for r in outline.to_pylist():
        groups.setdefault(r["column_index"], []).append(
            ranges.Group(
                r["source"], r["listed"], r["row_group"], r["min"], r["max"], r["num_rows"]
            )
        )
    target = 20_000
    pieces = [p for c in sorted(groups) for p in ranges.pieces(c, groups[c], target)]
    assert sum(p.column == 0 for p in pieces) >= 4  # column 0 really is cut
    tasks = ranges.pack(pieces, target)
    smallest = merge.LISTED_FROM  # the table frequencies list repeated values only
    job = merge.MergeJob(
        StatisticsStore(str(tmp_path)), "run", chosen, tasks, {}, {}, frozenset({0, 1})
    )
    summaries = []
    for part in range(len(tasks)):
        summaries += [
            r
            for b in merge.merge_ranges(job, iter([pa.record_batch({"id": [part]})]))
            for r in b.to_pylist()
        ]

    truth = (
        pa.concat_tables(contributions)
        .group_by(["column_index", "value"])
        .aggregate([("count", "sum")])
        .sort_by([("column_index", "ascending"), ("value", "ascending")])
    )
    for column in (0, 1):
        want = truth.filter(pc.equal(truth.column("column_index"), column))
        mine = [r for r in summaries if r["column_index"] == column]
        # ranges are disjoint and in key order as the parts go up
        for before, after in itertools.pairwise(mine):
            assert before["part"] < after["part"] and before["max"] < after["min"]
        rows = pa.concat_tables(
            pq.read_table(
                tmp_path / layout.ranks_dir("run") / f"part-{r['part']:05d}.parquet",
                filters=[("column_index", "=", column)],
            )
            for r in mine
        )
        assert rows.column("value").to_pylist() == want.column("value").to_pylist()
        assert rows.column("count").to_pylist() == want.column("count_sum").to_pylist()
        for r in mine:  # local cumulative counts restart in every part
            part = rows.filter(
                pc.and_(
                    pc.greater_equal(rows.column("value"), pa.scalar(r["min"])),
                    pc.less_equal(rows.column("value"), pa.scalar(r["max"])),
                )
            )
            assert (
                part.column("cumulative").to_pylist()
                == np.cumsum(part.column("count").to_numpy()).tolist()
            )
            assert r["total"] == int(pc.sum(part.column("count")).as_py())
        index = ranks.RankIndex(summaries, StatisticsStore(str(tmp_path)), layout.ranks_dir("run"))
        assert index.distinct_count(column) == want.num_rows
    # every piece read at most its target plus one partly-used row group per source and end
    assert max(p.rows for p in pieces) <= target + 2 * len(chosen) * VALUES_ROW_GROUP

    table_file = "table/run/frequencies.parquet"
    (tmp_path / "table" / "run").mkdir(parents=True, exist_ok=True)
    old = pa.table(
        {
            "column": ["a", "kept", "kept"],
            "value": [b"old", b"x", b"y"],
            "frequency": [9, 5, 1],
            "column_index": pa.array([0, 2, 2], pa.int32()),
            "frequency_upper": pa.nulls(3, pa.int64()),
            "partition_counts": pa.nulls(3, pa.list_(pa.int64())),
            "partition_ids": pa.nulls(3, pa.list_(pa.int32())),
            "partition_id_counts": pa.nulls(3, pa.list_(pa.int64())),
        },
        schema=schemas.TABLE_FREQUENCIES_SCHEMA,
    )
    pq.write_table(old, tmp_path / table_file)
    runs = {c: [] for c in (0, 1)}
    for r in sorted(summaries, key=lambda r: r["part"]):
        if r["run_rows"]:
            runs[r["column_index"]].append(merge.run_file("run", r["part"], r["column_index"]))
    frequency_job = frequencies.FrequencyJob(
        StatisticsStore(str(tmp_path)), table_file, COLUMNS, runs, merge.runs_dir("run")
    )
    [result] = list(frequencies.write_frequencies(frequency_job, iter([])))
    written = pq.read_table(tmp_path / table_file)
    assert not (tmp_path / merge.runs_dir("run")).exists()  # runs removed once merged
    assert written.column("column_index").to_pylist() == sorted(
        written.column("column_index").to_pylist()
    )
    stored = dict(
        zip(
            result.column("column_index").to_pylist()[1:],
            result.column("rows").to_pylist()[1:],
            strict=True,
        )
    )
    for column in (0, 1):
        want = truth.filter(
            pc.and_(
                pc.equal(truth.column("column_index"), column),
                pc.greater_equal(truth.column("count_sum"), smallest),
            )
        ).sort_by([("count_sum", "descending"), ("value", "ascending")])
        got = written.filter(pc.equal(written.column("column_index"), column))
        assert got.column("value").to_pylist() == want.column("value").to_pylist()
        assert got.column("frequency").to_pylist() == want.column("count_sum").to_pylist()
        assert set(got.column("column").to_pylist()) <= {COLUMNS[column]}
        assert stored[column] == want.num_rows
        assert sum(r["listed"] for r in summaries if r["column_index"] == column) == want.num_rows
    kept = written.filter(pc.equal(written.column("column_index"), 2))
    assert kept.to_pylist() == old.slice(1).to_pylist()
    meta = pq.ParquetFile(tmp_path / table_file).metadata
    for g in range(meta.num_row_groups):  # one column per row group
        stats = meta.row_group(g).column(3).statistics
        assert stats.min == stats.max
        assert meta.row_group(g).num_rows <= schemas.FREQUENCIES_ROW_GROUP


@pytest.mark.parametrize("shape", ["2", "8", "16", "16 same lead", "24 same middle",
                                   "8 one value", "8 increasing", "8 dense signed", "variable"])
def test_merged_sums_equal_keys_and_drops_non_positive(shape: str) -> None:
    """Against pyarrow's ``group_by``: variable-width keys (Arrow sort) and fixed widths
    of 8, 16 and 24 bytes (NumPy words), including keys differing only in a later word, a
    word the same on every row (a decimal's sign word), one key, keys in order already, and
    keys varying in one word over a span of at most two values per row (counted into bins:
    signed integers, and the decimal-like keys with a constant lead)."""
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 1000, 5000)
    if shape == "variable":
        values = pa.array([b"k" * int(x % 5) + bytes([x % 7]) for x in raw], pa.binary())
    elif shape == "16 same lead":
        values = pa.array([b"\x80" * 8 + int(x).to_bytes(8, "big") for x in raw], pa.binary())
    elif shape == "24 same middle":
        values = pa.array([int(x % 3).to_bytes(8, "big") + b"\x01" * 8
                           + int(x).to_bytes(8, "big") for x in raw], pa.binary())
    elif shape == "8 one value":
        values = pa.array([b"\x05" * 8] * len(raw), pa.binary())
    elif shape == "8 dense signed":  # int64 keys around 0: counted into bins
        signed = pa.array(raw.astype(np.int64) - 500, pa.int64())
        values = keys.encode(signed).cast(pa.binary())
    elif shape == "8 increasing":
        values = pa.array([int(i).to_bytes(8, "big") for i in range(len(raw))], pa.binary())
    else:
        width = int(shape)
        values = pa.array([bytes([x % 7]) * (width - 1) + bytes([x % 5]) for x in raw], pa.binary())
    counts = rng.integers(-2, 4, 5000).astype(np.int64)
    got_keys, got_counts = merge.merged(values, counts)
    again = merge.merged(got_keys, np.concatenate([got_counts[:-1], [-1]]))  # in order
    assert again[0].to_pylist() == got_keys.to_pylist()[:-1]
    assert again[1].tolist() == got_counts.tolist()[:-1]
    truth = (
        pa.table({"v": values, "c": counts}).group_by("v").aggregate([("c", "sum")]).sort_by("v")
    )
    distinct, sums = grouped(values, counts)
    assert distinct.to_pylist() == truth.column("v").to_pylist()
    assert sums.tolist() == truth.column("c_sum").to_pylist()
    truth = truth.filter(pc.greater(truth.column("c_sum"), 0))
    assert got_keys.to_pylist() == truth.column("v").to_pylist()
    assert got_counts.tolist() == truth.column("c_sum").to_pylist()


def test_cut_points_split_interleaved_sources_evenly() -> None:
    """Four sources each spread over the whole key space in groups of 100 rows: cutting
    at 1,000 rows gives ranges within a group per source of the target."""
    groups = []
    for source in range(4):
        starts = np.sort(np.random.default_rng(source).choice(10_000, 40, replace=False))
        for g, (low, high) in enumerate(zip(starts, [*starts[1:], 10_000], strict=True)):
            groups.append(
                ranges.Group(
                    source,
                    False,
                    g,
                    int(low).to_bytes(4, "big"),
                    int(high - 1).to_bytes(4, "big"),
                    100,
                )
            )
    cuts = ranges.cut_points(groups, 1_000)
    assert cuts == sorted(set(cuts)) and 12 <= len(cuts) <= 16
    pieces = ranges.pieces(0, groups, 1_000)
    assert len(pieces) == len(cuts) + 1
    assert all(p.rows <= 1_000 + 2 * 4 * 100 + 400 for p in pieces)
    # every group is read by exactly the pieces its keys overlap
    for g in groups:
        readers = [
            p for p in pieces if any(r.source == g.source and g.group in r.groups for r in p.reads)
        ]
        assert readers and all(
            (p.low is None or g.high >= p.low) and (p.high is None or g.low < p.high)
            for p in readers
        )


@pytest.mark.parametrize("changed_first", [False, True])
@pytest.mark.parametrize("layers", ["one sorted", "two overlapping"])
@pytest.mark.parametrize("width", [8, None])
def test_delta_equals_counting_every_key(
    width: int | None, layers: str, changed_first: bool
) -> None:
    """The delta layer's change found by looking up only the changed keys (bisection in
    one sorted layer of one-word keys, hashing otherwise) equals the one a plain count of
    every key finds: changed keys, their change, old and new counts, distinct change;
    whether the changed rows come first (``read_piece``'s order) or not."""
    rng = np.random.default_rng(17)

    def key(i: int) -> bytes:
        return int(i).to_bytes(8, "big") if width else f"k{i * 7919 % 10007}".encode()

    layer = {key(i): int(c) for i, c in zip(rng.choice(3000, 1200, replace=False),
                                            rng.integers(1, 5, 1200), strict=True)}
    layer_keys = sorted(layer)
    if layers == "one sorted":  # a base's parts, in key order
        rows_k = [*layer_keys[:700], *layer_keys[700:]]
    else:  # a base and a delta over the same keys
        rows_k = [*layer_keys[::2], *layer_keys[1::2]]
    rows_c = [layer[k] for k in rows_k]
    lower = [True] * len(rows_k)
    gone = layer_keys[::40]  # removed whole: their full count subtracted
    rows_k += gone
    rows_c += [-layer[k] for k in gone]
    lower += [False] * len(gone)
    for i in rng.integers(0, 3500, 400):  # added: new values and more of old ones
        rows_k.append(key(int(i)))
        rows_c.append(int(rng.integers(1, 3)))
        lower.append(False)
    if changed_first:
        first = len(layer_keys)
        rows_k, rows_c, lower = (r[first:] + r[:first] for r in (rows_k, rows_c, lower))
    keys = pa.array(rows_k, pa.binary())
    counts = np.array(rows_c, dtype=np.int64)
    mask = np.array(lower)
    got = merge.delta(keys, counts, mask)
    before: dict[bytes, int] = {}
    after: dict[bytes, int] = {}
    for k, c, low in zip(keys.to_pylist(), counts.tolist(), mask.tolist(), strict=True):
        after[k] = after.get(k, 0) + c
        if low:
            before[k] = before.get(k, 0) + c
    changed = sorted(k for k in after if after[k] != before.get(k, 0))
    old = [max(before.get(k, 0), 0) for k in changed]
    new = [max(after[k], 0) for k in changed]
    assert got.changed.to_pylist() == changed
    assert got.old.tolist() == old and got.new.tolist() == new
    assert got.by.tolist() == [n - o for n, o in zip(new, old, strict=True)]
    distinct = sum(c > 0 for c in after.values()) - sum(c > 0 for c in before.values())
    assert got.distinct == distinct != 0


def test_a_delta_range_without_changes_reads_no_layer(tmp_path) -> None:
    """Writing a delta layer, a key range where no changed partition has rows reads nothing
    of the layers (a time-ordered key changes in its last ranges only); a range with changes
    reads both, and marks which rows are the layers'."""
    rng = np.random.default_rng(2)
    old, _ = _staged(rng, 20_000)
    layer = _staged_source(tmp_path, "old", old)
    layer = sources.Source(layer.path)  # a rank part of the version before: no statistics
    new = pa.table(
        {
            "column_index": pa.array([0, 0], pa.int32()),
            "value": keys.encode(pa.array([50_000, 50_001])).cast(pa.binary()),
            "count": pa.array([2, 1], pa.int64()),
        },
        schema=VALUES_SCHEMA,
    )
    changed = _staged_source(tmp_path, "new", new)
    chosen = [layer, changed]
    groups = {g: pq.ParquetFile(tmp_path / p.path).metadata.num_row_groups
              for g, p in enumerate(chosen)}
    reads = tuple(sources.Read(s, False, tuple(range(groups[s]))) for s in (0, 1))
    split = keys.encode(pa.array([30_000])).cast(pa.binary())[0].as_py()
    store = StatisticsStore(str(tmp_path))
    with sources.Files(store) as files:
        quiet = sources.read_piece(chosen, 0, None, split, reads, files, changes_only=True)
        assert len(quiet[0]) == 0
        everything = sources.read_piece(chosen, 0, None, split, reads, files)
        assert len(everything[0]) > 0 and everything[2].all()
        busy = sources.read_piece(chosen, 0, split, None, reads, files, changes_only=True)
    assert busy[0].to_pylist()[:2] == new.column("value").to_pylist()
    assert len(busy[0]) > 2 and busy[2].tolist() == [False, False] + [True] * (len(busy[0]) - 2)


def test_a_key_sorted_source_is_sliced_as_a_filter_would_select(tmp_path) -> None:
    """``read_piece`` cuts a staged (column, key)-sorted file by bisection: for every column
    and key range, over row groups of a few rows, the rows equal an Arrow filter's."""
    rng = np.random.default_rng(5)
    table, _ = _staged(rng, 4_000)
    path = tmp_path / "values.parquet"
    pq.write_table(table, path, row_group_size=97)
    source = sources.Source("values.parquet", 1, "statistics.parquet")
    groups = tuple(range(pq.ParquetFile(path).metadata.num_row_groups))
    store = StatisticsStore(str(tmp_path))
    values = table.column("value").to_pylist()
    with sources.Files(store) as files:
        for column in (0, 1):
            inside = [v for v, c in zip(values, table.column("column_index").to_pylist(),
                                        strict=True) if c == column]
            cuts = [None, *sorted(rng.choice(inside, 3).tolist()), inside[0], b"\xff", None]
            for low, high in itertools.pairwise(cuts):
                got = sources.read_piece([source], column, low, high,
                                         (sources.Read(0, False, groups),), files)
                mask = pc.equal(table.column("column_index"), column)
                if low is not None:
                    mask = pc.and_(mask, pc.greater_equal(table.column("value"), low))
                if high is not None:
                    mask = pc.and_(mask, pc.less(table.column("value"), high))
                want = table.filter(mask)
                assert got[0].to_pylist() == want.column("value").to_pylist()
                assert got[1].tolist() == want.column("count").to_pylist()


_WORKER = """
import pickle, sys
import pyarrow as pa
from lakestats.compute.exact import frequencies, merge, sources
from lakestats.stats.arrays import int64_array

store, chosen, job, table_file = pickle.load(open(sys.argv[1], "rb"))
def numbers(ids):
    return iter([pa.RecordBatch.from_arrays([int64_array(list(ids))], names=["id"])])
outline = list(sources.outline(store, chosen, frozenset({0, 1}), numbers(range(len(chosen)))))
summaries = [b for part in range(len(job.tasks)) for b in merge.merge_ranges(job, numbers([part]))]
runs = {0: [], 1: []}
for batch in summaries:
    for r in batch.to_pylist():
        if r["run_rows"]:
            runs[r["column_index"]].append(merge.run_file("run", r["part"], r["column_index"]))
frequency_job = frequencies.FrequencyJob(store, table_file, ["a", "b", "kept"], runs,
                                         merge.runs_dir("run"))
result = list(frequencies.write_frequencies(frequency_job, iter([])))
print(sum(b.num_rows for b in outline), sum(b.num_rows for b in summaries), result[0].num_rows,
      "pandas" in sys.modules)
"""


def test_the_exact_steps_tasks_do_not_import_pandas(tmp_path) -> None:
    """The outline, range and frequency tasks build their Arrow data without pyarrow's
    pandas probe: importing pandas cost each Spark Python worker ~1 s of a 15 s
    incremental analyze (bench/scale.py). Run in a fresh process, as a worker is."""
    import os
    import pickle
    import subprocess
    import sys
    from pathlib import Path

    rng = np.random.default_rng(8)
    chosen = [_staged_source(tmp_path, f"p={p}", _staged(rng, 5_000)[0]) for p in range(2)]
    chosen.append(_listed(tmp_path, "p=9", rng)[0])
    store = StatisticsStore(str(tmp_path))
    outline = pa.Table.from_batches(
        list(sources.outline(store, chosen, frozenset({0, 1}),
                             iter([pa.record_batch({"id": list(range(3))})])))
    )
    groups: dict[int, list[ranges.Group]] = {}
    for r in outline.to_pylist():
        groups.setdefault(r["column_index"], []).append(
            ranges.Group(r["source"], r["listed"], r["row_group"], r["min"], r["max"],
                         r["num_rows"])
        )
    pieces = [p for c in sorted(groups) for p in ranges.pieces(c, groups[c], 3_000)]
    job = merge.MergeJob(store, "run", chosen, ranges.pack(pieces, 3_000), {}, {},
                         frozenset({0, 1}))
    table_file = "table/run/frequencies.parquet"
    (tmp_path / "table" / "run").mkdir(parents=True)
    pq.write_table(schemas.TABLE_FREQUENCIES_SCHEMA.empty_table(), tmp_path / table_file)
    state = tmp_path / "job.pickle"
    state.write_bytes(pickle.dumps((store, chosen, job, table_file)))
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, str(state)],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr
    outlined, ranged, result_rows, pandas = done.stdout.split()
    assert int(outlined) == outline.num_rows and int(ranged) >= len(job.tasks)
    assert int(result_rows) == 3  # the file's row, then one per rewritten column
    assert pandas == "False"


def test_footers_are_parsed_once_bounded_and_keyed_by_size(tmp_path) -> None:
    """A footer parsed for one task serves the next one's open of the same file (and the
    rows read through it are the file's); the cache stays within its bytes, and a file
    of another size at the same place is parsed anew."""
    from pyarrow import fs

    local = fs.LocalFileSystem()
    paths = [str(tmp_path / f"s{i}.parquet") for i in range(3)]
    for i, path in enumerate(paths):
        pq.write_table(pa.table({"v": list(range(i * 10, i * 10 + 50))}), path,
                       row_group_size=10)
    footer = pq.ParquetFile(paths[0]).metadata.serialized_size
    footers = sources.Footers(2 * footer + footer // 2)  # room for two
    for _ in range(2):
        with local.open_input_file(paths[0]) as handle:
            assert footers.opened(paths[0], handle).read().equals(pq.read_table(paths[0]))
    assert footers.parsed == 1
    for path in paths[1:]:
        with local.open_input_file(path) as handle:
            footers.opened(path, handle)
    assert len(footers) == 2 and footers.parsed == 3
    with local.open_input_file(paths[0]) as handle:  # the first file's footer went first
        footers.opened(paths[0], handle)
    assert footers.parsed == 4
    pq.write_table(pa.table({"v": list(range(7))}), paths[0])  # another size, same place
    with local.open_input_file(paths[0]) as handle:
        assert footers.opened(paths[0], handle).read().column("v").to_pylist() == list(range(7))
    assert footers.parsed == 5
