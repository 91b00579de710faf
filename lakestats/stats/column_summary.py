"""What the statistics say about one column of one partition (``ColumnSummary``), and what
an estimate of it answers (``Estimate``): the single-column estimators' inputs and answer,
shared by the scalar path (``selectivity``) and the vector path (``selectivity_vector``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lakestats.stats import keys
from lakestats.stats.key_ranges import KeyRange
from lakestats.stats.kinds import Kind, kind_of


class _cached:
    """``functools.cached_property`` without its lock: Python 3.11's holds one lock per
    property over all instances while the value is computed, so the survivors' reads on
    threads (``query.estimate``) would wait for each other's frequencies
    and histograms. Two threads computing one instance's value at once both compute it
    (the same value; one is kept)."""

    def __init__(self, compute: Callable) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> object:
        if instance is None:
            return self
        cache = instance.__dict__
        if self.name not in cache:
            cache[self.name] = self.compute(instance)
        return cache[self.name]


@dataclass(frozen=True)
class Estimate:
    """Rows kept: point estimate and sound bounds (``exact`` when the bounds meet)."""

    rows: float
    lower: int
    upper: int
    exact: bool
    method: str

    @staticmethod
    def of(rows: float, lower: int, upper: int, method: str) -> Estimate:
        lower, upper = int(lower), int(max(lower, upper))
        rows = float(min(max(rows, lower), upper)) if math.isfinite(rows) else (lower + upper) / 2
        return Estimate(rows, lower, upper, lower == upper, method)

    @staticmethod
    def count(n: int, method: str) -> Estimate:
        return Estimate(float(n), int(n), int(n), True, method)


@dataclass(frozen=True)
class Frequencies:
    """Stored value counts: ``keys`` sorted by key, exact ``counts``; ``complete`` when every
    value is listed, else any unlisted value occurs at most ``unlisted_bound`` times."""

    keys: tuple[bytes, ...]
    counts: np.ndarray
    complete: bool
    unlisted_bound: int | None = None

    def count_of(self, key: bytes) -> int | None:
        import bisect

        i = bisect.bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            return int(self.counts[i])
        return None


@dataclass(frozen=True)
class Histogram:
    """Equi-width bins as the writer built them (``lakestats.stats.histogram``): ``lower``
    and ``width`` in storage units (ints for integer, decimal and temporal columns, floats
    for floating point). ``exact``: the counts are true counts (partition histograms)."""

    lower: int | float
    width: float
    counts: np.ndarray
    exact: bool = True


Loader = Callable[[], object]


@dataclass(frozen=True, eq=False)
class ColumnSummary:
    """What the statistics say about one column of one partition. ``frequencies`` and
    ``histogram`` may be given as zero-argument loaders, called only when an estimate
    needs them."""

    dtype: pa.DataType
    row_count: int
    null_count: int
    nan_count: int = 0
    distinct_count: int | None = None
    min_key: bytes | None = None
    max_key: bytes | None = None
    frequencies_source: Frequencies | Loader | None = None
    histogram_source: Histogram | Loader | None = None
    percentiles: dict[str, bytes] | None = field(default=None)
    # the exact number of non-null, non-NaN rows with a key in a bounded key range, from
    # the table level's exact ranks; None: no ranks (answers None)
    range_count: Callable[[KeyRange], int | None] | None = None

    @_cached
    def frequencies(self) -> Frequencies | None:
        source = self.frequencies_source
        return source() if callable(source) else source

    @_cached
    def histogram(self) -> Histogram | None:
        source = self.histogram_source
        return source() if callable(source) else source

    @_cached
    def kind(self) -> Kind:
        return kind_of(self.dtype)

    @property
    def non_null(self) -> int:
        return self.row_count - self.null_count

    @property
    def ordered_values(self) -> int:
        """Non-null, non-NaN rows: the ones between min and max."""
        return self.row_count - self.null_count - (self.nan_count or 0)


NAN_KEY: bytes = keys.encode_value(float("nan"), pa.float64())  # no pa.array: no pandas


__all__ = ["NAN_KEY", "ColumnSummary", "Estimate", "Frequencies", "Histogram", "Loader"]
