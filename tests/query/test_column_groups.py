"""Column groups (``analyze --column-groups``) against DuckDB's true counts.

A correlated, skewed table: ``region`` 55/30/10/5 %, ``tier`` always ``gold`` where
``region`` is ``eu``, a Zipf-skewed ``k``. Conjunctions over the group's columns are
estimated from the joint frequencies (exact where the lists are complete), distinct
combinations equal DuckDB's ``COUNT(DISTINCT (a, b))`` when complete and lie within the
bounds otherwise; the files are written for Parquet, Delta, Iceberg, Paimon and Hudi tables.
"""

from __future__ import annotations

import glob
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from tests.correlated import conjunctions, correlated, q_error

pytestmark = pytest.mark.spark

@pytest.fixture(scope="module")
def analyzed(spark, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("groups") / "t"
    rng = np.random.default_rng(7)
    tables = []
    for p, n in enumerate((4000, 2500, 1500, 600)):
        t = correlated(rng, n)
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(t, root / f"p={p}" / "data.parquet")
        tables.append(t.append_column("p", pa.array([p] * n, pa.int64())))
    con = duckdb.connect()
    con.register("t", pa.concat_tables(tables))
    grouped = ls.open_table(str(root), str(root.parent / "grouped"))
    grouped.analyze(column_groups=[("region", "tier"), ("region", "tier", "k")], spark=spark)
    plain = ls.open_table(str(root), str(root.parent / "plain"))
    plain.analyze(spark=spark)
    truncated = ls.open_table(str(root), str(root.parent / "truncated"))
    truncated.analyze(column_groups=[("region", "tier", "k")], max_frequencies=8, spark=spark)
    return root, con, grouped, plain, truncated


def test_pairs_found_automatically(analyzed, spark) -> None:
    root, con = analyzed[0], analyzed[1]
    auto = ls.open_table(str(root), str(root.parent / "auto"))
    auto.analyze(column_groups=["auto"], spark=spark)
    partitions = glob.glob(str(root.parent / "auto" / "partitions" / "*" / "*" /
                               "groups.parquet"))
    found = [{r["group"] for r in pq.read_table(p).to_pylist()} for p in partitions]
    assert len(found) == 4 and all({"region,tier"} <= f for f in found)
    assert not any("p" in g.split(",") for f in found for g in f)  # no partition column
    table = glob.glob(str(root.parent / "auto" / "table" / "*" / "groups.parquet"))
    rows = pq.read_table(table[0]).to_pylist()
    assert rows[0]["group"] == "region,tier"  # the dependent pair, first
    assert all(r["group"] != "tier,k" for r in rows)  # independent: not kept
    for where in ("region = 'eu' AND tier = 'silver'", "region = 'af' AND tier = 'gold'"):
        e = auto.estimate(where)
        assert e.exact and e.row_count == _true(con, where), where


def _true(con: duckdb.DuckDBPyConnection, where: str) -> int:
    return con.execute(f"SELECT COUNT(*) FROM t WHERE {where}").fetchone()[0]


def test_group_files_are_written_for_every_partition_and_the_table(analyzed) -> None:
    root = analyzed[0]
    partitions = glob.glob(str(root.parent / "grouped" / "partitions" / "*" / "*" /
                               "groups.parquet"))
    assert len(partitions) == 4
    table = glob.glob(str(root.parent / "grouped" / "table" / "*" / "groups.parquet"))
    assert len(table) == 1
    rows = pq.read_table(table[0]).to_pylist()
    assert [r["group"] for r in rows] == ["region,tier", "region,tier,k"]
    pair = rows[0]
    assert pair["row_count"] == 8600 and not pair["truncated"] and pair["distinct_exact"]
    degrees = {(tuple(d["determinant"]), d["dependent"]): d for d in pair["dependencies"]}
    con = analyzed[1]
    eu = _true(con, "region = 'eu'")
    assert degrees[(("region",), "tier")]["supporting_rows"] == eu  # only eu determines tier


def test_conjunctions_with_a_group_are_exact_where_its_list_is_complete(analyzed) -> None:
    _, con, grouped, plain, _ = analyzed
    with_group, without = [], []
    for where in conjunctions():
        true = _true(con, where)
        e = grouped.estimate(where)
        assert e.lower <= true <= e.upper, where
        assert e.exact and e.row_count == true, where
        with_group.append(q_error(e.row_count, true))
        base = plain.estimate(where)
        assert base.lower <= true <= base.upper, where
        without.append(q_error(base.row_count, true))
    assert len(with_group) >= 20
    assert np.percentile(with_group, 90) <= 1.05 and max(with_group) <= 2
    assert max(without) > 1.3  # what the product of selectivities gets wrong


def test_other_conjuncts_keep_sound_bounds(analyzed) -> None:
    _, con, grouped, _, _ = analyzed
    for where in ("region = 'eu' AND tier = 'gold' AND k < 5",
                  "region = 'us' AND tier = 'silver' AND k BETWEEN 2 AND 30",
                  "region IN ('eu', 'af') AND tier = 'gold' AND k > 0"):
        true = _true(con, where)
        e = grouped.estimate(where)
        assert e.lower <= true <= e.upper, where
        assert q_error(e.row_count, true) <= 2, where


def test_truncated_lists_keep_every_count_within_its_bounds(analyzed) -> None:
    _, con, _, plain, truncated = analyzed
    with_list, without = [], []
    for where in conjunctions():
        true = _true(con, where)
        e = truncated.estimate(where)
        assert e.lower <= true <= e.upper, (where, e.lower, true, e.upper)
        with_list.append(q_error(e.row_count, true))
        without.append(q_error(plain.estimate(where).row_count, true))
    # what the list leaves out is joined by the dependency degrees, not independence
    assert np.percentile(with_list, 50) < np.percentile(without, 50)


def test_a_conjunction_that_selects_partitions_counts_their_own_lists(analyzed) -> None:
    _, con, grouped, plain, truncated = analyzed
    for where in ("p = 1 AND region = 'us' AND tier = 'gold'",
                  "p IN (0, 3) AND region = 'eu' AND tier = 'silver'",
                  "p >= 2 AND region IN ('us', 'af') AND tier = 'bronze' AND k = 1"):
        true = _true(con, where)
        e = grouped.estimate(where)
        assert e.exact and e.row_count == true, (where, e.row_count, true)
        assert "of the partition" in e.partitions[0]["method"]
        assert not plain.estimate(where).exact
        bounded = truncated.estimate(where)
        assert bounded.lower <= true <= bounded.upper, where


@pytest.mark.parametrize("columns", [("region", "tier"), ("region", "k"), ("tier", "k"),
                                     ("region", "tier", "k")])
def test_group_by_distinct_counts(analyzed, columns) -> None:
    _, con, grouped, plain, truncated = analyzed
    listed = ", ".join(columns)
    true = con.execute(f"SELECT COUNT(DISTINCT ({listed})) FROM t").fetchone()[0]
    found = grouped.group_distinct(list(columns))
    assert found.exact and found.distinct_count == true
    for handle in (truncated, plain):
        bounded = handle.group_distinct(list(columns))
        assert bounded.lower <= true <= bounded.upper, (columns, bounded)
        assert bounded.lower <= bounded.distinct_count <= bounded.upper


def test_group_by_on_the_command_line(analyzed, capsys) -> None:
    root = analyzed[0]
    stats = str(root.parent / "grouped")
    assert cli.main(["estimate", str(root), "--stats-root", stats, "--group-by",
                     "region,tier"]) == 0
    out = capsys.readouterr().out
    assert "exact" in out and "column group region,tier" in out


@pytest.mark.parametrize(
    ("groups", "message"),
    [(["region,nope"], "column 'nope' is not in the table"),
     (["region"], "a group needs two or more distinct columns"),
     (["region,region"], "a group needs two or more distinct columns")],
)
def test_bad_groups_are_one_line(analyzed, capsys, groups, message) -> None:
    root = analyzed[0]
    args = ["analyze", str(root), "--stats-root", str(root.parent / "bad")]
    for g in groups:
        args += ["--column-groups", g]
    assert cli.main(args) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def _rows(seed: int) -> pa.Table:
    t = correlated(np.random.default_rng(seed), 3000)
    return t.append_column("day", pa.array(np.arange(3000) % 3, pa.int64()))


@pytest.mark.parametrize("fmt", ["delta", "iceberg", "paimon"])
def test_groups_of_every_table_format(spark, tmp_path: Path, fmt: str) -> None:
    rows = _rows(3)
    if fmt == "delta":
        from deltalake import write_deltalake

        name = str(tmp_path / "sales")
        write_deltalake(name, rows, partition_by=["day"])
        table = ls.open_table(name, str(tmp_path / "stats"))
    elif fmt == "iceberg":
        from pyiceberg.transforms import IdentityTransform

        from lakestats.formats.iceberg import load_catalog

        warehouse = str(tmp_path / "warehouse")
        catalog = load_catalog(warehouse=warehouse)
        catalog.create_namespace("db")
        base = catalog.create_table("db.sales", schema=rows.schema)
        with base.update_spec() as spec:
            spec.add_field("day", IdentityTransform(), "day")
        base.append(rows)
        table = ls.open_table("db.sales", str(tmp_path / "stats"), warehouse=warehouse)
    else:
        from pypaimon import CatalogFactory, Schema

        catalog = CatalogFactory.create({"warehouse": str(tmp_path / "warehouse")})
        catalog.create_database("default", True)
        catalog.create_table("default.sales", Schema.from_pyarrow_schema(rows.schema, ["day"]),
                             False)
        builder = catalog.get_table("default.sales").new_batch_write_builder()
        write = builder.new_write()
        write.write_arrow(rows)
        builder.new_commit().commit(write.prepare_commit())
        write.close()
        name = str(tmp_path / "warehouse" / "default.db" / "sales")
        table = ls.open_table(name, str(tmp_path / "stats"))
    table.analyze(column_groups=[("region", "tier")], spark=spark)
    assert len(glob.glob(str(tmp_path / "stats" / "partitions" / "*" / "*" /
                              "groups.parquet"))) == 3
    con = duckdb.connect()
    con.register("t", rows)
    for where in ("region = 'eu' AND tier = 'gold'", "day = 1 AND region = 'us' AND "
                  "tier = 'silver'"):
        e = table.estimate(where)
        assert e.exact and e.row_count == _true(con, where), where
    found = table.group_distinct(["region", "tier"])
    assert found.exact and found.distinct_count == con.execute(
        "SELECT COUNT(DISTINCT (region, tier)) FROM t").fetchone()[0]


def test_groups_of_a_hudi_table(spark, fixtures_dir: Path, tmp_path: Path) -> None:
    from tests.formats.test_fixtures_hudi import hudi_read

    path = str(fixtures_dir / "hudi" / "v6_trips_8i1u")  # by city, an update merged
    table = ls.open_table(path, str(tmp_path / "stats"))
    table.analyze(column_groups=[("rider", "driver")], spark=spark)
    con = duckdb.connect()
    con.register("t", hudi_read(path))
    for where in ("rider = 'rider-C' AND driver = 'driver-M'",
                  "rider = 'rider-C' AND driver = 'driver-K'",
                  "city = 'sao_paulo' AND rider IN ('rider-F', 'rider-G') AND "
                  "driver = 'driver-P'"):
        e = table.estimate(where)
        assert e.exact and e.row_count == _true(con, where), where
    found = table.group_distinct(["rider", "driver"])
    assert found.exact and found.distinct_count == con.execute(
        "SELECT COUNT(DISTINCT (rider, driver)) FROM t").fetchone()[0]


def test_groups_declared_in_the_settings_file(analyzed, tmp_path: Path) -> None:
    root, con = analyzed[0], analyzed[1]
    config = tmp_path / "lakestats.toml"
    config.write_text(f'[column_groups]\n"{root}" = ["region,tier"]\n')
    stats = str(tmp_path / "stats")
    assert cli.main(["--config", str(config), "analyze", str(root), "--stats-root", stats,
                     "--master", "local[2]"]) == 0
    table = glob.glob(str(tmp_path / "stats" / "table" / "*" / "groups.parquet"))
    assert [r["group"] for r in pq.read_table(table[0]).to_pylist()] == ["region,tier"]
    where = "region = 'us' AND tier = 'gold'"
    e = ls.open_table(str(root), stats).estimate(where)
    assert e.exact and e.row_count == _true(con, where)
    config.write_text(f'[column_groups]\n"{root}" = "region,tier"\n')
    assert cli.main(["--config", str(config), "analyze", str(root), "--stats-root", stats]) == 2


def test_groups_from_the_sample_are_scaled(analyzed, spark, tmp_path: Path) -> None:
    root, con = analyzed[0], analyzed[1]
    table = ls.open_table(str(root), str(tmp_path / "stats"))
    table.sample.create(fraction=0.25, seed=5, spark=spark)
    table.analyze(from_sample=True, column_groups=[("region", "tier")], spark=spark)
    rows = pq.read_table(glob.glob(str(tmp_path / "stats" / "table" / "*" /
                                       "groups.parquet"))[0]).to_pylist()
    assert rows[0]["row_count"] == 8600 and rows[0]["truncated"]
    assert len(glob.glob(str(tmp_path / "stats" / "partitions" / "*" / "*" /
                              "groups.parquet"))) == 4
    for where in ("region = 'eu' AND tier = 'gold'", "region = 'us' AND tier = 'bronze'",
                  "p = 2 AND region = 'asia' AND tier = 'silver'"):
        true = _true(con, where)
        e = table.estimate(where)
        assert not e.exact and q_error(e.row_count, true) <= 1.5, (where, e.row_count, true)
    never = table.estimate("region = 'eu' AND tier = 'silver'")
    assert never.row_count < 100  # 0 in the table; independence says 1,100
    true = con.execute("SELECT COUNT(DISTINCT (region, tier)) FROM t").fetchone()[0]
    found = table.group_distinct(["region", "tier"])
    assert found.lower <= true <= found.upper and not found.exact
