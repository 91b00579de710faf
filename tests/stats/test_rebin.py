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
