"""Counting mostly-distinct strings by their hashes gives Arrow's ``value_counts`` exactly:
the same values in the same order, the same counts, and the sketch's hash of each; counting
them in key order (``analyze --exact``) gives the same counts in Arrow's sort order, and the
same partition statistics."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakestats.stats import hashing, string_counts
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.leaves import leaves_of


def _strings(rows: int, distinct: int, seed: int = 7) -> pa.Array:
    """``rows`` values drawn from ``distinct`` possible ones (only the drawn ones are made)."""
    rng = np.random.default_rng(seed)
    return pa.array([f"note {i} {'x' * int(i % 23)}" for i in rng.integers(0, distinct, rows)])


def _arrow(values: pa.Array) -> tuple[list, list]:
    counted = pc.value_counts(values)
    return counted.field(0).to_pylist(), counted.field(1).to_pylist()


@pytest.mark.parametrize(
    ("rows", "distinct", "hashed"),
    [(40_000, 40_000_000, True), (40_000, 30_000, True), (40_000, 200, False), (1_000, 900, False)],
)
def test_counts_equal_arrows_value_counts(rows: int, distinct: int, hashed: bool) -> None:
    values = _strings(rows, distinct)
    got, counts, hashes = string_counts.string_value_counts(values)
    assert (hashes is not None) == hashed
    assert (got.to_pylist(), counts.tolist()) == _arrow(values)
    if hashes is not None:
        assert np.array_equal(hashes, hashing.hash_binary(got))


def test_a_shared_hash_falls_back_to_value_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two different values with one hash are never counted as one."""
    values = _strings(40_000, 40_000_000)
    weak = hashing.hash_binary(values) & np.uint64(0xFFF)  # 4,096 hashes: many collisions
    monkeypatch.setattr(string_counts.hashing, "hash_binary", lambda _values: weak)
    got, counts, hashes = string_counts.string_value_counts(values)
    assert hashes is None
    assert (got.to_pylist(), counts.tolist()) == _arrow(values)


def test_binary_and_large_strings_are_counted_alike() -> None:
    values = _strings(40_000, 35_000)
    for typed in (values.cast(pa.binary()), values.cast(pa.large_string())):
        table = pa.table({"c": typed})
        hashed = ColumnAccumulator(leaves_of(table.schema)[0])
        hashed.observe(table.column("c"))
        plain = ColumnAccumulator(leaves_of(table.schema)[0])
        for start in range(0, 40_000, 8_000):  # slices too small to hash: Arrow counts
            plain.observe(table.column("c").slice(start, 8_000))
        assert hashed.finalize(100, 1000).row == plain.finalize(100, 1000).row


def test_a_slice_counts_as_its_own_values() -> None:
    """Arrays that start inside their buffers (a slice of a column) are hashed from their
    own first value."""
    values = _strings(60_000, 50_000).slice(7_001, 40_000)
    got, counts, hashes = string_counts.string_value_counts(values)
    assert hashes is not None
    assert (got.to_pylist(), counts.tolist()) == _arrow(values)
    assert np.array_equal(hashes, hashing.hash_binary(got))


def test_hashes_sharing_their_top_bits_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are ordered by each hash's top bits packed with the row number; where two
    different hashes share those bits (forced here: only the low 32 bits of each hash are
    kept), the whole hashes order the rows, and the counts and their order stay Arrow's."""
    values = _strings(40_000, 30_000)
    real = hashing.hash_binary
    monkeypatch.setattr(string_counts.hashing, "hash_binary",
                        lambda v: real(v) & np.uint64(0xFFFFFFFF))
    got, counts, hashes = string_counts.string_value_counts(values)
    assert hashes is not None
    assert (got.to_pylist(), counts.tolist()) == _arrow(values)
    assert np.array_equal(hashes, real(got) & np.uint64(0xFFFFFFFF))


@pytest.mark.parametrize(("rows", "distinct"), [(40_000, 40_000_000), (40_000, 30_000)])
def test_counts_in_key_order_are_arrows_sorted(rows: int, distinct: int) -> None:
    """``sorted_string_counts`` (``analyze --exact``): Arrow's counts with the values in
    Arrow's sort order, sliced input included, and the sketch's hash of each."""
    values = _strings(rows + 3_000, distinct).slice(3_000, rows)
    got, counts, hashes = string_counts.sorted_string_counts(values)
    expected = pc.value_counts(values)
    order = pc.sort_indices(expected.field(0))
    assert got.to_pylist() == expected.field(0).take(order).to_pylist()
    assert counts.tolist() == expected.field(1).take(order).to_pylist()
    assert np.array_equal(hashes, hashing.hash_binary(got))
    assert string_counts.sorted_string_counts(_strings(40_000, 200)) is None


@pytest.mark.parametrize("typed", [pa.string(), pa.binary(), pa.large_string()])
def test_counting_in_key_order_gives_the_same_statistics(typed: pa.DataType) -> None:
    """A partition's statistics row, frequency rows and staged values are the same whether
    its text was counted in key order (``--exact``) or hashed in order of appearance."""
    from lakestats.stats import value_counts

    table = pa.table({"c": _strings(60_000, 45_000).cast(typed)})
    leaf = leaves_of(table.schema)[0]
    results, staged = [], []
    for key_order in (False, True):
        accumulator = ColumnAccumulator(leaf, key_order=key_order)
        accumulator.observe(table.column("c"))
        assert accumulator.values_sorted == key_order
        result = accumulator.finalize(100, 1000)
        results.append(result)
        staged.append(value_counts.staged_values([accumulator], [result]))
    assert results[0].row == results[1].row
    assert results[0].frequency_keys.equals(results[1].frequency_keys)
    assert np.array_equal(results[0].frequency_counts, results[1].frequency_counts)
    assert staged[0].equals(staged[1]) and staged[0].num_rows > 30_000
