"""Which partitions hold a value: the holder bit layout, packed, repacked and unpacked here.

Contract: a holder is one int64, ``position << HOLDER_SHIFT | count``: a partition's
position and the value's count there. ``pack`` makes them as a group's frequency rows are
read (positions inside the group, which is what the group cache stores); ``to_version``
repacks a group's holder lists with the version's partition positions; ``partition_vectors``
unpacks a value's holders into the stored form: a dense count vector when the value is in at
least ``DENSE_FRACTION`` of the partitions, sorted ids and counts otherwise.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

HOLDER_SHIFT = 40
"""Holders are packed as ``partition_index << 40 | count`` in one int64."""

DENSE_FRACTION = 0.25
"""A value present in at least this fraction of partitions gets a dense count vector."""


def pack(position: int, counts: np.ndarray) -> np.ndarray:
    """The holders of one partition (``position``) for values with these ``counts``."""
    return (np.int64(position) << HOLDER_SHIFT) | counts.astype(np.int64)


def to_version(table: pa.Table, members: list[int]) -> pa.Table:
    """``table``'s ``holder_list`` packed with positions inside a group (``members``),
    repacked with the version's positions (``members[position]``)."""
    lists = table.column("holder_list").combine_chunks()
    if lists.null_count == len(lists):
        return table
    offsets = lists.offsets.to_numpy() - lists.offsets[0].as_py()
    packed = pc.list_flatten(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    low = packed & ((np.int64(1) << HOLDER_SHIFT) - 1)
    position = np.asarray(members, dtype=np.int64)[packed >> HOLDER_SHIFT]
    repacked = pa.ListArray.from_arrays(
        pa.array(offsets.astype(np.int32)),
        pa.array((position << HOLDER_SHIFT) | low),
        mask=lists.is_null(),
    )
    return table.set_column(table.schema.get_field_index("holder_list"), "holder_list", repacked)


def partition_vectors(table: pa.Table, partitions: int) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Each value's ``holders`` as (dense counts, ids, id counts), one set non-null."""
    holders = table.column("holders")
    if (pc.max(pc.list_value_length(holders)).as_py() or 0) == 0:
        # no value records its holders (not categorical, or not exact): all null
        return (
            pa.nulls(table.num_rows, pa.list_(pa.int64())),
            pa.nulls(table.num_rows, pa.list_(pa.int32())),
            pa.nulls(table.num_rows, pa.list_(pa.int64())),
        )
    dense, ids, id_counts = [], [], []
    mask = (1 << HOLDER_SHIFT) - 1
    for packed in table.column("holders").to_pylist():
        if not packed:
            dense.append(None)
            ids.append(None)
            id_counts.append(None)
            continue
        pids = [h >> HOLDER_SHIFT for h in packed]
        pcounts = [h & mask for h in packed]
        if len(pids) >= DENSE_FRACTION * partitions and partitions > 1:
            vector = [0] * partitions
            for p, c in zip(pids, pcounts, strict=True):
                vector[p] = c
            dense.append(vector)
            ids.append(None)
            id_counts.append(None)
        else:
            order = np.argsort(pids, kind="stable")
            dense.append(None)
            ids.append([pids[i] for i in order])
            id_counts.append([pcounts[i] for i in order])
    return (
        pa.array(dense, pa.list_(pa.int64())),
        pa.array(ids, pa.list_(pa.int32())),
        pa.array(id_counts, pa.list_(pa.int64())),
    )
