"""Theta sketches hashed as Iceberg and DataSketches Java hash: checked value by value
against ``mmh3`` (MurmurHash3_x64_128) and the ``datasketches`` package."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import uuid

import datasketches as ds
import mmh3
import numpy as np
import pyarrow as pa
import pytest

from lakestats.stats import theta


def _reference_hash(value: bytes) -> int:
    """Java ``UpdateSketch.update(ByteBuffer)``: MurmurHash3_x64_128 seed 9001, h1 >>> 1."""
    return mmh3.hash64(value, seed=9001, signed=False)[0] >> 1


def _java_bytes(value: object, iceberg_type: str) -> bytes:
    """Iceberg ``Conversions.toByteBuffer`` of one value, written out by hand."""
    if iceberg_type in ("int", "date"):
        days = (value - dt.date(1970, 1, 1)).days if isinstance(value, dt.date) else value
        return int(days).to_bytes(4, "little", signed=True)
    if iceberg_type in ("long", "timestamp"):
        if isinstance(value, dt.datetime):
            value = (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        return int(value).to_bytes(8, "little", signed=True)
    if iceberg_type == "float":
        return np.float32(value).tobytes()
    if iceberg_type == "double":
        return np.float64(value).tobytes()
    if iceberg_type == "string":
        return value.encode()
    if iceberg_type == "boolean":
        return b"\x01" if value else b"\x00"
    if iceberg_type.startswith("decimal"):
        scale = int(iceberg_type.split(",")[1].rstrip(")"))
        unscaled = int(value.scaleb(scale))
        return unscaled.to_bytes((unscaled.bit_length() + 8) // 8 if unscaled >= 0
                                 else ((~unscaled).bit_length() + 8) // 8, "big", signed=True)
    return bytes(value)


def _wide(seed: int) -> int:
    return random.Random(seed).randint(-(10**35), 10**35)


CASES = [
    ("int", pa.int32(), lambda r: int(r.integers(-(2**31), 2**31))),
    ("long", pa.int64(), lambda r: int(r.integers(-(2**62), 2**62))),
    ("float", pa.float32(), lambda r: float(np.float32(r.normal() * 1e3))),
    ("double", pa.float64(), lambda r: float(r.normal() * 1e6)),
    ("date", pa.date32(), lambda r: dt.date(1970, 1, 1) + dt.timedelta(int(r.integers(-7e5, 9e5)))),
    (
        "timestamp",
        pa.timestamp("us"),
        lambda r: dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=int(r.integers(0, 10**15))),
    ),
    ("boolean", pa.bool_(), lambda r: bool(r.integers(0, 2))),
    (
        "string",
        pa.string(),
        lambda r: "".join(chr(int(c)) for c in r.integers(32, 0x3000, int(r.integers(0, 70)))),
    ),
    ("binary", pa.binary(), lambda r: bytes(r.integers(0, 256, int(r.integers(1, 40))).tolist())),
    ("fixed[16]", pa.binary(16), lambda r: uuid.UUID(int=int(r.integers(0, 2**62))).bytes),
    (
        "decimal(38, 3)",
        pa.decimal128(38, 3),
        lambda r: decimal.Decimal(_wide(int(r.integers(0, 2**31)))) / 1000,
    ),
    (
        "decimal(9, 2)",
        pa.decimal128(9, 2),
        lambda r: decimal.Decimal(int(r.integers(-(10**9) + 1, 10**9))) / 100,
    ),
]


@pytest.mark.parametrize(("iceberg_type", "arrow_type", "draw"), CASES, ids=[c[0] for c in CASES])
def test_hashes_equal_the_reference_value_by_value(iceberg_type, arrow_type, draw) -> None:
    rng = np.random.default_rng(7)
    values = [draw(rng) for _ in range(2_000)]
    if iceberg_type.startswith("decimal"):
        values += [decimal.Decimal(s) for s in ("0", "1.28", "-1.28", "-1.29", "1.27", "-0.01")]
    array = pa.array([*values, None], arrow_type)
    got = theta.hashes_of(array, iceberg_type)
    kind = iceberg_type.split("[")[0]
    expected = [_reference_hash(_java_bytes(v, kind)) for v in values]
    expected = [h for v, h in zip(values, expected, strict=True) if _java_bytes(v, kind)]
    assert got.tolist() == expected


def test_datasketches_hashes_the_same_strings_and_longs() -> None:
    """The ``datasketches`` package (C++, the Java hash) fed value by value gives the same
    retained hashes and theta as the vectorised sketch, in exact and estimation mode."""
    rng = np.random.default_rng(3)
    words = ["", *("".join(chr(int(c)) for c in rng.integers(32, 0x2000, 12)) for _ in range(3000))]
    longs = rng.integers(0, 10**6, 100_000)
    for values, kind in ((words, "string"), (longs.tolist(), "long")):
        reference = ds.update_theta_sketch(theta.LG_K)
        for v in values:
            reference.update(v)
        union = ds.theta_union(theta.LG_K)
        union.update(reference)
        expected = union.get_result()
        mine = ds.compact_theta_sketch.deserialize(
            theta.sketch_of(theta.hashes_of(pa.array(values), kind))
        )
        assert sorted(mine) == sorted(expected)
        assert mine.theta64 == expected.theta64
        true = len({v for v in values if v != ""})
        assert mine.get_lower_bound(2) <= true <= mine.get_upper_bound(2)


def test_serialized_bytes_are_what_datasketches_writes() -> None:
    for values in ([], ["x"], ["a", "b", "c"], [str(i) for i in range(20_000)]):
        mine = theta.sketch_of(theta.hashes_of(pa.array(values, pa.string()), "string"))
        assert ds.compact_theta_sketch.deserialize(mine).serialize() == mine


def test_union_is_the_sketch_of_the_union() -> None:
    rng = np.random.default_rng(5)
    parts = [pa.array(rng.integers(0, 50_000, 20_000)) for _ in range(5)]
    sketches = [theta.sketch_of(theta.hashes_of(p, "long")) for p in parts]
    whole = theta.sketch_of(theta.hashes_of(pa.concat_arrays(parts), "long"))
    assert theta.union(sketches) == whole
    assert theta.union([]) == theta.sketch_of(np.zeros(0, np.uint64))


def test_int_read_as_int64_and_timestamp_in_nanoseconds_hash_as_iceberg_types() -> None:
    """The Iceberg type decides the bytes, not the Arrow type the values were read as."""
    ints = pa.array([1, -5, 70000], pa.int64())
    narrow = ints.cast(pa.int32())
    assert theta.hashes_of(ints, "int").tolist() == theta.hashes_of(narrow, "int").tolist()
    ts = pa.array([1_700_000_000_123_456_000], pa.timestamp("ns"))
    assert theta.hashes_of(ts, "timestamp").tolist() == [
        _reference_hash((1_700_000_000_123_456).to_bytes(8, "little"))
    ]


def test_foreign_sketch_refused() -> None:
    with pytest.raises(theta.ThetaSketchError):
        theta.parse(b"\x02\x03\x03\x00\x00\x1a\x00\x00" + bytes(8))
