"""What a column group's truncated list leaves out (``query.column_groups``): the rows of
the unlisted combinations that satisfy a conjunction, from each column's share of them
joined by the group's functional-dependency degrees, as PostgreSQL joins clauses its
``mcv`` list does not cover with its ``dependencies``
(``f * min(P(a), P(b)) + (1 - f) * P(a) * P(b)``), told by the list which of the named
values the dependency can hold for.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakestats.query.group_statistics import GroupStatistics, Wanted

NAMED_DETERMINANTS = 64
"""Named determinant combinations the list is asked about at most (more: PostgreSQL's rule)."""


def unlisted(group: GroupStatistics, wanted: Mapping[str, Wanted],
             single: Mapping[str, float]) -> float:
    """Rows of the combinations a truncated list leaves out that satisfy ``wanted``: each
    constrained column's share of the unlisted rows (``single``: its own estimate over the
    table, less the listed rows it accepts), joined column by column, the column the
    others determine most last; no dependency: independence."""
    rows = group.unlisted_rows
    if rows <= 0:
        return 0.0
    share: dict[str, float] = {}
    for c, w in wanted.items():
        i = group.columns.index(c)
        listed = sum(n for item, n in zip(group.values, group.counts, strict=True)
                     if w.accepts(item[i]))
        share[c] = min(1.0, max(0.0, single[c] - listed) / rows)
    return rows * _joint([c for c in group.columns if c in share], share, group, wanted)


def degree(group: GroupStatistics, determinant: Sequence[str], dependent: str) -> float:
    """The degree of ``determinant -> dependent`` among the unlisted rows. Kept: the one of
    those columns, else the largest of one determinant column's (more columns determine at
    least as much), over all rows. The listed rows whose determinant values come with one
    dependent value in the list are taken as supporting it (those with several cannot),
    so what supports it among the unlisted rows is what is left, at least nothing."""
    kept = group.degrees.get((tuple(determinant), dependent))
    if kept is None:
        kept = max((group.degrees.get(((c,), dependent), 0.0) for c in determinant),
                   default=0.0)
    rows, unlisted_rows = group.row_count, group.unlisted_rows
    if unlisted_rows <= 0:
        return kept
    seen = _dependents(group, determinant, dependent)
    at = [group.columns.index(c) for c in determinant]
    supporting = sum(n for item, n in zip(group.values, group.counts, strict=True)
                     if len(seen[tuple(item[i] for i in at)]) == 1)
    return min(1.0, max(0.0, (kept * rows - supporting) / unlisted_rows))


def _dependents(group: GroupStatistics, determinant: Sequence[str], dependent: str
                ) -> dict[tuple[bytes | None, ...], set[bytes | None]]:
    """The dependent values the list shows with each determinant combination."""
    at = [group.columns.index(c) for c in determinant]
    to = group.columns.index(dependent)
    seen: dict[tuple[bytes | None, ...], set[bytes | None]] = {}
    for item in group.values:
        seen.setdefault(tuple(item[i] for i in at), set()).add(item[to])
    return seen


def _named(group: GroupStatistics, determinant: list[str], dependent: str,
           wanted: Mapping[str, Wanted]) -> str:
    """What the list says of the dependency for the determinant values the conjunction
    names: ``several`` (each comes with several dependent values: it does not hold for
    them), ``elsewhere`` (each comes with one, none of which the conjunction accepts), or
    ``unknown``."""
    points = [wanted[c].points for c in determinant]
    if any(p is None for p in points) or math.prod(len(p or ()) for p in points) > (
        NAMED_DETERMINANTS
    ):
        return "unknown"
    seen = _dependents(group, determinant, dependent)
    found = [seen.get(tuple(named)) for named in itertools.product(*points)]  # type: ignore[arg-type]
    if found and all(s is not None and len(s) > 1 for s in found):
        return "several"
    accepts = wanted[dependent].accepts
    if found and all(s is not None and len(s) == 1 and not accepts(next(iter(s)))
                     for s in found):
        return "elsewhere"
    return "unknown"


def _joint(columns: list[str], share: Mapping[str, float], group: GroupStatistics,
           wanted: Mapping[str, Wanted]) -> float:
    """The fraction of the unlisted rows with every column's value."""
    if len(columns) == 1:
        return share[columns[0]]
    f, last = max((degree(group, [c for c in columns if c != d], d), d) for d in columns)
    others = [c for c in columns if c != last]
    rest = _joint(others, share, group, wanted)
    named = _named(group, others, last, wanted)
    if named == "several":
        f = 0.0
    if named == "elsewhere":  # the determined rows go to the value the list shows
        return (1 - f) * rest * share[last]
    return f * min(rest, share[last]) + (1 - f) * rest * share[last]


__all__ = ["NAMED_DETERMINANTS", "degree", "unlisted"]
