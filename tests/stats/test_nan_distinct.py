"""The table-level distinct-count estimate counts NaN as one value, as partitions and
DuckDB do: a float column with NaN in 3 of 5 partitions whose
frequencies are truncated, so the table level must use the merged HLL sketches."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.compute.reduce import local as reduce_local

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("local_cells", [0, reduce_local.LOCAL_CELLS])
@pytest.mark.parametrize("distinct_per_partition", [40, 900])
def test_table_distinct_estimate_counts_nan_once(
    spark,
    tmp_path,
    monkeypatch: pytest.MonkeyPatch,
    local_cells: int,
    distinct_per_partition: int,
) -> None:
    monkeypatch.setattr(reduce_local, "LOCAL_CELLS", local_cells)
    rng = np.random.default_rng(distinct_per_partition)
    root = tmp_path / "t"
    parts = []
    # NaN payloads differ between partitions (writers differ): still one value
    nans = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001], np.uint64)
    for p in range(5):
        prices = rng.integers(0, distinct_per_partition * 3, distinct_per_partition) / 100
        values = np.concatenate([prices, prices[:10]])  # repeats: not all distinct
        if p < 3:
            values = np.concatenate([values, np.full(p + 2, nans[p]).view(np.float64)])
        column = pa.array(values, mask=np.arange(len(values)) % 17 == 0)  # and some nulls
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(pa.table({"x": column}), root / f"p={p}" / "d.parquet")
        parts.append(pa.table({"x": column}))
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark, max_frequencies=3)
    [row] = handle.statistics(None, ["x"])
    assert row["distinct_count_exact"] is False and row["nan_count"] > 0
    con = duckdb.connect()
    con.register("t", pa.concat_tables(parts))
    (truth,) = con.execute("SELECT count(DISTINCT x) FROM t").fetchone()  # NaN is one value
    (without_nan,) = con.execute("SELECT count(DISTINCT x) FROM t WHERE NOT isnan(x)").fetchone()
    assert truth == without_nan + 1
    assert row["distinct_count_lower"] <= truth <= row["distinct_count_upper"], (truth, row)
    if truth < 192:  # the sketch still lists its coupons: the estimate is the exact count
        assert row["distinct_count"] == truth
