"""Order-preserving keys: byte order equals value order, and decode inverts encode."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import numpy as np
import pyarrow as pa
import pytest

from lakestats.stats import keys

rng = np.random.default_rng(7)

CASES = [
    pa.array(rng.integers(-(2**63), 2**63 - 1, 200, dtype=np.int64)),
    pa.array(rng.integers(-100, 100, 50).astype(np.int8)),
    pa.array(rng.integers(0, 2**64 - 1, 100, dtype=np.uint64)),
    pa.array(np.concatenate([rng.normal(0, 1e6, 200), [np.inf, -np.inf, 0.0, -1e-300, 1e-300]])),
    pa.array(rng.normal(0, 1, 50).astype(np.float32)),
    pa.array(
        [decimal.Decimal(int(v)).scaleb(-3) for v in rng.integers(-(10**15), 10**15, 100)],
        pa.decimal128(38, 3),
    ),
    pa.array(
        [decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-(10**6), 10**6, 100)],
        pa.decimal256(40, 2),
    ),
    pa.array(
        [
            decimal.Decimal("-9999999999999999999999999999999999.9999"),
            decimal.Decimal("1234567890123456789012345678901234.5678"),
            decimal.Decimal(0),
        ],
        pa.decimal128(38, 4),
    ),
    pa.array(["", "a", "ab", "b", "é", "日本", "zz" * 100, "\x00", "A"]),
    pa.array([b"", b"\x00", b"\x00\x00", b"\xff", b"a"]),
    pa.array([dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(9999, 12, 31)]),
    pa.array(
        [dt.datetime(1900, 1, 1), dt.datetime(2020, 2, 29, 23, 59, 59, 999999)],
        pa.timestamp("us", tz="Europe/Paris"),
    ),
    pa.array([dt.time(0, 0), dt.time(23, 59, 59)], pa.time64("us")),
    pa.array([True, False]),
]


def _sort_key(value: object) -> object:
    return value


@pytest.mark.parametrize("array", CASES, ids=lambda a: str(a.type))
def test_keys_sort_like_values_and_round_trip(array: pa.Array) -> None:
    encoded = keys.encode(array).to_pylist()
    decoded = [keys.decode(k, array.type) for k in encoded]
    expected = array.to_pylist()
    if pa.types.is_floating(array.type):
        expected = [float(v) + 0.0 for v in expected]
    assert decoded == expected
    by_key = [decoded[i] for i in sorted(range(len(encoded)), key=lambda i: encoded[i])]
    assert by_key == sorted(expected)


def test_nan_and_negative_zero_are_canonical() -> None:
    weird_nan = np.array([0x7FF8000000000001], dtype=np.uint64).view(np.float64)[0]
    encoded = keys.encode(pa.array([float("nan"), weird_nan, -0.0, 0.0, math.inf])).to_pylist()
    assert encoded[0] == encoded[1]
    assert encoded[2] == encoded[3]
    assert encoded[4] < encoded[0]  # NaN sorts above +inf


def test_json_forms() -> None:
    assert keys.to_json(float("nan")) == "NaN"
    assert keys.to_json(float("-inf")) == "-Infinity"
    assert keys.to_json(decimal.Decimal("1.50")) == "1.50"
    assert keys.to_json(dt.date(2020, 1, 2)) == "2020-01-02"
    assert keys.to_json(b"\x00\x01") == "AAE="


@pytest.mark.parametrize("array", CASES, ids=lambda a: str(a.type))
def test_vectorized_decode_matches_scalar_decode(array: pa.Array) -> None:
    encoded = keys.encode(array)
    assert keys.decode_array(encoded, array.type).to_pylist() == [
        keys.decode(k, array.type) for k in encoded.to_pylist()
    ]


def test_encode_value_of_floats_equals_encode_of_an_array() -> None:
    """The float fast path (no Arrow array, so no pandas import in an estimate process)
    gives the bytes ``encode`` gives, at both widths: NaN, ±0.0, ±inf, values float32 rounds
    or overflows, and 200 random magnitudes."""
    rng = np.random.default_rng(0)
    values = [float("nan"), -0.0, 0.0, 1.5, -2.25, float("inf"), -float("inf"), 1e-300,
              -1e300, 1e39, -1e39]
    values += [float(v) for v in rng.normal(size=200) * 10.0 ** rng.integers(-30, 30, 200)]
    for value in values:
        for dtype in (pa.float64(), pa.float32()):
            with np.errstate(over="ignore"):
                fast = keys.encode_value(value, dtype)
            assert fast == keys.encode(pa.array([value], dtype))[0].as_py(), (value, dtype)


def test_plain_key_of_integers_checks_the_types_range() -> None:
    """In range, every integer width keys as ``encode`` does; out of range there is no
    plain key (``encode_value`` then lets Arrow refuse it) rather than a wrong one."""
    for dtype in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(),
                  pa.uint64()):
        width, unsigned = dtype.bit_width, pa.types.is_unsigned_integer(dtype)
        low, high = (0, (1 << width) - 1) if unsigned else (-(1 << (width - 1)),
                                                            (1 << (width - 1)) - 1)
        for value in (low, high, 0, 1):
            assert keys.plain_key(value, dtype) == keys.encode(pa.array([value], dtype))[0].as_py()
        for value in (low - 1, high + 1):
            assert keys.plain_key(value, dtype) is None
            with pytest.raises((pa.ArrowInvalid, OverflowError)):
                keys.encode_value(value, dtype)


def test_plain_key_of_dates_and_timestamps_is_arrows() -> None:
    """A date in a date column and a datetime in a timestamp column (aware in a zoned
    one, naive in a naive one, a whole number of the unit) key as ``encode`` of the
    one-value Arrow array; anything else has no plain key (Arrow decides)."""
    import random
    import zoneinfo

    pick = random.Random(11)
    zones = [dt.UTC, dt.timezone(dt.timedelta(hours=-3, minutes=-30)),
             zoneinfo.ZoneInfo("Europe/Paris")]
    types = [pa.date32(), pa.date64()]
    types += [pa.timestamp(u, tz=z) for u in ("s", "ms", "us", "ns") for z in (None, "UTC",
                                                                               "+05:30")]
    plain = 0
    for dtype in types:
        for _ in range(400):
            if pa.types.is_date(dtype):
                value = dt.date.fromordinal(pick.randint(1, dt.date(9999, 12, 31).toordinal()))
            else:
                value = dt.datetime(1, 1, 2) + dt.timedelta(
                    microseconds=pick.randint(0, 315537811199999999))
                if pick.random() < 0.5:
                    value = dt.datetime(pick.randint(1678, 2261), 1, 1) + dt.timedelta(
                        seconds=pick.randint(0, 10**7), microseconds=pick.choice([0, 7000, 3]))
                if pick.random() < 0.6:
                    value = value.replace(tzinfo=pick.choice(zones))
            key = keys.plain_key(value, dtype)
            try:
                expected = keys.encode(pa.array([value], dtype))[0].as_py()
            except (pa.ArrowException, OverflowError, ValueError):
                expected = None
            if key is not None:
                plain += 1
                assert key == expected, (value, dtype)
    assert plain > 1500  # most of them take the plain path
    assert keys.plain_key(dt.datetime(2020, 1, 1), pa.date32()) is None
    assert keys.plain_key(dt.date(2020, 1, 1), pa.timestamp("us")) is None
    assert keys.plain_key(dt.time(1, 2), pa.time64("us")) is None
