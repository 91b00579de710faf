"""The Puffin files analyze commits, read by Iceberg's own Java Puffin reader and
DataSketches Java (from Iceberg's Spark runtime jar, ``make jars``), and Iceberg's own
hashing (``Conversions.toByteBuffer`` into an Alpha ``UpdateSketch``) against
``stats/theta.py``. Skipped without Java or the jar."""

from __future__ import annotations

import datetime as dt
import decimal
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakestats.stats import theta
from tests.formats.test_iceberg_puffin import _analyze, _data

ROOT = Path(__file__).resolve().parents[2]
CHECK = Path(__file__).parent / "java" / "PuffinCheck.java"
JARS = sorted((ROOT / "build" / "jars").glob("iceberg-spark-runtime-*.jar"))

pytestmark = pytest.mark.skipif(
    not JARS or shutil.which("java") is None, reason="no Java or no Iceberg runtime (make jars)"
)


def _java(*args: str) -> list[str]:
    done = subprocess.run(
        ["java", "-cp", str(JARS[-1]), str(CHECK), *args],
        capture_output=True, text=True, timeout=300, check=True,
    )
    return done.stdout.split()


HASHED = [
    ("int", pa.int32(), ["1", "-5", "70000", "2147483647"], int),
    ("long", pa.int64(), ["1", "-5", "9000000000"], int),
    ("float", pa.float32(), ["1.5", "-0.25", "3.4e38"], float),
    ("double", pa.float64(), ["1.5", "-0.25", "1e300"], float),
    ("string", pa.string(), ["alpha", "δέλτα", "日本語", "x"], str),
    ("decimal(9, 2)", pa.decimal128(9, 2), ["1.28", "-1.28", "-1.29", "0.00", "1234567.89"],
     decimal.Decimal),
    ("decimal(38, 4)", pa.decimal128(38, 4), ["123456789012345678901234567890.1234", "-1.0000"],
     decimal.Decimal),
    ("date", pa.date32(), ["2020-01-01", "1969-12-31"], dt.date.fromisoformat),
    ("boolean", pa.bool_(), ["true", "false"], lambda v: v == "true"),
]


@pytest.mark.parametrize(("iceberg_type", "arrow_type", "texts", "parse"), HASHED,
                         ids=[h[0] for h in HASHED])
def test_hashes_equal_icebergs(iceberg_type, arrow_type, texts, parse) -> None:
    java = sorted(int(h) for h in _java("hash", iceberg_type.replace(" ", ""), *texts))
    mine = theta.hashes_of(pa.array([parse(t) for t in texts], arrow_type), iceberg_type)
    assert sorted(int(h) for h in mine) == java


@pytest.mark.spark
def test_icebergs_reader_reads_every_blob(spark, tmp_path: Path, capsys) -> None:
    from pyiceberg.transforms import IdentityTransform

    from lakestats.formats.iceberg import load_catalog

    catalog = load_catalog(warehouse=str(tmp_path))
    catalog.create_namespace("db")
    rows = _data(6_000, seed=4)
    table = catalog.create_table("db.events", schema=rows.schema)
    with table.update_spec() as spec:
        spec.add_field("region", IdentityTransform(), "region")
    table.append(rows)
    _analyze(tmp_path, capsys)
    table = catalog.load_table("db.events")
    [statistics] = table.metadata.statistics
    out = _java("read", statistics.statistics_path.removeprefix("file://"))
    lines = [out[i : i + 5] for i in range(0, len(out), 5)]
    assert len(lines) == len(statistics.blob_metadata)
    names = {f.field_id: f.name for f in table.schema().fields}
    for field_id, ndv, lower, upper, _ in lines:
        column = rows.column(names[int(field_id)])
        if pa.types.is_string(column.type) or pa.types.is_binary(column.type):
            column = column.filter(pc.not_equal(pc.binary_length(column), 0))  # Java skips ""
        if pa.types.is_floating(column.type):
            column = pc.add(column, pa.scalar(0.0, column.type))
        true = pc.count_distinct(column).as_py()
        assert float(lower) <= true <= float(upper) + 1e-9, names[int(field_id)]
        assert int(ndv) >= 0
