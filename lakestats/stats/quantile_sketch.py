"""A deterministic KLL quantile sketch over float64 values.

Why not DataSketches' KLL: its compactions keep the odd or even items of a level by a random
bit seeded from the clock, so the same values merged in the same order give different
sketches (and table-level percentiles) from one run to the next. Here the bit is taken from
a hash of the items being compacted, every other compaction of a level, and is the other
offset in between (their errors cancel instead of adding up): a sketch is a pure function of
its inputs and of the order sketches are merged in.

Structure as KLL (Karnin, Lang, Liberty 2016; capacities as DataSketches): levels of sorted
items, an item at level ``h`` weighs ``2**h``; level ``h`` of ``L`` holds up to
``max(8, k * (2/3) ** (L - 1 - h))`` items. ``build`` sorts a whole array once and halves it
level by level (one compaction per level: fewer than streaming updates make, so a
partition's sketch errs less than DataSketches' at the same ``k``). Quantiles and ranks
follow DataSketches' default (exclusive) search, so sketches that compacted nothing answer
exactly as DataSketches did. ``from_datasketches`` converts a serialized DataSketches KLL
(its items and weights) into this structure.
"""

from __future__ import annotations

import functools
import math
import struct
import zlib

import numpy as np

from lakestats.errors import CorruptStatisticsError, InvalidArgumentError

DEFAULT_K = 200
MIN_WIDTH = 8
"""The smallest level capacity (DataSketches' ``min_m``)."""
HASHED_ITEMS = 4096
"""At most this many items (evenly strided) of a level are hashed to choose its offset."""

MAGIC = b"LQK\x01"
"""Serialized sketches start with this; a DataSketches KLL starts with 1, 2 or 5."""
_HEADER = struct.Struct("<4sHHQdd")  # magic, k, levels, n, min, max
_LEVEL = struct.Struct("<II")  # items, compactions


def capacity(k: int, levels: int, height: int) -> int:
    """The capacity of level ``height`` of ``levels`` (as DataSketches' KLL)."""
    depth = levels - height - 1
    power = 3**depth  # k * (2/3) ** depth rounded, in integers: the same on every platform
    return max(MIN_WIDTH, int((2 * k * 2**depth + power) // (2 * power)))


@functools.cache
def _capacities(k: int, levels: int) -> tuple[tuple[int, ...], int]:
    """Every level's ``capacity`` and their sum: a merge compresses after each sketch it
    folds in, and computing these anew each time was most of a reduction's merge time."""
    widths = tuple(capacity(k, levels, h) for h in range(levels))
    return widths, sum(widths)


def normalized_rank_error(k: int = DEFAULT_K) -> float:
    """The single-quantile normalized rank error bound at 99 % confidence (DataSketches'
    empirical fit for KLL, whose structure and capacities this sketch shares)."""
    return float(2.296 / k**0.9723)


class QuantileSketch:
    """Levels of sorted float64 items (level ``h`` weighs ``2**h``), mergeable."""

    __slots__ = ("compactions", "k", "levels", "max", "min", "n")

    def __init__(self, k: int = DEFAULT_K) -> None:
        self.k = k
        self.n = 0
        self.min = math.inf
        self.max = -math.inf
        self.levels: list[np.ndarray] = [np.empty(0, np.float64)]
        # per level: compactions so far (times two) plus the offset the last one took
        self.compactions: list[int] = [0]

    @classmethod
    def build(
        cls, values: np.ndarray, counts: np.ndarray | None = None, k: int = DEFAULT_K
    ) -> QuantileSketch:
        """The sketch of ``values`` (each repeated ``counts`` times); NaN is left out."""
        data = np.asarray(values, dtype=np.float64)
        if counts is not None:
            data = np.repeat(data, counts)
        # -0.0 as 0.0: equal items are then equal bytes, whatever order a sort leaves them in
        data = data[~np.isnan(data)] + 0.0
        if not (data[1:] >= data[:-1]).all():  # a partition's counted numbers come sorted:
            data.sort()  # checking costs a tenth of sorting them again
        sketch = cls(k)
        if len(data):
            sketch.n = len(data)
            sketch.min, sketch.max = float(data[0]), float(data[-1])
            sketch.levels = [data]
            sketch._compress()
        return sketch

    def is_empty(self) -> bool:
        return self.n == 0

    @property
    def retained(self) -> int:
        return sum(len(level) for level in self.levels)

    def merge(self, other: QuantileSketch) -> None:
        """Fold ``other`` into this sketch (``other`` is left as it was)."""
        if other.n == 0:
            return
        while len(self.levels) < len(other.levels):
            self.levels.append(np.empty(0, np.float64))
            self.compactions.append(0)
        if self.n == 0:  # compaction states: this sketch's own (an empty one takes other's)
            self.compactions[: len(other.compactions)] = other.compactions
        self.k = min(self.k, other.k)
        self.n += other.n
        self.min, self.max = min(self.min, other.min), max(self.max, other.max)
        for h, items in enumerate(other.levels):
            if len(items):
                self.levels[h] = _merged(self.levels[h], items)
        self._compress()

    def _compress(self) -> None:
        """Compact the lowest full level until the items fit the levels' capacities."""
        retained = self.retained
        while True:
            count = len(self.levels)
            widths, total = _capacities(self.k, count)
            if retained <= total:
                return
            h = next(h for h in range(count) if len(self.levels[h]) >= widths[h])
            if h == count - 1:
                self.levels.append(np.empty(0, np.float64))
                self.compactions.append(0)
            retained -= self._compact(h)

    def _compact(self, h: int) -> int:
        """Halve level ``h`` into ``h + 1``: of each pair of neighbours one is kept, the
        first or the second (the offset). An odd item out (the smallest) stays. Every other
        compaction of a level takes its offset from a hash of the items, the next one the
        other offset: a repeat of the same items then errs one way and back (as
        Ivkin et al. 2019 alternate random offsets), instead of the same way twice."""
        level = self.levels[h]
        keep, pairs = level[: len(level) % 2], level[len(level) % 2 :]
        count, last = self.compactions[h] >> 1, self.compactions[h] & 1
        if count % 2:
            offset = 1 - last
        else:
            stride = max(1, len(pairs) // HASHED_ITEMS)
            offset = zlib.crc32(np.ascontiguousarray(pairs[::stride]).tobytes(), len(pairs)) & 1
        self.levels[h] = keep.copy()
        self.levels[h + 1] = _merged(self.levels[h + 1], pairs[offset::2])
        self.compactions[h] = (((count + 1) << 1) | offset) & 0xFFFFFFFF
        return len(pairs) // 2  # the items the sketch no longer retains

    def _sorted_view(self) -> tuple[np.ndarray, np.ndarray]:
        """Every retained item in order and the cumulative weight up to it."""
        items = np.concatenate(self.levels)
        weights = np.concatenate(
            [np.full(len(level), 1 << h, np.int64) for h, level in enumerate(self.levels)]
        )
        order = np.argsort(items, kind="stable")
        return items[order], np.cumsum(weights[order])

    def quantiles(self, ranks: list[float] | np.ndarray) -> np.ndarray:
        """The item at each normalized rank in [0, 1] (DataSketches' exclusive search:
        the first item whose cumulative weight exceeds ``rank * n``)."""
        if self.n == 0:
            raise InvalidArgumentError("an empty sketch has no quantiles")
        items, cumulative = self._sorted_view()
        weight = np.floor(np.asarray(ranks, dtype=np.float64) * self.n).astype(np.int64)
        at = np.minimum(np.searchsorted(cumulative, weight, side="right"), len(items) - 1)
        return np.asarray(np.clip(items[at], self.min, self.max))

    def quantile(self, rank: float) -> float:
        return float(self.quantiles([rank])[0])

    def ranks(self, values: np.ndarray) -> np.ndarray:
        """The estimated normalized rank of each value: the weight of items ≤ it over n."""
        items, cumulative = self._sorted_view()
        at = np.searchsorted(items, np.asarray(values, dtype=np.float64), side="right")
        below = np.where(at > 0, cumulative[np.maximum(at - 1, 0)], 0)
        return below / self.n

    def serialize(self) -> bytes:
        """Header (magic, k, level count, n, min, max), per level its size and compaction
        count, then every level's items (float64, little-endian)."""
        head = _HEADER.pack(MAGIC, self.k, len(self.levels), self.n, self.min, self.max)
        sizes = b"".join(
            _LEVEL.pack(len(level), done)
            for level, done in zip(self.levels, self.compactions, strict=True)
        )
        body = b"".join(level.astype("<f8", copy=False).tobytes() for level in self.levels)
        return head + sizes + body

    @classmethod
    def deserialize(cls, data: bytes) -> QuantileSketch:
        if data[:4] != MAGIC:
            return from_datasketches(data)
        try:
            _, k, count, n, low, high = _HEADER.unpack_from(data)
            sizes = struct.unpack_from(f"<{2 * count}I", data, _HEADER.size)
            at = _HEADER.size + _LEVEL.size * count
            sketch = cls(k)
            sketch.n, sketch.min, sketch.max = n, low, high
            sketch.levels, sketch.compactions = [], list(sizes[1::2])
            for size in sizes[::2]:
                # read-only views of ``data`` (no copy): levels are replaced, never written
                level = np.frombuffer(data, "<f8", size, at)
                sketch.levels.append(level.astype(np.float64, copy=False))
                at += 8 * size
        except (struct.error, ValueError) as error:
            raise CorruptStatisticsError(f"unreadable quantile sketch: {error}") from error
        if at != len(data) or not sketch.levels:
            raise CorruptStatisticsError("unreadable quantile sketch: wrong length")
        return sketch


def from_datasketches(data: bytes) -> QuantileSketch:
    """A serialized DataSketches KLL doubles sketch (storage format 4 and older) as a
    ``QuantileSketch``: its retained items by weight (a power of two) become the levels."""
    import datasketches as ds

    try:
        old = ds.kll_doubles_sketch.deserialize(data)
    except (RuntimeError, ValueError) as error:
        raise CorruptStatisticsError(f"unreadable KLL sketch: {error}") from error
    sketch = QuantileSketch(old.k)
    if old.is_empty():
        return sketch
    pairs = list(old)
    items = np.array([item for item, _ in pairs], dtype=np.float64)
    heights = np.array([int(weight).bit_length() - 1 for _, weight in pairs], dtype=np.int64)
    top = int(heights.max())
    sketch.levels = [np.sort(items[heights == h], kind="stable") for h in range(top + 1)]
    sketch.compactions = [0] * (top + 1)
    sketch.n = int(old.n)
    sketch.min, sketch.max = float(old.get_min_value()), float(old.get_max_value())
    return sketch


def _merged(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two sorted arrays as one sorted array."""
    if not len(a):
        return b.copy()
    if not len(b):
        return a.copy()
    return np.sort(np.concatenate([a, b]), kind="stable")
