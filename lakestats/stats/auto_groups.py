"""Column groups found automatically (``analyze --column-groups auto``): pairs of
low-cardinality columns, at a bounded cost per partition.

In each partition (each slice of one, merged), the first ``AUTO_COLUMNS`` columns in the
table's order (partition columns and lists, maps or all-null columns left out) with at
most ``AUTO_DISTINCT`` distinct values (null one of them) are dictionary-encoded once, and
every pair of them is counted from the two columns' codes (one ``bincount`` over the rows):
at most ``AUTO_COLUMNS * (AUTO_COLUMNS - 1) / 2`` pairs of at most ``AUTO_DISTINCT ** 2``
combinations each. A pair is kept in a partition's ``groups.parquet`` when every slice of
the partition found it; the table level keeps those every partition found
(``compute/reduce/groups.py``: at most ``AUTO_KEPT``, where the columns are dependent).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakestats.stats.column_groups import GroupAccumulator, coded, coded_counts
from lakestats.stats.group_rows import GroupRow
from lakestats.stats.leaves import Leaf, leaf_array

AUTO_COLUMNS = 8
"""Columns a partition pairs at most (28 pairs)."""
AUTO_DISTINCT = 32
"""A column is paired when a partition holds at most this many of its values."""
AUTO_KEPT = 8
"""Pairs the table level keeps at most: those whose columns are most dependent."""
AUTO_MIN_DISTANCE = 0.01
"""A pair is kept when the product of its columns' shares misplaces at least this share
of the rows (the total variation distance between the joint shares and that product),
and more than chance does for independent columns (``dependence``): for independent
columns a group adds little to an estimate."""


@dataclass
class AutoPairs:
    """The pairs of low-cardinality columns of the slices seen (none seen: ``None``)."""

    leaves: tuple[Leaf, ...]
    pairs: dict[tuple[str, str], GroupAccumulator] | None = None

    def observe(self, table: pa.Table) -> None:
        """Count every pair of this slice's low-cardinality columns."""
        if table.num_rows == 0:
            return
        few: list[tuple[Leaf, tuple[np.ndarray, pa.Array]]] = []
        for leaf in self.leaves:
            if len(few) == AUTO_COLUMNS:
                break
            codes, keys = coded(leaf_array(table, leaf))
            if len(keys) <= AUTO_DISTINCT:
                few.append((leaf, (codes, keys)))
        found: dict[tuple[str, str], GroupAccumulator] = {}
        for (a, codes_a), (b, codes_b) in itertools.combinations(few, 2):
            group = GroupAccumulator((a.name, b.name), (a, b), row_count=table.num_rows)
            group.add_joint(coded_counts([codes_a, codes_b]))
            found[(a.name, b.name)] = group
        self._keep(found)

    def merge(self, other: AutoPairs) -> None:
        if other.pairs is not None:
            self._keep(other.pairs)

    def _keep(self, found: dict[tuple[str, str], GroupAccumulator]) -> None:
        """The pairs found in every slice seen: merged, in the table's order."""
        if self.pairs is None:
            self.pairs = dict(found)
            return
        for name in list(self.pairs):
            if name in found:
                self.pairs[name].merge(found[name])
            else:
                del self.pairs[name]

    def finalize_rows(self, max_frequencies: int) -> list[GroupRow]:
        """The partition's rows of ``groups.parquet``, one per pair found."""
        return [g.finalize(max_frequencies) for g in (self.pairs or {}).values()]


def dependence(row: GroupRow) -> float | None:
    """How far a complete pair's joint shares are from the product of its columns' shares
    (total variation distance) beyond chance, ``sqrt(a * b / rows)`` for ``a`` and ``b``
    values (independent columns' distance is about 0.4 of that); None for a truncated
    list (not every combination known)."""
    if row.truncated or not row.row_count:
        return None
    n = float(row.row_count)
    combinations = list(zip(row.listed.column("k0").to_pylist(),
                            row.listed.column("k1").to_pylist(),
                            row.listed.column("count").to_pylist(), strict=True))
    left: dict[bytes | None, float] = {}
    right: dict[bytes | None, float] = {}
    for a, b, c in combinations:
        left[a] = left.get(a, 0.0) + c / n
        right[b] = right.get(b, 0.0) + c / n
    listed = product = 0.0
    for a, b, c in combinations:
        expected = left[a] * right[b]
        listed += abs(c / n - expected)
        product += expected
    distance = 0.5 * (listed + max(0.0, 1.0 - product))  # unseen cells: 1 - product
    return distance - (len(left) * len(right) / n) ** 0.5


__all__ = ["AUTO_COLUMNS", "AUTO_DISTINCT", "AUTO_KEPT", "AUTO_MIN_DISTANCE", "AutoPairs",
           "dependence"]
