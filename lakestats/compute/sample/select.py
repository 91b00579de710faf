"""How a stored sample is drawn: a seeded 64-bit hash of a row's identity, a per-partition
bottom-k, and the proportional allocation of the sample's rows to partitions.

Pure NumPy (no Spark), so the selection is testable on its own and identical on every
executor. A row's identity is ``(seed, source, ordinal)``: ``source`` names what the row
was read from (the partition and its slice's files) and ``ordinal`` its position in that
read. Hashes are SplitMix64 of a per-source base plus the ordinal, so distinct rows get
independent-looking uniform 64-bit values and a partition's sample depends only on its own
rows: the bottom-k of a union is the bottom-k of the parts' bottom-ks (it merges like a
sketch), and a rewritten partition is a local recompute.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer over a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def source_base(seed: int, source: str) -> int:
    """A 64-bit base for the rows of one source (stable across processes and machines)."""
    digest = hashlib.blake2b(f"{seed}\x00{source}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def row_hashes(seed: int, source: str, count: int, start: int = 0) -> np.ndarray:
    """The hashes of rows ``start … start + count - 1`` of ``source``."""
    with np.errstate(over="ignore"):
        ordinals = np.arange(start, start + count, dtype=np.uint64)
        return splitmix64(ordinals * _GOLDEN + np.uint64(source_base(seed, source)))


def bottom_k(hashes: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest hashes, in increasing hash order (ties by position,
    so the choice is deterministic)."""
    k = max(0, min(int(k), hashes.size))
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    whole = k == hashes.size
    candidates = np.arange(hashes.size) if whole else np.argpartition(hashes, k - 1)[:k]
    order = np.lexsort((candidates, hashes[candidates]))
    return candidates[order].astype(np.int64)


def allocate(populations: list[int], total: int) -> list[int]:
    """Proportional allocation of ``total`` sample rows to strata of these sizes, exact:
    largest remainders (Hamilton), ties to the earlier stratum; never more than a stratum
    holds. The result sums to ``min(total, sum(populations))``."""
    population = sum(populations)
    total = min(int(total), population)
    if population == 0 or total <= 0:
        return [0] * len(populations)
    quotas = [total * p / population for p in populations]
    sizes = [int(q) for q in quotas]
    left = total - sum(sizes)
    order = sorted(range(len(populations)), key=lambda i: (-(quotas[i] - sizes[i]), i))
    for i in order[:left]:
        sizes[i] += 1
    return [min(s, p) for s, p in zip(sizes, populations, strict=True)]


def size_for_fraction(fraction: float, population: int) -> int:
    """A stratum's sample size at ``fraction``: round half up, at most the stratum."""
    return min(population, int(np.floor(fraction * population + 0.5)))


def reserve_size(k: int) -> int:
    """Rows kept past a partition's sample (ranks k+1 …) so refresh can replace rows that
    leave it without reading the partition again: 10 % of k, at least 8, and at least four
    standard deviations of the candidate count (4·√k): a rewritten file's rows get new
    hashes, so the candidates a refresh keeps are a fresh binomial draw, and with 10 % alone
    a 300-row sample ran out in 2 % of refreshes and read its partition again."""
    k = int(k)
    return max(8, -(-k // 10), int(np.ceil(4.0 * np.sqrt(max(k, 0)))))


@dataclass(frozen=True)
class Candidates:
    """The outcome of merging a partition's candidates: ``order`` indexes the merged rows
    in hash order (the first ``k`` are the sample, the rest the reserve), ``threshold`` is
    the new cut (every row with a hash at or below it is a candidate; None: every row is),
    ``exhausted`` says the candidates cannot give ``k`` rows exactly (read the partition)."""

    order: np.ndarray
    threshold: int | None
    exhausted: bool


def merge_candidates(hashes: np.ndarray, threshold: int | None, k: int) -> Candidates:
    """The bottom-k of a partition from its candidates: the surviving old candidates (every
    surviving row with hash <= ``threshold``) plus the new rows at or below it. Exact when at
    least ``k`` candidates remain; the reserve is trimmed to ``reserve_size(k)``."""
    if threshold is not None:
        admitted = np.flatnonzero(hashes <= np.uint64(threshold))
    else:
        admitted = np.arange(hashes.size)
    if threshold is not None and admitted.size < k:
        return Candidates(np.zeros(0, dtype=np.int64), threshold, True)
    keep = k + reserve_size(k)
    chosen = admitted[bottom_k(hashes[admitted], min(keep, admitted.size))]
    if admitted.size > keep:
        threshold = int(hashes[chosen[-1]])
    return Candidates(chosen.astype(np.int64), threshold, False)
