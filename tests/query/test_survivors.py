"""The survivors' vectorised estimate (``query/survivors.py``) against the per-partition path.

On test_estimate_batched's planted table (64 partitions: shifted ranges, NULLs, NaN,
complete and truncated frequencies, histograms), random predicates drawn with a seed:

* every single-column condition's vectorised estimate (``survivors.leaf``) over every
  partition equals ``partition_estimate.leaf_estimate`` of that partition (rows, bounds,
  method) wherever it does not hand the partition back (``fallback``), and it decides most;
* a resident handle's answers with the survivors vectorised equal, number for number and
  method for method, those of the estimator over the same partitions handed as a plain
  list (``sources.ListSource``: no vectors, every partition one by one).
"""

from __future__ import annotations

import numpy as np
import pytest

import lakestats.api as ls
from lakestats.query import listed as listed_values
from lakestats.query import partition_estimate, survivors
from lakestats.query import predicate as predicates
from lakestats.query.estimate import estimate
from lakestats.query.sources import ListSource
from tests.query import test_estimate_batched as batched

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory: pytest.TempPathFactory):
    """test_estimate_batched's 64-partition table, analyzed for this module."""
    return batched.table.__wrapped__(spark, tmp_path_factory)


def _condition(rng: np.random.Generator) -> str:
    p = int(rng.integers(0, batched.PARTITIONS))
    ops = ["<", "<=", ">", ">=", "=", "<>"]
    op = ops[int(rng.integers(0, len(ops)))]
    kinds = [
        lambda: f"i {op} {p * 50 + int(rng.integers(-20, 320))}",
        lambda: f"i BETWEEN {p * 50 + int(rng.integers(0, 40))} AND "
                f"{p * 50 + int(rng.integers(40, 400))}",
        lambda: f"f {op} {rng.normal(p, 6):.2f}",
        lambda: f"f BETWEEN {p - 3 + rng.random():.2f} AND {p + 3 * rng.random():.2f}",
        lambda: f"s {op} 'w{int(rng.integers(0, 40)):02d}'",
        lambda: "s IN ({})".format(", ".join(
            f"'w{int(v):02d}'" for v in sorted(set(rng.integers(0, 40, 3).tolist())))),
        lambda: f"s LIKE 'w{int(rng.integers(0, 4))}%'",
        lambda: f"k {op} 'k{int(rng.integers(0, 7))}'",
        lambda: "k NOT IN ('k1', 'k4')" if rng.random() < 0.5 else "k IN ('k2', 'zz')",
        lambda: f"c {op} {int(rng.integers(0, 9))}",
        lambda: "c IN ({})".format(", ".join(
            str(v) for v in sorted(set(rng.integers(0, 9, 2).tolist())))),
        lambda: f"day {op} DATE '2024-{int(rng.integers(1, 6)):02d}-"
                f"{int(rng.integers(1, 29)):02d}'",
        lambda: ["i IS NULL", "i IS NOT NULL", "f IS NULL", "f IS NOT NULL"][
            int(rng.integers(0, 4))],
        lambda: f"(i < {p * 50 + 30} OR i IS NULL)",
        lambda: f"NOT (f > {rng.normal(p, 6):.2f})",
    ]
    return kinds[int(rng.integers(0, len(kinds)))]()


def _predicates(seed: int, count: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out: dict[str, None] = {}
    while len(out) < count:
        terms = int(rng.choice([1, 1, 2, 3]))
        out[" AND ".join(_condition(rng) for _ in range(terms))] = None
    return list(out)


def test_leaf_is_the_per_partition_estimate(table) -> None:
    lt, _ = table
    handle = ls.open_table(lt.root_dir)
    decided = asked = 0
    for where in _predicates(2525, 150):
        handle.estimate(where)  # the resident partitions, with this predicate's columns
        resident = handle._residents[max(handle._residents)]
        parts = resident._index
        pred = predicates.push_not(predicates.parse(where, resident.types, ()))
        for term in predicates.terms(pred) if isinstance(pred, predicates.And) else [pred]:
            cols = predicates.columns_of(term)
            if len(cols) != 1 or not predicates.is_set(term):
                continue
            everything = np.arange(len(parts))
            listed = listed_values.listed(parts, cols[0], everything)
            rows, lower, upper, codes, fallback = survivors.leaf(
                parts.vectors(cols[0]), predicates.column_set(term), listed, everything
            )
            for i in everything.tolist():
                asked += 1
                if fallback[i]:
                    continue
                decided += 1
                e = partition_estimate.leaf_estimate(term, parts[i])
                got = (float(rows[i]), int(lower[i]), int(upper[i]),
                       listed_values.method_name(int(codes[i])))
                assert got == (e.rows, e.lower, e.upper, e.method), (where, i)
    assert decided > 0.6 * asked, (decided, asked)  # 80 % at the time of writing


def one_by_one(handle: ls.LakestatsTable, where: str) -> dict:
    """The estimator over ``handle``'s resident index partitions handed as a plain list:
    every partition estimated one by one (the reference of the vectorised path)."""
    resident = handle._resident(None)
    pred = resident.parse(where, ())
    columns = predicates.columns_of(pred)
    index = resident.index_partitions(columns)
    parts = ListSource([index[i] for i in range(len(index))])
    table = resident.table_partition(columns)
    return estimate(pred, parts, table, resident.version, resident.snapshot_id).to_json()


def test_vectorised_survivors_answer_as_one_by_one(table, monkeypatch) -> None:
    lt, _ = table
    vectorised, reference = ls.open_table(lt.root_dir), ls.open_table(lt.root_dir)
    warmup, wheres = _predicates(25, 60), _predicates(26, 300)

    def both(where: str) -> tuple[dict, dict]:
        return vectorised.estimate(where).to_json(), one_by_one(reference, where)

    for where in warmup:  # the statistics they use in memory in both
        both(where)
    used = []
    leaf = survivors.leaf
    monkeypatch.setattr(survivors, "leaf", lambda *a: used.append(1) or leaf(*a))
    for where in wheres:  # each new to both handles: computed, not a remembered answer
        a, b = both(where)
        assert a == b, where
    assert len(used) > len(wheres) / 2  # most took the vectorised path
    # a batch, as the service asks
    many = vectorised.estimate_many(_predicates(27, 50))
    assert [e.to_json() for e in many] == [
        one_by_one(reference, w) for w in _predicates(27, 50)
    ]
