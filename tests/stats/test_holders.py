"""The holder bit layout: packed in a group, repacked to the version, unpacked for storage."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakestats.stats import holders


def test_holders_packed_in_a_group_unpack_to_the_version_positions_and_counts() -> None:
    rng = np.random.default_rng(7)
    partitions = 40
    members = sorted(rng.choice(partitions, size=12, replace=False).tolist())
    # per value: which group positions hold it, with which count (up to 2**40 - 1)
    truth: list[dict[int, int]] = []
    lists = []
    for value in range(30):
        at = rng.choice(len(members), size=int(rng.integers(1, len(members) + 1)), replace=False)
        counts = rng.integers(1, 1 << 40, size=len(at))
        if value == 0:
            counts[0] = (1 << 40) - 1  # the widest count the layout holds
        pairs = zip(at, counts, strict=True)
        lists.append([int(holders.pack(int(p), np.array([c]))[0]) for p, c in pairs])
        truth.append({members[int(p)]: int(c) for p, c in zip(at, counts, strict=True)})
    table = pa.table(
        {"value": pa.array(range(30)), "holder_list": pa.array(lists, pa.list_(pa.int64()))}
    )
    in_version = holders.to_version(table, members)
    stored = in_version.rename_columns(["value", "holders"])
    dense, ids, id_counts = holders.partition_vectors(stored, partitions)
    for value, want in enumerate(truth):
        if dense[value].is_valid:
            vector = dense[value].as_py()
            assert len(vector) == partitions
            assert {p: c for p, c in enumerate(vector) if c} == want
            assert len(want) >= holders.DENSE_FRACTION * partitions
        else:
            got_ids, got_counts = ids[value].as_py(), id_counts[value].as_py()
            assert got_ids == sorted(want)  # sparse ids are sorted
            assert dict(zip(got_ids, got_counts, strict=True)) == want
            assert len(want) < holders.DENSE_FRACTION * partitions


def test_rows_without_holders_pass_through_and_store_nothing() -> None:
    table = pa.table(
        {"value": pa.array([1, 2]), "holder_list": pa.nulls(2, pa.list_(pa.int64()))}
    )
    assert holders.to_version(table, [5, 9]) is table
    empty = pa.table({"holders": pa.array([[], []], pa.list_(pa.int64()))})
    dense, ids, id_counts = holders.partition_vectors(empty, 3)
    assert dense.null_count == ids.null_count == id_counts.null_count == 2
