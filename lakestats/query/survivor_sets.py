"""The survivors' estimates held as arrays, and their combination into the answer.

After the estimator (``query.estimate``) prunes the partitions from the scalars, the
partitions left (the survivors) are estimated term by term with all their statistics:
``vectorised`` estimates each single-column term for all survivors at once
(``survivors.leaf``), reusing and filling the term's ``term_cache.Term``, and keeps the
result as arrays (``Survivors``: conjunct x survivor, ``Estimate`` objects made only where
asked). ``combine`` sums the survivors' answers and lists those that can match, doing
``partition_estimate.combine_and`` on arrays in the same float operations and order.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from lakestats import answers
from lakestats.query import listed
from lakestats.query.predicate import Predicate
from lakestats.query.source import PartitionSource
from lakestats.query.term_cache import Term
from lakestats.stats import selectivity_vector as sv
from lakestats.stats.column_summary import Estimate


def combine(
    source: PartitionSource,
    n: np.ndarray,
    order: np.ndarray,
    rows: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    single: Survivors | None,
) -> tuple[tuple[float, int, int, bool], list[answers.Row]]:
    """The survivors' (``order``) answers summed, and those that can match listed:
    ``combine_and`` of each survivor's conjunct estimates (``rows``, ``lower``, ``upper``:
    conjunct x partition) done on arrays, in the same float operations and order; with one
    conjunct (``single``) its own estimates, methods included."""
    if single is not None:  # its arrays, its methods (scaled ones changed)
        e_rows = rows[0, order].tolist()  # scaled to the table level where it was
        e_lower, e_upper = lower[0, order], upper[0, order]
        methods = _Methods(single)
    else:
        k = rows.shape[0]
        nn = n[order]
        r, lo, hi = rows[:, order], lower[:, order], upper[:, order]
        point = nn.astype(np.float64)
        for j in range(k):
            point = point * (r[j] / nn)
        bounds = np.maximum(0, lo.sum(axis=0) - (k - 1) * nn), hi.min(axis=0)
        point, e_lower, e_upper = sv._of(point, *bounds)
        nothing = (hi == 0).any(axis=0) | (nn <= 0)
        point = np.where(nothing, 0.0, point)
        e_lower = np.where(nothing, 0, e_lower)
        e_upper = np.where(nothing, 0, e_upper)
        e_rows = point.tolist()
        methods = AndMethods((hi == 0).any(axis=0), nn <= 0)
    total = 0.0
    for value in e_rows:  # in order, as the per-partition loop adds them
        total += value
    exact = e_lower == e_upper
    hits = np.flatnonzero(e_upper > 0)
    heads = [source.head(i) for i in order[hits].tolist()]
    matching = [
        answers.estimate_partition(*head, e_rows[x], low, high, same, methods[x])
        for x, head, low, high, same in zip(
            hits.tolist(), heads, e_lower[hits].tolist(), e_upper[hits].tolist(),
            exact[hits].tolist(), strict=True,
        )
    ]
    summed = (total, int(e_lower.sum()), int(e_upper.sum()), bool(exact.all()))
    return summed, matching


class _Methods:
    """One conjunct's survivors' methods, made when asked."""

    def __init__(self, single: Survivors) -> None:
        self.single = single

    def __getitem__(self, x: int) -> str:
        return self.single.method(0, x)


class AndMethods:
    """``combine_and``'s method per survivor, made when asked (only those that can match
    are)."""

    def __init__(self, nothing: np.ndarray, empty: np.ndarray) -> None:
        self.nothing, self.empty = nothing, empty

    def __getitem__(self, x: int) -> str:
        if self.nothing[x]:
            return "and: a term keeps nothing"
        return "empty" if self.empty[x] else "and (independence)"


def vectorised(
    top: list[Predicate],
    partitions: PartitionSource,
    survivors: np.ndarray,
    counted: dict[int, np.ndarray],
    entries: list[Term],
) -> Survivors:
    """``{i: full(i) for i in survivors}`` with the same numbers: each single-column
    condition estimated for all survivors at once (``survivors.leaf``), the partitions it
    cannot decide that way one by one; each term's numbers kept on its
    ``term_cache.Term`` (``entries``), where an earlier predicate may have computed
    them."""
    k = len(top)
    count = len(survivors)
    rows = np.zeros((k, count), dtype=np.float64)
    lower = np.zeros((k, count), dtype=np.int64)
    upper = np.zeros((k, count), dtype=np.int64)
    codes = np.zeros((k, count), dtype=np.int64)
    alone = np.zeros((k, count), dtype=bool)  # estimated one by one
    ready = np.zeros((k, count), dtype=bool)  # ... and their numbers on the Term
    for j, term in enumerate(top):
        entry = entries[j]
        entry.fill(term, partitions, survivors)
        rows[j], lower[j], upper[j] = (
            entry.rows[survivors], entry.lower[survivors], entry.upper[survivors]
        )
        codes[j], alone[j] = entry.codes[survivors], entry.alone[survivors]
        ready[j] = entry.numbers[survivors]
        if j in counted:  # the table level's per-partition counts, as full() takes them
            got = counted[j][survivors]
            have = got >= 0
            rows[j] = np.where(have, got, rows[j])
            lower[j] = np.where(have, got, lower[j])
            upper[j] = np.where(have, got, upper[j])
            codes[j] = np.where(have, listed.FREQUENCIES, codes[j])
            alone[j] &= ~have
    for j, x in zip(*np.nonzero(alone & ~ready), strict=True):
        # what full(i) gives for this conjunct (its table-level count was taken above)
        i = int(survivors[x])
        e = entries[j].estimate(top[j], partitions, i)
        rows[j, x], lower[j, x], upper[j, x] = e.rows, e.lower, e.upper
    codes[alone] = -1
    return Survivors(survivors, rows, lower, upper, codes, alone,
                     _OneByOne(top, entries, partitions))


class _OneByOne:
    """Conjunct ``j``'s one-by-one estimate of partition ``i`` (``[j, i]``), as its
    ``Term`` keeps it."""

    def __init__(self, top: list, entries: list[Term], partitions: PartitionSource) -> None:
        self.top, self.entries, self.partitions = top, entries, partitions

    def __getitem__(self, key: tuple[int, int]) -> Estimate:
        j, i = key
        return self.entries[j].estimate(self.top[j], self.partitions, i)


class Survivors:
    """``{i: full(i) for i in survivors}`` held as arrays (conjunct x survivor): the
    ``Estimate`` lists are made only for the partitions asked (``estimates[i]``, kept, so
    a change to one stays), their methods from the codes (``survivors.method_name``) or,
    where a conjunct was estimated one by one, from that estimate (``one_by_one``)."""

    def __init__(
        self,
        survivors: np.ndarray,
        rows: np.ndarray,
        lower: np.ndarray,
        upper: np.ndarray,
        codes: np.ndarray,
        alone: np.ndarray,
        one_by_one: Mapping[tuple[int, int], Estimate] | _OneByOne,
    ) -> None:
        self.survivors, self.rows, self.lower, self.upper = survivors, rows, lower, upper
        self.codes, self.alone, self.one_by_one = codes, alone, one_by_one
        self._at: dict[int, int] | None = None
        self.made: dict[int, list[Estimate]] = {}

    @classmethod
    def of(cls, survivors: np.ndarray, got: dict[int, list[Estimate]], k: int) -> Survivors:
        """The survivors estimated one by one (``got``: partition -> conjuncts)."""
        count = len(survivors)
        rows = np.zeros((k, count), dtype=np.float64)
        lower = np.zeros((k, count), dtype=np.int64)
        upper = np.zeros((k, count), dtype=np.int64)
        for x, i in enumerate(survivors.tolist()):
            for j, e in enumerate(got[i]):
                rows[j, x], lower[j, x], upper[j, x] = e.rows, e.lower, e.upper
        one_by_one = {(j, i): e for i, conjuncts in got.items() for j, e in enumerate(conjuncts)}
        return cls(survivors, rows, lower, upper, np.zeros((k, count), dtype=np.int64),
                   np.ones((k, count), dtype=bool), one_by_one)

    @property
    def at(self) -> dict[int, int]:
        """Each survivor's place (made when first asked: most answers never ask)."""
        if self._at is None:
            self._at = {i: x for x, i in enumerate(self.survivors.tolist())}
        return self._at

    def __contains__(self, i: object) -> bool:
        return i in self.at

    def __getitem__(self, i: int) -> list[Estimate]:
        if i not in self.made:
            x = self.at[i]
            self.made[i] = [self._estimate(j, x) for j in range(self.rows.shape[0])]
        return self.made[i]

    def _estimate(self, j: int, x: int) -> Estimate:
        if self.alone[j, x]:
            return self.one_by_one[j, int(self.survivors[x])]
        low, high = int(self.lower[j, x]), int(self.upper[j, x])
        return Estimate(float(self.rows[j, x]), low, high, low == high,
                            listed.method_name(int(self.codes[j, x])))

    def method(self, j: int, x: int) -> str:
        i = int(self.survivors[x])
        if i in self.made:
            return self.made[i][j].method
        if self.alone[j, x]:
            return self.one_by_one[j, i].method
        return listed.method_name(int(self.codes[j, x]))


__all__ = ["AndMethods", "Survivors", "combine", "vectorised"]
