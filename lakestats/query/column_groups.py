"""Estimates from column groups (``analyze --column-groups``): a conjunction of
single-column conditions over two or more columns of a group is counted from the group's
joint frequencies (what a truncated list leaves out: ``group_unlisted``) instead of the
product of the columns' selectivities; the distinct combinations of some columns
(``estimate --group-by``) from the group's distinct count.

Bounds stay sound: a count of listed combinations is at least their listed counts and at
most their upper bounds plus what the unlisted combinations can hold; the estimate of the
other conjuncts keeps its own bounds, the group's upper bound caps them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from lakestats import answers
from lakestats.errors import ColumnNotFoundError, InvalidArgumentError
from lakestats.query.group_statistics import GroupCount, GroupStatistics, Wanted
from lakestats.query.group_unlisted import unlisted
from lakestats.query.predicate import And, Predicate, normalize, push_not, terms
from lakestats.query.predicate.sets import column_set, is_set, point_keys
from lakestats.query.predicate.tree import columns_of
from lakestats.stats.group_rows import GroupRow, key_names
from lakestats.store import group_files
from lakestats.store.reader import StatisticsReader

MAX_COMBINATIONS = 100_000
"""IN lists whose product exceeds this are left to the single-column estimate."""


def load(reader: StatisticsReader) -> tuple[GroupStatistics, ...]:
    """The version's table-level column groups (none when it has none)."""
    relative = (reader.version.table_files or {}).get("groups")
    return read(reader, relative) if relative else ()


def read(reader: StatisticsReader, relative: str) -> tuple[GroupStatistics, ...]:
    """The groups of one ``groups.parquet`` (a partition's or the table level's)."""
    table = reader.parquet_at(relative).read(use_threads=False)
    return tuple(_statistics(row) for row in group_files.group_rows(table))


def _statistics(row: GroupRow) -> GroupStatistics:
    """A group's row as the estimator holds it: its listed combinations as tuples."""
    keys = [row.listed.column(name).to_pylist() for name in key_names(len(row.columns))]
    return GroupStatistics(
        columns=row.columns,
        row_count=row.row_count,
        distinct_count=row.distinct_count,
        distinct_lower=row.distinct_lower,
        distinct_upper=row.distinct_upper,
        distinct_exact=row.distinct_exact,
        truncated=row.truncated,
        unlisted_rows=row.unlisted_rows,
        unlisted_max=row.unlisted_max,
        values=tuple(zip(*keys, strict=True)),
        counts=tuple(row.listed.column("count").to_pylist()),
        counts_upper=tuple(row.listed.column("upper").to_pylist()),
        degrees=MappingProxyType({(d.determinant, d.dependent): row.degree(d)
                                  for d in row.dependencies}),
    )


def count(group: GroupStatistics, wanted: dict[str, Wanted]) -> GroupCount:
    """Rows whose value of each constrained column of ``group`` is one ``wanted`` keeps."""
    at = [(group.columns.index(c), w) for c, w in wanted.items()]
    listed = upper = matched = 0
    for item, n, high in zip(group.values, group.counts, group.counts_upper, strict=True):
        if all(w.accepts(item[i]) for i, w in at):
            listed += n
            upper += high
            matched += 1
    if not group.truncated:
        return GroupCount(listed, listed, True)
    points = [w.points for w in wanted.values()]
    if len(wanted) == len(group.columns) and all(p is not None for p in points):
        combinations = math.prod(len(p) for p in points if p is not None)
        unlisted = min(group.unlisted_rows, (combinations - matched) * group.unlisted_max)
    else:  # a fully specified combination bounds its own count; a partial one does not
        unlisted = group.unlisted_rows
    return GroupCount(listed, upper + max(0, unlisted), False)


def _constraints(top: list[Predicate]) -> tuple[dict[str, Wanted], dict[str, int]]:
    """What each column's single-column conjunct allows, and that conjunct's position
    (a column's first such conjunct: ``terms`` merges a column's conditions into one)."""
    wanted: dict[str, Wanted] = {}
    positions: dict[str, int] = {}
    for j, term in enumerate(top):
        cols = columns_of(term)
        if len(cols) != 1 or not is_set(term) or cols[0] in wanted:
            continue
        keys = point_keys(term)
        wanted[cols[0]] = Wanted(column_set(term), frozenset(keys) if keys else None)
        positions[cols[0]] = j
    return wanted, positions


def _chosen(
    groups: Sequence[GroupStatistics], wanted: dict[str, Wanted]
) -> GroupStatistics | None:
    """The group covering most constrained columns (two at least; ties: the smaller)."""
    best, best_key = None, (1, 0)
    for group in groups:
        covered = [c for c in wanted if c in group.columns]
        if math.prod(len(wanted[c].points or ()) for c in covered) > MAX_COMBINATIONS:
            continue
        key = (len(covered), -len(group.columns))
        if len(covered) >= 2 and key > best_key:
            best, best_key = group, key
    return best


@dataclass(frozen=True)
class Chosen:
    """The group that answers part of a conjunction: the conjunction's top-level terms,
    the group, the constrained columns it counts and their terms' positions."""

    top: list[Predicate]
    positions: dict[str, int]
    group: GroupStatistics
    covered: dict[str, Wanted]

    @property
    def inside(self) -> list[int]:
        return sorted(self.positions[c] for c in self.covered)

    @property
    def grouped(self) -> Predicate:
        """The conjuncts the group counts, as one predicate."""
        inside = self.inside
        return And(tuple(self.top[j] for j in inside)) if len(inside) > 1 else self.top[inside[0]]

    @property
    def rest(self) -> list[int]:
        inside = set(self.inside)
        return [j for j in range(len(self.top)) if j not in inside]

    def single(self, estimate_of: Callable[[Predicate], answers.Estimate]
               ) -> dict[str, answers.Estimate]:
        """Each counted column's own conjunct, estimated alone."""
        return {c: estimate_of(self.top[self.positions[c]]) for c in self.covered}


def choose(pred: Predicate, groups: Sequence[GroupStatistics]) -> Chosen | None:
    """The group covering most of ``pred``'s single-column conjuncts (``_chosen``)."""
    if not groups:
        return None
    pred = push_not(pred)
    top = terms(pred) if isinstance(pred, And) else [pred]
    wanted, positions = _constraints(top)
    group = _chosen(groups, wanted)
    if group is None:
        return None
    covered = {c: w for c, w in wanted.items() if c in group.columns}
    return Chosen(top, positions, group, covered)


def refine(
    pred: Predicate,
    baseline: answers.Estimate,
    groups: Sequence[GroupStatistics],
    estimate_of: Callable[[Predicate], answers.Estimate],
) -> answers.Estimate:
    """``baseline`` (the estimate that assumes independence) corrected by the column group
    that covers most of ``pred``'s equality / IN conjuncts; ``baseline`` itself when no
    group covers two of them or it is exact already."""
    chosen = None if baseline.exact else choose(pred, groups)
    if chosen is None:
        return baseline
    group, covered, grouped = chosen.group, chosen.covered, chosen.grouped
    counted = count(group, covered)
    alone = estimate_of(grouped)  # the same conjuncts as independent columns
    lower = max(counted.rows, alone.lower)
    upper = max(lower, min(counted.upper, alone.upper))
    if counted.exact:
        point = float(counted.rows)
    else:  # the listed combinations' counts, and the dependencies for the others
        single = {c: e.row_count for c, e in chosen.single(estimate_of).items()}
        point = min(max(counted.rows + unlisted(group, covered, single), lower), upper)
    rest = chosen.rest
    exact = counted.exact
    if rest:  # the other conjuncts keep the baseline's share of the group's rows
        ratio = point / alone.row_count if alone.row_count > 0 else 0.0
        point = baseline.row_count * ratio if alone.row_count > 0 else min(
            baseline.row_count, point
        )
        upper = min(baseline.upper, upper)
        lower = min(baseline.lower, upper)
        point = min(max(point, lower), upper)
        exact = False
    return answer(baseline, group, grouped, counted, point, lower, upper, exact)


def answer(
    baseline: answers.Estimate,
    group: GroupStatistics,
    grouped: Predicate,
    counted: GroupCount,
    point: float,
    lower: int,
    upper: int,
    exact: bool,
) -> answers.Estimate:
    total = baseline.table_rows
    scale = point / baseline.row_count if baseline.row_count > 0 else 0.0
    method = f" (column group {group.name})"
    partitions = tuple(
        MappingProxyType({
            **p,
            "row_count": min(max(float(p["row_count"]) * scale, p["lower"]), p["upper"]),  # type: ignore[arg-type]
            "method": f"{p['method']}{method}",
        })
        for p in baseline.partitions
    )
    detail = (*baseline.detail, answers.estimate_conjunct(
        f"column group {group.name}: {normalize(grouped)}", float(counted.rows)
        if counted.exact else float(point), counted.rows, counted.upper, counted.exact,
        (counted.rows / total) if total else 0.0,
    ))
    return dataclasses.replace(
        baseline, row_count=point, lower=lower, upper=upper, exact=exact,
        selectivity=point / total if total else 0.0, partitions=partitions, detail=detail,
    )


def distinct(
    columns: Sequence[str],
    groups: Sequence[GroupStatistics],
    single: Callable[[list[str]], list[tuple[int, int, bool]]],
    rows: int,
    version: int,
    snapshot_id: int | None,
) -> answers.GroupDistinct:
    """Distinct combinations of ``columns`` (``estimate --group-by``): from the smallest
    declared group that holds them all; else bounded by the columns' own distinct counts
    (``single``: each column's table-level distinct count's bounds and whether exact)."""
    names = list(dict.fromkeys(columns))
    if len(names) < 2:
        raise InvalidArgumentError(
            "--group-by: name two or more distinct columns, comma-separated (one column's "
            "distinct count is in `lakestats show`)"
        )
    known = single(names)
    covering = sorted((g for g in groups if set(names) <= set(g.columns)),
                      key=lambda g: len(g.columns))
    each = [low for low, _, _ in known]
    product = math.prod(high for _, high, _ in known)
    if covering:
        g = covering[0]
        if len(g.columns) == len(names):
            return _distinct_answer(names, g.distinct_count, g.distinct_lower,
                                    g.distinct_upper, g.distinct_exact, g.name, version,
                                    snapshot_id)
        at = [g.columns.index(c) for c in names]
        projected = {tuple(item[i] for i in at) for item in g.values}
        if not g.truncated:
            n = len(projected)
            return _distinct_answer(names, n, n, n, True, g.name, version, snapshot_id)
        lower = max(len(projected), *each)
        upper = max(lower, min(product, g.distinct_upper))
        estimate = min(max(round(g.distinct_count * len(projected) / max(len(g.values), 1)),
                           lower), upper)
        return _distinct_answer(names, estimate, lower, upper, False, g.name, version,
                                snapshot_id)
    lower = max(each)
    upper = max(lower, min(product, rows))
    exact = all(e for _, _, e in known) and lower == upper
    return _distinct_answer(names, upper, lower, upper, exact, None, version, snapshot_id)


def _distinct_answer(
    names: list[str],
    estimate: int,
    lower: int,
    upper: int,
    exact: bool,
    group: str | None,
    version: int,
    snapshot_id: int | None,
) -> answers.GroupDistinct:
    return answers.GroupDistinct(
        columns=tuple(names), distinct_count=estimate, lower=lower, upper=upper, exact=exact,
        column_group=group, version=version, snapshot_id=snapshot_id,
    )


def check_columns(names: Sequence[str], known: Sequence[str]) -> None:
    """A name that is not an analyzed column is one error line."""
    for name in names:
        if name not in known:
            raise ColumnNotFoundError(
                f"--group-by: column {name!r} has no statistics; the analyzed columns are: "
                f"{', '.join(list(known)[:20])}"
            )


__all__ = ["Chosen", "GroupStatistics", "answer", "check_columns", "choose", "count", "distinct",
           "load", "read", "refine", "unlisted"]
