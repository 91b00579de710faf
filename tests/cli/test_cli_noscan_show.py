"""``show`` after ``ANALYZE … NOSCAN`` into a new root says what NOSCAN
recorded (rows and data bytes, checked against the files' own footers and sizes) instead of
"the table has 0 partitions: pass --partition"."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats import cli


def test_show_after_noscan_into_a_new_root(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    table = tmp_path / "t"
    for part, rows in {"p=a": 3, "p=b": 5}.items():
        (table / part).mkdir(parents=True)
        pq.write_table(pa.table({"n": list(range(rows))}), table / part / "0.parquet")
    files = sorted(table.rglob("*.parquet"))
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    size = sum(f.stat().st_size for f in files)
    root = str(tmp_path / "new-root")
    statement = f"ANALYZE TABLE {table} COMPUTE STATISTICS NOSCAN"
    assert cli.main(["sql", statement, "--stats-root", root]) == 0
    capsys.readouterr()
    assert cli.main(["show", str(table), "--stats-root", root]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    [line] = out.out.splitlines()
    assert line.startswith(f"{table}: {rows:,} rows in {size:,} bytes of data files"), line
    assert "NOSCAN" in line and "lakestats analyze" in line
    assert cli.main(["show", str(table), "--stats-root", root, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["kind"], data["row_count"], data["size_in_bytes"], data["columns"]) == (
        "noscan", rows, size, [])
