"""``compute/sample/tasks.value_counts_of``: a column's distinct values and their counts as
64-bit hashes, and its frequency of frequencies, compared with NumPy's ``unique`` and the
estimators' own ``frequency_of_frequencies`` on the same values."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakestats.compute.sample.tasks import value_counts_of
from lakestats.stats.ndv import frequency_of_frequencies


def test_counts_equal_numpy_unique_nulls_dropped_nan_one_value():
    rng = np.random.default_rng(4)
    ints = rng.integers(0, 50, 2_000)
    profile, (hashes, counts) = value_counts_of(pa.chunked_array([ints[:700], ints[700:]]))
    _, want = np.unique(ints, return_counts=True)
    assert profile.tolist() == frequency_of_frequencies(ints).tolist()
    assert profile.tolist() == np.bincount(want)[1:].tolist()
    assert sorted(counts.tolist()) == sorted(want.tolist())
    assert np.unique(hashes).size == hashes.size  # one hash per distinct value
    words = pa.array(["a", None, "b", "a", "ccc", None, "a"])
    profile, (_, counts) = value_counts_of(words)
    assert sorted(counts.tolist()) == [1, 1, 3]
    assert profile.tolist() == [2, 0, 1]
    floats = pa.array([np.nan, np.nan, 1.5, 1.5, 2.0])
    _, (_, counts) = value_counts_of(floats)
    assert sorted(counts.tolist()) == [1, 2, 2]
    # the same value hashes alike in two partitions (what the table's aggregation needs)
    _, (left, _) = value_counts_of(pa.array(["x", "y"]))
    _, (right, _) = value_counts_of(pa.array(["y", "z", "x"]))
    assert len(set(left.tolist()) & set(right.tolist())) == 2


def test_a_type_arrow_cannot_count_gives_none_one_without_a_key_no_hashes():
    assert value_counts_of(pa.array([[1, 2], [3], [1, 2]])) is None
    profile, hashed = value_counts_of(pa.nulls(3))
    assert profile.size == 0 and hashed is None


def test_no_values_give_an_empty_profile():
    profile, (hashes, _) = value_counts_of(pa.array([None, None], pa.int64()))
    assert profile.size == 0 and hashes.size == 0
