"""Scenario #1's packed fingerprints (``compute/exact/fingerprints.py``).

The code round-trips against the sorted NumPy arrays it was given; the whole path, with
fingerprints narrowed until most values collide, still stores exactly DuckDB's ``HAVING
count(*) > 1`` rows (collisions only add candidates, which the recount discards).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.compute.exact import fingerprints
from lakestats.store import manifest


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1_000, 200_000])
def test_encode_decode_round_trip(n: int) -> None:
    rng = np.random.default_rng(n)
    prints = np.sort(rng.integers(0, 2**32, n)).astype(np.int64)
    if n > 3:
        prints[3] = prints[2]  # a repeat: a zero delta
    assert np.array_equal(fingerprints.decode(fingerprints.encode(prints)), prints)


def test_encode_decode_extremes_and_dense_values() -> None:
    for prints in ([0, 2**32 - 1], [5, 5, 5], list(range(0, 3000, 3)), [2**31]):
        array = np.array(prints, dtype=np.int64)
        assert np.array_equal(fingerprints.decode(fingerprints.encode(array)), array)


def test_packed_prints_cost_about_two_bytes_per_value() -> None:
    """A month of a 60M-value near-unique column: 714k values, 25-bit prints in 256
    buckets; the Rice code costs ~log2(mean gap) + 1.5 bits per value."""
    assert fingerprints.print_bits(60_000_000) == 25
    values = pa.array(np.arange(714_000, dtype=">i8").view("S8").tolist(), pa.binary())
    blobs = list(fingerprints._column_blobs(0, values, np.ones(714_000, np.int64), 25))
    per_value = sum(len(b["blob"]) for b in blobs) / 714_000
    gap = 2**25 / (714_000 / fingerprints.BUCKETS)
    assert per_value < (np.log2(gap) + 3) / 8, per_value
    decoded = np.concatenate([fingerprints.decode(b["blob"]) for b in blobs])
    assert len(decoded) == 714_000


@pytest.mark.spark
def test_colliding_prints_still_give_exact_duplicates(spark, tmp_path, monkeypatch) -> None:
    root = tmp_path / "t"
    rng = np.random.default_rng(3)
    for p in range(4):
        ids = p + 4 * np.arange(3_000, dtype=np.int64)  # unique, ranges overlap
        # five values of the next partition: each partition stays all-distinct
        ids[:5] = (p + 1) % 4 + 4 * rng.choice(np.arange(5, 3_000), 5, replace=False)
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(pa.table({"id": ids}), root / f"p={p}" / "data.parquet")
    monkeypatch.setattr(fingerprints, "print_bits", lambda values: 4)  # ~every value collides
    monkeypatch.setenv("LAKESTATS_EXACT_MAX_CANDIDATES", "100000")
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark, max_frequencies=20, exact=True)
    report = manifest.load_version(str(handle.stats_root)).extra["exact"]
    assert report["scenarios"]["id"] == "near_unique"
    assert set(report["near_unique_print_bits"].values()) == {4}
    con = duckdb.connect()
    con.register("t", pads.dataset(root, format="parquet", partitioning="hive").to_table())
    repeated = dict(
        con.execute("SELECT id, count(*) FROM t GROUP BY 1 HAVING count(*) > 1").fetchall()
    )
    (distinct,) = con.execute("SELECT count(DISTINCT id) FROM t").fetchone()
    assert repeated
    assert report["near_unique_candidates"] > 10 * len(repeated)  # the collisions
    assert dict(handle.frequencies("id")) == repeated
    [row] = handle.reader().column_statistics(None, ["id"])
    assert (row["distinct_count"], row["distinct_count_exact"]) == (distinct, True)
