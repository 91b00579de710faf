"""Key-range sets: many children combined in one merge equal the pairwise fold.

A planner's 400-way OR used to fold ``either`` left to right (400 growing merges: 112 ms
an estimate on lineitem); ``_combined`` merges every child's ranges at once. Both must give
the same set in the same canonical form, which the predicate normalizer relies on.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from lakestats.query.predicate import sets as preds
from lakestats.query.predicate.parse import parse
from lakestats.stats import key_ranges as kr


def _random_set(rng: random.Random) -> kr.KeySet:
    keys = sorted({bytes([rng.randrange(40)]) for _ in range(rng.randrange(0, 6))})
    pieces = []
    for k in keys:
        kind = rng.randrange(4)
        if kind == 0:
            pieces.append(kr.points([k]))
        elif kind == 1:
            pieces.append(kr.between(k, rng.random() < 0.5, None, True))
        elif kind == 2:
            pieces.append(kr.between(None, True, k, rng.random() < 0.5))
        else:
            pieces.append(kr.between(k, True, bytes([k[0] + rng.randrange(1, 5)]),
                                     rng.random() < 0.5))
    out = kr.union(*pieces) if pieces else kr.NOTHING
    return kr.complement(out) if rng.random() < 0.3 else out


@pytest.mark.parametrize("seed", range(200))
def test_combined_equals_the_pairwise_fold(seed: int) -> None:
    rng = random.Random(seed)
    sets = [
        preds.ColumnSet(t, kr.complement(t) if rng.random() < 0.7 else kr.NOTHING,
                        rng.choice("TFU"))
        for t in (_random_set(rng) for _ in range(rng.randrange(3, 12)))
    ]
    for conjunction in (True, False):
        folded = sets[0]
        for s in sets[1:]:
            folded = folded.both(s) if conjunction else folded.either(s)
        assert preds._combined(sets, conjunction) == folded
    trues = [s.true for s in sets]
    folded_true = trues[0]
    for t in trues[1:]:
        folded_true = kr.intersect(folded_true, t)
    assert kr.intersect_all(trues) == folded_true


def test_a_long_or_of_equalities_is_one_merge() -> None:
    """400 disjuncts: the set is the 400 points, built without 400 growing merges."""
    tree = parse(" OR ".join(f"n = {i}" for i in range(400)), {"n": pa.int64()})
    found = preds.column_set(tree)
    assert len(found.true) == 400 and all(r.point is not None for r in found.true)
