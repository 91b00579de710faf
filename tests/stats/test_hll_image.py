"""The NumPy HLL image against the DataSketches library itself: the same registers byte for
byte, the same estimates and bounds, the same unions, for every kind of value the
partition task feeds it."""

from __future__ import annotations

import decimal

import datasketches as ds
import numpy as np
import pyarrow as pa
import pytest

from lakestats.stats import hll_image, sketches
from lakestats.stats.kinds import Kind

REGISTERS = 40  # the compact HLL-mode preamble's length


def _library(values: np.ndarray) -> bytes:
    sketch = ds.hll_sketch(sketches.HLL_LG_K, ds.tgt_hll_type.HLL_8)
    for value in values.tolist():
        sketch.update(value)
    return sketch.serialize_compact()


def _values(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "int64":
        values = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
        values[:3] = [0, -1, 2**63 - 1]
        return values
    if kind == "small ints":
        return rng.permutation(np.arange(-n // 2, n - n // 2, dtype=np.int64))
    values = rng.normal(0, 1e6, n)
    values[:4] = [-0.0, 0.0, np.inf, -np.inf]
    return values


@pytest.mark.parametrize("kind", ["int64", "small ints", "float64"])
@pytest.mark.parametrize("n", [sketches.HLL_IMAGE_MIN, 60_000])
def test_image_is_the_library_sketch(kind: str, n: int) -> None:
    values = _values(kind, n, np.random.default_rng(n))
    library = _library(values)
    image = hll_image.hll8_image(values, sketches.HLL_LG_K)
    assert library[7] & 3 == 2, "the library's sketch is in HLL mode from HLL_IMAGE_MIN on"
    assert len(image) == len(library)
    assert image[REGISTERS:] == library[REGISTERS:]  # every register
    ours, theirs = ds.hll_sketch.deserialize(image), sketches.order_free_hll(library)
    assert ours.get_estimate() == theirs.get_estimate()
    for deviations in (1, 2, 3):
        assert ours.get_lower_bound(deviations) == theirs.get_lower_bound(deviations)
        assert ours.get_upper_bound(deviations) == theirs.get_upper_bound(deviations)


def test_unions_with_library_sketches() -> None:
    rng = np.random.default_rng(7)
    parts = [rng.integers(0, 200_000, 50_000) for _ in range(3)]
    parts = [np.unique(p) for p in parts]
    mixed, reference = ds.hll_union(sketches.HLL_LG_K), ds.hll_union(sketches.HLL_LG_K)
    for i, part in enumerate(parts):
        mixed.update(ds.hll_sketch.deserialize(
            hll_image.hll8_image(part, sketches.HLL_LG_K) if i != 1 else _library(part)
        ))
        reference.update(ds.hll_sketch.deserialize(_library(part)))
    ours = mixed.get_result(ds.tgt_hll_type.HLL_8).serialize_compact()
    theirs = reference.get_result(ds.tgt_hll_type.HLL_8).serialize_compact()
    assert ours[REGISTERS:] == theirs[REGISTERS:]
    true = len(np.unique(np.concatenate(parts)))
    estimate = sketches.order_free_hll(ours).get_estimate()
    assert estimate == sketches.order_free_hll(theirs).get_estimate()
    assert abs(estimate - true) / true < 0.05


def test_nan_is_hashed_as_the_library_hashes_it() -> None:
    values = np.concatenate([np.arange(5000, dtype=np.float64), [np.nan]])
    assert (
        hll_image.hll8_image(values, sketches.HLL_LG_K)[REGISTERS:]
        == _library(values)[REGISTERS:]
    )


@pytest.mark.parametrize(
    ("kind", "array"),
    [
        (Kind.STRING, pa.array([f"value {i}" for i in range(6000)])),
        (
            Kind.DECIMAL,
            pa.array([decimal.Decimal(i * 7) / 100 for i in range(6000)], pa.decimal128(12, 2)),
        ),
        (Kind.TEMPORAL, pa.array(np.arange(6000, dtype=np.int32)).cast(pa.date32())),
    ],
)
def test_hll_of_matches_the_library_on_every_kind(kind: Kind, array: pa.Array) -> None:
    hashed = sketches.hashable_values(array, kind)
    assert sketches.hll_of(hashed)[REGISTERS:] == _library(hashed)[REGISTERS:]


def test_small_inputs_keep_the_library_sketch() -> None:
    values = np.arange(100, dtype=np.int64)
    assert sketches.hll_of(values) == _library(values)
