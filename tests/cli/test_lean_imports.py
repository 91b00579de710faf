"""Lookups import neither pandas, Spark, pyarrow.compute/dataset nor a format library.

Each lookup runs in a fresh Python process (the CLI's read commands and the Python API),
which reports the heavy modules it ended up with; its answer is checked against pyarrow
counts computed here, so a lean path that returned something else would fail too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls

HEAVY = (
    "pandas",
    "pyspark",
    "py4j",
    "pyiceberg",
    "deltalake",
    "pypaimon",
    "hudi",
    "sqlalchemy",
    "boto3",
    "rich",
    "datasketches",
    "pyarrow.compute",
    "pyarrow.dataset",
)

_RUN = """
import json, sys
{body}
heavy = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in {heavy!r}))
sys.stderr.write("\\nHEAVY=" + json.dumps(heavy) + "\\n")
"""


def _run(body: str) -> tuple[str, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", _RUN.format(body=body, heavy=HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    heavy = json.loads(done.stderr.rsplit("HEAVY=", 1)[1])
    return done.stdout, heavy


def _cli(*argv: str) -> tuple[object, list[str]]:
    body = f"from lakestats.cli import main\nassert main({list(argv)!r}) == 0"
    stdout, heavy = _run(body)
    return json.loads(stdout), heavy


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory, spark) -> tuple[str, dict[int, pa.Table]]:
    root = tmp_path_factory.mktemp("lean") / "t"
    rng = np.random.default_rng(3)
    parts = {}
    for p in range(2):
        n = 400
        table = pa.table(
            {
                "x": pa.array(rng.integers(0, 50, n)),
                "y": pa.array(rng.normal(size=n)),
                "s": pa.array([f"v{v}" for v in rng.integers(0, 12, n)]),
                "d": pa.array(rng.integers(0, 3000, n).astype(np.int32)).view(pa.date32()),
                "ts": pa.array(rng.integers(0, 10**15, n)).view(pa.timestamp("us", tz="UTC")),
            }
        )
        (root / f"p={p}").mkdir(parents=True)
        pq.write_table(table, root / f"p={p}" / "data.parquet")
        parts[p] = table
    ls.open_table(str(root)).analyze(spark=spark)
    return str(root), parts


def test_cli_partition_lookups_stay_lean(analyzed) -> None:
    root, parts = analyzed
    table = parts[0]
    shown, heavy = _cli("show", root, "--partition", "p=0", "--columns", "x,d,ts", "--json")
    assert heavy == []
    by_name = {c["name"]: c for c in shown["columns"]}
    x = table.column("x").to_pylist()
    assert (by_name["x"]["min"], by_name["x"]["max"]) == (min(x), max(x))
    assert by_name["x"]["distinct_count"] == len(set(x))
    days = table.column("d").to_pylist()
    assert by_name["d"]["min"] == min(days).isoformat()
    stamps = table.column("ts").to_pylist()
    assert by_name["ts"]["max"] == max(stamps).isoformat()

    top, heavy = _cli("frequencies", root, "--column", "s", "--partition", "p=1", "--json")
    assert heavy == []
    expected = Counter(parts[1].column("s").to_pylist())
    assert {row["value"]: row["frequency"] for row in top["frequencies"]} == dict(expected)

    bins, heavy = _cli("histogram", root, "--column", "x", "--partition", "p=0", "--json")
    assert heavy == []
    bins = bins["bins"]
    assert sum(b["count"] for b in bins) == len(x)
    last = len(bins) - 1
    assert [b["count"] for b in bins] == [
        sum(1 for v in x if b["lower"] <= v and (v < b["upper"] or (i == last and v == b["upper"])))
        for i, b in enumerate(bins)
    ]


def test_cli_table_level_lookups_stay_lean(analyzed) -> None:
    root, parts = analyzed
    both = pa.concat_tables(parts.values())
    expected = Counter(both.column("s").to_pylist())
    top, heavy = _cli("frequencies", root, "--column", "s", "--top", "3", "--json")
    assert heavy == []
    assert [row["frequency"] for row in top["frequencies"]] == sorted(
        expected.values(), reverse=True
    )[:3]

    holders, heavy = _cli("partitions-containing", root, "--column", "s", "--value", "v3", "--json")
    assert heavy == []
    counts = {
        f"p={p}": t.column("s").to_pylist().count("v3") for p, t in parts.items()
    }
    assert {h["name"]: h["frequency"] for h in holders["partitions"]} == {
        k: v for k, v in counts.items() if v
    }

    listed, heavy = _cli("partitions", root, "--json")
    assert heavy == []
    assert sorted(p["name"] for p in listed["partitions"]) == ["p=0", "p=1"]
    history, heavy = _cli("history", root, "--json")
    assert heavy == [] and len(history) == 1


def test_python_lookups_stay_lean(analyzed) -> None:
    root, parts = analyzed
    body = (
        "import lakestats.api as ls\n"
        f"t = ls.open_table({root!r})\n"
        "[row] = t.statistics('p=1', columns=['y'])\n"
        "print(json.dumps([row['null_count'], row['row_count'], row['min'],"
        " sum(t.histogram('y', 'p=1').counts), list(t.frequencies('s', 'p=1', top=1))]))"
    )
    stdout, heavy = _run(body)
    assert heavy == []
    nulls, rows, low, binned, [[value, count]] = json.loads(stdout)
    y = parts[1].column("y").to_pylist()
    top_value, top_count = Counter(parts[1].column("s").to_pylist()).most_common(1)[0]
    assert (nulls, rows, low, binned, count) == (0, len(y), min(y), len(y), top_count)


def test_cli_table_level_show_of_a_parquet_directory_stays_lean(analyzed) -> None:
    root, parts = analyzed
    shown, heavy = _cli("show", root, "--columns", "x,s", "--json")
    assert heavy == []
    both = pa.concat_tables(parts.values())
    by_name = {c["name"]: c for c in shown["columns"]}
    x = both.column("x").to_pylist()
    assert (by_name["x"]["min"], by_name["x"]["max"]) == (min(x), max(x))
    assert by_name["s"]["distinct_count"] == len(set(both.column("s").to_pylist()))
    assert shown["row_count"] == both.num_rows


ESTIMATES = [
    "x < 20 AND s = 'v3'",
    "x BETWEEN 5 AND 9 OR y > 0.5",
    "s IN ('v1', 'v2') AND x = 7",
    "s LIKE 'v1%'",
    "y IS NULL OR NOT x = 3",
    "x IN (1, 2, 3)",
    "s >= 'v5'",
    "d >= DATE '1973-01-01' AND d < DATE '1975-06-30'",
    "d = DATE '1972-03-04'",
    "ts < TIMESTAMP '2001-09-09 01:46:40'",
]


@pytest.mark.parametrize("where", ESTIMATES)
@pytest.mark.parametrize("table_level", [False, True])
def test_cli_estimate_stays_lean(analyzed, where: str, table_level: bool) -> None:
    """An estimate process imports no pandas (nor the other heavy modules but
    pyarrow.compute) and answers what an estimate in this process answers."""
    root, _ = analyzed
    argv = ["estimate", root, "--where", where, "--json"]
    if table_level:
        argv.append("--table-level")
    answer, heavy = _cli(*argv)
    assert [m for m in heavy if not m.startswith("pyarrow.compute")] == []
    expected = ls.open_table(root).estimate(where, table_level=table_level).to_json()
    assert answer["row_count"] == pytest.approx(expected["row_count"], rel=0, abs=0)
    assert (answer["lower"], answer["upper"]) == (expected["lower"], expected["upper"])


def test_cli_estimate_of_simple_comparisons_does_not_import_sqlglot(analyzed) -> None:
    """``column op literal`` conditions joined by AND compile without sqlglot."""
    root, _ = analyzed
    body = (
        "from lakestats.cli import main\n"
        f"assert main(['estimate', {root!r}, '--where', \"x < 20 AND s = 'v3'\", '--json'])"
        " == 0\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'sqlglot')))"
    )
    stdout, heavy = _run(body)
    assert [m for m in heavy if not m.startswith("pyarrow.compute")] == []
    assert json.loads(stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize(
    "layout",
    [
        ["p=0", "p=1"],
        ["p=-3", "p=007", "p=__HIVE_DEFAULT_PARTITION__"],
        ["p=2147483647", "p=2147483648"],  # past int32: a string
        ["p=a%2Fb", "p=1"],
        ["y=2020/m=1", "y=2021/m=x"],
        ["p=+5", "p=6"],  # not sure how Arrow parses "+5": asks pyarrow.dataset
    ],
)
def test_parquet_directory_schema_is_pyarrow_hive_discovery(tmp_path: Path, layout) -> None:
    import pyarrow.dataset as pads

    from lakestats.formats.parquet_dir import ParquetTableFormat

    for i, directory in enumerate(layout):
        (tmp_path / directory).mkdir(parents=True)
        pq.write_table(
            pa.table({"v": pa.array([i], pa.int16()), "w": ["x"]}),
            tmp_path / directory / "d.parquet",
        )
    files = sorted(str(f) for f in tmp_path.rglob("*.parquet"))
    expected = pads.dataset(
        files,
        format="parquet",
        partitioning=pads.HivePartitioning.discover(infer_dictionary=False),
        partition_base_dir=str(tmp_path),
    )
    table = ParquetTableFormat(str(tmp_path))
    assert table._schema.equals(expected.schema, check_metadata=True)
    read = expected.to_table()
    names = [f.name for f in table._partition_schema]
    want = sorted(repr(tuple(row[n] for n in names)) for row in read.select(names).to_pylist())
    got = sorted(repr(tuple(plan.values[n] for n in names)) for plan in table.plan())
    assert got == want


def test_a_partition_field_with_only_nulls_is_pyarrows_error(tmp_path: Path) -> None:
    from lakestats.errors import NotATableError
    from lakestats.formats.parquet_dir import ParquetTableFormat

    (tmp_path / "p=__HIVE_DEFAULT_PARTITION__").mkdir()
    pq.write_table(pa.table({"v": [1]}), tmp_path / "p=__HIVE_DEFAULT_PARTITION__" / "d.parquet")
    with pytest.raises(NotATableError, match=r"not a readable Parquet directory.*infer type"):
        ParquetTableFormat(str(tmp_path))
