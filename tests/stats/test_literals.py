"""``--value`` text read as a value of the column's type.

Accepted values are compared with DuckDB's ``CAST`` of the same text; refused ones must be
one ``InvalidArgumentError`` line naming the type and an example, and the example itself
must parse. A huge exponent is refused without building the number.
"""

from __future__ import annotations

import datetime as dt
import decimal

import duckdb
import pyarrow as pa
import pytest

from lakestats.errors import InvalidArgumentError
from lakestats.stats import literals

ACCEPTED = [
    ("42", pa.int64(), "BIGINT"),
    ("-9223372036854775808", pa.int64(), "BIGINT"),
    ("255", pa.uint8(), "UTINYINT"),
    ("1e3", pa.int32(), "INTEGER"),
    ("-inf", pa.float64(), "DOUBLE"),
    ("inf", pa.float64(), "DOUBLE"),
    ("7.39", pa.float64(), "DOUBLE"),
    ("12.30", pa.decimal128(10, 2), "DECIMAL(10, 2)"),
    ("-99999999.99", pa.decimal128(10, 2), "DECIMAL(10, 2)"),
    ("2024-02-29", pa.date32(), "DATE"),
    ("2024-01-31 12:00:00", pa.timestamp("us"), "TIMESTAMP"),
    ("true", pa.bool_(), "BOOLEAN"),
]


@pytest.mark.parametrize(("text", "dtype", "sql"), ACCEPTED)
def test_accepted_values_equal_duckdbs_cast(text: str, dtype: pa.DataType, sql: str) -> None:
    got = literals.parse_value(text, "c", dtype)
    (want,) = duckdb.execute(f"SELECT CAST(? AS {sql})", [text]).fetchone()
    assert got == want and type(got) is type(want)


REFUSED = [
    ("abc", pa.int64(), "not a number"),
    ("", pa.int64(), "empty"),
    ("1.5", pa.int64(), "not an integer"),
    ("99999999999999999999", pa.int64(), "outside its range"),
    ("1e100000", pa.int64(), "outside its range"),
    ("256", pa.uint8(), "outside its range 0 .. 255"),
    ("1e400", pa.float64(), "outside its range"),
    ("2024-13-45", pa.date32(), ""),
    ("yesterday", pa.timestamp("us"), ""),
    ("1.234", pa.decimal128(10, 2), "over 2 digits after the point"),
    ("123456789", pa.decimal128(10, 2), "over 8 digits before the point"),
    ("1e100000", pa.decimal128(10, 2), "over 8 digits before the point"),
    ("!!not base64", pa.binary(), "not base64"),
    ("maybe", pa.bool_(), ""),
]


@pytest.mark.parametrize(("text", "dtype", "why"), REFUSED)
def test_refused_values_name_type_and_example(text: str, dtype: pa.DataType, why: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        literals.parse_value(text, "c", dtype)
    message = str(info.value)
    assert "\n" not in message and len(message) < 200
    assert f"column 'c' ({dtype})" in message and why in message
    example = message.rsplit("write e.g. ", 1)[1].split(" (")[0].split(",")[0]
    literals.parse_value(example, "c", dtype)  # the example is valid


def test_examples_parse_for_every_type() -> None:
    for dtype in [pa.int8(), pa.float32(), pa.decimal128(38, 10), pa.decimal128(5, 0),
                  pa.date32(), pa.timestamp("ns"), pa.timestamp("us", tz="UTC"), pa.string(),
                  pa.binary(), pa.bool_()]:
        example = literals.example_of(dtype).split(" (")[0].split(",")[0]
        value = literals.parse_value(example, "c", dtype)
        assert value is not None, dtype
    assert literals.parse_value("aGVsbG8=", "c", pa.binary()) == b"hello"
    assert literals.parse_value("2024-01-31", "c", pa.date32()) == dt.date(2024, 1, 31)
    assert literals.parse_value("1.5", "c", pa.decimal128(5, 1)) == decimal.Decimal("1.5")
