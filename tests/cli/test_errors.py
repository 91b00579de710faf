"""Bad input: one clear line on stderr, a non-zero exit, and no half-written version."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats import cli
from lakestats.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    LakestatsError,
    NotATableError,
    PartitionNotFoundError,
    SnapshotNotFoundError,
    StorageError,
    TableNotFoundError,
)
from lakestats.store.handle import StatisticsStore
from lakestats.store.reader import StatisticsReader


def _table(root: Path, partitions: int = 3, rows: int = 200) -> Path:
    for p in range(partitions):
        part = root / f"p={p}"
        part.mkdir(parents=True)
        pq.write_table(
            pa.table({"a": np.arange(rows) + p, "b": [f"v{i % 7}" for i in range(rows)]}),
            part / "data.parquet",
        )
    return root


def _fails(capsys: pytest.CaptureFixture, args: list[str], error: type, text: str) -> None:
    code = cli.main(args)
    err = capsys.readouterr().err
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("lakestats: error: ") and text in lines[0], lines[0]
    with pytest.raises(error):
        os.environ["LAKESTATS_DEBUG"] = "1"
        try:
            cli.main(args)
        finally:
            del os.environ["LAKESTATS_DEBUG"]
    assert issubclass(error, LakestatsError)


def test_missing_table(tmp_path: Path, capsys) -> None:
    _fails(capsys, ["analyze", str(tmp_path / "nope")], TableNotFoundError, "does not exist")
    _fails(capsys, ["show", str(tmp_path / "nope")], TableNotFoundError, "does not exist")
    _fails(
        capsys,
        ["analyze", "nodb.nothing", "--warehouse", str(tmp_path / "w")],
        TableNotFoundError,
        "not found in catalog",
    )


def test_not_a_table(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    _fails(capsys, ["analyze", str(tmp_path / "empty")], NotATableError, "no Parquet files")
    (tmp_path / "file.txt").write_text("hello")
    _fails(capsys, ["analyze", str(tmp_path / "file.txt")], NotATableError, "is a file")


def test_bad_options(tmp_path: Path, capsys) -> None:
    table = _table(tmp_path / "t")
    _fails(capsys, ["analyze", str(table), "--bins", "0"], InvalidArgumentError, "--bins")
    _fails(capsys, ["analyze", str(table), "--bins", "1000001"], InvalidArgumentError, "--bins")
    _fails(capsys, ["analyze", str(table), "--columns", "a,zzz"], ColumnNotFoundError, "'zzz'")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["analyze", str(table), "--bins", "many"])
    assert exit_info.value.code != 0
    assert "expected a whole number" in capsys.readouterr().err


def test_unwritable_stats_root(tmp_path: Path, capsys) -> None:
    table = _table(tmp_path / "t")
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be")
    _fails(
        capsys,
        ["analyze", str(table), "--stats-root", str(blocker / "stats")],
        StorageError,
        "cannot write",
    )


@pytest.mark.spark
def test_lookup_errors_and_corrupt_file_keep_the_last_version(
    spark,
    tmp_path: Path,
    capsys,
) -> None:
    table = _table(tmp_path / "t")
    assert cli.main(["analyze", str(table)]) == 0
    capsys.readouterr()
    _fails(capsys, ["show", str(table), "--partition", "p=9"], PartitionNotFoundError, "p=9")
    _fails(capsys, ["show", str(table), "--snapshot", "5"], SnapshotNotFoundError, "not a snapshot")
    _fails(
        capsys,
        ["frequencies", str(table), "--column", "zzz", "--partition", "p=1"],
        ColumnNotFoundError,
        "'zzz'",
    )
    _fails(
        capsys,
        ["histogram", str(table), "--column", "b", "--partition", "p=1"],
        InvalidArgumentError,
        "no histogram",
    )
    before = StatisticsReader(StatisticsStore(str(table / "_lakestats"))).column_statistics("p=1")

    (table / "p=2" / "data.parquet").write_bytes(b"PAR1 this is not parquet")
    _fails(capsys, ["analyze", str(table)], LakestatsError, "p=2")
    reader = StatisticsReader(StatisticsStore(str(table / "_lakestats")))
    assert reader.version.version == 1
    assert reader.column_statistics("p=1") == before
    assert not list((table / "_lakestats" / "_staging").glob("*/*"))


def test_killed_analyze_leaves_the_previous_version(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", partitions=40, rows=20_000)
    env = {**os.environ, "LAKESTATS_SPARK_MASTER": "local[1]"}
    command = [sys.executable, "-m", "lakestats.cli", "analyze", str(table), "--json"]
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=300)
    stats = table / "_lakestats"
    latest = json.loads((stats / "latest.json").read_text())
    # other options: nothing of the first version can be reused, every partition is redone
    process = subprocess.Popen(
        [*command, "--bins", "500"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 120
    try:
        while time.time() < deadline:
            runs = {p.parent.name for p in stats.glob("partitions/*/*/statistics.parquet")}
            if len(runs) > 1:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the second analyze never started writing")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    assert json.loads((stats / "latest.json").read_text()) == latest
    reader = StatisticsReader(StatisticsStore(str(stats)))
    assert reader.version.version == latest["version"]
    assert sum(p.row_count for p in reader.version.partitions) == 40 * 20_000
    assert reader.column_statistics("p=3", ["a"])[0]["min"] == 3
