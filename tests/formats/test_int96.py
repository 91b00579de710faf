"""INT96 timestamps at the edges of the representable range.

Spark (and Hive, Impala) may store timestamps as INT96; read in pyarrow's default
nanoseconds, years before 1677 or after 2262 fail or wrap. The data files here are written
by Spark itself with ``outputTimestampType=INT96`` (years 1 and 9999, pre-1900, pre-epoch)
plus one pyarrow INT96 file with sub-microsecond parts; the statistics are compared with
delta-rs's own engine for a Delta table and with DuckDB for a Parquet directory.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls

pytestmark = pytest.mark.spark

EDGES = [
    "0001-01-01 00:00:00",
    "0001-01-01 00:00:00",
    "9999-12-31 23:59:59.999999",
    "1850-06-15 12:00:00.123456",
    "1582-10-04 01:02:03.000001",
    "1969-12-31 23:59:59.999999",
    "2262-04-11 23:47:16.854776",  # just past the nanosecond range
    "1677-09-21 00:12:43.145224",  # just before it
]


def _int96_files(spark, where: Path) -> tuple[Path, Path]:
    """One INT96 file written by Spark (edge values, a null) and one by pyarrow (values
    with nanoseconds, which INT96 keeps and microsecond readers truncate)."""
    conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "INT96",
        "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
    }
    before = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        rows = ", ".join(f"(TIMESTAMP'{v}', {i})" for i, v in enumerate(EDGES))
        frame = spark.sql(f"SELECT ts, n FROM VALUES {rows}, (NULL, 99) AS v(ts, n)")
        frame.coalesce(1).write.parquet(str(where / "spark-out"))
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    [written] = list((where / "spark-out").glob("*.parquet"))
    assert str(pq.ParquetFile(written).schema.column(0).physical_type) == "INT96"
    nanos = where / "nanos.parquet"
    values = [
        1577836800_000000789,
        1577836800_000001999,
        1577836800_000001000,
        4102444800_000000005,
    ]
    pq.write_table(
        pa.table(
            {"ts": pa.array(values, pa.timestamp("ns")), "n": pa.array([1, 2, 3, 4], pa.int32())}
        ),
        nanos,
        use_deprecated_int96_timestamps=True,
    )
    return written, nanos


def _delta_table(root: Path, files: dict[str, Path]) -> None:
    """A Delta table whose data files are the INT96 files (log written by hand, as a
    Spark-written table's would be: the schema says timestamp, the files say INT96)."""
    (root / "_delta_log").mkdir(parents=True)
    schema = {
        "type": "struct",
        "fields": [
            {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
            {"name": "n", "type": "integer", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "6f1c5a0e-0000-4000-8000-000000000096",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": ["p"],
                "configuration": {},
                "createdTime": 1700000000000,
            }
        },
    ]
    for part, source in files.items():
        relative = f"p={part}/part-00000.parquet"
        (root / f"p={part}").mkdir()
        shutil.copy(source, root / relative)
        actions.append(
            {
                "add": {
                    "path": relative,
                    "partitionValues": {"p": part},
                    "size": (root / relative).stat().st_size,
                    "modificationTime": 1700000000000,
                    "dataChange": True,
                }
            }
        )
    log = "\n".join(json.dumps(a) for a in actions) + "\n"
    (root / "_delta_log" / "00000000000000000000.json").write_text(log)


def _check(handle, reference: pa.Table, partitions: list[str]) -> None:
    """min, max, nulls, distinct count, frequencies and histogram total of ``ts`` per
    partition and for the table, against ``reference`` (the format's own reader)."""
    for partition in [*partitions, None]:
        rows = (
            reference
            if partition is None
            else reference.filter(pc.equal(reference["p"], partition.split("=")[1]))
        )
        ts = rows.column("ts")
        [row] = handle.statistics(partition, ["ts"])
        expected = pc.min_max(ts).as_py()
        assert (row["min"], row["max"]) == (expected["min"], expected["max"]), partition
        assert row["null_count"] == ts.null_count, partition
        assert row["distinct_count"] == len(pc.unique(ts.drop_null())), partition
        truth = sorted(
            (d["values"], d["counts"]) for d in pc.value_counts(ts.drop_null()).to_pylist()
        )
        assert sorted(handle.frequencies("ts", partition)) == truth, partition
        bins = handle.histogram("ts", partition).rows()
        assert sum(b["count"] for b in bins) == len(ts) - ts.null_count, partition
        assert bins[0]["lower"] == expected["min"] and bins[-1]["upper"] == expected["max"]


def test_delta_table_with_int96_edge_timestamps_matches_delta_rs(spark, tmp_path) -> None:
    """As delta-rs's own test of ``table_with_edge_timestamps`` reads it: its pyarrow
    dataset with INT96 coerced (its DataFusion scan wraps year 9999 to 1816, and its
    ``to_pyarrow_table()`` fails as lakestats did)."""
    from deltalake import DeltaTable

    spark_file, nanos_file = _int96_files(spark, tmp_path)
    root = tmp_path / "edge_timestamps"
    _delta_table(root, {"spark": spark_file, "nanos": nanos_file})
    dataset = DeltaTable(str(root)).to_pyarrow_dataset(
        parquet_read_options=pads.ParquetReadOptions(coerce_int96_timestamp_unit="us")
    )
    reference = dataset.to_table(columns=["ts", "n", "p"])
    assert reference.schema.field("ts").type == pa.timestamp("us", "UTC")
    assert reference.num_rows == len(EDGES) + 1 + 4
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark)
    _check(handle, reference, ["p=spark", "p=nanos"])


def test_parquet_directory_with_int96_edge_timestamps_matches_duckdb(spark, tmp_path) -> None:
    spark_file, nanos_file = _int96_files(spark, tmp_path)
    root = tmp_path / "dir"
    for part, source in (("spark", spark_file), ("nanos", nanos_file)):
        (root / f"p={part}").mkdir(parents=True)
        shutil.copy(source, root / f"p={part}" / "f.parquet")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    reference = con.sql(
        f"SELECT ts, n, p FROM read_parquet('{root}/*/*.parquet', hive_partitioning = true)"
    ).to_arrow_table()
    reference = reference.cast(
        pa.schema([("ts", pa.timestamp("us")), ("n", pa.int32()), ("p", pa.string())])
    )
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark)
    _check(handle, reference, ["p=spark", "p=nanos"])
