"""Shared fixtures: one local[2] SparkSession per test session, generated tables, DuckDB."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

# Real tables other engines wrote, kept beside the clone (their README asks that they not be
# copied into a repository); LAKESTATS_FIXTURES points elsewhere. Every format is also covered
# by tables the engines the Makefile installs write during the run, so a clone alone passes.
FIXTURES = Path(
    os.environ.get("LAKESTATS_FIXTURES")
    or Path(__file__).resolve().parents[2] / "shared" / "fixtures"
)


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run (local[2], as CI's machine has 2 cores)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from lakestats.compute.session import get_spark

    session = get_spark("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The other engines' tables; absent, their tests skip saying where they were looked for
    (CI, which clones with ../shared beside it, sets LAKESTATS_REQUIRE_FIXTURES: it fails)."""
    if not FIXTURES.is_dir():
        where = (
            f"shared fixtures not found at {FIXTURES}: put ../shared beside the clone, or set "
            "LAKESTATS_FIXTURES to their folder"
        )
        if os.environ.get("LAKESTATS_REQUIRE_FIXTURES") == "1":
            pytest.fail(where)
        pytest.skip(where)
    return FIXTURES


def mixed_table(n: int, seed: int = 0) -> pa.Table:
    """A table with every kind of column and the awkward values each kind can hold."""
    rng = np.random.default_rng(seed)
    ints = rng.integers(-50, 50, n)
    int_nulls = rng.random(n) < 0.1
    floats = rng.normal(0, 100, n)
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    for i, value in enumerate(specials):
        if i < n:
            floats[i * 7 % n] = value
    float_nulls = rng.random(n) < 0.05
    words = ["alpha", "beta", "gamma", "δέλτα", "日本語", "", "x" * 5000, "emoji 🎉"]
    strings = [words[i] for i in rng.integers(0, len(words), n)]
    string_nulls = rng.random(n) < 0.1
    decimals = [
        decimal.Decimal(int(a) * 10**18 + int(b)).scaleb(-4)
        for a, b in zip(rng.integers(-(10**15), 10**15, n), rng.integers(0, 10**18, n), strict=True)
    ]
    small_decimals = [decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-(10**6), 10**6, n)]
    base = dt.date(2020, 1, 1)
    dates = [base + dt.timedelta(days=int(d)) for d in rng.integers(-3000, 3000, n)]
    stamps = [
        dt.datetime(2021, 5, 1, 12) + dt.timedelta(seconds=int(s))
        for s in rng.integers(-(10**8), 10**8, n)
    ]
    bools = rng.random(n) < 0.3
    blobs = [bytes(rng.integers(0, 256, int(k)).astype(np.uint8)) for k in rng.integers(0, 6, n)]
    struct = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 10, n)), pa.array([f"s{i % 13}" for i in range(n)])],
        names=["x", "name.with.dot"],
        mask=pa.array(rng.random(n) < 0.1),
    )
    lists = pa.array(
        [[int(v) for v in range(int(k))] if k >= 0 else None for k in rng.integers(-1, 4, n)],
        pa.list_(pa.int64()),
    )
    maps = pa.array(
        [[("k", int(k))] for k in rng.integers(0, 3, n)], pa.map_(pa.string(), pa.int64())
    )
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "small int": pa.array(ints.astype(np.int32), mask=int_nulls),
            "f64": pa.array(floats, mask=float_nulls),
            "f32": pa.array(rng.normal(0, 1, n).astype(np.float32)),
            "ünï": pa.array(strings, mask=pa.array(string_nulls)),
            "dec38": pa.array(decimals, pa.decimal128(38, 4)),
            "dec15": pa.array(small_decimals, pa.decimal128(15, 2)),
            "day": pa.array(dates, pa.date32()),
            "ts": pa.array(stamps, pa.timestamp("us")),
            "ts_tz": pa.array(stamps, pa.timestamp("us", tz="UTC")),
            "flag": pa.array(bools),
            "blob": pa.array(blobs, pa.binary()),
            "all_null": pa.array([None] * n, pa.float64()),
            "all_null_text": pa.array([None] * n, pa.string()),
            "nothing": pa.nulls(n),
            "col.with.dot": pa.array(rng.integers(0, 3, n)),
            "nested": struct,
            "items": lists,
            "props": maps,
        }
    )


_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End the test process with pytest's own status once everything is reported.

    After a whole run passed, the interpreter's teardown of native libraries (the AWS SDK
    under pyarrow's S3 filesystems, Spark Connect's gRPC channels, the JVM's py4j threads)
    sometimes aborted the process ("terminate called without an active exception"), which
    made a green run exit 134. The run's outcome is its tests', so the process exits here
    with their status, its streams flushed, without that teardown."""
    if _EXIT_STATUS and not os.environ.get("LAKESTATS_TEST_NATIVE_TEARDOWN"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])
