"""What the pages show, from rows and bins built here: estimated distinct counts are marked
with their bounds, histogram bars sum merged bins and keep their bin ranges, long values
are shortened (the full text stays available)."""

from __future__ import annotations

import decimal
import math

import numpy as np

from lakestats.answers import Bin
from lakestats.service import views


def test_distinct_marked_when_estimated() -> None:
    exact = views.distinct({"distinct_count": 1234, "distinct_count_exact": True})
    assert (exact.text, exact.estimated) == ("1,234", False)
    estimated = views.distinct(
        {"distinct_count": 51234, "distinct_count_exact": False,
         "distinct_count_lower": 50000, "distinct_count_upper": 52500}
    )
    assert estimated.text == "≈51,234" and estimated.estimated
    assert estimated.title == "estimated: between 50,000 and 52,500"
    assert views.distinct({"distinct_count": None}).text == ""


def test_bars_merge_bins_and_keep_ranges() -> None:
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 100, 1000).tolist()
    bins = [Bin(i, i + 1, c) for i, c in enumerate(counts)]
    bars = views.bars(bins, 800, 200, 200, first_bin=10)
    assert len(bars) == 200
    assert [b.stop - b.start for b in bars] == [5] * 200 and bars[0].start == 10
    sums = [sum(counts[i : i + 5]) for i in range(0, 1000, 5)]
    tallest = max(sums)
    for bar, total in zip(bars, sums, strict=True):
        assert math.isclose(bar.height, 200 * total / tallest, abs_tol=0.01)
        assert bar.title.endswith(f": {total:,}")
    assert bars[-1].x + bars[-1].width <= 800
    assert views.bars([], 10, 10, 5) == []


def test_short_and_full_values() -> None:
    assert views.short(decimal.Decimal("12.50")) == "12.50"
    assert views.short(float("nan")) == "NaN"
    assert views.short(0.1234567891) == "0.123457"
    long = "x" * 100
    assert views.short(long) == "x" * 31 + "…" and views.full(long) == long
    assert views.null_share({"row_count": 8, "null_count": 2}) == 0.25
    assert views.null_share({"row_count": 0, "null_count": 0}) == 0.0
