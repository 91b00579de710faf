"""Serialized Apache DataSketches kept per column so partitions roll up to table level.

* HLL (lg_k = 12, about 1.6 % relative standard error) over the distinct values, for
  the table-level distinct count when exact frequencies are not available;
* a KLL quantile sketch (k = 200, about 1.65 % normalized rank error;
  ``stats/quantile_sketch.py``, deterministic, unlike DataSketches' KLL which formats up to
  4 stored) over every non-null value of an ordered column (as float64), for table-level
  percentiles.

``hashable_values`` and ``numeric_values`` are the one definition of what a sketch is
fed, shared by the partition accumulator and by ``derived_sketches`` (which rebuilds the
sketches format version 3 does not store), so both build the same sketch.
"""

from __future__ import annotations

import datasketches as ds
import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from lakestats.stats import hashing, hll_image, keys
from lakestats.stats.kinds import Kind
from lakestats.stats.quantile_sketch import DEFAULT_K, QuantileSketch

HLL_LG_K = 12
KLL_K = DEFAULT_K

_HLL_FLAGS_BYTE = 5  # DataSketches HLL preamble: flags byte, mode byte
_HLL_MODE_BYTE = 7
_HLL_OUT_OF_ORDER = 16
_HLL_MODE = 2  # the low two bits of the mode byte: 0 list, 1 set, 2 HLL array


HLL_IMAGE_MIN = 4096
"""From this many distinct values the library's sketch is always in HLL mode (it leaves its
coupon list and set at about 400 coupons), so the NumPy image (``hll_image``) is what the
library would hold; below it the library's exact small-count modes are kept."""


def hll_of(distinct: np.ndarray) -> bytes:
    """The HLL sketch of distinct values (int64 or float64, ``hashable_values``), the
    same bytes in any order: the library's small modes keep their values in the order
    given, so those are given sorted."""
    if len(distinct) >= HLL_IMAGE_MIN:
        return hll_image.hll8_image(distinct, HLL_LG_K)
    sketch = ds.hll_sketch(HLL_LG_K, ds.tgt_hll_type.HLL_8)
    update = sketch.update
    for value in np.sort(distinct).tolist():
        update(value)
    return sketch.serialize_compact()


def kll_of(values: np.ndarray, counts: np.ndarray | None = None) -> bytes:
    """The quantile sketch of ``values`` (each repeated ``counts`` times), serialized."""
    if counts is not None and (counts == 1).all():  # a repeat of ones is a copy
        counts = None
    return QuantileSketch.build(values, counts, KLL_K).serialize()


def order_free_hll(serialized: bytes) -> ds.hll_sketch:
    """A merged HLL sketch whose estimate and bounds depend only on the set of values.

    An HLL-mode sketch that saw its values one by one estimates with its HIP
    accumulator, which depends on the order the values arrived in (and a union of one
    such sketch keeps it). Marking it out of order makes it use the composite estimator,
    a function of its registers alone: the same values give the same table-level distinct
    count however the partition sketches were built (stored, or rebuilt from frequency
    rows in another order). List and set modes count coupons: already order-free."""
    data = bytearray(serialized)
    if len(data) > _HLL_MODE_BYTE and data[_HLL_MODE_BYTE] & 3 == _HLL_MODE:
        data[_HLL_FLAGS_BYTE] |= _HLL_OUT_OF_ORDER
    return ds.hll_sketch.deserialize(bytes(data))


def numeric_values(values: pa.Array, kind: Kind) -> np.ndarray:
    """Values as a NumPy array ordered like the values (int64 or float64): what the KLL
    sketch is fed."""
    if kind == Kind.FLOATING:
        return values.to_numpy(zero_copy_only=False)
    if kind == Kind.DECIMAL:
        return values.cast(pa.float64()).to_numpy(zero_copy_only=False)
    return keys.integers(values)


def hashable_values(values: pa.Array, kind: Kind) -> np.ndarray:
    """Distinct values in the form the HLL sketch hashes (consistent across partitions).

    Integers (and temporal storage, and decimals of precision ≤ 18 as unscaled
    integers) and floats go to the sketch as they are; strings, binary and wide
    decimals as the stable 64-bit hash of their bytes (``lakestats.stats.hashing``).
    """
    if kind in (Kind.INTEGER, Kind.TEMPORAL):
        return keys.integers(values).astype(np.int64, copy=False)
    if kind == Kind.FLOATING:
        return values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    if kind == Kind.DECIMAL and values.type.precision <= 18:
        return keys.unscaled_int64(values)
    if kind in (Kind.STRING, Kind.BINARY):
        return hashing.hash_binary(values).view(np.int64)
    return hashing.hash_binary(keys.encode(values)).view(np.int64)


def value_type(dtype: pa.DataType) -> pa.DataType:
    """The Arrow type of a column's counted values (floats widened, large types narrowed)."""
    if pat.is_dictionary(dtype):
        dtype = dtype.value_type
    if pat.is_floating(dtype):
        return pa.float64()
    if pat.is_large_string(dtype) or pat.is_string_view(dtype):
        return pa.string()
    if pat.is_large_binary(dtype) or pat.is_binary_view(dtype):
        return pa.binary()
    return dtype
