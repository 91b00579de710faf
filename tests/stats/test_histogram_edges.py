"""Histogram bins hold exactly the values their reported edges say at every span and extreme.

Every value must be counted in the bin whose reported ``[lower, upper)`` contains it (the
last bin closed), at partition level and in the exact table histogram; a re-binned table
histogram stays within [min, max] and within its documented error bound. References are
NumPy counts over the reported edges and DuckDB over the data.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.stats import histogram as hist
from lakestats.stats import keys
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.histogram import bin_edges
from lakestats.stats.leaves import leaf_array, leaves_of


def _reported_counts(values: np.ndarray, bins: list[dict]) -> list[int]:
    """True count per reported bin: ``lower <= v < upper``, the last bin ``lower <= v``
    (and, for floats, the first bin everything below its lower edge: ``-inf``)."""
    out = []
    for i, b in enumerate(bins):
        inside = np.ones(len(values), dtype=bool) if i == 0 else values >= b["lower"]
        if i < len(bins) - 1:
            inside &= values < b["upper"]
        out.append(int(inside.sum()))
    return out


def _partition_bins(values: pa.Array, nbins: int) -> list[dict]:
    """A partition histogram computed by the accumulator, with the edges the reader reports."""
    table = pa.table({"x": values})
    [leaf] = leaves_of(table.schema)
    acc = ColumnAccumulator(leaf)
    acc.observe(leaf_array(table, leaf))
    result = acc.finalize(nbins, 1000)
    row = result.row
    edges = bin_edges(
        str(values.type),
        row["histogram_lower"],
        row["histogram_width"],
        row["histogram_bins"],
        row["max"],
        0,
        row["histogram_bins"],
    )
    return [
        {"lower": lo, "upper": hi, "count": int(c)}
        for (lo, hi), c in zip(edges, result.histogram, strict=True)
    ]


def _real_like_floats(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "issue": np.array([43.0, 53.8, 79.0]),
        "prices_2dp": rng.integers(0, 20_000, 5000) / 100,  # 0.00 .. 199.99
        "ints_as_doubles": rng.integers(-60, 1400, 5000).astype(np.float64),  # dep_delay
        "air_time": rng.integers(20, 357, 5000).astype(np.float64),
        "diamond_table": np.round(rng.normal(57, 2.2, 5000), 1),
        "negative_prices": -(rng.integers(1, 10_000, 3000) / 100),
        "tiny_steps": rng.integers(0, 1000, 3000) * 0.001 + 1e6,
    }


@pytest.mark.parametrize("nbins", [1000, 997, 50, 7])
def test_float_values_on_edges_land_in_the_reported_bin(nbins: int) -> None:
    rng = np.random.default_rng(nbins)
    for name, values in _real_like_floats(rng).items():
        values = np.append(values, [np.inf, -np.inf]) if name == "prices_2dp" else values
        bins = _partition_bins(pa.array(values, pa.float64()), nbins)
        assert [b["count"] for b in bins] == _reported_counts(values, bins), name


def test_issue_reproduction_53_8_is_in_the_bin_that_starts_at_53_8() -> None:
    built = hist.float_histogram(np.array([43.0, 53.8, 79.0]), np.ones(3, np.int64), 1000)
    assert built.lower + 300 * built.width == 53.8  # the edge the reader reports
    assert built.counts[299] == 0 and built.counts[300] == 1


def test_every_type_counts_values_on_edges_in_the_reported_bin() -> None:
    """Integers, decimals, dates and timestamps: values on every bin edge and in between."""
    rng = np.random.default_rng(3)
    ints = rng.integers(-500, 500, 4000)
    day0 = dt.date(1995, 1, 1)
    cases = {
        "int64": pa.array(ints, pa.int64()),
        "int32 stepped": pa.array(ints * 7, pa.int32()),
        "decimal": pa.array(
            [decimal.Decimal(int(v)).scaleb(-2) for v in ints], pa.decimal128(9, 2)
        ),
        "date": pa.array([day0 + dt.timedelta(days=int(v)) for v in ints], pa.date32()),
        "timestamp": pa.array(ints * 1_000_000 + 7, pa.timestamp("us")),
        "float32": pa.array((ints / 4).astype(np.float32)),
    }
    for name, values in cases.items():
        for nbins in (1000, 64, 9):
            bins = _partition_bins(values, nbins)
            as_py = np.array(values.to_pylist(), dtype=object)
            if pa.types.is_floating(values.type):
                as_py = as_py.astype(np.float64)
            assert [b["count"] for b in bins] == _reported_counts(as_py, bins), (name, nbins)
            top = max(values.to_pylist())
            assert bins[-1]["upper"] == top, (name, nbins)  # the last bin ends at max


def test_types_at_their_extremes_count_every_value_in_the_reported_bin() -> None:
    """Spans whose bin width needs more than a double's 53 bits (a decimal(38)'s whole range,
    int64's, nanoseconds over centuries): the reported edges are the ones counted in."""
    decimal.getcontext().prec = 60
    big = decimal.Decimal("9999999999999999999999999999.9999999999")
    tiny = decimal.Decimal("0.0000000001")
    i64 = np.iinfo(np.int64)
    cases = {
        "decimal(38, 10)": pa.array([big, -big, decimal.Decimal(0), tiny], pa.decimal128(38, 10)),
        "decimal(38, 0)": pa.array(
            [decimal.Decimal(10**38 - 1), -decimal.Decimal(10**38 - 1), decimal.Decimal(0),
             decimal.Decimal(1), decimal.Decimal(-1)], pa.decimal128(38, 0)),
        "int64": pa.array([i64.min, i64.max, 0, 1, -1, i64.max - 1], pa.int64()),
        "timestamp[ns]": pa.array(
            np.array(["1678-01-01T00:00", "2261-12-31T00:00", "1970-01-01T00:00",
                      "1970-01-01T00:00:00.000000001"], dtype="datetime64[ns]"),
            pa.timestamp("ns")),
    }
    for name, values in cases.items():
        for nbins in (1000, 64, 3):
            bins = _partition_bins(values, nbins)
            as_py = values.to_pylist()
            counted = [0] * len(bins)
            for v in as_py:
                inside = [
                    i for i, b in enumerate(bins)
                    if (i == 0 or b["lower"] <= v) and (i == len(bins) - 1 or v < b["upper"])
                ]
                assert len(inside) == 1, (name, nbins, v)
                counted[inside[0]] += 1
            assert [b["count"] for b in bins] == counted, (name, nbins)


def _histogram_json(capsys, args: list[str]) -> list[dict]:
    assert cli.main(["histogram", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["bins"]


@pytest.mark.spark
def test_cli_reproduction_partition_histogram(spark, tmp_path, capsys) -> None:
    table = tmp_path / "T"
    (table / "p=a").mkdir(parents=True)
    pq.write_table(pa.table({"x": [43.0, 53.8, 79.0]}), table / "p=a" / "f.parquet")
    stats = str(tmp_path / "S")
    assert cli.main(["analyze", str(table), "--stats-root", stats]) == 0
    capsys.readouterr()
    got = _histogram_json(
        capsys,
        [
            str(table),
            "--stats-root",
            stats,
            "--column",
            "x",
            "--partition",
            "p=a",
            "--start",
            "299",
            "--stop",
            "301",
        ],
    )
    assert [b["count"] for b in got] == [0, 1] and got[1]["lower"] == 53.8


@pytest.mark.spark
def test_exact_table_histogram_of_round_floats_matches_duckdb(spark, tmp_path) -> None:
    """dep_delay-like doubles over several partitions, frequencies complete: the exact
    table histogram counts each value in the bin its reported edges give, as DuckDB does."""
    rng = np.random.default_rng(12)
    root = tmp_path / "flights"
    parts = []
    for month in range(4):
        part = pa.table(
            {
                "dep_delay": pa.array(rng.integers(-30, 400, 3000).astype(np.float64)),
                "price": pa.array(rng.integers(0, 3000, 3000) / 100),
            }
        )
        (root / f"month={month}").mkdir(parents=True)
        pq.write_table(part, root / f"month={month}" / "d.parquet")
        parts.append(part)
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark, bins=1000, max_frequencies=100_000)
    con = duckdb.connect()
    con.register("t", pa.concat_tables(parts))
    for column in ("dep_delay", "price"):
        [row] = handle.statistics(None, [column])
        assert row["histogram_exact"] is True
        bins = handle.histogram(column).rows()
        for i, b in enumerate(bins):
            upper = "" if i == len(bins) - 1 else f" AND {column} < {b['upper']!r}"
            (count,) = con.execute(
                f"SELECT count(*) FROM t WHERE {column} >= {b['lower']!r}{upper}"
            ).fetchone()
            assert b["count"] == count, (column, i, b)
        for month in range(4):  # and every partition's histogram
            values = parts[month].column(column).to_numpy()
            bins = handle.histogram(column, f"month={month}").rows()
            assert [b["count"] for b in bins] == _reported_counts(values, bins), (column, month)


@pytest.mark.spark
def test_cli_reproduction_rebinned_histogram_stays_within_max(spark, tmp_path, capsys) -> None:
    table = tmp_path / "T"
    (table / "p=a").mkdir(parents=True)
    (table / "p=b").mkdir(parents=True)
    pq.write_table(
        pa.table({"k": pa.array([0] + [10] * 10, pa.int64())}), table / "p=a" / "f.parquet"
    )
    pq.write_table(
        pa.table({"k": pa.array([0, 0, 1, 2, 3], pa.int64())}), table / "p=b" / "f.parquet"
    )
    stats = str(tmp_path / "S")
    assert cli.main(["analyze", str(table), "--stats-root", stats, "--max-frequencies", "1"]) == 0
    capsys.readouterr()
    bins = _histogram_json(capsys, [str(table), "--stats-root", stats, "--column", "k"])
    assert sum(b["count"] for b in bins) == 16
    assert bins[0]["lower"] == 0 and bins[-1]["upper"] == 10
    assert all(b["upper"] <= 10 for b in bins)
    # ten values equal max: all of them are in the last bin, none spread past it
    tail = _histogram_json(
        capsys, [str(table), "--stats-root", stats, "--column", "k", "--start", "10"]
    )
    assert tail == [{"lower": 10, "upper": 10, "count": 10}]


def _straddling(partition_bins: list[list[dict]], edge: float) -> int:
    """The documented error bound at ``edge``: the counts of the partition bins that hold
    values on both sides of it (``lower < edge <= upper``; a partition's last bin ends at
    its max)."""
    return sum(
        b["count"] for bins in partition_bins for b in bins if b["lower"] < edge <= b["upper"]
    )


def _check_rebinned_bound(handle, column: str, partitions: list[str], values: np.ndarray) -> None:
    [row] = handle.statistics(None, [column])
    assert row["histogram_exact"] is False, column
    table_bins = _records(handle.histogram(column))
    lo, hi = values.min(), values.max()
    assert table_bins[0]["lower"] == lo and table_bins[-1]["upper"] == hi, column
    source = [_records(handle.histogram(column, p)) for p in partitions]
    true = np.array(_reported_counts(values, table_bins))
    got = np.array([b["count"] for b in table_bins])
    assert got.sum() == len(values)
    n = len(table_bins)
    # the error at every edge, as the README states it; the table's first and last edges
    # (min and the closed max) have none
    slack = [0] + [_straddling(source, b["lower"]) for b in table_bins[1:]] + [0]
    true_cum = np.concatenate([[0], np.cumsum(true)])
    got_cum = np.concatenate([[0], np.cumsum(got)])
    ranges = [(i, i + 1) for i in range(n)]
    ranges += [(i, j) for i in range(0, n, 7) for j in range(i + 1, n + 1, 11)]
    for a, b in ranges:
        error = abs(int(got_cum[b] - got_cum[a]) - int(true_cum[b] - true_cum[a]))
        assert error <= slack[a] + slack[b] + 1, (column, a, b, error, slack[a], slack[b])
    assert sum(slack) > 0  # the bound was exercised, not trivially zero


@pytest.mark.spark
def test_rebinned_histograms_hold_their_error_bound(spark, tmp_path) -> None:
    """Integer keys whose partitions' ranges end mid-bin, prices with 2 decimals, dates:
    frequencies truncated, so the table histogram is re-binned; it stays within [min, max]
    and every range of its bins is within the documented bound of the true count."""
    rng = np.random.default_rng(5)
    root = tmp_path / "sales"
    parts, names = [], []
    day0 = np.datetime64("2001-01-01")
    for p in range(5):
        start = 1000 * p + int(rng.integers(0, 300))
        keys_ = rng.integers(start, start + 1700 + 37 * p, 4000)  # ranges overlap, end mid-bin
        part = pa.table(
            {
                "sold_time_sk": pa.array(keys_, pa.int64()),
                "price": pa.array(rng.integers(100 * p, 50_000 + 999 * p, 4000) / 100),
                "day": pa.array(
                    day0 + rng.integers(0, 400 + 90 * p, 4000).astype("timedelta64[D]")
                ),
                "amount": pa.array(
                    [
                        decimal.Decimal(int(v)).scaleb(-2)
                        for v in rng.integers(0, 9999 * (p + 1), 4000)
                    ],
                    pa.decimal128(12, 2),
                ),
            }
        )
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(part, root / f"p={p}" / "d.parquet")
        parts.append(part)
        names.append(f"p={p}")
    handle = ls.open_table(str(root))
    handle.analyze(spark=spark, bins=100, max_frequencies=10)
    whole = pa.concat_tables(parts)
    for column in ("sold_time_sk", "price"):
        _check_rebinned_bound(handle, column, names, whole.column(column).to_numpy())
    day = whole.column("day").cast(pa.int32()).to_numpy().astype(np.int64)
    for column, numbers in (
        ("day", day),
        ("amount", np.array([int(v.scaleb(2)) for v in whole.column("amount").to_pylist()])),
    ):
        _check_rebinned_bound(_AsNumbers(handle, column), column, names, numbers)


def _records(bins) -> list[dict]:
    """A ``Histogram`` answer's bins as records (``_AsNumbers`` gives records already)."""
    return bins.rows() if hasattr(bins, "rows") else bins


class _AsNumbers:
    """The handle's histograms with dates and decimals as storage numbers (days, cents)."""

    def __init__(self, handle, column: str) -> None:
        self.handle, self.column = handle, column

    def statistics(self, partition, columns):
        return self.handle.statistics(partition, columns)

    def histogram(self, column: str, partition=None) -> list[dict]:
        def number(v: object) -> int:
            if isinstance(v, decimal.Decimal):
                return int(v.scaleb(2))
            return (v - dt.date(1970, 1, 1)).days

        return [
            {"lower": number(b["lower"]), "upper": number(b["upper"]), "count": b["count"]}
            for b in self.handle.histogram(column, partition).rows()
        ]


def test_rebin_point_mass_on_a_grid_edge_lands_in_the_bin_it_opens() -> None:
    from lakestats.stats.rebin import Grid, rebin

    grid = Grid(43.0, 0.036, 1000, False)
    point = keys.encode(pa.array([53.8]))[0].as_py()
    row = {"histogram_lower": point, "histogram_width": 0.0, "histogram_bins": 1, "max": point}
    spread = rebin(row, np.array([5]), grid, pa.float64())
    assert spread[300] == 5


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_integer_histogram_counts_every_value_in_its_reported_bin(order: str) -> None:
    """Values on a lattice of 6 but one (past the first offsets the gcd is taken from), in
    order (the bins summed as runs) and shuffled (the weighted tally): each bin holds the
    weight of exactly the values inside its reported edges (NumPy over the edges)."""
    rng = np.random.default_rng(8)
    values = np.unique(rng.integers(0, 20_000, 3000) * 6)
    values = np.append(values, values[-1] + 1)  # the off-lattice value makes the gcd 1
    if order == "shuffled":
        values = rng.permutation(values)
    counts = rng.integers(1, 1_000, len(values))
    built = hist.integer_histogram(values.astype(np.int64), counts, 64)
    span = int(values.max()) - int(values.min()) + 1  # gcd 1: the width is the span's 64th
    assert built is not None and built.width == float(-(-span // 64))
    edges = built.lower + np.arange(len(built.counts) + 1) * built.width
    expected, _ = np.histogram(values, bins=edges, weights=counts)
    assert built.counts.tolist() == expected.astype(np.int64).tolist()
