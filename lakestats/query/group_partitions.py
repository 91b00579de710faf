"""Column groups over the partitions a predicate selects. Single-column estimates are
summed per partition; so is a group's count where a conjunction's other conditions leave
only some partitions (a partition column, a range that prunes): each selected partition's
own list (its ``groups.parquet``, exact where it lists all of its combinations) counts
the group's conjuncts, the other conjuncts keep their share of it in that partition.
Otherwise the table level's list answers (``column_groups.refine``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from lakestats import answers
from lakestats.query import column_groups as cg
from lakestats.query.predicate import And, Predicate, normalize

PARTITION_LISTS = 256
"""At most this many partitions' lists are read for one estimate; more: the table level's."""

Lists = Callable[[list[str]], Mapping[str, Sequence[cg.GroupStatistics]]]
"""The groups of each named partition (read once per statistics version)."""


def refine(
    pred: Predicate,
    baseline: answers.Estimate,
    groups: Sequence[cg.GroupStatistics],
    estimate_of: Callable[[Predicate], answers.Estimate],
    lists: Lists,
    live: int,
) -> answers.Estimate:
    """``baseline`` corrected by a column group: from the selected partitions' lists when
    the other conjuncts select fewer than the ``live`` partitions (those with rows), else
    from the table level's."""
    chosen = None if baseline.exact else cg.choose(pred, groups)
    if chosen is None:
        return baseline
    selected = [str(p["name"]) for p in baseline.partitions]
    if not chosen.rest or len(selected) >= live or len(selected) > PARTITION_LISTS:
        return cg.refine(pred, baseline, groups, estimate_of)
    by_name = lists(selected)
    own = {}
    for name in selected:
        found = [g for g in by_name.get(name, ()) if g.columns == chosen.group.columns]
        if not found:  # a partition without the group's list: the table level answers
            return cg.refine(pred, baseline, groups, estimate_of)
        own[name] = found[0]
    return _per_partition(chosen, baseline, own, estimate_of)


def _per_partition(
    chosen: cg.Chosen,
    baseline: answers.Estimate,
    own: Mapping[str, cg.GroupStatistics],
    estimate_of: Callable[[Predicate], answers.Estimate],
) -> answers.Estimate:
    top, rest = chosen.top, chosen.rest
    rest_pred = And(tuple(top[j] for j in rest)) if len(rest) > 1 else top[rest[0]]
    others = {p["name"]: p for p in estimate_of(rest_pred).partitions}
    single = {c: {p["name"]: float(p["row_count"]) for p in e.partitions}
              for c, e in chosen.single(estimate_of).items()}
    parts, listed, listed_upper, listed_exact = [], 0, 0, True
    for p in baseline.partitions:
        name = str(p["name"])
        group, n = own[name], int(p["partition_rows"])
        counted = cg.count(group, chosen.covered)
        listed, listed_upper = listed + counted.rows, listed_upper + counted.upper
        listed_exact &= counted.exact
        g_low, g_high = counted.rows, max(counted.rows, counted.upper)
        g_point = float(counted.rows) if counted.exact else min(max(
            counted.rows + cg.unlisted(group, chosen.covered,
                                       {c: v.get(name, 0.0) for c, v in single.items()}),
            g_low), g_high)
        other = others.get(name)
        if other is None:  # the other conjuncts keep nothing here
            point, low, high = 0.0, 0, 0
        elif other["lower"] == other["upper"] == n:  # they keep every row
            point, low, high = g_point, g_low, g_high
        else:  # their share of the group's rows (independence), Fréchet's bounds
            point = g_point * float(other["row_count"]) / n if n else 0.0
            low = max(0, g_low + int(other["lower"]) - n)
            high = min(g_high, int(other["upper"]))
        low = max(low, int(p["lower"]))
        high = max(low, min(high, int(p["upper"])))
        point = min(max(point, low), high)
        parts.append(MappingProxyType({
            **p, "row_count": point, "lower": low, "upper": high, "exact": low == high,
            "method": f"{p['method']} (column group {group.name} of the partition)",
        }))
    total = baseline.table_rows
    point = sum(float(p["row_count"]) for p in parts)
    low = sum(int(p["lower"]) for p in parts)
    high = sum(int(p["upper"]) for p in parts)
    detail = (*baseline.detail, answers.estimate_conjunct(
        f"column group {chosen.group.name} in {len(parts)} partitions: "
        f"{normalize(chosen.grouped)}", float(listed), listed, listed_upper, listed_exact,
        listed / total if total else 0.0,
    ))
    return dataclasses.replace(
        baseline, row_count=point, lower=low, upper=high, exact=low == high,
        selectivity=point / total if total else 0.0, partitions=tuple(parts), detail=detail,
    )


__all__ = ["PARTITION_LISTS", "refine"]
