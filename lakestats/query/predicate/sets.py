"""A single-column predicate as sets of keys (Kleene logic per value: true, false or
unknown), so ``a > 1 AND a < 5``, ``a = 1 OR a = 2`` and ``NOT (a IN (...))`` are each one
lookup of key ranges; and a conjunction's or disjunction's independent terms (its children
on one column merged into one set)."""

from __future__ import annotations

from dataclasses import dataclass

from lakestats.query.predicate import tree as t
from lakestats.query.predicate.normal import flatten
from lakestats.stats import key_ranges as kr


@dataclass(frozen=True)
class ColumnSet:
    """For one column: the keys for which a predicate is TRUE, those for which it is
    FALSE (the rest is UNKNOWN), and its value on NULL (``"T"``, ``"F"`` or ``"U"``)."""

    true: kr.KeySet
    false: kr.KeySet
    null: str

    def negate(self) -> ColumnSet:
        return ColumnSet(self.false, self.true, {"T": "F", "F": "T", "U": "U"}[self.null])

    def both(self, other: ColumnSet) -> ColumnSet:
        pair = (self.null, other.null)
        null = "F" if "F" in pair else "T" if pair == ("T", "T") else "U"
        return ColumnSet(
            kr.intersect(self.true, other.true), kr.union(self.false, other.false), null
        )

    def either(self, other: ColumnSet) -> ColumnSet:
        pair = (self.null, other.null)
        null = "T" if "T" in pair else "F" if pair == ("F", "F") else "U"
        return ColumnSet(
            kr.union(self.true, other.true), kr.intersect(self.false, other.false), null
        )


def _combined(sets: list[ColumnSet], conjunction: bool) -> ColumnSet:
    """``both`` (or ``either``) folded over every child at once: one merge of all the
    children's ranges, so a 400-disjunct OR a planner sends is not 400 growing merges
    (the same sets in the same canonical form as the pairwise fold)."""
    if len(sets) <= 2:
        out = sets[0]
        for s in sets[1:]:
            out = out.both(s) if conjunction else out.either(s)
        return out
    nulls = {s.null for s in sets}
    trues, falses = [s.true for s in sets], [s.false for s in sets]
    if conjunction:
        null = "F" if "F" in nulls else "T" if nulls == {"T"} else "U"
        return ColumnSet(kr.intersect_all(trues), kr.union(*falses), null)
    null = "T" if "T" in nulls else "F" if nulls == {"F"} else "U"
    return ColumnSet(kr.union(*trues), kr.intersect_all(falses), null)


def is_set(pred: t.Predicate) -> bool:
    if isinstance(pred, t.And | t.Or):
        return all(is_set(c) for c in pred.children)
    if isinstance(pred, t.Not):
        return is_set(pred.child)
    return not isinstance(pred, t.Like)


def column_set(pred: t.Predicate) -> ColumnSet:
    """The ColumnSet of a predicate over one column without general LIKE leaves
    (remembered per predicate: an estimate asks it once per partition)."""
    try:
        found = _COLUMN_SETS.get(pred)
    except TypeError:  # an unhashable literal value: computed each time
        return _column_set(pred)
    if found is None:
        found = _column_set(pred)
        if len(_COLUMN_SETS) >= 4096:
            _COLUMN_SETS.clear()
        _COLUMN_SETS[pred] = found
    return found


_COLUMN_SETS: dict[t.Predicate, ColumnSet] = {}


def _column_set(pred: t.Predicate) -> ColumnSet:
    if isinstance(pred, t.Not):
        return column_set(pred.child).negate()
    if isinstance(pred, t.And | t.Or):
        return _combined([column_set(c) for c in pred.children], isinstance(pred, t.And))
    if isinstance(pred, t.IsNull):
        base = ColumnSet(kr.NOTHING, kr.EVERYTHING, "T")
        return base.negate() if pred.negated else base
    if isinstance(pred, t.Compare):
        k = pred.value.key
        true = {
            "=": kr.points([k]),
            "<>": kr.complement(kr.points([k])),
            "<": kr.between(None, True, k, False),
            "<=": kr.between(None, True, k, True),
            ">": kr.between(k, False, None, True),
            ">=": kr.between(k, True, None, True),
        }[pred.op]
        return ColumnSet(true, kr.complement(true), "U")
    if isinstance(pred, t.Between):
        true = kr.between(pred.low.key, True, pred.high.key, True)
        base = ColumnSet(true, kr.complement(true), "U")
    elif isinstance(pred, t.In):
        true = kr.points([v.key for v in pred.values])
        base = ColumnSet(true, kr.NOTHING if pred.has_null else kr.complement(true), "U")
    elif isinstance(pred, t.PrefixLike):
        true = kr.prefix_range(pred.prefix.encode("utf-8"))
        base = ColumnSet(true, kr.complement(true), "U")
    else:
        raise TypeError(pred)
    return base.negate() if pred.negated else base


def terms(pred: t.Predicate) -> list[t.Predicate]:
    """The independent terms of a conjunction or disjunction: children on one column (and
    without general LIKE) merged into one term, others kept as they are."""
    if not isinstance(pred, t.And | t.Or):
        return [pred]
    groups: dict[str, list[t.Predicate]] = {}
    others: list[t.Predicate] = []
    for child in flatten(pred):
        cols = t.columns_of(child)
        if len(cols) == 1 and is_set(child):
            groups.setdefault(cols[0], []).append(child)
        else:
            others.append(child)
    merged = [g[0] if len(g) == 1 else type(pred)(tuple(g)) for _, g in sorted(groups.items())]
    return merged + others


def point_keys(term: t.Predicate) -> list[bytes] | None:
    """The values of an equality / IN term on one column (NULL not kept), else None."""
    if len(t.columns_of(term)) != 1 or not is_set(term):
        return None
    cs = column_set(term)
    if cs.null == "T" or not cs.true:
        return None
    return kr.point_keys(cs.true)

