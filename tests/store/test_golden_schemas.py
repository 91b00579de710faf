"""The three files' on-disk schemas are pinned by golden files in tests/golden/.

Regenerate after an intended change with
``LAKESTATS_REGEN_GOLDEN=1 pytest tests/store/test_golden_schemas.py`` and review the diff:
readers in the wild depend on these schemas.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.column_groups import GroupAccumulator
from lakestats.stats.leaves import leaf_array, leaves_of
from lakestats.store import group_files, writer
from lakestats.store.handle import StatisticsStore

GOLDEN = Path(__file__).parents[1] / "golden"


def _files(tmp_path: Path) -> dict[str, Path]:
    table = pa.table(
        {
            "id": pa.array([1, 2, 3, 3]),
            "name": pa.array(["a", "b", "b", None]),
            "price": pa.array([1.5, 2.5, None, 2.5]),
            "day": pa.array([dt.date(2020, 1, d) for d in (1, 2, 3, 4)]),
        }
    )
    results = []
    for leaf in leaves_of(table.schema):
        accumulator = ColumnAccumulator(leaf)
        accumulator.observe(leaf_array(table, leaf))
        results.append(accumulator.finalize(1000, 10_000))
    uris = {
        kind: str(tmp_path / f"{kind}.parquet")
        for kind in ("statistics", "frequencies", "histograms")
    }
    store = StatisticsStore(str(tmp_path))
    writer.write_partition(results, [], 1000, uris, store)
    leaves = {leaf.name: leaf for leaf in leaves_of(table.schema)}
    group = GroupAccumulator(("id", "name"), (leaves["id"], leaves["name"]))
    group.observe(table)
    uris["groups"] = str(tmp_path / "groups.parquet")
    group_files.write_groups([group.finalize(2)], uris["groups"], store)
    return {kind: Path(uri) for kind, uri in uris.items()}


@pytest.mark.parametrize("kind", ["statistics", "frequencies", "histograms", "groups"])
def test_file_schema_matches_golden(tmp_path: Path, kind: str) -> None:
    path = _files(tmp_path)[kind]
    text = str(pq.ParquetFile(path).schema).strip().splitlines()
    schema = "\n".join(line for line in text if not line.startswith("<pyarrow")) + "\n"
    golden = GOLDEN / f"{kind}.schema.txt"
    if os.environ.get("LAKESTATS_REGEN_GOLDEN"):
        golden.write_text(schema)
    assert schema == golden.read_text()
