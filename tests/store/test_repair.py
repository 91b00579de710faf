"""A damaged statistics root recovers: re-analyze recomputes partitions whose
files are missing or changed size, lookups of a corrupt file fail in one line naming it,
and a damaged manifest neither breaks lookups nor blocks the next analyze."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.errors import CorruptStatisticsError
from lakestats.store import layout, manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader
from tests.reference import check_partition

pytestmark = pytest.mark.spark


def _table(root: Path, partitions: int = 3) -> dict[str, pa.Table]:
    rng = np.random.default_rng(5)
    tables = {}
    for p in range(partitions):
        rows = pa.table(
            {
                "a": rng.integers(-20, 20, 300),
                "b": [f"w{int(v)}" for v in rng.integers(0, 9, 300)],
            }
        )
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(rows, root / f"p={p}" / "data.parquet")
        tables[f"p={p}"] = rows.append_column("p", pa.array([p] * 300, pa.int32()))
    return tables


def _analyze(capsys: pytest.CaptureFixture, args: list[str]) -> dict:
    code = cli.main(["analyze", *args, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def _file(stats: Path, name: str, kind: str) -> Path:
    entry = next(
        e for e in manifest.load_version(StatisticsStore(str(stats))).partitions if e.name == name
    )
    return Path(layout.absolute(str(stats), entry.files[kind]))


@pytest.mark.parametrize("old_manifest", [False, True])
def test_reanalyze_recomputes_missing_and_damaged_partition_files(
    spark,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    old_manifest: bool,
) -> None:
    table = tmp_path / "t"
    tables = _table(table)
    stats = tmp_path / "stats"
    args = [str(table), "--stats-root", str(stats), "--bins", "16"]
    first = _analyze(capsys, args)
    assert first["partitions_computed"] == 3
    if old_manifest:  # written before sizes were recorded: existence and a minimal size
        path = Path(layout.absolute(str(stats), layout.version_path(1)))
        data = json.loads(path.read_text())
        for entry in data["partitions"]:
            del entry["file_sizes"]
        path.write_text(json.dumps(data))
    _file(stats, "p=0", "statistics").unlink()  # (a part gone: test_partition_histograms)
    _file(stats, "p=1", "statistics").write_bytes(b"")

    code = cli.main(["analyze", *args])
    message = capsys.readouterr().out
    assert code == 0
    assert "reused 1 (recomputed 2 whose files were missing or damaged)" in message, message
    again = _analyze(capsys, args)  # and now nothing is damaged
    assert (again["partitions_computed"], again["partitions_repaired"]) == (0, 0)

    reader = StatisticsReader(StatisticsStore(str(stats)))
    runs = [manifest.load_version(StatisticsStore(str(stats)), n).run_id for n in (1, 2)]
    # p=0 and p=1 recomputed by the second analyze, p=2 from the first; the third reused all
    assert [e.run_id for e in reader.version.partitions] == [runs[1], runs[1], runs[0]]
    for name in ("p=0", "p=1", "p=2"):
        for kind in next(e for e in reader.version.partitions if e.name == name).files:
            assert _file(stats, name, kind).stat().st_size == (
                next(e for e in reader.version.partitions if e.name == name).file_sizes[kind]
            )
        check_partition(
            tables[name],
            reader.column_statistics(name),
            lambda column, name=name: reader.frequencies(name, column),
            lambda column, name=name: reader.histogram(name, column),
        )


def test_a_damaged_statistics_file_is_one_line_and_reanalyze_repairs_it(
    spark,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    table = tmp_path / "t"
    tables = _table(table, partitions=2)
    stats = tmp_path / "stats"
    base = [str(table), "--stats-root", str(stats)]
    _analyze(capsys, base)
    target = _file(stats, "p=1", "statistics")
    good = target.read_bytes()
    table_stats = Path(
        layout.absolute(
            str(stats), manifest.load_version(StatisticsStore(str(stats))).table_files["statistics"]
        )
    )
    for damaged in (b"", good[: len(good) // 2], b"\0" * len(good), good[:-9] + b"\0" * 9):
        target.write_bytes(damaged)
        code = cli.main(["show", *base, "--partition", "p=1", "--json"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code != 0 and len(err) == 1, err
        assert err[0].startswith("lakestats: error: statistics file ") and str(target) in err[0]
        with pytest.raises(CorruptStatisticsError):
            StatisticsReader(StatisticsStore(str(stats))).column_statistics("p=1")
    # other partitions and the table level are unaffected
    assert (
        StatisticsReader(StatisticsStore(str(stats))).column_statistics("p=0", ["a"])[0][
            "row_count"
        ]
        == 300
    )
    table_stats.write_bytes(table_stats.read_bytes()[:20])
    code = cli.main(["show", *base, "--json"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and str(table_stats) in err[0], err

    target.write_bytes(b"")  # a size the manifest did not record: recomputed
    result = ls.open_table(str(table), stats_root=str(stats)).analyze(spark=spark)
    assert (result.partitions_computed, result.partitions_repaired) == (1, 1)
    reader = StatisticsReader(StatisticsStore(str(stats)))
    check_partition(
        tables["p=1"],
        reader.column_statistics("p=1"),
        lambda column: reader.frequencies("p=1", column),
        lambda column: reader.histogram("p=1", column),
    )
    assert reader.column_statistics(None, ["a"])[0]["row_count"] == 600


def test_a_damaged_manifest_is_skipped_by_lookups_and_analyze_publishes_after_it(
    spark,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    table = tmp_path / "t"
    _table(table, partitions=2)
    stats = tmp_path / "stats"
    base = [str(table), "--stats-root", str(stats)]
    _analyze(capsys, base)
    _analyze(capsys, [*base, "--bins", "7"])  # version 2
    v2 = Path(layout.absolute(str(stats), layout.version_path(2)))
    v2.write_text(v2.read_text()[:100])  # truncated

    assert cli.main(["show", *base, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["version"], shown["damaged_versions_skipped"]) == (1, [2])
    assert cli.main(["history", *base, "--json"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert [h["version"] for h in history] == [1, 2]
    assert str(v2) in history[1]["damaged"] and "is damaged" in history[1]["damaged"]
    code = cli.main(["export-paimon", *base, "--version", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and str(v2) in err[0], err

    third = _analyze(capsys, base)
    assert third["version"] == 3
    assert StatisticsReader(StatisticsStore(str(stats))).version.version == 3
    assert cli.main(["expire", *base, "--json", "--orphan-age-minutes", "0"]) == 0
    expired = json.loads(capsys.readouterr().out)
    assert 2 in expired["versions_removed"] and not v2.exists()
    assert os.path.exists(layout.absolute(str(stats), layout.version_path(3)))
