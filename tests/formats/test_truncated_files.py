"""A truncated data file is named by its path, whatever the format's
reader (pyiceberg, delta-rs) says about its partition or table."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakestats.api as ls
from lakestats.errors import LakestatsError

pytestmark = pytest.mark.spark


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_iceberg_truncated_file_is_named(tmp_path: Path, spark) -> None:
    from lakestats.formats.iceberg import load_catalog

    catalog = load_catalog(warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    data = pa.table({"region": ["a", "a", "b"], "n": [1, 2, 3]})
    table = catalog.create_table("db.t", schema=data.schema)
    with table.update_spec() as update:
        update.add_identity("region")
    table = catalog.load_table("db.t")
    table.append(data)
    table.append(pa.table({"region": ["b"], "n": [4]}))
    files = [task.file.file_path for task in table.scan().plan_files()]
    victim = sorted(files)[-1].removeprefix("file://")
    _truncate(Path(victim))
    handle = ls.open_table("db.t", warehouse=str(tmp_path / "wh"))
    with pytest.raises(LakestatsError) as info:
        handle.analyze(spark=spark)
    message = str(info.value)
    assert victim in message and "\n" not in message, message


def test_parquet_directory_whose_first_file_is_truncated_names_it(tmp_path: Path) -> None:
    """The schema is read from the first file's footer: a damaged one is named there."""
    import pyarrow.parquet as pq

    for name in ("a.parquet", "b.parquet"):
        pq.write_table(pa.table({"n": [1, 2, 3]}), tmp_path / name)
    _truncate(tmp_path / "a.parquet")
    with pytest.raises(LakestatsError) as info:
        ls.open_table(str(tmp_path)).analyze()
    message = str(info.value)
    assert f"data file {tmp_path / 'a.parquet'}" in message, message
    assert "repair or remove the file" in message and "\n" not in message
