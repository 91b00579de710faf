"""A partition's staged value counts (``analyze --exact``): every value of each column whose
frequencies are incomplete, once, with its count, in key order, against pyarrow's own
counts and sort; a slice's counted numbers (already in order) and merged slices alike."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakestats.stats import key_sums, keys, value_counts
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.leaves import leaves_of


def _table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = 40_000
    return pa.table({
        "id": pa.array(rng.integers(-50_000, 50_000, n)),
        "price": pa.array(np.round(rng.normal(0, 1e4, n), 2)),
        "day": pa.array(rng.integers(0, 20_000, n).astype(np.int32)).view(pa.date32()),
        "note": pa.array([f"n{x}" for x in rng.integers(0, 30_000, n)]),
    })


@pytest.mark.parametrize("slices", [1, 3])
def test_staged_values_are_every_value_once_in_key_order(slices: int) -> None:
    table = _table(slices)
    accumulators = []
    for leaf in leaves_of(table.schema):
        accumulator = ColumnAccumulator(leaf)
        for piece in np.array_split(np.arange(table.num_rows), slices):
            accumulator.observe(table.column(leaf.name).take(pa.array(piece)))
        accumulators.append(accumulator)
    results = [a.finalize(32, 100) for a in accumulators]
    assert all(a.values_sorted == (slices == 1 and a.leaf.name != "note") for a in accumulators)
    staged = value_counts.staged_values(accumulators, results)
    for index, name in enumerate(table.column_names):
        rows = staged.filter(pc.equal(staged["column_index"], index))
        expected = pc.value_counts(table[name])
        encoded = keys.encode(expected.field(0)).cast(pa.binary())
        order = pc.sort_indices(encoded)
        assert rows["value"].to_pylist() == encoded.take(order).to_pylist()
        assert rows["count"].to_pylist() == expected.field(1).take(order).to_pylist()


@pytest.mark.parametrize("kind", ["text", "eight-byte text", "integers", "decimals"])
def test_sort_order_is_arrows_key_order(kind: str) -> None:
    """Keys sharing their first 8 bytes, differing past them, by a trailing zero byte or
    in length; keys of one width (text of 8 bytes, integers: one word; decimals: two): in
    the order Arrow's sort gives."""
    rng = np.random.default_rng(7)
    if kind == "text":
        stems = [b"", b"a", b"abcdefgh", b"abcdefg\x00", b"abcdefghij", b"\xff" * 9]
        raw = {s + bytes(rng.integers(0, 3, rng.integers(0, 4)).astype(np.uint8))
               for s in stems for _ in range(40)}
        encoded = pa.array(sorted(raw, key=lambda _: rng.random()), pa.binary())
    elif kind == "eight-byte text":  # one width: sorted as words
        raw = {bytes(rng.integers(0, 4, 8).astype(np.uint8)) for _ in range(3_000)}
        encoded = pa.array(sorted(raw, key=lambda _: rng.random()), pa.binary())
    elif kind == "integers":
        encoded = keys.encode(pa.array(rng.permutation(np.arange(-5_000, 5_000) * 7919)))
    else:
        ints = rng.permutation(np.arange(-3_000, 3_000) * 104_729)
        encoded = keys.encode(pa.array([int(x) for x in ints], pa.int64()).cast(
            pa.decimal128(38, 2)))
    order = key_sums.sort_order(encoded)
    assert encoded.take(pa.array(order)).equals(encoded.take(pc.sort_indices(encoded)))
