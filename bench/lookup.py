"""Partial lookup latency and bytes read: a 1,000-column x 100,000-row table in 10 partitions.

Three lookups, each on a random partition: the statistics of 10 random columns, the top-10
frequencies of one column, and 100 bins of one histogram. Two modes each:

* "first touch": a reader whose manifest is loaded but which has not opened that partition's
  files yet (footer + data are read: what a planner fanning out over partitions pays);
* "warm": footers cached (data only).

Run against local disk and against an S3-compatible server (moto) on 127.0.0.1. Also prints
the three files' size per table column. Reading the whole ``statistics.parquet`` of a
partition with ``pq.read_table`` is the in-run competitor.

    python -m bench.lookup [--lookups 200]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import socket
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lakestats.api as ls
from bench.common import DATA, machine
from lakestats import fs
from lakestats.compute.session import get_spark
from lakestats.store import layout
from lakestats.store.reader import StatisticsReader

COLUMNS, ROWS, PARTITIONS = 1000, 100_000, 10


class _CountedFile:
    """A file whose reads are counted (wrapped by ``pa.PythonFile``)."""

    def __init__(self, handle: pa.NativeFile, counter: Counting) -> None:
        self._handle = handle
        self._counter = counter
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        data = self._handle.read(n)
        self._counter.bytes += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()

    def size(self) -> int:
        return self._handle.size()

    def close(self) -> None:
        self.closed = True
        self._handle.close()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False


class Counting:
    """Counts bytes read through the files a reader opens."""

    def __init__(self) -> None:
        self.bytes = 0

    def opener(self) -> Callable[[object, str], pa.PythonFile]:
        def open_file(filesystem: object, path: str) -> pa.PythonFile:
            return pa.PythonFile(_CountedFile(filesystem.open_input_file(path), self), mode="r")

        return open_file


def build_table(root: Path) -> Path:
    table_dir = root / "wide"
    if (table_dir / "_SUCCESS").exists():
        return table_dir
    rng = np.random.default_rng(42)
    per = ROWS // PARTITIONS
    for p in range(PARTITIONS):
        columns = {}
        for i in range(COLUMNS):
            kind = i % 4
            if kind == 0:
                columns[f"int_{i}"] = rng.integers(0, 1000, per)
            elif kind == 1:
                columns[f"float_{i}"] = rng.normal(100, 15, per)
            elif kind == 2:
                columns[f"cat_{i}"] = pa.array(rng.integers(0, 50, per).astype(str))
            else:
                columns[f"id_{i}"] = np.arange(p * per, (p + 1) * per) * 7 + i
        (table_dir / f"part={p}").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(columns), table_dir / f"part={p}" / "data.parquet")
    (table_dir / "_SUCCESS").touch()
    return table_dir


def p50_p99(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.99 * (len(ordered) - 1))] * 1000


def measure(root: str, s3: fs.S3Options | None, lookups: int, names: list[str]) -> None:
    rng = random.Random(7)
    numeric = [n for n in names if n.startswith(("int_", "float_"))]
    categorical = [n for n in names if n.startswith("cat_")]
    kinds = {
        "statistics of 10 columns": lambda r, p: r.column_statistics(p, rng.sample(names, 10)),
        "top-10 frequencies": lambda r, p: r.frequencies(p, rng.choice(categorical), 10),
        "100 histogram bins": lambda r, p: r.histogram(p, rng.choice(numeric), 0, 100),
    }
    print(f"{'lookup':28s} {'mode':12s} {'p50 ms':>8s} {'p99 ms':>8s} {'KiB read':>9s}")
    for label, lookup in kinds.items():
        for mode in ("first touch", "warm"):
            counter = Counting()
            reader = StatisticsReader(root, s3=s3, open_file=counter.opener())
            partitions = [p.name for p in reader.version.partitions]
            if mode == "warm":
                for p in partitions:
                    lookup(reader, p)
            samples, read = [], []
            for _ in range(lookups):
                if mode == "first touch":
                    reader._files.clear()
                part = rng.choice(partitions)
                before = counter.bytes
                start = time.perf_counter()
                lookup(reader, part)
                samples.append(time.perf_counter() - start)
                read.append(counter.bytes - before)
            p50, p99 = p50_p99(samples)
            print(
                f"{label:28s} {mode:12s} {p50:8.2f} {p99:8.2f} "
                f"{statistics.median(read) / 1024:9.1f}"
            )
    reader = StatisticsReader(root, s3=s3)
    entry = reader.version.partitions[0]
    filesystem, path = fs.resolve(layout.absolute(reader.root, entry.files["statistics"]), s3)
    samples = []
    for _ in range(max(5, lookups // 10)):
        start = time.perf_counter()
        pq.read_table(path, filesystem=filesystem)
        samples.append(time.perf_counter() - start)
    p50, p99 = p50_p99(samples)
    print(f"{'competitor: whole statistics.parquet':41s} {p50:8.2f} {p99:8.2f}")


def sizes(root: str) -> None:
    reader = StatisticsReader(root)
    totals = dict.fromkeys(layout.FILE_NAMES, 0)
    for entry in reader.version.partitions:
        for kind, rel in entry.files.items():
            totals[kind] += Path(layout.absolute(reader.root, rel)).stat().st_size
    n = len(reader.version.partitions) * len(reader.columns)
    print(
        "file size per table column and partition: "
        + ", ".join(f"{kind} {totals[kind] / n:.0f} B" for kind in totals)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lookups", type=int, default=200)
    args = parser.parse_args()
    print(
        f"# lookup  {dt.date.today()}  {COLUMNS} columns x {ROWS} rows, {PARTITIONS} "
        f"partitions  {machine()}"
    )
    table_dir = build_table(DATA)
    spark = get_spark("local[2]")
    local_root = str(DATA / "wide_stats")
    start = time.perf_counter()
    ls.open_table(str(table_dir), stats_root=local_root).analyze(spark=spark)
    print(f"analyze (lakestats, {COLUMNS} columns): {time.perf_counter() - start:.1f} s")
    names = [c["name"] for c in StatisticsReader(local_root).columns]
    sizes(local_root)
    print("\n## local disk")
    measure(local_root, None, args.lookups, names)

    import boto3
    from moto.server import ThreadedMotoServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        s3 = fs.S3Options(f"http://127.0.0.1:{port}", "us-east-1", "testing", "testing")
        boto3.client(
            "s3",
            endpoint_url=s3.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket="bench")
        remote = "s3://bench/wide_stats"
        ls.open_table(str(table_dir), stats_root=remote, s3=s3).analyze(spark=spark)
        print("\n## S3-compatible server (moto, 127.0.0.1)")
        measure(remote, s3, max(20, args.lookups // 4), names)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
