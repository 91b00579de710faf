"""A batch's stacked scalar passes and the fixed-width listed values, against
the one-condition and bytes paths they replace.

On test_estimate_batched's planted table (64 partitions: shifted ranges, NULLs, NaN,
complete and truncated frequencies, histograms), with test_survivors' random conditions:

* ``scalar_many`` of a column's single-range conditions equals, row for row and bit for
  bit, ``selectivity_vector.scalar_estimates`` of each, and the clips it keeps equal
  ``_clip``'s;
* ``listed.Listed`` built from the held rows as NumPy keys (``Fixed``) counts the same
  listed rows per partition as the bytes layout, before and after its union is ranked;
* a batch on a fresh handle (stacked scalars, first visits laid out from the held rows)
  answers as the same predicates estimated over the partitions as a plain list (each
  partition one by one, ``test_survivors.one_by_one``), and DuckDB's count lies within
  every bound.
"""

from __future__ import annotations

import numpy as np
import pytest

import lakestats.api as ls
from lakestats.query import listed, term_cache
from lakestats.query import predicate as predicates
from lakestats.stats import key_ranges as kr
from lakestats.stats import scalar_many as sm
from lakestats.stats import selectivity_vector as sv
from tests.query import test_estimate_batched as batched
from tests.query import test_survivors as conditions

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory: pytest.TempPathFactory):
    """test_estimate_batched's 64-partition table, analyzed for this module."""
    return batched.table.__wrapped__(spark, tmp_path_factory)


def _ranges(handle: ls.LakestatsTable, wheres: list[str]) -> tuple[object, dict]:
    """The resident partitions and, per column, the single-range conditions' ranges."""
    for where in wheres:
        handle.estimate(where)
    resident = handle._residents[max(handle._residents)]
    by: dict[str, list] = {}
    for where in wheres:
        pred = predicates.push_not(predicates.parse(where, resident.types, ()))
        for term in predicates.terms(pred) if isinstance(pred, predicates.And) else [pred]:
            cols = predicates.columns_of(term)
            if len(cols) == 1 and predicates.is_set(term):
                cs = predicates.column_set(term)
                if sm.takes(cs.true, cs.null == "T"):
                    by.setdefault(cols[0], []).append(cs.true[0])
    return resident._index, {c: list(dict.fromkeys(r))[:60] for c, r in by.items()}


def test_stacked_scalar_pass_is_the_one_condition_pass(table) -> None:
    lt, _ = table
    parts, by = _ranges(ls.open_table(lt.root_dir), conditions._predicates(3131, 200))
    stacked = 0
    for column, ranges in by.items():
        v = parts.vectors(column)
        v._clips.clear()
        got = sm.scalar_many(v, ranges)
        if got is None:  # a key of another width (strings): left to the one-term pass
            continue
        for x, r in enumerate(ranges):
            kept = v._clips.get(r)
            if kept is not None:
                fresh = sv._clip(v, r)
                for name, want in vars(fresh).items():
                    have = getattr(kept, name)
                    assert (want is None) == (have is None), (column, r, name)
                    assert want is None or np.array_equal(want, have), (column, r, name)
            want = sv.scalar_estimates(v, (r,), False)
            assert np.array_equal(got.rows[x].view(np.int64), want.rows.view(np.int64))
            assert np.array_equal(got.lower[x], want.lower), (column, r)
            assert np.array_equal(got.upper[x], want.upper), (column, r)
            assert np.array_equal(got.fallback[x], want.fallback), (column, r)
            stacked += 1
    assert stacked > 100, stacked


def test_fixed_listed_values_count_as_the_bytes_layout(table, monkeypatch) -> None:
    lt, _ = table
    parts, by = _ranges(ls.open_table(lt.root_dir), conditions._predicates(3232, 200))
    everything = np.arange(len(parts))
    fixed_columns = 0
    rng = np.random.default_rng(7)
    for column, ranges in by.items():
        fixed = listed.Listed(parts, column, everything)
        with monkeypatch.context() as m:
            m.setattr(listed, "_arrays_of", lambda *a: None)
            plain = listed.Listed(parts, column, everything)
        assert plain.fixed is None
        if fixed.fixed is None:
            continue
        fixed_columns += 1
        for name in ("known", "complete", "total"):
            assert np.array_equal(getattr(fixed, name), getattr(plain, name)), (column, name)
        asked = [*ranges, *kr.EVERYTHING]
        for r in asked:  # the first per partition, the others on the ranked union
            subset = np.sort(rng.choice(everything, size=40, replace=False))
            for positions in (everything, subset):
                assert np.array_equal(fixed.listed_in(positions, r),
                                      plain.listed_in(positions, r)), (column, r)
    assert fixed_columns >= 3, fixed_columns


def test_a_fresh_batch_answers_as_one_by_one(table, monkeypatch) -> None:
    lt, con = table
    wheres = conditions._predicates(3333, 60)
    prefilled = []
    prefill = term_cache.prefill
    monkeypatch.setattr(term_cache, "prefill", lambda p, terms: prefilled.append(
        len(terms)) or prefill(p, terms))
    many = ls.open_table(lt.root_dir).estimate_many(wheres)
    assert prefilled and prefilled[0] > 0
    single = ls.open_table(lt.root_dir)
    for where, got in zip(wheres, many, strict=True):
        answer = got.to_json()
        assert answer == conditions.one_by_one(single, where), where
        batched.holds_truth(con, where, answer)
