"""The survivors' estimates held as arrays, and their combination into the answer
(moved out of ``predicates``, whose ``_estimate_batched`` calls them).

After ``_estimate_batched`` prunes the partitions from the scalars, the partitions left
(the survivors) are estimated term by term with all their statistics: ``vectorised``
estimates each single-column term for all survivors at once (``survivors.leaf``), reusing
and filling the term's ``term_cache.Term``, and keeps the result as arrays
(``Survivors``: conjunct x survivor, ``Estimate`` objects made only where asked).
``combine`` sums the survivors' answers and lists those that can match, doing
``predicates.combine_and`` on arrays in the same float operations and order.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType

import numpy as np

from lakestats.query import predicates as p
from lakestats.stats import selectivity as sel


def combine(
    partitions,  # noqa: ANN001 - as in _estimate_batched
    n: np.ndarray,
    order: np.ndarray,
    rows: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    single: dict[int, list[sel.Estimate]] | None,
) -> tuple[tuple[float, int, int, bool], list[dict]]:
    """The survivors' (``order``) answers summed, and those that can match listed:
    ``combine_and`` of each survivor's conjunct estimates (``rows``, ``lower``, ``upper``:
    conjunct x partition) done on arrays, in the same float operations and order; with one
    conjunct (``single``) its own estimates, methods included."""
    from lakestats.stats import selectivity_vector as sv

    if isinstance(single, Survivors):  # its arrays, its methods (scaled ones changed)
        e_rows = rows[0, order].tolist()  # scaled to the table level where it was
        e_lower, e_upper = lower[0, order], upper[0, order]
        methods = _Methods(single)
    elif single is not None:
        picked = [single[i][0] for i in order.tolist()]
        e_rows = [e.rows for e in picked]
        e_lower = np.asarray([e.lower for e in picked], dtype=np.int64)
        e_upper = np.asarray([e.upper for e in picked], dtype=np.int64)
        methods = [e.method for e in picked]
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
    heads = _heads(partitions)
    at = hits.tolist()
    matching = [
        MappingProxyType({  # answers.Estimate.of keeps it as it is
            "partition": head[0],
            "name": head[1],
            "partition_rows": head[2],
            "row_count": e_rows[x],
            "lower": low,
            "upper": high,
            "exact": same,
            "method": methods[x],
        })
        for x, head, low, high, same in zip(
            at, [heads(i) for i in order[hits].tolist()], e_lower[hits].tolist(),
            e_upper[hits].tolist(), exact[hits].tolist(), strict=True,
        )
    ]
    summed = (total, int(e_lower.sum()), int(e_upper.sum()), bool(exact.all()))
    return summed, matching


def _heads(partitions):  # noqa: ANN001, ANN202 - as in _estimate_batched
    """Partition ``i``'s (values, name, row count) as a matching row starts, kept on a
    resident estimator's partitions (the same objects the partitions hold)."""
    kept = getattr(partitions, "row_heads", None)
    if kept is None:
        def head(i: int) -> tuple:
            part = partitions[i]
            return part.values, part.name, part.row_count
        return head
    def held(i: int) -> tuple:
        found = kept.get(i)
        if found is None:
            part = partitions[i]
            found = kept[i] = (part.values, part.name, part.row_count)
        return found
    return held


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
    top: list[p.Predicate],
    partitions,  # noqa: ANN001 - as in _estimate_batched
    survivors: np.ndarray,
    counted: dict[int, np.ndarray],
    entries: list | None,
) -> Survivors:
    """``{i: full(i) for i in survivors}`` with the same numbers: each single-column
    condition estimated for all survivors at once (``survivors.leaf``), the partitions it
    cannot decide that way one by one; each term's numbers kept on its
    ``term_cache.Term`` (``entries``, or throwaway ones), where an earlier predicate may
    have computed them."""
    from lakestats.query import survivors as sv_full
    from lakestats.query.term_cache import Term

    k = len(top)
    count = len(survivors)
    rows = np.zeros((k, count), dtype=np.float64)
    lower = np.zeros((k, count), dtype=np.int64)
    upper = np.zeros((k, count), dtype=np.int64)
    codes = np.zeros((k, count), dtype=np.int64)
    alone = np.zeros((k, count), dtype=bool)  # estimated one by one
    ready = np.zeros((k, count), dtype=bool)  # ... and their numbers on the Term
    if entries is None:
        entries = [Term(len(partitions)) for _ in top]
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
            codes[j] = np.where(have, sv_full.FREQUENCIES, codes[j])
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

    def __init__(self, top: list, entries: list, partitions) -> None:  # noqa: ANN001
        self.top, self.entries, self.partitions = top, entries, partitions

    def __getitem__(self, key: tuple[int, int]) -> sel.Estimate:
        j, i = key
        return self.entries[j].estimate(self.top[j], self.partitions, i)


class Survivors:
    """``{i: full(i) for i in survivors}`` held as arrays (conjunct x survivor): the
    ``Estimate`` lists are made only for the partitions asked (``estimates[i]``, kept, so
    a change to one stays), their methods from the codes (``survivors.method_name``) or,
    where a conjunct was estimated one by one, from that estimate (``one_by_one``)."""

    def __init__(self, survivors, rows, lower, upper, codes, alone, one_by_one) -> None:  # noqa: ANN001
        self.survivors, self.rows, self.lower, self.upper = survivors, rows, lower, upper
        self.codes, self.alone, self.one_by_one = codes, alone, one_by_one
        self._at: dict[int, int] | None = None
        self.made: dict[int, list[sel.Estimate]] = {}

    @property
    def at(self) -> dict[int, int]:
        """Each survivor's place (made when first asked: most answers never ask)."""
        if self._at is None:
            self._at = {i: x for x, i in enumerate(self.survivors.tolist())}
        return self._at

    def __contains__(self, i: object) -> bool:
        return i in self.at

    def __iter__(self) -> Iterator[int]:
        return iter(self.at)

    def __len__(self) -> int:
        return len(self.at)

    def __getitem__(self, i: int) -> list[sel.Estimate]:
        if i not in self.made:
            x = self.at[i]
            self.made[i] = [self._estimate(j, x) for j in range(self.rows.shape[0])]
        return self.made[i]

    def _estimate(self, j: int, x: int) -> sel.Estimate:
        if self.alone[j, x]:
            return self.one_by_one[j, int(self.survivors[x])]
        from lakestats.query.survivors import method_name

        low, high = int(self.lower[j, x]), int(self.upper[j, x])
        return sel.Estimate(float(self.rows[j, x]), low, high, low == high,
                            method_name(int(self.codes[j, x])))

    def items(self) -> Iterator[tuple[int, list[sel.Estimate]]]:
        return ((i, self[i]) for i in self.at)

    def method(self, j: int, x: int) -> str:
        i = int(self.survivors[x])
        if i in self.made:
            return self.made[i][j].method
        if self.alone[j, x]:
            return self.one_by_one[j, i].method
        from lakestats.query.survivors import method_name

        return method_name(int(self.codes[j, x]))


__all__ = ["AndMethods", "Survivors", "combine", "vectorised"]
