"""One partition's estimate of a predicate: a single-column set condition over the key
ranges (``stats.selectivity``), general LIKE by matching the listed values, and the
combination across columns within one partition:

* AND: the point estimate assumes independence (``n * prod(e_i / n)``); bounds are
  Fréchet's: ``max(0, sum(lower_i) - (k-1) n) .. min(upper_i)``;
* OR: inclusion-exclusion under independence (``n * (1 - prod(1 - e_i / n))``); bounds
  ``max(lower_i) .. min(n, sum(upper_i))``.

The estimator (``query.estimate``) runs this kernel where its vectors cannot decide a
partition, and its array code reproduces these float operations in the same order."""

from __future__ import annotations

from dataclasses import replace

from lakestats.query.predicate.sets import column_set, is_set, terms
from lakestats.query.predicate.tree import (
    LEAVES,
    And,
    Like,
    Predicate,
    columns_of,
    like_regex,
    push_not,
    split_pattern,
)
from lakestats.query.source import PartitionStatistics
from lakestats.stats import key_ranges as kr
from lakestats.stats import selectivity as sel
from lakestats.stats.column_summary import ColumnSummary, Estimate


class ScalarView:
    """A partition's min/max, counts and flags only: frequencies and histograms unread."""

    def __init__(self, part: PartitionStatistics) -> None:
        self.part = part
        self.name, self.values, self.row_count = part.name, part.values, part.row_count

    def summary(self, column: str) -> ColumnSummary:
        full = self.part.summary(column)
        return replace(full, frequencies_source=None, histogram_source=None)


def leaf_estimate(pred: Predicate, part: PartitionStatistics) -> Estimate:
    column = columns_of(pred)[0]
    summary = part.summary(column)
    if isinstance(pred, Like):
        matcher = like_regex(pred.pattern, pred.escape)
        head, _ = split_pattern(pred.pattern, pred.escape)
        candidates = kr.prefix_range(head.encode("utf-8")) if head else kr.EVERYTHING
        return sel.like(summary, lambda t: matcher.fullmatch(t) is not None, candidates,
                        pred.negated)
    cs = column_set(pred)
    values = sel.estimate_keys(summary, cs.true)
    if cs.null != "T" or summary.null_count == 0:
        return values
    n = summary.null_count
    return Estimate.of(values.rows + n, values.lower + n, values.upper + n,
                           values.method + " + null count")


def estimate(pred: Predicate, part: PartitionStatistics) -> Estimate:
    cols = columns_of(pred)
    if len(cols) == 1 and (is_set(pred) or isinstance(pred, LEAVES)):
        return leaf_estimate(pred, part)
    parts = [estimate(t, part) for t in terms(pred)]
    n = part.row_count
    return combine_and(n, parts) if isinstance(pred, And) else combine_or(n, parts)


def combine_and(n: int, parts: list[Estimate]) -> Estimate:
    """Independence for the point estimate, Fréchet bounds."""
    if any(p.upper == 0 for p in parts):
        return Estimate.count(0, "and: a term keeps nothing")
    if n <= 0:
        return Estimate.count(0, "empty")
    rows = float(n)
    for p in parts:
        rows *= p.rows / n
    lower = max(0, sum(p.lower for p in parts) - (len(parts) - 1) * n)
    upper = min(p.upper for p in parts)
    return Estimate.of(rows, lower, upper, "and (independence)")


def combine_or(n: int, parts: list[Estimate]) -> Estimate:
    """Inclusion-exclusion under independence; bounds max(lower) .. min(n, sum(upper))."""
    if n <= 0:
        return Estimate.count(0, "empty")
    miss = 1.0
    for p in parts:
        miss *= 1.0 - p.rows / n
    lower = max(p.lower for p in parts)
    upper = min(n, sum(p.upper for p in parts))
    return Estimate.of(n * (1.0 - miss), lower, upper, "or (independence)")


def can_match(pred: Predicate, partition: PartitionStatistics) -> bool:
    """False only when the statistics prove no row of the partition satisfies ``pred``
    (min/max, null counts, complete frequencies, exact histogram bins)."""
    return partition.row_count > 0 and estimate(push_not(pred), partition).upper > 0

