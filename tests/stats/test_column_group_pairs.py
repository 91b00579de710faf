"""A group of two integer or temporal columns is counted from ints (packed pairs sorted or
counted, dependency degrees and combination hashes from the keys' ints): its joint counts,
distinct count and dependency degrees equal DuckDB's, and its sketch hashes the same bytes
as every other group's (the key, the separator, the key), for pairs that pack into few
possible values, many, and ranges too wide to pack, over one slice and two merged."""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from lakestats.stats import column_groups as cg
from lakestats.stats import hashing, sketches
from lakestats.stats.key_ints import keys_as_ints
from lakestats.stats.leaves import leaves_of


def _pairs(kind: str, n: int = 30_000) -> pa.Table:
    rng = np.random.default_rng(3)
    if kind == "few":  # a date and a small int: a few thousand possible pairs
        days = rng.integers(0, 400, n)
        return pa.table({"a": pa.array(np.datetime64("2024-01-01") + days, pa.date32()),
                         "b": pa.array(rng.integers(-3, 4, n), pa.int8())})
    if kind == "many":  # ids with negative values: pairs mostly distinct, a few repeated
        a = rng.integers(-200_000, 200_000, n)
        return pa.table({"a": pa.array(a), "b": pa.array(a % 97 + rng.integers(0, 2, n))})
    # timestamps over centuries and full-range ints: too wide to pack into 63 bits
    micros = rng.integers(-(2**62), 2**62, n)
    return pa.table({"a": pa.array(micros, pa.timestamp("us")),
                     "b": pa.array(rng.integers(-(2**62), 2**62, n))})


def _accumulated(rows: pa.Table, slices: int) -> cg.GroupAccumulator:
    acc = cg.GroupAccumulator(("a", "b"), tuple(leaves_of(rows.schema)))
    step = -(-rows.num_rows // slices)
    for start in range(0, rows.num_rows, step):
        part = cg.GroupAccumulator(("a", "b"), tuple(leaves_of(rows.schema)))
        part.observe(rows.slice(start, step))
        acc.merge(part)
    return acc


@pytest.mark.parametrize("slices", [1, 2])
@pytest.mark.parametrize("kind", ["few", "many", "wide"])
def test_a_pair_of_numbers_against_duckdb(kind: str, slices: int) -> None:
    rows = _pairs(kind)
    acc = _accumulated(rows, slices)
    con = duckdb.connect()
    con.register("t", rows)
    ints = {f"k{i}": keys_as_ints(acc.joint().column(f"k{i}")) for i in range(2)}
    ours = sorted(zip(ints["k0"].tolist(), ints["k1"].tolist(),
                      acc.joint().column("count").to_pylist(), strict=True))
    epoch = "epoch_us(a)" if kind == "wide" else "(a - DATE '1970-01-01')" if kind == "few" else "a"
    true = con.execute(f"SELECT {epoch}, b, count(*) FROM t GROUP BY ALL ORDER BY ALL").fetchall()
    assert ours == [tuple(int(v) for v in r) for r in true]
    row = acc.finalize(max_frequencies=100)
    assert row.distinct_count == len(true) and row.distinct_exact
    for dependency in row.dependencies:
        det, dep = dependency.determinant[0], dependency.dependent
        support = con.execute(
            f"SELECT coalesce(sum(rows), 0) FROM (SELECT {det}, count(*) AS rows, "
            f"count(DISTINCT {dep}) AS values FROM t GROUP BY {det}) WHERE values = 1"
        ).fetchone()[0]
        assert dependency.supporting_rows == support, dependency
    assert row.truncated == (len(true) > 100)
    if row.truncated:  # the sketch of the combinations' bytes, built here by hand
        joined = [
            k0 + cg.KEY_SEPARATOR + k1
            for k0, k1 in zip(acc.joint().column("k0").to_pylist(),
                              acc.joint().column("k1").to_pylist(), strict=True)
        ]
        hashes = hashing.hash_binary(pa.array(joined, pa.binary())).view(np.int64)
        assert row.hll_sketch == sketches.hll_of(hashes)


def test_a_pair_with_nulls_is_counted_as_any_group() -> None:
    rows = pa.table({"a": pa.array([1, None, 1, 2, None]),
                     "b": pa.array([dt.date(2024, 1, 1)] * 5)})
    row = _accumulated(rows, 1).finalize(max_frequencies=10)
    assert row.distinct_count == 3 and sorted(row.listed.column("count").to_pylist()) == [1, 2, 2]
