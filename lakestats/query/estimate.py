"""The estimator: rows a predicate keeps, per partition of a ``PartitionSource`` and summed
(so skew between partitions is kept), with sound bounds, as an ``answers.Estimate``.

One path, over the source's columns, for every caller (a resident estimator's partition
index, the statistics files, the table level as one partition):

1. every top-level conjunct from the scalars for every partition at once
   (``selectivity_vector`` over the source's vectors; a conjunct or partition the vectors
   cannot decide goes through the one-partition kernel, ``partition_estimate``, on the
   scalars only);
2. a partition where a conjunct keeps nothing is pruned: its scalar numbers stand;
3. the partitions left (the survivors) with all their statistics (``survivor_sets``: as
   vectors where their listed values are in memory or held, else read on threads and
   estimated one by one); an equality / IN conjunct over complete frequencies takes its
   exact count from the source's per-partition counts (``point_counts``);
4. equality / IN conjuncts are scaled to the table level's estimate (which, as planners
   do, assumes the value occurs), each partition kept inside its bounds;
5. the conjuncts combined per partition (independence, Fréchet bounds) and summed.

Each conjunct's numbers per partition are kept on the source (``term_cache``) for the
next predicate that names it.
"""

from __future__ import annotations

import numpy as np

from lakestats import answers
from lakestats.query import partition_estimate as pe
from lakestats.query import survivor_sets, term_cache
from lakestats.query.predicate import And, Predicate, normalize, push_not, terms
from lakestats.query.predicate.sets import column_set, is_set, point_keys
from lakestats.query.predicate.tree import columns_of
from lakestats.query.source import PartitionSource, PartitionStatistics
from lakestats.stats import key_ranges as kr
from lakestats.stats import selectivity as sel
from lakestats.stats import selectivity_vector as sv
from lakestats.stats.column_summary import Estimate
from lakestats.store.reader import StatisticsReader
from lakestats.threads import parallel, prefetch


def estimate(
    pred: Predicate,
    source: PartitionSource,
    table: PartitionStatistics | None,
    version: int,
    snapshot_id: int | None,
) -> answers.Estimate:
    """Rows ``pred`` keeps over ``source`` (see the module docstring); ``table`` (the
    table-level statistics, optional) sets the total of equality and IN conjuncts on values
    a partition does not list."""
    pred = push_not(pred)
    top = terms(pred) if isinstance(pred, And) else [pred]
    n = source.row_counts()
    live = n > 0
    k = len(top)
    cache = term_cache.terms_of(source)
    entries = [cache.of(t) for t in top]
    rows, lower, upper = _scalar_pass(top, source, live, entries)
    survivors = np.flatnonzero(live & ~(upper == 0).any(axis=0))

    columns = columns_of(pred)
    source.expect(columns, survivors)
    counted: dict[int, np.ndarray] = {}
    points = [point_keys(t) for t in top]
    if k > 1 and len(survivors):  # one conjunct: its own estimate is the answer's
        for j, term in enumerate(top):
            if points[j] is not None:
                got = source.point_counts(columns_of(term)[0], points[j])
                if got is not None:
                    counted[j] = got
    estimates = _survivors(top, source, survivors, counted, entries, columns)
    rows[:, survivors], lower[:, survivors], upper[:, survivors] = (
        estimates.rows, estimates.lower, estimates.upper
    )
    if table is not None:
        for j, term in enumerate(top):
            if points[j] is not None:
                _scale_to_table(j, term, points[j], table, entries[j], estimates,
                                (rows, lower, upper), live)

    total_rows = int(n.sum())
    detail = []
    for j, t in enumerate(top):
        if entries[j].normalized is None:
            entries[j].normalized = normalize(t)
        summed = sum(rows[j][live].tolist()) or 0.0
        detail.append(answers.estimate_conjunct(
            entries[j].normalized, summed, int(lower[j][live].sum()),
            int(upper[j][live].sum()), bool(np.all(lower[j][live] == upper[j][live])),
            summed / total_rows if total_rows else 0.0,
        ))
    (point, low, high, exact), matching = survivor_sets.combine(
        source, n, survivors, rows, lower, upper, estimates if k == 1 else None
    )
    return answers.Estimate(
        predicate=normalize(pred), row_count=point, lower=low, upper=high, exact=exact,
        selectivity=point / total_rows if total_rows else 0.0, table_rows=total_rows,
        version=version, snapshot_id=snapshot_id, partitions=tuple(matching),
        detail=tuple(detail),
    )


def _vector_estimates(term: Predicate, source: PartitionSource) -> sv.Batch | None:
    """A one-column term's scalar estimates over every partition at once, from the
    source's vectors; None where the term or the source has none."""
    cols = columns_of(term)
    vectors = source.vectors(cols[0]) if len(cols) == 1 and is_set(term) else None
    if vectors is None:
        return None
    cs = column_set(term)
    return sv.scalar_estimates(vectors, cs.true, cs.null == "T")


def _scalar_pass(
    top: list[Predicate], source: PartitionSource, live: np.ndarray, entries: list
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each conjunct's estimate from the scalars (conjunct x partition): from the vectors,
    or kept from an earlier predicate (``Term.scalar``), the rest one by one."""
    k, count = len(top), len(source)
    rows = np.zeros((k, count), dtype=np.float64)
    lower = np.zeros((k, count), dtype=np.int64)
    upper = np.zeros((k, count), dtype=np.int64)
    computed = np.zeros((k, count), dtype=bool)
    for j, term in enumerate(top):
        kept = entries[j].scalar
        if kept is not None:
            rows[j], lower[j], upper[j] = kept
            computed[j] = True
            continue
        batch = _vector_estimates(term, source)
        if batch is None:
            continue
        rows[j], lower[j], upper[j] = batch.rows, batch.lower, batch.upper
        computed[j] = ~batch.fallback
    for i in np.flatnonzero(live & ~computed.all(axis=0)):
        light = pe.ScalarView(source[int(i)])
        for j in np.flatnonzero(~computed[:, i]):
            e = pe.estimate(top[j], light)
            rows[j, i], lower[j, i], upper[j, i] = e.rows, e.lower, e.upper
    for j, entry in enumerate(entries):
        if entry.scalar is None:
            entry.scalar = (rows[j].copy(), lower[j].copy(), upper[j].copy())
    return rows, lower, upper


def _survivors(
    top: list[Predicate],
    source: PartitionSource,
    survivors: np.ndarray,
    counted: dict[int, np.ndarray],
    entries: list[term_cache.Term],
    columns: list[str],
) -> survivor_sets.Survivors:
    """The survivors' full estimates: as vectors where their statistics are in memory
    (visited, or every term's numbers kept) or held for every partition; else read on
    threads (Parquet releases the GIL) and estimated one by one."""

    def full(i: int) -> list[Estimate]:
        part = source[i]
        return [Estimate.count(int(counted[j][i]), "frequencies")
                if j in counted and counted[j][i] >= 0 else pe.estimate(term, part)
                for j, term in enumerate(top)]

    seen = source.visited_mask(columns, survivors)
    if all(e.covers(survivors) for e in entries) or seen.all():
        return survivor_sets.vectorised(top, source, survivors, counted, entries)
    single = all(len(columns_of(t)) == 1 and is_set(t) for t in top)
    listed = source.cache.get("listed", {})
    if single and all(source.held(c) is not None for c in columns):
        pass  # their listed values are laid out from the held rows
    elif seen.mean() >= 0.5 and all(c in listed for c in columns):
        with parallel():  # read the others; the numbers come from the vectors
            for _ in prefetch(full, survivors[~seen].tolist()):
                pass
    else:
        with parallel():
            got = dict(zip(survivors.tolist(), prefetch(full, survivors.tolist()),
                           strict=True))
        source.mark_visited(columns, survivors)
        for j, entry in enumerate(entries):  # the terms' own estimates, kept
            for i, conjuncts in got.items():
                if j not in counted or counted[j][i] < 0:
                    entry.record(i, conjuncts[j])
        return survivor_sets.Survivors.of(survivors, got, len(top))
    source.mark_visited(columns, survivors)
    return survivor_sets.vectorised(top, source, survivors, counted, entries)


def _scale_to_table(
    j: int,
    term: Predicate,
    keys_: list[bytes],
    table: PartitionStatistics,
    entry: term_cache.Term,
    estimates: survivor_sets.Survivors,
    numbers: tuple[np.ndarray, np.ndarray, np.ndarray],
    live: np.ndarray,
) -> None:
    """Conjunct ``j`` (an equality / IN on values a partition does not list) scaled so its
    inexact partitions sum to the table level's estimate minus the exact ones."""
    rows, lower, upper = numbers
    exact = lower[j] == upper[j]
    loose = live & ~exact
    if not loose.any():
        return

    def target_of() -> float:
        summary = table.summary(columns_of(term)[0])
        return sel.estimate_keys(summary, kr.points(keys_)).rows

    target = entry.table_target(table, target_of)
    fixed = sum(rows[j][live & exact].tolist())
    want = max(0.0, target - fixed)
    have = sum(rows[j][loose].tolist())
    weights = rows[j][loose] if have > 0 else upper[j][loose].astype(np.float64)
    scale = want / (sum(weights.tolist()) or 1.0)
    rows[j][loose] = sv._of(weights * scale, lower[j][loose], upper[j][loose])[0]
    for i in np.flatnonzero(loose):
        if int(i) in estimates:
            e = estimates[int(i)][j]
            estimates[int(i)][j] = Estimate.of(
                rows[j, i], e.lower, e.upper, e.method + " (scaled to table level)"
            )


def matching_positions(pred: Predicate, source: PartitionSource) -> list[int]:
    """Positions of the partitions whose statistics do not prove that no row satisfies
    ``pred``: every single-column conjunct prunes all partitions at once from the scalars,
    then the partitions left are checked one by one with all their statistics (read once
    per column where the source can, ``expect``)."""
    pred = push_not(pred)
    keep = source.row_counts() > 0
    for term in terms(pred) if isinstance(pred, And) else [pred]:
        batch = _vector_estimates(term, source)
        if batch is not None:
            keep &= ~((batch.upper == 0) & ~batch.fallback)
    survivors = np.flatnonzero(keep)
    source.expect(columns_of(pred), survivors)
    return [int(i) for i in survivors if pe.can_match(pred, source[int(i)])]


def derived(reader: StatisticsReader, found: StatisticsReader) -> answers.Estimate:
    """The answer from derived statistics (``analyze --where``): exact row counts per
    partition."""
    total = sum(e.row_count for e in reader.version.partitions)
    rows_of = {e.name: e.row_count for e in reader.version.partitions}
    kept = sum(e.row_count for e in found.version.partitions)
    predicate = found.version.extra.get("derived_predicate")
    method = "derived statistics (analyze --where)"
    selectivity = kept / total if total else 0.0
    return answers.Estimate(
        predicate=str(predicate), row_count=float(kept), lower=kept, upper=kept, exact=True,
        selectivity=selectivity, table_rows=total, version=reader.version.version,
        snapshot_id=reader.version.snapshot_id,
        partitions=tuple(
            answers.estimate_partition(e.values, e.name, rows_of.get(e.name, e.row_count),
                                       float(e.row_count), e.row_count, e.row_count, True,
                                       method)
            for e in found.version.partitions
            if e.row_count
        ),
        detail=(answers.estimate_conjunct(predicate, float(kept), kept, kept, True,
                                          selectivity),),
        derived_version=found.version.version,
    )


__all__ = ["derived", "estimate", "matching_positions"]
