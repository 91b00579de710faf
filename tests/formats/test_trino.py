"""A real Trino (``make trino``: trino-server from Maven Central, Java 25) reads the distinct
counts of the Puffin file analyze commits to an Iceberg table: ``SHOW STATS`` shows them and
its optimizer's estimates (``EXPLAIN``) follow from them. The same table analyzed without
the Puffin file (``puffin=False``) gives Trino no distinct counts at all, so the numbers are
lakestats'. The reference is DuckDB's ``count(DISTINCT)`` over the table's data files.

Not in the default run (marker ``trino``): ``make test-trino`` runs it. The tables are
registered in Trino with its ``register_table`` procedure over a file metastore in a
temporary directory (docs/trino.md)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import lakestats.api as ls
from lakestats.formats.iceberg import load_catalog
from lakestats.stats import theta
from tests.formats import trino_server

pytestmark = [
    pytest.mark.trino,
    pytest.mark.spark,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not trino_server.available(),
                       reason="no Trino or no Java 25 (make trino)"),
]

N = 20_000
THETA = "apache-datasketches-theta-v1"


def _rows() -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({
        "k": pa.array(rng.integers(0, 700, N)),  # 700 values: counted exactly
        "s": pa.array([f"v{i}" for i in rng.integers(0, 123, N)]),
        # about 15,700 values, over theta's 4,096 entries: lakestats' count is an estimate
        "wide": pa.array(rng.integers(0, 40_000, N)),
        "r": pa.array(np.where(np.arange(N) % 2 == 0, "a", "b")),
    })


def _puffin_ndv(catalog, name: str) -> dict[str, int]:
    table = catalog.load_table(f"db.{name}")
    snapshot = table.current_snapshot().snapshot_id
    names = {f.field_id: f.name for f in table.schema().fields}
    out = {}
    for statistics in table.metadata.statistics:
        if statistics.snapshot_id == snapshot:
            for blob in statistics.blob_metadata:
                assert blob.type == THETA
                out[names[blob.fields[0]]] = int(blob.properties["ndv"])
    return out


def _duckdb_distinct(catalog, name: str, columns: list[str]) -> dict[str, int]:
    table = catalog.load_table(f"db.{name}")
    files = [t.file.file_path.removeprefix("file://") for t in table.scan().plan_files()]
    counts = ", ".join(f'count(DISTINCT "{c}")' for c in columns)
    row = duckdb.connect().execute(f"SELECT {counts} FROM read_parquet(?)", [files]).fetchone()
    return dict(zip(columns, row, strict=True))


def _show_stats(trino, name: str) -> tuple[dict[str, float | None], float]:
    columns, rows = trino.query(f"SHOW STATS FOR iceberg.db.{name}")
    at = {c: i for i, c in enumerate(columns)}
    distinct = {r[at["column_name"]]: r[at["distinct_values_count"]]
                for r in rows if r[at["column_name"]] is not None}
    [total] = [r[at["row_count"]] for r in rows if r[at["column_name"]] is None]
    return distinct, total


def _output_rows(trino, sql: str) -> float | None:
    """The optimizer's row estimate of the plan's output (None: unknown, ``?``)."""
    _, [[plan]] = trino.query(f"EXPLAIN {sql}")
    found = re.search(r"Output\[.*?Estimates: \{rows: ([^ ]+) ", plan, re.S)
    assert found, plan
    return None if found.group(1) == "?" else float(found.group(1).replace(",", ""))


def test_trino_reads_lakestats_distinct_counts(spark, tmp_path: Path) -> None:
    from pyiceberg.transforms import IdentityTransform

    warehouse = tmp_path / "warehouse"
    catalog = load_catalog(warehouse=str(warehouse))
    catalog.create_namespace("db")
    rows = _rows()
    for name in ("stats", "bare"):
        created = catalog.create_table(f"db.{name}", schema=rows.schema)
        with created.update_spec() as spec:  # two partitions: `wide`'s sketches are unioned
            spec.add_field("r", IdentityTransform(), "r")
        created.append(rows)

    analyzed = ls.open_table("db.stats", warehouse=str(warehouse))
    # frequencies up to 100 values only: the table-level counts of `k`, `s` and `wide`
    # are unions of the partitions' sketches, estimates
    analyzed.analyze(max_frequencies=100, spark=spark)
    ls.open_table("db.bare", warehouse=str(warehouse)).analyze(
        max_frequencies=100, puffin=False, spark=spark
    )
    lakestats = {r["column"]: r for r in analyzed.statistics()}
    ndv = _puffin_ndv(catalog, "stats")
    assert _puffin_ndv(catalog, "bare") == {}
    truth = _duckdb_distinct(catalog, "stats", rows.column_names)
    for c in rows.column_names:  # lakestats' count, or the union sketch's where it is exact
        low, high = lakestats[c]["distinct_count_lower"], lakestats[c]["distinct_count_upper"]
        assert ndv[c] == lakestats[c]["distinct_count"] or low <= ndv[c] <= high, c

    with trino_server.server(tmp_path / "trino") as trino:
        trino.query(f"CREATE SCHEMA iceberg.db WITH (location = 'file://{warehouse}/db')")
        for name in ("stats", "bare"):
            trino.query(
                "CALL iceberg.system.register_table(schema_name => 'db', "
                f"table_name => '{name}', table_location => 'file://{warehouse}/db/{name}')"
            )
        seen, total = _show_stats(trino, "stats")
        bare, bare_total = _show_stats(trino, "bare")
        group_by = "SELECT k, count(*) FROM iceberg.db.{} GROUP BY k"
        where = "SELECT * FROM iceberg.db.{} WHERE s = 'v5'"
        join = "SELECT * FROM iceberg.db.{0} a JOIN iceberg.db.{0} b ON a.k = b.k"
        estimates = {
            name: {"group_by": _output_rows(trino, group_by.format(name)),
                   "where": _output_rows(trino, where.format(name)),
                   "join": _output_rows(trino, join.format(name))}
            for name in ("stats", "bare")
        }
    bounds = {c: [lakestats[c]["distinct_count_lower"], lakestats[c]["distinct_count_upper"]]
              for c in rows.column_names}
    print(json.dumps({"trino": seen, "lakestats": ndv, "lakestats_bounds": bounds,
                      "duckdb": truth, "estimates": estimates}))

    # (a) SHOW STATS: exactly the ndv lakestats wrote, for every column; none without it
    assert total == bare_total == N
    assert seen == {c: float(ndv[c]) for c in rows.column_names}
    assert bare == dict.fromkeys(rows.column_names)
    # lakestats against DuckDB: equal where lakestats' count is exact; where it is an
    # estimate (the union of the partitions' HyperLogLog sketches, lg_k 12, relative
    # standard error 1.04 / sqrt(4096) = 1.6%) within its own bounds and three standard
    # errors (4.9%) of the true count
    for column in rows.column_names:
        row, true = lakestats[column], truth[column]
        if row["distinct_count_exact"]:
            assert ndv[column] == true, column
        assert row["distinct_count_lower"] <= true <= row["distinct_count_upper"], column
        assert abs(ndv[column] - true) <= 3 * 1.04 / math.sqrt(4096) * true, column
    # k's 700 values fit theta's 4,096 entries: the union sketch holds every one of them, so
    # the ndv engines read is exact where lakestats' own table level only estimates it
    assert truth["k"] <= theta.K and ndv["k"] == truth["k"]
    assert truth["wide"] > theta.K  # over theta's 4,096 entries: an estimate indeed
    assert lakestats["wide"]["distinct_count_exact"] is False

    # (b) EXPLAIN: a GROUP BY k makes ndv(k) groups; WHERE s = x keeps rows / ndv(s).
    # Without the Puffin file Trino knows no group count and falls back on its default
    # filter factor
    assert estimates["stats"]["group_by"] == ndv["k"]
    assert estimates["stats"]["where"] == pytest.approx(N / ndv["s"], abs=1)
    assert estimates["bare"]["group_by"] is None
    assert estimates["bare"]["where"] != pytest.approx(N / ndv["s"], abs=1)
    # a self-join on k: rows x rows / ndv(k)
    assert estimates["stats"]["join"] == pytest.approx(N * N / ndv["k"], rel=1e-3)
    assert estimates["bare"]["join"] != pytest.approx(N * N / ndv["k"], rel=1e-3)
