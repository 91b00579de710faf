"""Pairs found automatically (``stats/auto_groups.py``) against DuckDB's joint counts: a
partition read in slices finds the pairs every slice found, with the counts of the whole
partition; a column with more than ``AUTO_DISTINCT`` values in any slice is not paired."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

from lakestats.stats import keys
from lakestats.stats.auto_groups import AUTO_DISTINCT, AutoPairs, dependence
from lakestats.stats.leaves import leaves_of


def _table() -> pa.Table:
    rng = np.random.default_rng(4)
    n = 3000
    region = rng.choice(["eu", "us", "sa"], n)
    tier = np.where(region == "eu", "gold", rng.choice(["gold", "silver"], n))
    flag = pa.array(rng.random(n) < 0.3).to_pylist()
    flag[5] = None
    wide = np.arange(n) % (AUTO_DISTINCT + 10)
    wide[:1000] %= 5  # few values in the first slice, many in the others
    return pa.table({"region": region, "tier": tier, "flag": flag, "wide": wide})


def test_pairs_of_slices_equal_duckdb_counts() -> None:
    table = _table()
    whole = AutoPairs(tuple(leaves_of(table.schema)))
    for start in (0, 1000, 2000):
        part = AutoPairs(whole.leaves)
        part.observe(table.slice(start, 1000))
        whole.merge(part)
    rows = {r.name: r for r in whole.finalize_rows(10_000)}
    assert set(rows) == {"region,tier", "region,flag", "tier,flag"}  # not "wide"
    con = duckdb.connect()
    con.register("t", table)
    for name, row in rows.items():
        a, b = name.split(",")
        true = {(x, y): c for x, y, c in con.execute(
            f"SELECT {a}, {b}, COUNT(*) FROM t GROUP BY ALL").fetchall()}
        types = [table.schema.field(c).type for c in (a, b)]
        listed = row.listed.to_pydict()
        got = {tuple(keys.decode(k, t) for k, t in zip(item, types, strict=True)): c
               for *item, c in zip(listed["k0"], listed["k1"], listed["count"], strict=True)}
        assert got == true and row.row_count == 3000 and not row.truncated
    assert dependence(rows["region,tier"]) > 0.1  # every eu row is gold
    assert dependence(rows["region,flag"]) < 0.01  # independent: chance only
