"""Partition values holding any character address their own partition and no other's: analyze a
hive directory whose values hold ``,`` ``=`` ``/`` ``%``, spaces, unicode, the empty string,
the string "null" and NULL, then look each one up through the CLI by the name and the path
``partitions --json`` prints, and through the API by name, path and dict; every answer is
compared with DuckDB over that partition's rows."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli, fs
from lakestats.store import layout, manifest
from lakestats.store.handle import StatisticsStore
from tests.store.test_s3 import s3_endpoint  # noqa: F401 - the moto server fixture

pytestmark = pytest.mark.spark

# value -> its directory name as Hive (and Spark) would write it
VALUES = {
    "a,b": "a%2Cb",
    "a=b": "a%3Db",
    "a/b": "a%2Fb",
    "100%": "100%25",
    "Washington, D.C.": "Washington, D.C.",
    "é日本🎉": "é日本🎉",
    "": "",
    "null": "null",
    None: "__HIVE_DEFAULT_PARTITION__",
    "z": "z",
}


def _rows(i: int) -> pa.Table:
    return pa.table({"n": [i, i, i + 1, 10 * i], "s": [f"only{i}", "common", "common", "x"]})


def _out(capsys: pytest.CaptureFixture, args: list[str]) -> object:
    code = cli.main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def _hive_table(root: Path) -> dict[str | None, pa.Table]:
    expected = {}
    for i, (value, directory) in enumerate(VALUES.items()):
        (root / f"p={directory}").mkdir(parents=True)
        pq.write_table(_rows(i), root / f"p={directory}" / "0.parquet")
        expected[value] = _rows(i)
    return expected


def test_any_partition_value_in_a_hive_directory(
    spark,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    expected = _hive_table(tmp_path / "t")
    _check_every_partition(spark, capsys, str(tmp_path / "t"), str(tmp_path / "stats"), expected)


@pytest.mark.s3
def test_any_partition_value_with_the_statistics_on_s3(
    spark,
    s3_endpoint,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint.endpoint_url)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    expected = _hive_table(tmp_path / "t")
    stats = f"s3://lakestats-test/partition-values-{tmp_path.name}"
    _check_every_partition(spark, capsys, str(tmp_path / "t"), stats, expected, s3_endpoint)
    # reuse on S3 verifies sizes too: everything reused, then one deleted file recomputed
    table = ls.open_table(str(tmp_path / "t"), stats_root=stats, s3=s3_endpoint)
    again = table.analyze(spark=spark, bins=8)
    assert (again.partitions_computed, again.partitions_reused) == (0, len(VALUES))
    entry = manifest.load_version(StatisticsStore(stats, s3_endpoint), None).partitions[0]
    filesystem, path = fs.resolve(layout.absolute(stats, entry.files["statistics"]), s3_endpoint)
    filesystem.delete_file(path)
    repaired = table.analyze(spark=spark, bins=8)
    assert (repaired.partitions_computed, repaired.partitions_repaired) == (1, 1)
    entry = manifest.load_version(StatisticsStore(stats, s3_endpoint), None).partitions[0]
    assert fs.exists(layout.absolute(stats, entry.files["statistics"]), s3_endpoint)


def test_any_partition_value_in_an_iceberg_table(
    spark,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    """Identity partitions of an Iceberg table, where null is "null" in the partition's
    human name like the string "null": both are stored apart and addressable."""
    from pyiceberg.transforms import IdentityTransform

    from lakestats.formats.iceberg import load_catalog

    catalog = load_catalog(warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("db")
    expected = {}
    frames = []
    for i, value in enumerate(VALUES):
        rows = _rows(i)
        frames.append(rows.append_column("p", pa.array([value] * rows.num_rows, pa.string())))
        expected[value] = rows
    data = pa.concat_tables(frames)
    table = catalog.create_table("db.values", schema=data.schema)
    with table.update_spec() as spec:
        spec.add_field("p", IdentityTransform(), "p")
    table.append(data)
    location = catalog.load_table("db.values").location().removeprefix("file://")
    _check_every_partition(spark, capsys, location, str(tmp_path / "stats"), expected)


def _check_every_partition(
    spark,
    capsys: pytest.CaptureFixture,
    table: str,
    stats: str,
    expected: dict[str | None, pa.Table],
    s3=None,
) -> None:
    ls.open_table(table, stats_root=stats, s3=s3).analyze(spark=spark, bins=8)
    base = [table, "--stats-root", stats, "--json"]
    listing = _out(capsys, ["partitions", *base])["partitions"]
    assert len(listing) == len(VALUES)
    assert len({p["path"] for p in listing}) == len(VALUES)  # no two share a directory
    by_value = {p["partition"]["p"]: p for p in listing}
    assert set(by_value) == set(VALUES)
    con = duckdb.connect()
    api = ls.open_table(table, stats_root=stats, s3=s3)
    for i, value in enumerate(VALUES):
        entry = by_value[value]
        con.register("part", expected[value])
        n_min, n_max, n_distinct, rows = con.execute(
            "SELECT min(n), max(n), count(DISTINCT n), count(*) FROM part"
        ).fetchone()
        want_frequencies = [
            {"value": v, "frequency": f}
            for v, f in con.execute(
                "SELECT s, count(*) AS f FROM part GROUP BY s ORDER BY f DESC, s"
            ).fetchall()
        ]
        for spec in (entry["name"], entry["path"]):
            shown = _out(capsys, ["show", *base, "--partition", spec])
            assert shown["partition"] == {"p": value} and shown["row_count"] == rows, spec
            n = next(c for c in shown["columns"] if c["name"] == "n")
            assert (n["min"], n["max"], n["distinct_count"]) == (n_min, n_max, n_distinct)
            p_column = next(c for c in shown["columns"] if c["name"] == "p")
            assert p_column["null_count"] == (rows if value is None else 0)
            if value is not None:
                assert p_column["min"] == value == p_column["max"]
            frequencies = _out(capsys, ["frequencies", *base, "--column", "s", "--partition", spec])
            assert frequencies["frequencies"] == want_frequencies, spec
            bins = _out(capsys, ["histogram", *base, "--column", "n", "--partition", spec])
            bins = bins["bins"]
            assert sum(b["count"] for b in bins) == rows and bins[0]["lower"] == n_min
        for spec in (entry["name"], entry["path"], {"p": value}):
            assert api.statistics(spec, ["n"])[0]["max"] == n_max, spec
            assert list(api.frequencies("s", spec, top=1)) == [("common", 2)]
        containing = ["partitions-containing", *base, "--column", "s"]
        holders = _out(capsys, [*containing, "--value", f"only{i}"])["partitions"]
        assert [(h["name"], h["path"], h["frequency"]) for h in holders] == [
            (entry["name"], entry["path"], 1)
        ]
    holders = _out(
        capsys, ["partitions-containing", *base, "--column", "s", "--value", "common"]
    )["partitions"]
    assert sorted(h["path"] for h in holders) == sorted(p["path"] for p in listing)
    assert {h["frequency"] for h in holders} == {2}

    # the stored key of every partition reads back exactly, whatever its value holds
    version = manifest.load_version(StatisticsStore(stats, s3), None)
    for entry in version.partitions:
        value = entry.values["p"]
        want = layout.NULL_VALUE if value is None else value
        assert entry.key == [("p", want)]


def test_old_manifests_without_sizes_still_resolve_partitions(
    spark,
    tmp_path: Path,
) -> None:
    """A manifest written before file sizes were recorded reads and resolves as before."""
    table = tmp_path / "t"
    for i, directory in enumerate(("a%2Cb", "z")):
        (table / f"p={directory}").mkdir(parents=True)
        pq.write_table(_rows(i), table / f"p={directory}" / "0.parquet")
    stats = str(tmp_path / "stats")
    ls.open_table(str(table), stats_root=stats).analyze(spark=spark, bins=8)
    path = Path(layout.absolute(stats, layout.version_path(1)))
    data = json.loads(path.read_text())
    for entry in data["partitions"]:
        del entry["file_sizes"]
    data["extra"].pop("file_sizes")
    path.write_text(json.dumps(data))
    api = ls.open_table(str(table), stats_root=stats)
    assert api.statistics("p=z", ["n"])[0]["max"] == 10
    assert api.statistics("p=a,b", ["n"])[0]["max"] == 1
