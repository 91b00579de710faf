"""Cutting each column's key space into ranges of about equal rows, from row-group outlines.

Pure driver-side arithmetic over ``sources.outline`` rows (no value read). A row group with
first key ``a`` and last key ``b`` spreads its rows evenly over the distinct outline keys in
``[a, b]`` (a group with unknown keys over all of them); the column is cut at the keys where
the running estimate crosses each multiple of ``target`` rows, so ranges ``[low, high)``
hold about ``target`` rows each (plus at most one partly-read group per source and end).
``pack`` then gives each range task a run of consecutive pieces in (column, key) order:
a large column gets several tasks, small columns share one, so every task's rows stay
bounded and part numbers increase with (column, key) as ``store/ranks.py`` requires.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from lakestats.compute.exact.sources import Read


@dataclass(frozen=True)
class Piece:
    """One column's key range ``[low, high)`` (None: unbounded) and what to read for it."""

    column: int
    low: bytes | None
    high: bytes | None
    rows: int  # estimated rows read
    reads: tuple[Read, ...]


@dataclass(frozen=True)
class Group:
    """One outline row: a source's row group (or listed rows) of one column."""

    source: int
    listed: bool
    group: int
    low: bytes | None
    high: bytes | None
    rows: int


def cut_points(groups: list[Group], target: int) -> list[bytes]:
    """Keys splitting the column into ranges of about ``target`` estimated rows."""
    total = sum(g.rows for g in groups)
    if total <= target:
        return []
    points = sorted({k for g in groups for k in (g.low, g.high) if k is not None})
    if len(points) < 2:
        return []
    mass = np.zeros(len(points) + 1)  # difference array of each point's share of rows
    for g in groups:
        first = 0 if g.low is None else bisect.bisect_left(points, g.low)
        last = len(points) - 1 if g.high is None else bisect.bisect_left(points, g.high)
        share = g.rows / (last - first + 1)
        mass[first] += share
        mass[last + 1] -= share
    running = np.cumsum(np.cumsum(mass[:-1]))  # estimated rows at or below each point
    wanted = np.arange(1, int(total // target) + 1) * target
    at = np.searchsorted(running, wanted, side="left")  # first point reaching each multiple
    # the cut key starts the next range: the point after the one reaching the multiple
    chosen = sorted({int(i) + 1 for i in at if int(i) + 1 < len(points)})
    return [points[i] for i in chosen]


def _overlaps(g: Group, low: bytes | None, high: bytes | None) -> bool:
    below = g.high is not None and low is not None and g.high < low
    above = g.low is not None and high is not None and g.low >= high
    return not (below or above)


def pieces(column: int, groups: list[Group], target: int) -> list[Piece]:
    """The column's ranges with the row groups each must read."""
    cuts = cut_points(groups, target)
    bounds = list(zip([None, *cuts], [*cuts, None], strict=True))
    out = []
    for low, high in bounds:
        chosen = [g for g in groups if _overlaps(g, low, high)]
        by_source: dict[tuple[int, bool], list[int]] = {}
        for g in chosen:
            by_source.setdefault((g.source, g.listed), []).append(g.group)
        reads = tuple(
            Read(source, listed, tuple(sorted(set(gs))))
            for (source, listed), gs in sorted(by_source.items())
        )
        out.append(Piece(column, low, high, sum(g.rows for g in chosen), reads))
    return out


def pack(all_pieces: list[Piece], target: int) -> list[list[Piece]]:
    """Consecutive pieces (in column, key order) grouped into tasks of at most ``target``
    estimated rows (a piece larger than that is a task of its own)."""
    tasks: list[list[Piece]] = []
    rows = 0
    for piece in all_pieces:
        if tasks and rows + piece.rows <= target and tasks[-1][-1].column != piece.column:
            tasks[-1].append(piece)
            rows += piece.rows
        else:
            tasks.append([piece])
            rows = piece.rows
    return tasks
