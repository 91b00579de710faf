"""What a newcomer touches first works the first time: the commands ``make demo`` prints
run as printed (the venv's own ``lakestats``, from the working directory), ``lakestats
--version`` is the installed package's version, and ``--help`` of every command prints its
usage (``sample --help`` printed a traceback)."""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from lakestats import demo

REPO = Path(__file__).resolve().parents[2]
LAKESTATS = Path(sys.executable).parent / "lakestats"  # the venv's console script


def _run(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's code
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env=env, cwd=cwd, check=False
    )


def _dicts(value: object) -> list[dict]:
    """Every JSON object inside ``value``."""
    if isinstance(value, dict):
        return [value, *(d for v in value.values() for d in _dicts(v))]
    if isinstance(value, list):
        return [d for v in value for d in _dicts(v)]
    return []


def test_version_is_the_installed_package_version() -> None:
    done = _run([str(LAKESTATS), "--version"])
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"lakestats {importlib.metadata.version('lakestats')}\n"


@pytest.mark.parametrize("command", ["sample", "analyze", "show", "serve"])
def test_help_of_a_command_prints_its_usage(command: str) -> None:
    done = _run([str(LAKESTATS), command, "--help"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: lakestats {command} ")
    assert "Traceback" not in done.stderr


@pytest.mark.spark
def test_the_printed_next_commands_run_as_printed(spark, tmp_path: Path, monkeypatch) -> None:
    import lakestats.api as ls

    table = tmp_path / "events"
    for day, values in (("mon", [1, 2, 2]), ("tue", [5, None])):
        (table / f"day={day}").mkdir(parents=True)
        pq.write_table(
            pa.table({"clicks": pa.array(values, pa.int64())}), table / f"day={day}" / "0.parquet"
        )
    ls.open_table(str(table)).analyze(spark=spark)
    monkeypatch.chdir(tmp_path)

    out = io.StringIO()
    demo.print_next_steps(Console(file=out, width=80), str(table), "day=mon")
    printed = out.getvalue().splitlines()
    assert printed[0] == f"next, from {tmp_path} (the demo's catalog is ./warehouse):"
    commands = [line.split("#")[0].strip() for line in printed[1:] if "#" in line]
    assert len(commands) == 3
    for command in commands:
        assert Path(shlex.split(command)[0]).resolve() == LAKESTATS.resolve()
    shows = [shlex.split(c) for c in commands if " show " in c]
    table_level = _run(shows[0], cwd=tmp_path)
    assert table_level.returncode == 0, table_level.stderr
    assert "clicks" in table_level.stdout and "5" in table_level.stdout
    partition = _run([*shows[1], "--json"], cwd=tmp_path)
    assert partition.returncode == 0, partition.stderr
    [clicks] = [
        row
        for row in _dicts(json.loads(partition.stdout))
        if "clicks" in (row.get("column"), row.get("name"))
    ]
    assert (clicks["max"], clicks["null_count"], clicks["distinct_count"]) == (2, 0, 2)
    activate = printed[-1].split("source ", 1)[1].split()[0]
    assert (tmp_path / activate).resolve() == (LAKESTATS.parent / "activate").resolve()
