"""Re-binning partition histograms onto a table grid keeps every count."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakestats.stats import keys
from lakestats.stats.rebin import Grid, rebin, round_counts


def _row(lower: float, width: float, bins: int) -> dict:
    return {
        "histogram_lower": keys.encode(pa.array([lower]))[0].as_py(),
        "histogram_width": width,
        "histogram_bins": bins,
        "max": keys.encode(pa.array([lower + width * bins]))[0].as_py(),
    }


def test_rebin_conserves_counts_and_places_them_by_overlap() -> None:
    grid = Grid(0.0, 1.0, 10, False)
    spread = rebin(_row(2.0, 2.0, 2), np.array([4, 6]), grid, pa.float64())
    assert spread.sum() == 10
    assert np.allclose(spread[2:6], [2, 2, 3, 3])
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 100, 37)
    spread = rebin(_row(1.3, 0.17, 37), counts, grid, pa.float64())
    assert np.isclose(spread.sum(), counts.sum())
    rounded = round_counts(spread, int(counts.sum()))
    assert rounded.sum() == counts.sum() and (np.abs(rounded - spread) < 1).all()


def test_rebin_onto_a_coarser_grid_is_exact_when_bins_nest() -> None:
    grid = Grid(0.0, 4.0, 5, False)
    spread = rebin(_row(0.0, 1.0, 20), np.arange(20), grid, pa.float64())
    assert np.allclose(spread, [np.arange(20)[i : i + 4].sum() for i in range(0, 20, 4)])


def test_storage_numbers_equal_storage_number_key_by_key() -> None:
    """The vectorised decode gives the numbers (and types) the key-by-key one gives, nulls
    as None, for every kind a histogram has (the reduction re-bins from them)."""
    import datetime as dt
    import decimal

    from lakestats.stats.rebin import storage_number, storage_numbers

    rng = np.random.default_rng(7)
    floats = [0.0, -0.0, 1.5, -2.25, float("inf"), float("-inf"), 1e308, -5e-324]
    floats += rng.normal(0, 1e6, 50).tolist()
    cases = [
        (pa.float64(), floats),
        (pa.float32(), [1.5, -3.0, 0.0, 7.25]),
        (pa.int64(), [0, -1, 1, 2**62, -(2**63), 2**63 - 1, *rng.integers(-9e18, 9e18, 20)]),
        (pa.int32(), [0, -5, 2**31 - 1, -(2**31)]),
        (pa.int8(), [0, -5, 127, -128]),
        (pa.uint64(), [0, 2**64 - 1, 12345]),
        (pa.date32(), [dt.date(1970, 1, 1), dt.date(1492, 10, 12), dt.date(2999, 1, 1)]),
        (pa.timestamp("us"), [dt.datetime(2020, 1, 2, 3, 4, 5), dt.datetime(1900, 1, 1)]),
        (pa.decimal128(12, 2), [decimal.Decimal("1.25"), decimal.Decimal("-99.01")]),
    ]
    for dtype, values in cases:
        array = pa.array([int(v) if isinstance(v, np.integer) else v for v in values], dtype)
        encoded = keys.encode(array)
        with_nulls = pa.concat_arrays([encoded, pa.nulls(1, encoded.type), encoded.slice(1)])
        expected = [None if k is None else storage_number(k, dtype)
                    for k in with_nulls.to_pylist()]
        got = storage_numbers(with_nulls, dtype)
        assert [type(v) for v in got] == [type(v) for v in expected], dtype
        assert got == expected, dtype
        assert storage_numbers(pa.chunked_array([with_nulls.slice(2)]), dtype) == expected[2:]
