"""Sets of key ranges: the values a single-column predicate accepts, as byte-key intervals.

A column's values are order-preserving binary keys (``lakestats.stats.keys``), so every
comparison, ``BETWEEN``, ``IN`` and ``LIKE 'prefix%'`` accepts a union of intervals of keys.
An interval is a half-open pair of *positions* ``[start, end)``; a position is ``(0,)``
(before every key), ``(2,)`` (after every key), ``(1, key, 1)`` (at ``key``) or
``(1, key, 2)`` (just after ``key``). A key ``k`` is in ``[start, end)`` when
``start <= (1, k, 1) < end``. Sets are tuples of disjoint intervals in increasing order,
so union, intersection and complement are merges and the same set always has the same
form (which the predicate normalizer relies on).
"""

from __future__ import annotations

from dataclasses import dataclass

Position = tuple
BEFORE_ALL: Position = (0,)
AFTER_ALL: Position = (2,)


@dataclass(frozen=True, order=True)
class KeyRange:
    """``[start, end)`` in position space; see the module docstring."""

    start: Position
    end: Position

    @property
    def lower(self) -> tuple[bytes | None, bool]:
        """``(key, inclusive)`` of the lower end; ``key`` is None when unbounded."""
        if self.start == BEFORE_ALL:
            return None, True
        return self.start[1], self.start[2] == 1

    @property
    def upper(self) -> tuple[bytes | None, bool]:
        """``(key, inclusive)`` of the upper end; ``key`` is None when unbounded."""
        if self.end == AFTER_ALL:
            return None, True
        return self.end[1], self.end[2] == 2

    @property
    def point(self) -> bytes | None:
        """The key when the range holds exactly one key, else None."""
        if len(self.start) < 3 or len(self.end) < 3 or self.start[1] != self.end[1]:
            return None
        return self.start[1] if (self.start[2], self.end[2]) == (1, 2) else None

    def contains(self, key: bytes) -> bool:
        return self.start <= (1, key, 1) < self.end


KeySet = tuple[KeyRange, ...]

EVERYTHING: KeySet = (KeyRange(BEFORE_ALL, AFTER_ALL),)
NOTHING: KeySet = ()


def between(
    lower: bytes | None, lower_inclusive: bool, upper: bytes | None, upper_inclusive: bool
) -> KeySet:
    """The keys between two ends (None: unbounded on that side)."""
    start = BEFORE_ALL if lower is None else (1, lower, 1 if lower_inclusive else 2)
    end = AFTER_ALL if upper is None else (1, upper, 2 if upper_inclusive else 1)
    return (KeyRange(start, end),) if start < end else NOTHING


def points(keys: list[bytes] | tuple[bytes, ...]) -> KeySet:
    """The set of ``keys`` (``union`` of each one's range: sorted, duplicates merged;
    two different keys' ranges never touch, so nothing else merges)."""
    return tuple([KeyRange((1, k, 1), (1, k, 2)) for k in sorted(set(keys))])


def point_keys(key_set: KeySet) -> list[bytes] | None:
    """The keys of a set of single keys, in order, or None when a range holds more
    (remembered for the last sets asked: an IN list of 100,000 values is asked per
    partition and per pass)."""
    found = _POINT_KEYS.get(id(key_set))
    if found is None or found[0] is not key_set:
        if len(_POINT_KEYS) >= 64:
            _POINT_KEYS.clear()
        keys = [r.point for r in key_set]
        found = _POINT_KEYS[id(key_set)] = (key_set, None if None in keys else keys)
    return found[1]


_POINT_KEYS: dict[int, tuple[KeySet, list[bytes] | None]] = {}


def union(*sets: KeySet) -> KeySet:
    ranges = sorted(r for s in sets for r in s)
    out: list[KeyRange] = []
    for r in ranges:
        if out and r.start <= out[-1].end:
            if r.end > out[-1].end:
                out[-1] = KeyRange(out[-1].start, r.end)
        else:
            out.append(r)
    return tuple(out)


def intersect(a: KeySet, b: KeySet) -> KeySet:
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        start = max(a[i].start, b[j].start)
        end = min(a[i].end, b[j].end)
        if start < end:
            out.append(KeyRange(start, end))
        if a[i].end < b[j].end:
            i += 1
        else:
            j += 1
    return tuple(out)


def intersect_all(sets: list[KeySet]) -> KeySet:
    """The intersection of many sets in one merge (the complement of the union of the
    complements): a planner's 400-way ``AND`` costs one sort, not 400 growing merges."""
    if len(sets) <= 2:
        out = sets[0] if sets else EVERYTHING
        for s in sets[1:]:
            out = intersect(out, s)
        return out
    return complement(union(*[complement(s) for s in sets]))


def complement(a: KeySet) -> KeySet:
    out = []
    previous = BEFORE_ALL
    for r in a:
        if previous < r.start:
            out.append(KeyRange(previous, r.start))
        previous = r.end
    if previous < AFTER_ALL:
        out.append(KeyRange(previous, AFTER_ALL))
    return tuple(out)


def prefix_range(prefix: bytes) -> KeySet:
    """The keys starting with ``prefix`` (byte strings): ``[prefix, successor)``."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return between(prefix, True, None, True)
    successor = stripped[:-1] + bytes([stripped[-1] + 1])
    return between(prefix, True, successor, False)


__all__ = [
    "EVERYTHING",
    "NOTHING",
    "KeyRange",
    "KeySet",
    "between",
    "complement",
    "intersect",
    "intersect_all",
    "point_keys",
    "points",
    "prefix_range",
    "union",
]
