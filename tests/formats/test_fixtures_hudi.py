"""Hudi tables (../shared/fixtures/hudi) compared with what hudi-rs's own reader returns:
copy-on-write and merge-on-read (an uncompacted log update), hive-style partitions, an
empty table, a rolled-back commit, time travel, and the direct (pyarrow) fast path."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.errors import UnsupportedFeatureError
from lakestats.formats import open_table
from lakestats.formats.hudi import HudiMergingReader, HudiReader, HudiTableFormat
from lakestats.stats.leaves import leaves_of
from tests.reference import analyze_and_show, assert_shown_matches

pytestmark = pytest.mark.spark

TABLES = [
    "v6_complexkeygen_hivestyle",
    "v6_nonpartitioned",
    "v6_trips_8i1u",
    "v9_nonpartitioned_rollback",
]


def hudi_read(path: str, as_of: int | None = None) -> pa.Table:
    """The reference: hudi-rs's snapshot read (``read``; 0.5.0 has no ``read_snapshot``)."""
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(path).build()
    options = HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(str(as_of))
    batches = table.read(options)
    if not batches:
        return table.get_schema_with_meta_fields().empty_table()
    return pa.Table.from_batches(batches)


def assert_matches(shown: dict, expected: pa.Table) -> None:
    """``assert_shown_matches`` on every column but lists and maps, which lakestats gives
    lengths rather than a min and max (DuckDB's min of a list is a list): those are
    compared here on row count, null count and min/max length."""
    import duckdb

    nested = [
        f.name
        for f in expected.schema
        if pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_map(f.type)
    ]
    assert_shown_matches(shown, expected.drop_columns(nested))
    rows = {c["name"]: c for c in shown["columns"]}
    con = duckdb.connect()
    con.register("t", expected)
    for name in nested:
        fn = "cardinality" if pa.types.is_map(expected.schema.field(name).type) else "len"
        total, non_null, lo, hi = con.execute(
            f'SELECT count(*), count("{name}"), min({fn}("{name}")), max({fn}("{name}")) FROM t'
        ).fetchone()
        row = rows[name]
        assert (row["row_count"], row["null_count"]) == (total, total - non_null), name
        assert (row["min_length"], row["max_length"]) == (lo, hi), name


def read_all(fmt: HudiTableFormat, snapshot: int | None = None) -> pa.Table:
    """Every slice of every partition through the format's own (pickled) reader."""
    reader = fmt.reader(snapshot)
    tables = [
        reader.read(part, None) for plan in fmt.plan(snapshot) for part in fmt.slices(plan, 1 << 30)
    ]
    return pa.concat_tables(tables)


@pytest.mark.parametrize("name", TABLES)
def test_hudi_table_matches_hudi_rs(
    spark,
    fixtures_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    name: str,
) -> None:
    path = str(fixtures_dir / "hudi" / name)
    shown = analyze_and_show(capsys, path, str(tmp_path / "stats"))
    expected = hudi_read(path)
    assert [c["name"] for c in shown["columns"]] == [
        leaf.name for leaf in leaves_of(expected.schema)
    ]
    assert_matches(shown, expected)


def test_merge_on_read_applies_the_log_update(fixtures_dir: Path) -> None:
    path = str(fixtures_dir / "hudi" / "v6_trips_8i1u")
    fmt = open_table(path)
    plans = {p.name: p for p in fmt.plan()}
    assert set(plans) == {"city=chennai", "city=san_francisco", "city=sao_paulo"}
    assert plans["city=chennai"].values == {"city": "chennai"}
    merged = plans["city=san_francisco"]
    assert merged.delete_files and merged.row_count is None  # a log must be merged
    assert plans["city=chennai"].row_count == 2 and not plans["city=chennai"].delete_files
    got = read_all(fmt).sort_by("_hoodie_record_key")
    assert got.num_rows == 8
    assert got.equals(hudi_read(path).sort_by("_hoodie_record_key"))
    times = set(got.column("_hoodie_commit_time").to_pylist())
    assert times == {str(s.snapshot_id) for s in fmt.snapshots()}  # the update is visible


def test_fast_path_reads_cow_without_hudi_rs(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copy-on-write base files are read with pyarrow: the merging reader is never used."""

    def refuse(self, part, columns) -> pa.Table:
        raise AssertionError(f"merging reader used for {part.partition.name}")

    monkeypatch.setattr(HudiMergingReader, "read", refuse)
    for name in ("v6_complexkeygen_hivestyle", "v6_nonpartitioned"):
        path = str(fixtures_dir / "hudi" / name)
        fmt = open_table(path)
        assert isinstance(fmt.reader(), HudiReader)
        plans = fmt.plan()
        assert all(not p.delete_files and p.row_count is not None for p in plans)
        got = read_all(fmt)
        assert sum(p.row_count for p in plans) == got.num_rows
        expected = hudi_read(path)
        assert got.schema.equals(expected.schema)
        key = "_hoodie_record_key"
        assert got.sort_by(key).equals(expected.sort_by(key))


def test_only_slices_with_logs_are_merged(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    merged: list[str] = []
    original = HudiMergingReader.read

    def spy(self, part, columns) -> pa.Table:
        merged.append(part.partition.name)
        return original(self, part, columns)

    monkeypatch.setattr(HudiMergingReader, "read", spy)
    read_all(open_table(str(fixtures_dir / "hudi" / "v6_trips_8i1u")))
    assert merged == ["city=san_francisco"]


def test_columns_select_a_subset_in_table_order(fixtures_dir: Path) -> None:
    fmt = open_table(str(fixtures_dir / "hudi" / "v6_trips_8i1u"))
    reader = fmt.reader()
    for plan in fmt.plan():
        for part in fmt.slices(plan, 1 << 30):
            table = reader.read(part, ["fare", "_hoodie_commit_time"])
            assert table.column_names == ["_hoodie_commit_time", "fare"]


@pytest.mark.parametrize(
    ("name", "rows"), [("v6_trips_8i1u", 8), ("v6_complexkeygen_hivestyle", 3)]
)
def test_hudi_time_travel(
    spark,
    fixtures_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    name: str,
    rows: int,
) -> None:
    path = str(fixtures_dir / "hudi" / name)
    fmt = open_table(path)
    older = fmt.snapshots()[0].snapshot_id
    assert older != fmt.current_snapshot_id()
    root = str(tmp_path / "stats")
    assert cli.main(["analyze", path, "--stats-root", root, "--snapshot", str(older)]) == 0
    capsys.readouterr()
    assert cli.main(["show", path, "--stats-root", root, "--snapshot", str(older), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = hudi_read(path, as_of=older)
    assert expected.num_rows == rows
    assert_matches(shown, expected)
    assert fmt.plan(older) != fmt.plan()  # the older instant has other files (or no log)


def test_incremental_analyze_recomputes_a_partition_whose_log_is_new(
    spark,
    fixtures_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    """As of the first commit the update's log file does not exist yet: the partition's
    fingerprint differs, so analyzing the current snapshot recomputes it."""
    path = str(fixtures_dir / "hudi" / "v6_trips_8i1u")
    fmt = open_table(path)
    first = fmt.snapshots()[0].snapshot_id
    before = {p.name: p.fingerprint() for p in fmt.plan(first)}
    after = {p.name: p.fingerprint() for p in fmt.plan()}
    assert [n for n in after if before[n] != after[n]] == ["city=san_francisco"]
    root = str(tmp_path / "stats")
    assert cli.main(["analyze", path, "--stats-root", root, "--snapshot", str(first)]) == 0
    capsys.readouterr()
    assert cli.main(["analyze", path, "--stats-root", root, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["partitions_computed"], summary["partitions_reused"]) == (1, 2)
    assert summary["row_count"] == 8


def test_rolled_back_commit_is_not_a_snapshot(fixtures_dir: Path) -> None:
    path = str(fixtures_dir / "hudi" / "v9_nonpartitioned_rollback")
    fmt = open_table(path)
    ids = [s.snapshot_id for s in fmt.snapshots()]
    assert ids == [20260403184238571, 20260403184302162]  # not the rollback nor its target
    assert read_all(fmt).num_rows == hudi_read(path).num_rows == 4
    assert read_all(fmt, ids[0]).num_rows == hudi_read(path, ids[0]).num_rows == 3


def test_unknown_snapshot_is_refused(fixtures_dir: Path) -> None:
    fmt = open_table(str(fixtures_dir / "hudi" / "v9_nonpartitioned_rollback"))
    with pytest.raises(Exception, match="not a completed commit"):
        fmt.plan(20260403184259077)  # the rollback instant


def test_empty_table_analyzes_and_shows_zero_rows(
    spark,
    fixtures_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    from hudi import HudiTableBuilder

    path = str(fixtures_dir / "hudi" / "v6_empty")
    fmt = open_table(path)
    assert fmt.snapshots() == [] and fmt.current_snapshot_id() is None
    assert fmt.plan() == []
    assert fmt.schema().names == hudi_read(path).column_names
    root = str(tmp_path / "stats")
    assert cli.main(["analyze", path, "--stats-root", root, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["row_count"], summary["partitions_computed"]) == (0, 0)
    assert cli.main(["show", path, "--stats-root", root, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["row_count"] == 0
    schema = pa.schema(HudiTableBuilder.from_base_uri(path).build().get_schema())
    names = [c["name"] for c in shown["columns"]]
    # the data columns hudi-rs declares, after the _hoodie_* meta columns its reads return
    assert names[-len(schema) :] == schema.names and names[0].startswith("_hoodie_")
    assert all(c["row_count"] == 0 and c["null_count"] == 0 for c in shown["columns"])


def _properties(root: Path, **extra: str) -> str:
    (root / ".hoodie").mkdir(parents=True)
    lines = {
        "hoodie.table.name": "t",
        "hoodie.table.type": "COPY_ON_WRITE",
        "hoodie.table.version": "6",
        "hoodie.timeline.layout.version": "1",
        "hoodie.table.recordkey.fields": "id",
        "hoodie.table.create.schema": '{"type":"record","name":"r","fields":'
        '[{"name":"id","type":["int","null"]}]}',
        **extra,
    }
    text = "\n".join(f"{k}={v.replace(':', chr(92) + ':')}" for k, v in lines.items())
    (root / ".hoodie" / "hoodie.properties").write_text(text + "\n")
    return str(root)


@pytest.mark.parametrize(
    ("extra", "feature"),
    [
        ({"hoodie.table.version": "4"}, "table version"),
        ({"hoodie.table.base.file.format": "ORC"}, "ORC"),
        ({"hoodie.bootstrap.base.path": "/elsewhere"}, "bootstrap"),
    ],
)
def test_unsupported_features_are_refused(tmp_path: Path, extra: dict, feature: str) -> None:
    path = _properties(tmp_path / "t", **extra)
    with pytest.raises(UnsupportedFeatureError, match=feature) as info:
        open_table(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("keygen", "fields", "hive", "path", "key", "values"),
    [
        (
            "SimpleKeyGenerator",
            "city",
            "false",
            "chennai",
            [("city", "chennai")],
            {"city": "chennai"},
        ),
        ("SimpleKeyGenerator", "n", "true", "n=7", [("n", "7")], {"n": 7}),
        (
            "ComplexKeyGenerator",
            "city,n",
            "false",
            "sf/3",
            [("city", "sf"), ("n", "3")],
            {"city": "sf", "n": 3},
        ),
        (
            "TimestampBasedKeyGenerator",
            "n",
            "false",
            "2024/01/15",
            [("n", "2024/01/15")],
            {"n": "2024/01/15"},
        ),
        (
            "CustomKeyGenerator",
            "n:timestamp",
            "true",
            "n=2024-01-15",
            [("n", "2024-01-15")],
            {"n": "2024-01-15"},
        ),
    ],
)
def test_partition_paths_to_keys_and_values(
    tmp_path: Path,
    keygen: str,
    fields: str,
    hive: str,
    path: str,
    key: list,
    values: dict,
) -> None:
    """Plain and hive-style paths; timestamp-based key generators keep the path's value
    (the column holds the timestamp, read from the files)."""
    schema = (
        '{"type":"record","name":"r","fields":[{"name":"id","type":["int","null"]},'
        '{"name":"city","type":["string","null"]},{"name":"n","type":["long","null"]}]}'
    )
    root = _properties(
        tmp_path / "t",
        **{
            "hoodie.table.create.schema": schema,
            "hoodie.table.partition.fields": fields,
            "hoodie.table.keygenerator.class": f"org.apache.hudi.keygen.{keygen}",
            "hoodie.datasource.write.hive_style_partitioning": hive,
        },
    )
    fmt = open_table(root)
    assert isinstance(fmt, HudiTableFormat)
    assert list(fmt._key(path)) == key
    expected = (
        values if values is not None else {"city": "sf", "n": 3} if "," in fields else dict(key)
    )
    assert fmt._values(fmt._key(path)) == expected


def test_hudi_as_of_picks_the_commit_current_then(
    spark,
    fixtures_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    """``--as-of TIME`` between two commits reads as of the earlier commit's instant."""
    import datetime as dt

    path = str(fixtures_dir / "hudi" / "v6_trips_8i1u")
    first, second = open_table(path).snapshots()[:2]
    between = first.timestamp_ms + (second.timestamp_ms - first.timestamp_ms) // 2
    iso = dt.datetime.fromtimestamp(between / 1000, dt.UTC).isoformat()
    root = str(tmp_path / "stats")
    assert cli.main(["analyze", path, "--stats-root", root, "--as-of", iso, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["snapshot_id"] == first.snapshot_id
    assert cli.main(["show", path, "--stats-root", root, "--as-of", iso, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["snapshot_id"] == first.snapshot_id and not shown["stale"]
    assert_matches(shown, hudi_read(path, as_of=first.snapshot_id))


def test_statistics_inside_a_partitioned_table_are_refused_with_the_way_out(
    spark, fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """hudi-rs takes every file under a table's base path but ``.hoodie/``'s for a partition's:
    statistics inside a partitioned table (the default ``<table>/_lakestats``) would make it
    unlistable, so analyze and sample refuse them before writing anything, in one line that
    names the way out; a root beside the table works."""
    import shutil

    path = tmp_path / "table"
    shutil.copytree(fixtures_dir / "hudi" / "v6_trips_8i1u", path)
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    assert cli.main(["analyze", str(path)]) == 2  # bad input: before Spark starts
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--stats-root" in err[0] and "partitioned Hudi" in err[0]
    with pytest.raises(UnsupportedFeatureError, match="--stats-root"):
        ls.open_table(str(path)).sample.create(rows=10)
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before  # nothing written
    beside = str(tmp_path / "stats")
    assert cli.main(["analyze", str(path), "--stats-root", beside]) == 0
    capsys.readouterr()
    table = ls.open_table(str(path), stats_root=beside)
    assert table.table_statistics().row_count == hudi_read(str(path)).num_rows
