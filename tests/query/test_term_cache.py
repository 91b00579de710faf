"""Terms shared between predicates (``query/term_cache.py``), the conditions parsed once and
the fixed-width key comparisons, against the one-by-one path and DuckDB.

On test_estimate_batched's planted table (64 partitions: shifted ranges, NULLs, NaN,
complete and truncated frequencies, histograms), conjunctions drawn with a seed from a
small pool of conditions, so that most of their terms were estimated before within
other conjunctions:

* a resident handle's answers (terms reused, conditions reused) equal, number for number
  and method for method, those of the estimator over the partitions as a plain list (no
  term kept, each partition one by one), for single estimates and for a batch in which
  terms repeat;
* the true count (DuckDB over the same rows) lies within every answer's bounds, per
  partition too, and equals it where the answer says it is exact, and no partition
  holding rows is pruned;
* ``selectivity_vector._cmp_of`` (NumPy on fixed-width keys) is ``_cmp`` (Arrow) on keys
  with zero bytes, equal keys and nulls.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lakestats.api as ls
from lakestats.query import term_cache
from lakestats.stats import selectivity_vector as sv
from tests.query import test_estimate_batched as batched
from tests.query import test_survivors as survivors_test


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory: pytest.TempPathFactory):
    """test_estimate_batched's 64-partition table, analyzed for this module."""
    return batched.table.__wrapped__(spark, tmp_path_factory)


def _pool_predicates(seed: int, count: int, pool: int = 30) -> list[str]:
    rng = np.random.default_rng(seed)
    conditions = list(dict.fromkeys(survivors_test._condition(rng) for _ in range(pool)))
    out: dict[str, None] = {}
    while len(out) < count:
        k = int(rng.choice([1, 2, 2, 3]))
        picked = rng.choice(len(conditions), size=min(k, len(conditions)), replace=False)
        out[" AND ".join(conditions[int(i)] for i in picked)] = None
    return list(out)


def test_reused_terms_answer_as_one_by_one_and_hold_truth(table, monkeypatch) -> None:
    lt, con = table
    cached, one_by_one = ls.open_table(lt.root_dir), ls.open_table(lt.root_dir)
    hits = []
    of = term_cache.Terms.of

    def counted(self, term):
        found = self.get(term)
        hits.append((self, found is not None and found.scalar is not None))
        return of(self, term)

    monkeypatch.setattr(term_cache.Terms, "of", counted)

    def reference(where: str) -> dict:  # a fresh plain-list source: no term reused
        return survivors_test.one_by_one(one_by_one, where)

    wheres = _pool_predicates(31, 160)
    for where in wheres:
        a = cached.estimate(where).to_json()
        assert a == reference(where), where
        batched.holds_truth(con, where, a)
    kept = cached._residents[max(cached._residents)]._index.cache["terms"]
    reused = [hit for terms, hit in hits if terms is kept]
    assert sum(reused) > len(reused) / 2, (sum(reused), len(reused))  # most were reused

    # a batch, as a planner asks: new conjunctions of the same conditions, some repeated
    more = [w for w in _pool_predicates(32, 80) if w not in set(wheres)][:50]
    many = cached.estimate_many(more + more[:5])
    assert [e.to_json() for e in many] == [reference(w) for w in more + more[:5]]


def test_terms_kept_are_bounded(table) -> None:
    """A handle keeps at most ``Terms.size`` terms, and an answer after eviction is the
    same as before."""
    lt, _ = table
    handle = ls.open_table(lt.root_dir)
    wheres = _pool_predicates(33, 40, pool=60)
    first = [handle.estimate(w).to_json() for w in wheres]
    resident = handle._residents[max(handle._residents)]
    terms = resident._index.cache["terms"]
    assert 0 < len(terms) <= terms.size
    terms.size = 3
    for w in _pool_predicates(34, 20, pool=60):
        handle.estimate(w)
    assert len(terms) <= 3
    fresh = ls.open_table(lt.root_dir)
    resident._answers.clear()  # computed again, over the few terms left
    assert [handle.estimate(w).to_json() for w in wheres] == first
    assert [fresh.estimate(w).to_json() for w in wheres] == first


def test_fixed_width_comparison_is_arrows() -> None:
    rng = np.random.default_rng(7)
    for width in (1, 4, 8, 13):
        values = [bytes(rng.integers(0, 3, width).astype(np.uint8)) for _ in range(200)]
        mask = rng.random(200) < 0.1
        keys = pa.array([None if m else v for v, m in zip(values, mask, strict=True)],
                        pa.binary())
        v = sv.Vectors(pa.int64(), np.ones(200, np.int64), np.zeros(200, np.int64),
                       np.zeros(200, np.int64), np.full(200, np.nan), keys, keys)
        probes = [*values[:20], b"\x00" * width, b"\x02" * width, b"\x01" + b"\x00" * (width - 1)]
        for key in probes:
            got = sv._cmp_of(v, "min_key", key)
            want = sv._cmp(keys, key)
            assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True)), (width, key)
        assert v._fixed["min_key"][0] is not None  # the NumPy path was taken
        other = sv._cmp_of(v, "max_key", b"\x01" * (width + 1))  # another width: Arrow's
        want = sv._cmp(keys, b"\x01" * (width + 1))
        assert all(np.array_equal(g, w) for g, w in zip(other, want, strict=True))


def test_constant_position_is_the_per_partition_one() -> None:
    """``_Fractions.constant`` (once per distinct common prefix) is ``_positions`` of the
    key broadcast to every partition."""
    rng = np.random.default_rng(8)
    for width in (4, 8, 12):
        count = 300
        low = [bytes(rng.integers(0, 4, width).astype(np.uint8)) for _ in range(count)]
        high = [max(a, bytes(rng.integers(0, 4, width).astype(np.uint8))) for a in low]
        v = sv.Vectors(pa.int64(), np.ones(count, np.int64), np.zeros(count, np.int64),
                       np.zeros(count, np.int64), np.full(count, np.nan),
                       pa.array(low, pa.binary()), pa.array(high, pa.binary()))
        f = v.fractions()
        assert f.ok and len(np.unique(f.common)) > 1
        for key in [*low[:10], b"\x00" * width, b"\xff" * width]:
            matrix = np.broadcast_to(np.frombuffer(key, dtype=np.uint8), f.low_matrix.shape)
            want = sv._positions(np.ascontiguousarray(matrix), f.common)
            assert np.array_equal(f.constant(key), want), (width, key)


def test_collection_paused_restores_the_collector() -> None:
    """``threads.collection_paused`` turns the cyclic collector off inside, nested and from
    several threads, and leaves it as it found it (off stays off)."""
    import gc
    import threading

    from lakestats.threads import collection_paused

    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
        inside = threading.Event()
        release = threading.Event()

        def other() -> None:
            with collection_paused():
                inside.set()
                release.wait(5)

        worker = threading.Thread(target=other)
        worker.start()
        inside.wait(5)
    assert not gc.isenabled()  # the other thread is still inside
    release.set()
    worker.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()  # the caller's choice kept
    finally:
        gc.enable()
