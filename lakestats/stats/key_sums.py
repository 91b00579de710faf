"""Summing the counts of equal keys: the kernel of the exact step's range merge and of the
layered ranks' reads.

Keys are order-preserving binary keys (``stats/keys.py``). Rows already strictly increasing
skip the sort; fixed-width keys (numbers, dates, decimals) sort as big-endian words with
NumPy's stable sort, which uses the sorted runs of concatenated sources; other keys take one
Arrow sort; then ``add.reduceat`` over the runs of equal keys.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.stats.arrays import bool_array, int64_array, numbers


def fixed_width_words(keys: pa.Array) -> np.ndarray | None:
    """Keys of one width (a multiple of 8 bytes) as rows of native ``uint64`` words whose
    order is the keys' byte order; None for keys of varying width (strings)."""
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32, count=len(keys) + 1,
                            offset=keys.offset * 4)
    width = int(offsets[1] - offsets[0])
    if width == 0 or width % 8 or not np.all(np.diff(offsets) == width):
        return None
    data = np.frombuffer(
        keys.buffers()[2], dtype=">u8", count=len(keys) * width // 8, offset=int(offsets[0])
    )
    return data.reshape(len(keys), width // 8).astype(np.uint64)


def grouped(
    keys: pa.Array, counts: np.ndarray, lower: np.ndarray | None = None
) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
    """Distinct keys in increasing order with their summed counts and, given a ``lower``
    row mask, the sums of the masked rows alone; nothing dropped. Rows already strictly
    increasing (one sorted source, or sources in key order, as the partitions of a
    time-ordered key) skip the sort (one comparison pass finds it)."""
    n = len(keys)
    if n == 0:
        return keys, counts, (counts if lower is not None else None)
    if n == 1 or pc.all(pc.less(keys.slice(0, n - 1), keys.slice(1))).as_py():
        at = np.arange(n)
    elif (words := fixed_width_words(keys)) is not None:
        # numbers, dates, decimals: big-endian words; NumPy's stable sort (timsort) uses
        # the sources' sorted runs
        order = (
            np.argsort(words[:, 0], kind="stable")
            if words.shape[1] == 1
            else np.lexsort(words.T[::-1])
        )
        words = words[order]
        keys = keys.take(int64_array(order))
        counts = counts[order]
        lower = lower[order] if lower is not None else None
        starts = np.ones(n, dtype=bool)
        starts[1:] = np.any(words[1:] != words[:-1], axis=1)
        at = np.flatnonzero(starts)
    else:
        order = pc.sort_indices(keys)
        keys = keys.take(order)
        taken = numbers(order)
        counts = counts[taken]
        lower = lower[taken] if lower is not None else None
        starts = np.zeros(n, dtype=bool)
        starts[0] = True
        if n > 1:
            differs = pc.not_equal(keys.slice(1), keys.slice(0, n - 1))
            starts[1:] = numbers(differs, False)
        at = np.flatnonzero(starts)
    sums = np.add.reduceat(counts, at) if len(at) < n else counts
    lower_sums = None
    if lower is not None:
        masked = np.where(lower, counts, 0)
        lower_sums = np.add.reduceat(masked, at) if len(at) < n else masked
    if len(at) < n:
        keys = keys.take(int64_array(at))
    return keys, sums, lower_sums


def merged(
    keys: pa.Array, counts: np.ndarray, signed: bool = False
) -> tuple[pa.Array, np.ndarray]:
    """Distinct keys in increasing order with their summed counts; sums <= 0 dropped (an
    incremental subtraction removed the value), or with ``signed`` (changes) only zero
    sums (no change)."""
    if len(keys) == 0:
        return keys, counts
    keys, sums, _ = grouped(keys, counts)
    kept = sums != 0 if signed else sums > 0
    if kept.all():
        return keys, sums
    return keys.filter(bool_array(kept)), sums[kept]
