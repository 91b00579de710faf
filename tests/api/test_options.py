"""``lakestats.options``: validation by type and message, the CLI's flags and defaults
derived from the dataclasses (compared field by field with what argparse parses), the
facade's overrides, and reuse of partition statistics decided by the typed fields (an
incremental analyze after changing each kind of option, counted against the plan)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.errors import InvalidArgumentError
from lakestats.options import MIB, AnalyzeOptions, SampleOptions
from lakestats.store import manifest
from lakestats.store.handle import StatisticsStore


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"bins": 0}, "--bins must be between 1 and 100000, got 0"),
        ({"bins": 100_001}, "--bins must be between 1 and 100000, got 100001"),
        ({"bins": "10"}, "--bins must be a whole number, got '10'"),
        ({"bins": True}, "--bins must be a whole number, got True"),
        ({"max_frequencies": -1}, "--max-frequencies must be 0 or more, got -1"),
        ({"max_frequencies": 2.5}, "--max-frequencies must be a whole number, got 2.5"),
        ({"max_slice_bytes": 0}, "the slice size must be positive"),
        ({"exact": "yes"}, "--exact must be True or False, got 'yes'"),
        ({"table_level": 0}, "--partitions-only must be True or False, got 0"),
        ({"columns": "a,b"}, "--columns must be a list of column names, got 'a,b'"),
        ({"columns": ["a", 3]}, "--columns must be a list of column names, got ['a', 3]"),
        ({"snapshot_id": "7"}, "--snapshot must be a whole number, got '7'"),
        ({"where": 5}, "--where must be SQL text, got 5"),
        (
            {"from_sample": True, "snapshot_id": 3},
            "--from-sample analyzes the sample's snapshot at table level: drop --snapshot",
        ),
        (
            {"from_sample": True, "table_level": False},
            "--from-sample analyzes the sample's snapshot at table level: drop --snapshot",
        ),
        (
            {"from_sample": True, "where": "a > 1"},
            "--from-sample estimates the table's statistics from its sample; --where and "
            "--exact need the table's rows",
        ),
        (
            {"from_sample": True, "exact": True},
            "--from-sample estimates the table's statistics from its sample; --where and "
            "--exact need the table's rows",
        ),
    ],
)
def test_analyze_options_refuse_bad_values(values: dict, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        AnalyzeOptions(**values)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"rows": 1, "fraction": 0.5}, "pass --rows or --fraction, not both"),
        ({"rows": 0}, "--rows must be a positive number of rows, got 0"),
        ({"rows": 2.0}, "--rows must be a whole number, got 2.0"),
        ({"fraction": 0.0}, "--fraction must be in (0, 1] (0.01 is a 1 % sample), got 0.0"),
        ({"fraction": "0.1"}, "--fraction must be a number, got '0.1'"),
        ({"seed": None}, "--seed must be a whole number, got None"),
    ],
)
def test_sample_options_refuse_bad_values(values: dict, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        SampleOptions(**values)


def test_columns_become_a_tuple_and_an_empty_list_means_every_column() -> None:
    assert AnalyzeOptions(columns=["a", "b"]).columns == ("a", "b")
    assert AnalyzeOptions(columns=[]).columns is None
    assert SampleOptions().drawn_fraction == 0.01
    assert SampleOptions(rows=5).drawn_fraction is None


def _flags(parser_of: object) -> dict[str, object]:
    """Every option string of a (sub)parser -> its argparse action."""
    return {s: a for a in parser_of._actions for s in a.option_strings}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("command", "cls"), [(["analyze"], AnalyzeOptions),
                                              (["sample", "create"], SampleOptions)])
def test_cli_flags_and_defaults_are_the_dataclass(command: list[str], cls: type) -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command[0]]
    actions = _flags(sub)
    for f in dataclasses.fields(cls):
        flag = f.metadata["flag"]
        if flag is None:
            continue
        action = actions.pop(flag.name)
        assert f.metadata["help"] in action.help
        if flag.reads == "switch":
            assert action.default is False  # absent: the field's default (negated or not)
            assert (not action.default if flag.negate else action.default) == f.default
            continue
        if flag.reads == "groups":  # repeatable: absent is no group, the field's default
            assert action.default is None and f.default == ()
            continue
        scaled = action.default * flag.scale if action.default is not None else None
        assert scaled == f.default, flag
        if f.default is not None:
            assert f"(default {action.default})" in action.help
    # what is left are the commands' own flags, none of them an option of the dataclass
    others = {"-h", "--help", "--stats-root", "--catalog", "--warehouse", "--json", "--verbose",
              "--master", "--remote", "--ship-lakestats", "--as-of"}
    assert set(actions) <= others
    parsed = parser.parse_args([*command, "t"])
    assert cli.options_from_args(parsed, cls) == cls()


def test_column_groups_repeat_and_are_checked() -> None:
    parsed = cli.build_parser().parse_args(
        ["analyze", "t", "--column-groups", "region, tier", "--column-groups", "a,b,c"]
    )
    options = cli.options_from_args(parsed, AnalyzeOptions)
    assert options.column_groups == (("region", "tier"), ("a", "b", "c"))
    assert AnalyzeOptions.from_record(options.record()) == options
    for bad in (["a"], ["a,a"], [""]):
        with pytest.raises(InvalidArgumentError, match="--column-groups"):
            AnalyzeOptions(column_groups=bad)
    parsed = cli.build_parser().parse_args(
        ["analyze", "t", "--column-groups", "auto", "--column-groups", "a,b"]
    )
    auto = cli.options_from_args(parsed, AnalyzeOptions)
    assert auto.auto_groups and auto.declared_groups == (("a", "b"),)
    assert AnalyzeOptions.from_record(auto.record()) == auto
    assert not options.auto_groups and options.declared_groups == options.column_groups


def test_cli_values_reach_the_fields() -> None:
    parsed = cli.build_parser().parse_args(
        ["analyze", "t", "--columns", "a, b", "--bins", "7", "--max-frequencies", "0",
         "--max-slice-mb", "3", "--exact", "--snapshot", "12", "--partitions-only",
         "--where", "a > 1"]
    )
    assert cli.options_from_args(parsed, AnalyzeOptions) == AnalyzeOptions(
        columns=("a", "b"), bins=7, max_frequencies=0, max_slice_bytes=3 * MIB, exact=True,
        snapshot_id=12, table_level=False, where="a > 1",
    )
    parsed = cli.build_parser().parse_args(["sample", "create", "t", "--fraction", "0.5",
                                            "--seed", "4"])
    assert cli.options_from_args(parsed, SampleOptions) == SampleOptions(fraction=0.5, seed=4)


def test_cli_bad_option_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["analyze", str(tmp_path), "--bins", "0"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "lakestats: error: --bins must be between 1 and 100000, got 0"
    ]


def test_facade_overrides_are_field_names(tmp_path: Path) -> None:
    table = ls.open_table(str(tmp_path / "never-read"))
    with pytest.raises(InvalidArgumentError) as info:
        table.analyze(binz=3)
    assert str(info.value) == (
        "unknown AnalyzeOptions option 'binz'; the options are: columns, bins, "
        "max_frequencies, max_slice_bytes, reduce_cache_from, exact, column_groups, "
        "snapshot_id, table_level, where, from_sample, puffin, progress"
    )
    with pytest.raises(InvalidArgumentError, match="--bins must be between 1 and 100000"):
        table.analyze(AnalyzeOptions(bins=5), bins=0)  # overrides are validated too
    base = AnalyzeOptions(bins=5, exact=True)
    assert AnalyzeOptions.build(base, {"bins": 9}) == AnalyzeOptions(bins=9, exact=True)


def test_records_round_trip_and_unknown_records_are_not_reused() -> None:
    chosen = AnalyzeOptions(columns=("a",), bins=9, exact=True, snapshot_id=4, progress=True)
    record = chosen.record()
    assert list(record) == ["columns", "bins", "max_frequencies", "max_slice_bytes", "exact"]
    assert record["columns"] == ["a"]
    assert "exact" not in AnalyzeOptions().record()  # older versions' records stay equal
    back = AnalyzeOptions.from_record(record)
    assert back is not None and back.partition_stats_key() == chosen.partition_stats_key()
    assert AnalyzeOptions.from_record({**record, "new_option": 1}) is None
    assert AnalyzeOptions.from_record({k: v for k, v in record.items() if k != "bins"}) is None
    assert AnalyzeOptions.from_record({**record, "bins": -1}) is None


@pytest.mark.spark
def test_reuse_compares_the_fields_that_change_partition_files(tmp_path: Path, spark) -> None:
    root = tmp_path / "t"
    for p in range(3):
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(pa.table({"n": list(range(p * 10, p * 10 + 40))}), root / f"p={p}/0.parquet")
    table = ls.open_table(str(root))
    first = table.analyze(spark=spark, bins=20)
    assert (first.partitions_computed, first.partitions_reused) == (3, 0)
    # the slice size only cuts the work: every partition is reused, and with nothing else
    # changed nothing is redone or published (compute/analyze/unchanged.py)
    again = table.analyze(spark=spark, bins=20, max_slice_bytes=1)
    assert (again.partitions_computed, again.partitions_reused) == (0, 3)
    assert again.unchanged and again.version == first.version
    recorded = manifest.load_version(
        StatisticsStore(str(root / "_lakestats")), again.version
    ).options
    assert recorded["bins"] == 20
    for change in ({"bins": 21}, {"max_frequencies": 3}, {"columns": ["n"]}):
        result = table.analyze(spark=spark, **{"bins": 20, **change})
        assert (result.partitions_computed, result.partitions_reused) == (3, 0), change
        table.analyze(spark=spark, bins=20)  # back to the first options
