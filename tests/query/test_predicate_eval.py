"""The Arrow predicate evaluator against DuckDB on the same data: row counts of TRUE, FALSE
and UNKNOWN (three-valued logic) for every predicate of the estimate tests."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from lakestats.query import predicate as predicates
from lakestats.query.predicate_eval import evaluate, matching_rows
from tests.query.test_estimate import PREDICATES, _partition

MORE = [
    "NOT (i IN (100, NULL))",
    "NOT (i NOT IN (100, NULL))",
    "i NOT BETWEEN 10 AND 400",
    "NOT (s LIKE 'b_rry%' OR f IS NULL)",
    "f = 'Infinity' OR f = '-Infinity'",
    "f < 0 AND NOT (b = FALSE)",
]


@pytest.fixture(scope="module")
def data() -> tuple[pa.Table, duckdb.DuckDBPyConnection]:
    rng = np.random.default_rng(7)
    tables = [
        _partition(rng, n, shift).append_column("part", pa.array([f"p{shift}"] * n))
        for shift, n in enumerate((900, 300, 60))
    ]
    table = pa.concat_tables(tables)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("t", table)
    return table, con


@pytest.mark.parametrize("where", PREDICATES + MORE)
def test_three_valued_counts_match_duckdb(data, where: str) -> None:
    table, con = data
    types = {f.name: f.type for f in table.schema}
    pred = predicates.parse(where, types)
    result = evaluate(pred, table)
    # a zoned column's literal with an offset is an instant (Spark's reading); DuckDB's
    # TIMESTAMP literal drops the offset, its TIMESTAMPTZ keeps it
    where = where.replace("tsz >= TIMESTAMP '", "tsz >= TIMESTAMPTZ '")
    true, false, unknown = con.execute(
        f"SELECT count(*) FILTER (WHERE ({where})), count(*) FILTER (WHERE NOT ({where})), "
        f"count(*) FILTER (WHERE ({where}) IS NULL) FROM t"
    ).fetchone()
    got_true = pa.compute.sum(result.fill_null(False)).as_py() or 0
    got_false = pa.compute.sum(pa.compute.invert(result).fill_null(False)).as_py() or 0
    assert (got_true, got_false, result.null_count) == (true, false, unknown), where
    kept = matching_rows(pred, table)
    assert kept.num_rows == true
    expected = con.execute(f"SELECT sum(u) FROM t WHERE {where}").fetchone()[0]
    assert (pa.compute.sum(kept.column("u")).as_py()) == expected
