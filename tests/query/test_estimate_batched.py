"""The batched estimator over the partition index against the per-partition path and DuckDB.

A generated table of 64 partitions with shifted ranges (so min/max prunes most partitions
for most predicates), NULLs, NaN, complete and truncated frequencies and a categorical
string column with complete frequencies (whose table-level frequencies record
per-partition counts). For every
conjunction the index source (``query.estimate`` over its vectors) must give the numbers of
the per-partition file source (``source="files"``: the estimator over a plain list, one
partition at a time), hold DuckDB's true count inside its bounds (per partition too) and equal it
where it claims exactness. The vectorised scalar estimates
(``stats/selectivity_vector.py``) are also compared one by one with the scalar path.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.query import index_source, sources
from lakestats.query import partition_estimate as pe
from lakestats.query import predicate as predicates
from lakestats.query.estimate import estimate
from lakestats.stats import selectivity_vector as sv

pytestmark = pytest.mark.spark

PARTITIONS = 64


def _partition(rng: np.random.Generator, p: int) -> pa.Table:
    n = int(rng.integers(20, 160)) if p % 9 else 3  # a few tiny partitions
    ints = rng.zipf(1.5, n) % 300 + p * 50
    floats = rng.normal(p, 4, n)
    floats[rng.random(n) < 0.05] = np.nan
    words = [f"w{(int(z) * 3 + p) % 40:02d}" for z in rng.zipf(1.3, n)]
    base = dt.date(2024, 1, 1) + dt.timedelta(days=p * 5)
    return pa.table(
        {
            "i": pa.array(ints.astype(np.int64), mask=rng.random(n) < 0.1),
            "f": pa.array(floats, mask=rng.random(n) < 0.05),
            "s": pa.array(words),
            # never all-distinct (whose frequencies list nothing): counts are exact
            "k": pa.array([f"k{v}" for v in rng.integers(0, 6, n)] if n > 6 else ["k0"] * n),
            "c": pa.array(rng.integers(0, 4 + p % 5, n).astype(np.int32)),
            "day": pa.array([base + dt.timedelta(days=int(d)) for d in rng.integers(0, 20, n)],
                            pa.date32()),
            "b": pa.array(ints % 3 == 0),  # no draw: the other columns stay as they were
        }
    )


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("batched") / "t"
    rng = np.random.default_rng(1414)
    parts = []
    for p in range(PARTITIONS):
        t = _partition(rng, p)
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(t, root / f"p={p}" / "data.parquet")
        parts.append(t.append_column("p", pa.array([p] * t.num_rows, pa.int64())))
    lt = ls.open_table(str(root))
    lt.analyze(bins=8, max_frequencies=12, spark=spark)
    con = duckdb.connect()
    con.register("t", pa.concat_tables(parts))
    lt.root_dir = str(root)
    return lt, con


CONJUNCTIONS = [
    "i >= 1500 AND f > 30",
    "i >= 1500 AND f > 30 AND c = 2",
    "i < 400 AND s = 'w07'",
    "s = 'w07' AND i IS NOT NULL",
    "k = 'k3' AND i IS NOT NULL",
    "k IN ('k1', 'k5', 'zz') AND f > 20",
    "k = 'zz' AND c = 1",
    "s IN ('w01', 'w02', 'w39') AND c <> 1",
    "i BETWEEN 1000 AND 1100 AND f <= 25.5 AND day >= DATE '2024-03-01'",
    "day < DATE '2024-02-10' AND c IN (0, 3) AND f IS NULL",
    "i IS NULL AND f > 10",
    "f = 'NaN' AND i > 2000",
    "f <> 'NaN' AND c NOT IN (0, 1)",
    "i = 1550 AND c = 0",
    "i = 99999 AND c = 0",
    "s >= 'w30' AND i < 1000",
    "s LIKE 'w1%' AND i > 2500",
    "s LIKE '%5' AND i > 2500",
    "(i < 100 OR f > 60) AND c = 1",
    "(i < 100 OR s = 'w03') AND day <= DATE '2024-04-01'",
    "NOT (i < 1000) AND NOT (c IN (2, 3))",
    "c = 0 AND c < 3 AND f > 0",
]


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("where", CONJUNCTIONS)
def test_batched_equals_per_partition_and_holds_truth(table, where: str) -> None:
    lt, con = table
    batched = lt.estimate(where).to_json()
    one_by_one = lt.estimate(where, source="files").to_json()
    assert _close(batched, one_by_one), (where, batched, one_by_one)
    holds_truth(con, where, batched)


def holds_truth(con, where: str, answer: dict) -> None:
    """DuckDB's true count lies within the answer's bounds, per partition too: exact where
    it says so, and no partition that holds rows pruned."""
    truth = dict(con.execute(f"SELECT p, count(*) FROM t WHERE {where} GROUP BY p").fetchall())
    total = sum(truth.values())
    assert answer["lower"] <= total <= answer["upper"], (where, total)
    if answer["exact"]:
        assert answer["row_count"] == total, where
    by_partition = {p["partition"]["p"]: p for p in answer["partitions"]}
    for p, count in truth.items():
        assert p in by_partition, f"{where}: partition {p} holds {count} rows but was pruned"
        got = by_partition[p]
        assert got["lower"] <= count <= got["upper"], (where, p, count, got)
        if got["exact"]:
            assert got["row_count"] == count, (where, p)


def test_index_provider_batches(table) -> None:
    """The default provider is the batched one, and an estimate the index and the table
    level's per-partition counts settle opens no partition file."""
    from lakestats.store.reader import StatisticsReader

    lt, con = table
    reader = lt.reader()
    parts = index_source.partitions_of(reader, ["s", "i"])
    assert isinstance(parts, index_source.IndexPartitions)
    assert parts.vectors("s") is not None
    opened: list[str] = []
    original = StatisticsReader.parquet_file

    def spy(self, entry, kind):
        if entry.name:  # a partition's file, not the table level's
            opened.append(kind)
        return original(self, entry, kind)

    where = "k = 'k3' AND c IS NOT NULL"  # k: complete frequencies of a string column
    fresh = ls.open_table(lt.root_dir)
    import unittest.mock

    with unittest.mock.patch.object(StatisticsReader, "parquet_file", spy):
        result = fresh.estimate(where).to_json()
    truth = con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchone()[0]
    assert (result["row_count"], result["exact"]) == (truth, True)
    assert opened == []


EVERY_CLASS = [
    # ranges
    "i >= 1500", "f > 30", "day >= DATE '2024-03-01'", "s >= 'w30'", "c BETWEEN 1 AND 3",
    # equalities: integers, strings (truncated and complete frequencies), dates, booleans
    "i = 1550", "c = 2", "s = 'w07'", "s = 'nope'", "k = 'k3'", "day = DATE '2024-01-07'",
    "b = true", "i <> 1550", "s <> 'w07'",
    # IN, NOT IN
    "i IN (60, 1550, 3100)", "s IN ('w01', 'w02', 'w39')", "k IN ('k1', 'zz')",
    "day IN (DATE '2024-01-07', DATE '2024-02-01')", "s NOT IN ('w01', 'w02')",
    # IS NULL, NaN
    "i IS NULL", "f IS NOT NULL", "f = 'NaN'",
    # LIKE: prefix, general
    "s LIKE 'w1%'", "s LIKE '%5'", "k LIKE 'k%'",
    # conjunctions and disjunctions
    *CONJUNCTIONS, "s = 'w07' OR k = 'k2'", "b = false AND s = 'w03' AND day < DATE '2024-03-01'",
]


@pytest.mark.parametrize("where", EVERY_CLASS)
def test_a_fresh_handle_opens_no_partition_file(table, where: str) -> None:
    """A planner's answer comes from the table-level files (partition index, partition
    histograms, table-level frequencies): a freshly opened handle estimates every predicate
    class without opening one partition's statistics, frequencies or histograms, with the
    per-partition path's numbers, and DuckDB's true count inside its bounds."""
    import unittest.mock

    from lakestats.store.reader import StatisticsReader

    lt, con = table
    opened: list[tuple[str, str]] = []
    original = StatisticsReader.parquet_file

    def spy(self, entry, kind):
        if entry.name:  # a partition's file, not the table level's
            opened.append((entry.name, kind))
        return original(self, entry, kind)

    fresh = ls.open_table(lt.root_dir)
    with unittest.mock.patch.object(StatisticsReader, "parquet_file", spy):
        got = fresh.estimate(where).to_json()
        again = fresh.estimate(where).to_json()  # the resident handle, too
    assert opened == [], (where, opened[:3], len(opened))
    assert got == again
    one_by_one = lt.estimate(where, source="files").to_json()
    assert _close(got, one_by_one), (where, got, one_by_one)
    holds_truth(con, where, got)


@pytest.mark.parametrize(
    "where",
    ["i >= 1500", "i < 777", "i = 1550", "i IN (60, 1550, 3100)", "i <> 1550",
     "i NOT IN (60, 1550)", "i IS NULL", "i IS NOT NULL", "f > 30", "f <= -1",
     "f = 'NaN'", "f <> 'NaN'", "f >= 'Infinity'", "c BETWEEN 1 AND 3", "c = 0",
     "c > 8", "day >= DATE '2024-03-01'", "day = DATE '2024-01-07'", "s >= 'w30'",
     "s LIKE 'w1%'", "s = 'w07'", "NOT (i < 1000 OR i IS NULL)"],
)
def test_vector_scalar_estimates_equal_the_scalar_path(table, where: str) -> None:
    """Per partition, ``selectivity_vector.scalar_estimates`` gives the scalar path's
    (``partition_estimate.ScalarView``) rows and bounds, except where it hands a partition back."""
    lt, _ = table
    reader = lt.reader()
    pred = predicates.push_not(predicates.parse(where, sources.column_types(reader)))
    column = predicates.columns_of(pred)[0]
    parts = index_source.partitions_of(reader, [column])
    cs = predicates.column_set(pred)
    batch = sv.scalar_estimates(parts.vectors(column), cs.true, cs.null == "T")
    handed_back = 0
    for i, part in enumerate(parts):
        if part.row_count == 0:
            continue
        if batch.fallback[i]:
            handed_back += 1
            continue
        e = pe.estimate(pred, pe.ScalarView(part))
        assert (batch.rows[i], batch.lower[i], batch.upper[i]) == (e.rows, e.lower, e.upper), (
            where, i, e)
    assert handed_back <= (PARTITIONS if column == "s" else 0)


SINGLES = [
    "i >= 1500", "i < 777", "i = 1550", "i IN (60, 1550, 3100)", "i <> 1550",
    "i NOT IN (60, 1550)", "i IS NULL", "f > 30", "f = 'NaN'", "f <> 'NaN'", "c = 0",
    "c BETWEEN 1 AND 3", "day = DATE '2024-01-07'", "s >= 'w30'", "s LIKE 'w1%'",
    "s = 'w07'", "k = 'k3'", "k IN ('k1', 'zz')", "i = 99999", "s LIKE '%5'",
    "i < 100 OR f > 60", "c = 0 OR c = 3",
]


@pytest.mark.parametrize("where", SINGLES + CONJUNCTIONS)
def test_batched_is_exactly_the_per_partition_path_over_the_index(table, where: str) -> None:
    """Over the same index partitions, the estimator's answer with the vectors is its
    answer over them as a plain list (each one by one), exactly (numbers, methods,
    partitions, detail)."""
    lt, _ = table
    reader = lt.reader()
    pred = predicates.parse(where, _types(reader))
    cols = predicates.columns_of(pred)
    table_part = sources.table_level(reader, cols)[0]
    batched = estimate(pred, index_source.partitions_of(reader, cols), table_part, 1, None)
    plain = sources.ListSource(list(index_source.partitions_of(reader, cols)))
    one_by_one = estimate(pred, plain, sources.table_level(reader, cols)[0], 1, None)
    assert batched.to_json() == one_by_one.to_json()


def _types(reader) -> dict:
    from lakestats.stats.type_codec import parse_type

    return {c["name"]: parse_type(c["type"]) for c in reader.columns}
