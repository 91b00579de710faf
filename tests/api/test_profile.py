"""``profile``: the overview and the alerts, from statistics alone.

Reference: DuckDB over the same Parquet files computes each alert's quantity (null share,
distinct share, the top value's share, NaN count, quartiles and extremes, the last
partition against the rest) and the thresholds of ``lakestats.alerts`` decide from those
which alerts must fire; lakestats must raise exactly that set, reading no data.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.alerts import THRESHOLDS, Thresholds

pytestmark = pytest.mark.spark

PARTS, ROWS = 5, 1_000


def planted_table(root: Path, seed: int = 5) -> None:
    """Five partitions, one column per alert, plus a clean one."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(PARTS * ROWS)
    for p in range(PARTS):
        last = p == PARTS - 1
        n = ROWS
        rare = np.char.add("s", rng.integers(0, 20, n).astype(str))
        skewed = np.where(rng.random(n) < 0.8, "a", rare)
        zeros = np.where(rng.random(n) < 0.6, 0, rng.integers(1, 1_000, n))
        floats = rng.normal(0, 1, n)
        if p == 0:
            floats[:10] = np.nan
            floats[10] = 1e9
        mostly_null = rng.integers(0, 10, n).astype(float)
        mostly_null[rng.random(n) < 0.7] = np.nan
        late = rng.uniform(0, 10, n)
        if last:
            late[rng.random(n) < 0.5] = np.nan
        table = pa.table(
            {
                "id": pa.array(ids[p * n : (p + 1) * n], pa.int64()),
                "const": pa.array(["x"] * n),
                "empty_col": pa.array([None] * n, pa.int64()),
                "mostly_null": pa.array(mostly_null, from_pandas=True).cast(pa.int64()),
                "skewed": pa.array(skewed),
                "zeros": pa.array(zeros, pa.int64()),
                "f": pa.array(floats),
                "moved": pa.array(rng.uniform(8, 10, n) if last else rng.uniform(0, 10, n)),
                "late_nulls": pa.array(late, from_pandas=True),
                "txt": pa.array(np.char.add("v", rng.integers(0, 5_000, n).astype(str))),
                "clean": pa.array(rng.integers(0, 10, n), pa.int64()),
                "flag": pa.array(np.where(rng.random(n) < 0.9, "yes", "no")),
            }
        )
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(table, root / f"p={p}" / "part-0.parquet")


def _expected(root: Path, limits: Thresholds) -> set[tuple[str, str]]:
    """Which alerts the data calls for, from DuckDB's exact figures."""
    con = duckdb.connect()
    con.execute(
        f"CREATE VIEW t AS SELECT * FROM read_parquet('{root}/*/*.parquet', hive_partitioning=1)"
    )
    # NaN out of the value aggregates, as lakestats leaves it out of every order statistic
    # (a CASE, not a WHERE: DuckDB prunes row groups by min/max for WHERE isnan(...))
    con.execute("CREATE VIEW v AS SELECT * REPLACE (CASE WHEN isnan(f) THEN NULL ELSE f END "
                "AS f) FROM t")
    want: set[tuple[str, str]] = set()
    described = con.execute("SELECT column_name, column_type FROM (DESCRIBE t)").fetchall()[:-1]
    columns = [c for c, _ in described]
    floats = {c for c, kind in described if kind in ("DOUBLE", "FLOAT")}
    texts = {"const", "skewed", "txt", "flag"}
    for c in columns:
        q = f'"{c}"'
        rows, nulls, distinct = con.execute(
            f"SELECT count(*), count(*) - count({q}), count(DISTINCT {q}) FROM t"
        ).fetchone()
        non_null = rows - nulls
        if nulls == rows:
            want.add(("all_null", c))
            continue
        if nulls / rows >= limits.high_null_share:
            want.add(("high_nulls", c))
        if distinct == 1:
            want.add(("constant", c))
            continue
        if distinct == non_null:
            want.add(("unique", c))
        elif c in texts and distinct / non_null >= limits.high_cardinality_share:
            want.add(("high_cardinality", c))
        if c == "f" and con.execute("SELECT count_if(isnan(f)) FROM t").fetchone()[0]:
            want.add(("nan", c))
        top, share = con.execute(
            f"SELECT {q}, count(*) / {non_null} AS s FROM t WHERE {q} IS NOT NULL "
            "GROUP BY 1 ORDER BY 2 DESC LIMIT 1"
        ).fetchone()
        if top == 0 and share >= limits.dominant_share:
            want.add(("zeros", c))
        elif (distinct > 2 and share >= limits.skew_top_share) or (
            distinct == 2 and share >= limits.imbalance_share
        ):
            want.add(("skewed", c))
        if c not in texts:
            low, q1, q3, high = con.execute(
                f"SELECT min({q}), quantile_cont({q}, 0.25), quantile_cont({q}, 0.75), "
                f"max({q}) FROM v"
            ).fetchone()
            far = limits.outlier_iqr * (q3 - q1)
            if far > 0 and (high > q3 + far or low < q1 - far):
                want.add(("outliers", c))
            last = PARTS - 1
            [(n_l, nulls_l)] = con.execute(
                f"SELECT count(*), count(*) - count({q}) FROM t WHERE p = {last}"
            ).fetchall()
            [(n_r, nulls_r)] = con.execute(
                f"SELECT count(*), count(*) - count({q}) FROM t WHERE p <> {last}"
            ).fetchall()
            [(m_l,)] = con.execute(f"SELECT avg({q}) FROM v WHERE p = {last}").fetchall()
            [(m_r, s_r)] = con.execute(
                f"SELECT avg({q}), stddev_pop({q}) FROM v WHERE p <> {last}"
            ).fetchall()
            null_moved = abs(nulls_l / n_l - nulls_r / n_r) >= limits.drift_null_share
            mean_moved = (
                (distinct != non_null or c in floats)  # an identifier's mean: not judged
                and m_l is not None and s_r and math.isfinite(m_l)
                and abs(m_l - m_r) >= limits.drift_mean_stddevs * s_r
            )
            if null_moved or mean_moved:
                want.add(("drift", c))
    return want


def test_profile_raises_the_alerts_the_data_calls_for(spark, tmp_path: Path, capsys) -> None:
    root = tmp_path / "t"
    planted_table(root)
    table = ls.open_table(str(root))
    table.analyze(spark=spark)
    profile = table.profile()
    got = {(a.kind, a.column) for a in profile.alerts}
    want = _expected(root, THRESHOLDS)
    assert got == want
    # the planted ones are all there (the reference did not lose any either)
    assert {
        ("unique", "id"), ("constant", "const"), ("all_null", "empty_col"),
        ("high_nulls", "mostly_null"), ("skewed", "skewed"), ("zeros", "zeros"),
        ("nan", "f"), ("outliers", "f"), ("drift", "moved"), ("drift", "late_nulls"),
        ("high_cardinality", "txt"), ("skewed", "flag"),
    } <= got
    assert not any(a.column in ("clean", "p") for a in profile.alerts)
    assert (profile.row_count, profile.partitions) == (PARTS * ROWS, PARTS)
    assert profile.columns == len(pq.read_schema(root / "p=0" / "part-0.parquet")) + 1
    on_disk = sum(f.stat().st_size for f in (root / "_lakestats").rglob("*")
                  if f.is_file() and ("partitions" in f.parts or "table" in f.parts))
    assert 0 < profile.statistics_bytes <= on_disk
    data = sum(f.stat().st_size for f in root.rglob("*.parquet") if "_lakestats" not in f.parts)
    assert profile.data_bytes == data
    assert profile.exact_figures + profile.estimated_figures > 0
    assert not profile.staleness.stale

    assert cli.main(["profile", str(root), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == profile.to_json()
    assert cli.main(["profile", str(root)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), text  # a pipe is 80 columns
    assert f"alerts: {len(profile.alerts)}" in text
    [spark_line] = [line for line in lines if line.startswith("rows per partition: ")]
    rows = [p.row_count for p in table.partitions()]
    assert spark_line.endswith(f"({min(rows):,} to {max(rows):,})"), spark_line
    assert set(spark_line.split()[3]) <= set(" ▁▂▃▄▅▆▇█") and "█" in spark_line
    for alert in profile.alerts:
        assert f"{alert.kind} " in text and f" {alert.column}: " in text

    # a new partition: the statistics are stale, and the profile says so first
    pq.write_table(pq.read_table(root / "p=0" / "part-0.parquet"), root / "p=0" / "part-1.parquet")
    stale = ls.open_table(str(root)).profile()
    assert stale.alerts[0].kind == "stale" and stale.alerts[0].column is None
    assert stale.staleness.stale
