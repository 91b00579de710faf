"""Serialized Apache DataSketches kept per column so partitions roll up to table level.

* HLL (lg_k = 12, about 1.6 % relative standard error) over the distinct values, for
  the table-level distinct count when exact frequencies are not available;
* KLL (k = 200, about 1.65 % normalized rank error) over every non-null value of an
  ordered column (as float64), for table-level percentiles.
"""

from __future__ import annotations

import datasketches as ds
import numpy as np

HLL_LG_K = 12
KLL_K = 200


def hll_of(distinct: list) -> bytes:
    sketch = ds.hll_sketch(HLL_LG_K, ds.tgt_hll_type.HLL_8)
    update = sketch.update
    for value in distinct:
        update(value)
    return sketch.serialize_compact()


def kll_of(values: np.ndarray, counts: np.ndarray | None = None) -> bytes:
    sketch = ds.kll_doubles_sketch(KLL_K)
    data = values.astype(np.float64, copy=False)
    if counts is not None:
        data = np.repeat(data, counts)
    if len(data):
        sketch.update(np.ascontiguousarray(data))
    return sketch.serialize()
