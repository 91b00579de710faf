"""The most frequent values, in the order the frequencies files store them.

Order: count descending, then value ascending (values are distinct, so the order is
total and the same on every run). A sort on both keys compares values for every tie, and
near-unique columns are nearly all ties (counts of 1 or 2); here the k-th largest count is
found with NumPy, values are compared only among the rows tied at it, and only the
``k`` rows kept are sorted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def most_frequent(counts: np.ndarray, values: pa.Array | pa.ChunkedArray, k: int) -> np.ndarray:
    """Indices of the ``k`` most frequent of ``values`` (distinct, no nulls), in order."""
    n = len(counts)
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if k >= n:
        chosen = np.arange(n, dtype=np.int64)
    else:
        kth = np.partition(counts, n - k)[n - k]  # the k-th largest count
        above = np.flatnonzero(counts > kth)
        tied = np.flatnonzero(counts == kth)
        need = k - len(above)
        if need < len(tied):  # the ``need`` smallest values among the ties
            smallest = pc.select_k_unstable(
                values.take(pa.array(tied)), k=need, sort_keys=[("values", "ascending")]
            )
            tied = tied[smallest.to_numpy()]
        chosen = np.concatenate([above, tied])
    kept = pa.table({"c": pa.array(counts[chosen]), "v": values.take(pa.array(chosen))})
    order = pc.sort_indices(kept, sort_keys=[("c", "descending"), ("v", "ascending")])
    return chosen[order.to_numpy()]
