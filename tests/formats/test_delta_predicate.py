"""``partition_predicate``: delta-rs replaces exactly the partitions it names.

Reference: the rows pyarrow keeps when it drops those partitions itself, and the files
delta-rs's own log lists for the other partitions (the same files before and after).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats.formats.delta_predicate import partition_predicate

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.string()),
        ("i", pa.int32()),
        ("d", pa.date32()),
        ("m", pa.decimal128(9, 2)),
    ]
)
KEYS = ["s", "i", "d", "m"]


def _rows() -> pa.Table:
    strings = ["a", "it's", None, "a", 'quo"te']
    ints = [1, 2, 3, None, 1]
    dates = [dt.date(2024, 1, 1), dt.date(2024, 1, 2), None, dt.date(2024, 1, 1),
             dt.date(2024, 1, 3)]
    money = [Decimal("1.50"), Decimal("2.00"), Decimal("0.00"), None, Decimal("1.50")]
    return pa.table(
        {"id": list(range(5)), "s": strings, "i": ints, "d": dates, "m": money}, schema=SCHEMA
    )


def _local(uri: str) -> str:
    return uri.removeprefix("file://")


def _read(uri: str) -> pa.Table:
    """The table's rows by delta-rs's own engine."""
    from deltalake import DeltaTable, QueryBuilder

    query = QueryBuilder().register("t", DeltaTable(uri)).execute("SELECT * FROM t")
    return pa.table(query.read_all()).select(SCHEMA.names).cast(SCHEMA)  # string views


def _files(uri: str) -> set[str]:
    """The table's data files, from the Delta log."""
    from deltalake import DeltaTable

    return set(DeltaTable(uri).file_uris())


@pytest.mark.parametrize("replaced", [[1], [2, 3], [0, 4], [1, 2, 3]])
def test_overwrite_with_the_predicate_replaces_exactly_those_partitions(
    tmp_path: Path, replaced: list[int]
) -> None:
    from deltalake import write_deltalake

    from lakestats.stats.keys import to_json

    uri = str(tmp_path / "t")
    rows = _rows()
    write_deltalake(uri, rows, partition_by=KEYS)
    before = _files(uri)
    partitions = [{k: to_json(rows[k][i].as_py()) for k in KEYS} for i in replaced]
    predicate = partition_predicate(partitions, SCHEMA, KEYS)
    assert predicate is not None
    # the replaced partitions' new rows: the same partition values, new ids
    chosen = rows.take(replaced)
    new = chosen.set_column(0, "id", pa.array([100 + i for i in replaced], pa.int64()))
    write_deltalake(uri, new, mode="overwrite", predicate=predicate, partition_by=KEYS)
    got = _read(uri).sort_by("id")
    kept = rows.filter(pa.array([i not in replaced for i in range(rows.num_rows)]))
    expected = pa.concat_tables([kept, new]).sort_by("id")
    assert got.equals(expected)
    after = _files(uri)
    # the files that left are exactly the replaced rows' files; every other file stays
    ids = {f: pq.ParquetFile(_local(f)).read()["id"].to_pylist() for f in before}
    left = {f for f in before if f not in after}
    assert left == {f for f, held in ids.items() if set(held) <= set(replaced)}
    assert len(left) == len(replaced)


def test_no_exact_literal_gives_none() -> None:
    schema = pa.schema([("f", pa.float64()), ("t", pa.timestamp("us")), ("s", pa.string())])
    assert partition_predicate([{"f": 1.5}], schema, ["f"]) is None
    assert partition_predicate([{"t": "2024-01-01T00:00:00"}], schema, ["t"]) is None
    assert partition_predicate([{"s": "x"}], schema, ["s", "missing"]) is None
    assert partition_predicate([], schema, ["s"]) is None
    assert partition_predicate([{"s": None}, {"s": "o'k"}], schema, ["s"]) == (
        """("s" IS NULL) OR ("s" = 'o''k')"""
    )


def test_empty_rows_with_the_predicate_empty_those_partitions(tmp_path: Path) -> None:
    from deltalake import write_deltalake

    uri = str(tmp_path / "t")
    rows = _rows()
    write_deltalake(uri, rows, partition_by=KEYS)
    predicate = partition_predicate([{"s": "it's", "i": 2, "d": "2024-01-02", "m": "2.00"}],
                                    SCHEMA, KEYS)
    write_deltalake(uri, SCHEMA.empty_table(), mode="overwrite", predicate=predicate,
                    partition_by=KEYS)
    got = _read(uri)
    assert sorted(got["id"].to_pylist()) == [0, 2, 3, 4]
    assert "it's" not in got["s"].to_pylist()
