"""A 1,000-column table, and user-defined statistics travelling to Spark executors."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats.errors import InvalidArgumentError
from lakestats.stats.registry import (
    SummaryStatistic,
    register_statistic,
    unregister_statistic,
)

pytestmark = pytest.mark.spark


def test_thousand_columns(spark, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 2000
    columns = {}
    for i in range(1000):
        if i % 3 == 0:
            columns[f"i{i}"] = pa.array(rng.integers(0, 100, n))
        elif i % 3 == 1:
            columns[f"f{i}"] = pa.array(rng.normal(size=n))
        else:
            columns[f"s{i}"] = pa.array(rng.choice(["x", "y", "z", None], n))
    table = pa.table(columns)
    root = tmp_path / "wide"
    for p in range(2):
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(table.slice(p * 1000, 1000), root / f"p={p}" / "d.parquet")
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark, bins=100)
    rows = handle.statistics("p=1")
    assert [r["column"] for r in rows] == [*table.column_names, "p"]
    part = table.slice(1000, 1000)
    con = duckdb.connect()
    con.register("t", part)
    for name in ("i0", "f499", "s998", "i999", "s2"):
        row = handle.statistics("p=1", [name])[0]
        distinct, lo, hi, nulls = con.execute(
            f'SELECT count(DISTINCT "{name}"), min("{name}"), max("{name}"), '
            f'count(*) - count("{name}") FROM t'
        ).fetchone()
        assert (row["distinct_count"], row["min"], row["max"], row["null_count"]) == (
            distinct,
            lo,
            hi,
            nulls,
        )
    top = handle.frequencies("s500", "p=0", top=2)
    expected = con.execute(
        "SELECT s500, count(*) c FROM (SELECT * FROM t LIMIT 0) GROUP BY 1"
    ).fetchall()
    assert expected == []  # (sanity of the reference connection)
    counts = pc.value_counts(table.slice(0, 1000)["s500"].drop_null()).to_pylist()
    counts.sort(key=lambda d: (-d["counts"], d["values"]))
    assert list(top) == [(d["values"], d["counts"]) for d in counts[:2]]


def test_user_defined_statistic_through_spark(spark, tmp_path: Path) -> None:
    register_statistic(
        SummaryStatistic(
            name="negative_count",
            result_type=pa.int64(),
            compute=lambda values: int(pc.sum(pc.less(values, 0)).as_py() or 0),
            merge=lambda a, b: a + b,
            kinds=("integer", "floating"),
        )
    )
    register_statistic(
        SummaryStatistic(
            name="first_value",
            result_type=pa.string(),
            compute=lambda values: str(values[0].as_py()) if len(values) else None,
        )
    )
    try:
        rng = np.random.default_rng(3)
        root = tmp_path / "t"
        root.mkdir()
        data = pa.table({"x": rng.integers(-10, 10, 3000), "label": rng.choice(["a", "b"], 3000)})
        for i in range(3):
            pq.write_table(data.slice(i * 1000, 1000), root / f"f{i}.parquet")
        whole = ls.open_table(str(root), stats_root=str(tmp_path / "whole"))
        whole.analyze(spark=spark)
        sliced = ls.open_table(str(root), stats_root=str(tmp_path / "sliced"))
        sliced.analyze(spark=spark, max_slice_bytes=1)
        expected = int(pc.sum(pc.less(data["x"], 0)).as_py())
        x_whole, label_whole = whole.statistics()
        x_sliced, _ = sliced.statistics()
        assert x_whole["negative_count"] == x_sliced["negative_count"] == expected
        assert label_whole["negative_count"] is None  # not a numeric column
        assert label_whole["first_value"] in ("a", "b")
        assert x_sliced["first_value"] is None  # no merge function: not guessed
    finally:
        unregister_statistic("negative_count")
        unregister_statistic("first_value")


def test_registry_rejects_bad_names() -> None:
    with pytest.raises(InvalidArgumentError, match="built-in"):
        register_statistic(SummaryStatistic("mean", pa.float64(), lambda v: 0.0))
    with pytest.raises(InvalidArgumentError, match="not valid"):
        register_statistic(SummaryStatistic("bad name", pa.float64(), lambda v: 0.0))
