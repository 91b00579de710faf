"""``compute/sample/tasks.value_hashes``: a column's distinct values and their counts as
64-bit hashes, compared with NumPy's ``unique`` on the same values."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakestats.compute.sample.tasks import value_hashes


def test_counts_equal_numpy_unique_nulls_dropped_nan_one_value():
    rng = np.random.default_rng(4)
    ints = rng.integers(0, 50, 2_000)
    hashes, counts = value_hashes(pa.chunked_array([ints[:700], ints[700:]]))
    _, want = np.unique(ints, return_counts=True)
    assert sorted(counts.tolist()) == sorted(want.tolist())
    assert np.unique(hashes).size == hashes.size  # one hash per distinct value
    words = pa.array(["a", None, "b", "a", "ccc", None, "a"])
    _, counts = value_hashes(words)
    assert sorted(counts.tolist()) == [1, 1, 3]
    floats = pa.array([np.nan, np.nan, 1.5, 1.5, 2.0])
    _, counts = value_hashes(floats)
    assert sorted(counts.tolist()) == [1, 2, 2]
    # the same value hashes alike in two partitions (what the table's aggregation needs)
    left, _ = value_hashes(pa.array(["x", "y"]))
    right, _ = value_hashes(pa.array(["y", "z", "x"]))
    assert len(set(left.tolist()) & set(right.tolist())) == 2


def test_a_type_without_a_key_gives_none():
    assert value_hashes(pa.array([[1, 2], [3]])) is None
