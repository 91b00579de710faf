"""The pandas-free Arrow builders equal pyarrow's own conversions, and import no pandas."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from lakestats.stats import arrays

SCHEMA = pa.schema(
    [
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("f", pa.float64()),
        ("flag", pa.bool_()),
        ("key", pa.binary()),
        ("text", pa.string()),
        ("tags", pa.list_(pa.int64())),  # another type: pyarrow's own conversion
    ]
)
ROWS = [
    {"i32": 1, "i64": -(2**62), "f": 1.5, "flag": True, "key": b"\x00a", "text": "é",
     "tags": [1]},
    {"i32": None, "i64": None, "f": None, "flag": None, "key": None, "text": None,
     "tags": None},
    {"i32": -7, "i64": 3, "f": float("inf"), "flag": False, "key": b"", "text": "",
     "tags": []},
    {"i32": 2},  # missing keys are nulls, as in from_pylist
]


def test_record_batch_equals_from_pylist() -> None:
    mine = arrays.record_batch(ROWS, SCHEMA)
    mine.validate(full=True)
    assert mine.equals(pa.RecordBatch.from_pylist(ROWS, schema=SCHEMA))
    assert arrays.record_batch([], SCHEMA).equals(pa.RecordBatch.from_pylist([], schema=SCHEMA))
    assert arrays.empty_table(SCHEMA).equals(SCHEMA.empty_table())


def test_the_builders_import_no_pandas() -> None:
    code = (
        "import sys, pyarrow as pa\n"
        "from lakestats.stats import arrays\n"
        "s = pa.schema([('a', pa.int32()), ('b', pa.binary()), ('c', pa.bool_())])\n"
        "b = arrays.record_batch([{'a': 1, 'b': b'x', 'c': True}, {}], s)\n"
        "arrays.empty_table(s)\n"
        "print(b.num_rows, 'pandas' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.stdout.split() == ["2", "False"]


def test_ddl_schema_matches_the_hand_written_twins() -> None:
    """``ddl_schema`` reads the DDL strings Spark is given as the Arrow the tasks yield; the
    exact step's hand-written Arrow schemas (commented field by field) equal their DDL."""
    from lakestats.compute.exact.merge import RANGE_ARROW, RANGE_SCHEMA
    from lakestats.compute.exact.sources import OUTLINE_ARROW, OUTLINE_SCHEMA
    from lakestats.compute.reduce.wire import computed_and_reduced_schema

    assert arrays.ddl_schema(RANGE_SCHEMA) == RANGE_ARROW
    assert arrays.ddl_schema(OUTLINE_SCHEMA) == OUTLINE_ARROW
    assert arrays.ddl_schema(computed_and_reduced_schema()) == pa.schema(
        [("task_id", pa.int64()), ("partition", pa.int64()), ("kind", pa.string()),
         ("row_count", pa.int64()), ("bytes_written", pa.int64()), ("seconds", pa.float64()),
         ("error", pa.string()), ("table_bytes", pa.int64()), ("cache", pa.string())]
    )
