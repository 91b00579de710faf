"""The sample's frequency of frequencies, the only input the distinct-value estimators read.

Contract: ``f[i]`` is the number of distinct values seen exactly ``i + 1`` times in the sample
(a dense vector, ``f[0]`` = singletons). Estimators also accept ``{frequency: count}`` dicts
(``{1: f1, 2: f2, ...}``) and work internally on the sparse form :class:`Profile` (only the
non-zero frequencies), so a column whose few values each occur 50,000 times costs nothing.
Nulls are not values: ``frequency_of_frequencies`` drops them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.errors import LakestatsError


class NdvInputError(LakestatsError):
    """A frequency-of-frequencies vector, sample size or population size is inconsistent."""


@dataclass(frozen=True)
class Profile:
    """Sparse frequency of frequencies: ``counts[k]`` values were seen ``freqs[k]`` times."""

    freqs: np.ndarray  # int64, ascending, >= 1
    counts: np.ndarray  # float64, > 0

    @property
    def d(self) -> int:
        """Distinct values in the sample."""
        return int(self.counts.sum())

    @property
    def n(self) -> int:
        """Sample rows (non-null) the profile describes."""
        return int((self.freqs * self.counts).sum())

    def f(self, i: int) -> float:
        """Number of values seen exactly ``i`` times (``f(1)`` = singletons)."""
        hit = np.flatnonzero(self.freqs == i)
        return float(self.counts[hit[0]]) if hit.size else 0.0


FrequencyProfile = Sequence[float] | np.ndarray | Mapping[int, float] | Profile


def to_profile(f: FrequencyProfile) -> Profile:
    """Dense vector, ``{frequency: count}`` dict or Profile -> Profile (validated)."""
    if isinstance(f, Profile):
        return f
    if isinstance(f, Mapping):
        freqs = np.fromiter((int(k) for k in f), dtype=np.int64, count=len(f))
        counts = np.fromiter((float(v) for v in f.values()), dtype=np.float64, count=len(f))
    else:
        dense = np.asarray(f, dtype=np.float64).ravel()
        freqs = np.arange(1, dense.size + 1, dtype=np.int64)
        counts = dense
    if np.any(freqs < 1):
        raise NdvInputError(
            "frequency-of-frequencies keys must be frequencies >= 1; pass {1: f1, 2: f2, ...}"
        )
    if np.any(counts < 0) or not np.all(np.isfinite(counts)):
        raise NdvInputError(
            "frequency-of-frequencies counts must be finite and >= 0; "
            "f[i] is how many values the sample holds exactly i+1 times"
        )
    keep = counts > 0
    order = np.argsort(freqs[keep], kind="stable")
    return Profile(freqs[keep][order], counts[keep][order])


def check_sizes(p: Profile, n: int, N: int) -> None:
    """The profile must describe ``n`` sample rows out of ``N`` >= ``n`` population rows."""
    if p.n != n:
        raise NdvInputError(
            f"the frequency profile describes {p.n} sample rows but n={n}; "
            "pass n = sum of (i+1) * f[i]"
        )
    if n > N:
        raise NdvInputError(
            f"population size N={N} is smaller than the sample size n={n}; "
            "pass the table's row count (non-null) as N"
        )


def frequency_of_frequencies(
    values: pa.Array | pa.ChunkedArray | np.ndarray | Sequence,
) -> np.ndarray:
    """Dense ``f`` of a sample's values (nulls dropped, NaN one value): ``f[i]`` values occur
    ``i + 1`` times. Arrow's hash aggregation, then one ``bincount``."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iub":
        _, counts = np.unique(values, return_counts=True)
    else:
        array = values if isinstance(values, pa.Array | pa.ChunkedArray) else pa.array(values)
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        array = array.drop_null()
        counts = pc.value_counts(array).field("counts").to_numpy(zero_copy_only=False)
    return profile_of_counts(counts)


def profile_of_counts(counts: np.ndarray) -> np.ndarray:
    """``frequency_of_frequencies`` of values already counted (``counts``: each distinct
    value's count)."""
    if counts.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.bincount(counts.astype(np.int64))[1:]

