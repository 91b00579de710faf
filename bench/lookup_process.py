"""A whole CLI lookup process against a minimal pyarrow process reading the same file.

    python -m bench.lookup_process [--runs 15] [--baseline-code /path/to/older/checkout]
                                   [--dir bench/data/<branch>]

A (lakestats): ``lakestats show T --partition p=0 --columns c_1 --json`` as a new process,
the table-level ``lakestats show T --columns c_1 --json`` (which also opens the table,
a Parquet directory, to check staleness) and a 2-conjunct ``lakestats estimate``.
B (the yardstick): ``python -c`` that imports ``pyarrow.parquet`` and reads one column chunk
(``null_count``) of the same partition's ``statistics.parquet``.
Also ``python -c pass`` (the interpreter alone) and, with ``--baseline-code``, the same CLI
lookup with another checkout on ``PYTHONPATH`` (before/after in one run). The commands run
in turn, A B … A B …, so a machine whose speed drifts slows all of them alike; medians of
``--runs`` whole-process wall and CPU (user + system) times, and the median of the
pairwise ratios A/B (CPU time is the steadier figure on a machine shared with other jobs).

Then warm lookups inside one process (a reader that has served the partition before):
median of 500 ``column_statistics`` calls, for each code version.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import DATA, machine

REPO = Path(__file__).resolve().parents[1]
COLUMNS, ROWS, PARTITIONS = 200, 2_000, 2
NEUTRAL = tempfile.gettempdir()  # the processes' working directory: not a checkout, whose
# ``lakestats`` package ``python -m``/``-c`` would import ahead of PYTHONPATH

_WARM = """
import time
from lakestats.store.reader import StatisticsReader
from lakestats.store.handle import StatisticsStore
reader = StatisticsReader(StatisticsStore({root!r}))
reader.column_statistics("p=0", ["c_1"])
start = time.process_time()
for _ in range(500):
    reader.column_statistics("p=0", ["c_1"])
print((time.process_time() - start) / 500 * 1e6)
"""


def build(root: Path) -> Path:
    """A ``COLUMNS``-column Parquet directory in ``PARTITIONS`` partitions, analyzed once."""
    table_dir = root / "lookup_process"
    if (table_dir / "_lakestats" / "latest.json").exists():
        return table_dir
    rng = np.random.default_rng(5)
    for p in range(PARTITIONS):
        columns = {}
        for i in range(COLUMNS):
            if i % 3 == 2:
                columns[f"c_{i}"] = pa.array(rng.integers(0, 40, ROWS).astype(str))
            elif i % 3 == 1:
                columns[f"c_{i}"] = rng.normal(size=ROWS)
            else:
                columns[f"c_{i}"] = rng.integers(0, 10_000, ROWS)
        (table_dir / f"p={p}").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(columns), table_dir / f"p={p}" / "data.parquet")
    import lakestats.api as ls
    from lakestats.compute.session import get_spark

    ls.open_table(str(table_dir)).analyze(spark=get_spark("local[2]"))
    return table_dir


def _env(code: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(code)}


def _time(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        command, env=env, check=True, stdout=subprocess.DEVNULL, timeout=120, cwd=NEUTRAL
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline-code", type=Path, help="an older checkout to compare")
    parser.add_argument("--dir", type=Path, default=DATA, help="where the table is built")
    args = parser.parse_args()
    table = build(args.dir)
    from lakestats.store import layout
    from lakestats.store.handle import StatisticsStore
    from lakestats.store.reader import StatisticsReader

    reader = StatisticsReader(StatisticsStore(str(table / "_lakestats")))
    entry = reader.partition("p=0")
    stats_file = layout.absolute(reader.root, entry.files["statistics"])
    python = sys.executable
    cli = ["-m", "lakestats.cli", "show", str(table), "--partition", "p=0", "--columns", "c_1"]
    table_cli = ["-m", "lakestats.cli", "show", str(table), "--columns", "c_1", "--json"]
    estimate_cli = ["-m", "lakestats.cli", "estimate", str(table), "--where",
                    "c_0 < 5000 AND c_2 = '7'", "--json"]
    commands = {
        "lakestats show (this code)": ([python, *cli, "--json"], _env(REPO)),
        "lakestats show table level (this code)": ([python, *table_cli], _env(REPO)),
        "lakestats estimate (this code)": ([python, *estimate_cli], _env(REPO)),
        "pyarrow: read one column chunk": (
            [
                python,
                "-c",
                "import pyarrow.parquet as pq; "
                f"print(pq.ParquetFile({stats_file!r}).read_row_group(0, columns=['null_count'])"
                ".column(0)[1])",
            ],
            _env(REPO),
        ),
        "python -c pass": ([python, "-c", "pass"], _env(REPO)),
    }
    if args.baseline_code:
        commands[f"lakestats show ({args.baseline_code})"] = (
            [python, *cli, "--json"],
            _env(args.baseline_code),
        )
        commands[f"lakestats show table level ({args.baseline_code})"] = (
            [python, *table_cli],
            _env(args.baseline_code),
        )
        commands[f"lakestats estimate ({args.baseline_code})"] = (
            [python, *estimate_cli],
            _env(args.baseline_code),
        )
    print(
        f"# lookup_process  {COLUMNS} columns x {ROWS} rows, {PARTITIONS} partitions  "
        f"{args.runs} runs each, interleaved  {machine()}"
    )
    for command, env in commands.values():  # warm the page cache once
        _time(command, env)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, (command, env) in commands.items():
            samples[name].append(_time(command, env))
    yardstick = samples["pyarrow: read one column chunk"]
    for label, which in (("wall", 0), ("CPU (user + system)", 1)):
        print(f"\n{label} seconds per process")
        print(f"{'process':48s} {'median':>8s} {'min':>7s} {'max':>7s} {'/ pyarrow':>9s}")
        base = statistics.median(s[which] for s in yardstick)
        for name, runs in samples.items():
            values = [r[which] for r in runs]
            median = statistics.median(values)
            print(
                f"{name:48s} {median:8.3f} {min(values):7.3f} {max(values):7.3f} "
                f"{median / base:9.2f}"
            )
        for name in ("lakestats show (this code)", "lakestats show table level (this code)",
                     "lakestats estimate (this code)"):
            pairs = statistics.median(
                a[which] / b[which] for a, b in zip(samples[name], yardstick, strict=True)
            )
            print(f"median of pairwise ratios {name} / pyarrow: {pairs:.2f} (target <= 1.5)")

    print(
        "\nwarm lookup in one process (statistics of 1 column): CPU µs per lookup over 500,"
        " median of 5 processes per code version, alternating"
    )
    codes = {"this code": REPO}
    if args.baseline_code:
        codes[str(args.baseline_code)] = args.baseline_code
    warm: dict[str, list[float]] = {name: [] for name in codes}
    for _ in range(5):
        for name, code in codes.items():
            done = subprocess.run(
                [python, "-c", _WARM.format(root=str(table / "_lakestats"))],
                env=_env(code),
                cwd=NEUTRAL,
                check=True,
                capture_output=True,
                text=True,
                timeout=300,
            )
            warm[name].append(float(done.stdout))
    for name, values in warm.items():
        print(f"{name:48s} {statistics.median(values):9.1f} µs")

if __name__ == "__main__":
    main()
