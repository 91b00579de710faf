"""Partial lookup latency and bytes read: a 1,000-column x 100,000-row table in 10 partitions.

Three lookups, each on a random partition: the statistics of 10 random columns, the top-10
frequencies of one column, and 100 bins of one histogram. Two modes each:

* "first touch": a reader whose manifest is loaded but which has not opened that partition's
  files yet (footer + data are read: what a planner fanning out over partitions pays);
* "warm": footers cached (data only).

Run against local disk and against an S3-compatible server (moto) on 127.0.0.1. Also prints
the three files' size per table column. Reading the whole ``statistics.parquet`` of a
partition with ``pq.read_table`` is the in-run competitor.

Fan-out (``--fanout``, or ``--fanout-only``): 10 random columns for every partition of a
table with 10,000 partitions x 100 columns (the partition files of ``bench/reduce.py``,
200 distinct sets cycled; the table-level reduction on Spark writes the partition index).
"cold" = a new reader each time (the 10,000-partition version manifest, the
index footer, the row groups); "warm" = the same reader (manifest and footer cached).
``partition_summaries`` is the Arrow answer (what an estimator uses); ``stats()`` adds
decoding and the table-level rows (the JSON-ready dict). The competitor is the old way,
one ``statistics.parquet`` per partition (threads: ``threads.prefetch``), on fewer
partitions, with its time per partition.

Estimate (``--estimate-only``, and after the fan-out lookups): a 3-conjunct predicate over
the fan-out table through the partition-index provider, cold and warm, against the
per-partition-file provider in the same run.

    python -m bench.lookup [--lookups 200] [--fanout | --fanout-only] [--fanout-runs 30]
                           [--estimate-only [--estimate-runs 10]]
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
from lakestats.store.handle import StatisticsStore
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
            reader = StatisticsReader(StatisticsStore(root, s3), open_file=counter.opener())
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
    reader = StatisticsReader(StatisticsStore(root, s3))
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
    reader = StatisticsReader(StatisticsStore(str(root)))
    totals = dict.fromkeys(layout.FILE_NAMES, 0)
    for entry in reader.version.partitions:
        for kind, rel in entry.files.items():
            totals[kind] += Path(layout.absolute(reader.root, rel)).stat().st_size
    n = len(reader.version.partitions) * len(reader.columns)
    print(
        "file size per table column and partition: "
        + ", ".join(f"{kind} {totals[kind] / n:.0f} B" for kind in totals)
    )


FANOUT_PARTITIONS = 10_000


def build_fanout(spark, root: Path, partitions: int = FANOUT_PARTITIONS) -> str:  # noqa: ANN001
    """A statistics root whose latest version has ``partitions`` partitions x 100
    columns, reduced on Spark (table files, partition index and partition histograms);
    returns it. A version reduced before the partition histograms existed gets them
    added (``add_partition_histograms``)."""
    from bench.reduce import build_partition_files
    from lakestats.compute.reduce import ReduceJob, reduce_table
    from lakestats.store.manifest import PartitionEntry, Version, latest_version_number, publish

    root = root.resolve()
    source = root.parent / "reduce_partitions"
    sets, columns = build_partition_files(source)
    if latest_version_number(StatisticsStore(str(root))):
        add_partition_histograms(str(root))
        return str(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "partitions").symlink_to(source / "partitions", target_is_directory=True)
    entries = [
        PartitionEntry(
            path=f"d={i}",
            name=f"d={i}",
            values={"d": i},
            row_count=2000,
            size_bytes=0,
            files=sets[i % len(sets)],
        )
        for i in range(partitions)
    ]
    start = time.perf_counter()
    files, _, cache = reduce_table(
        spark, ReduceJob(StatisticsStore(str(root)), entries, columns, 1000, 10_000), "fanout"
    )
    print(f"table-level reduction with the index, {partitions} partitions: "
          f"{time.perf_counter() - start:.1f} s")
    version = Version(
        0, dt.datetime.now(dt.UTC).isoformat(), {}, None, None, {}, columns, entries,
        run_id="fanout", table_files=files, merged_record_count=2000 * partitions,
        extra={"reduce_cache": cache}, partition_index=layout.partition_index_file("fanout"),
        partition_histogram_parts=layout.partition_histogram_parts_file("fanout"),
    )
    publish(str(root), version)
    return str(root)


def add_partition_histograms(root: str) -> None:
    """When the fan-out version (the newest with a partition index) has no partition
    histogram parts, write them with the reduction's own stage function
    (``finalize.write_partition_histograms``, every group's part computed from the partition
    files) and publish the version again with them: what re-running the reduction would add,
    without re-running the 30-minute rest of it."""
    from lakestats.compute.reduce.readahead import ReadAhead

    from lakestats.compute.reduce import ReduceJob
    from lakestats.compute.reduce.cache import GroupCache
    from lakestats.compute.reduce.finalize import write_partition_histograms
    from lakestats.store.manifest import load_version, publish
    from lakestats.threads import parallel

    version = load_version(StatisticsStore(str(root)), _estimate_version(root))
    if version.partition_histogram_parts:
        return
    start = time.perf_counter()
    job = ReduceJob(StatisticsStore(root), version.partitions, version.columns, 1000, 10_000)
    run = f"{version.run_id}-phist"
    groups = GroupCache(job, f"table/{run}/groups", ReadAhead(job))
    relative = layout.partition_histogram_parts_file(run)
    with parallel():  # two groups at a time, as the one-task reduction builds them
        write_partition_histograms(groups, relative)
    parts = groups.flush()
    version.partition_histograms = None  # the single file of est14v, if it had one
    version.partition_histogram_parts = relative
    version.extra = {**version.extra,
                     "reduce_cache": {**version.extra.get("reduce_cache", {}), **parts}}
    number = publish(root, version)
    written = sum((Path(root) / p).stat().st_size for p in parts.values())
    print(f"partition histograms added to version {number} ({len(version.partitions)} "
          f"partitions, {len(parts)} parts): {written / 1e6:.1f} MB in "
          f"{time.perf_counter() - start:.1f} s")


def _estimate_version(root: str) -> int:
    """The newest version with a partition index and every fan-out partition (the lookups
    publish older-style versions with fewer partitions after it)."""
    from lakestats.store.manifest import load_version, version_numbers

    numbers = version_numbers(StatisticsStore(str(root)))
    versions = [load_version(StatisticsStore(str(root)), n) for n in numbers]
    most = max(len(v.partitions) for v in versions)
    return max(
        n for n, v in zip(numbers, versions, strict=True)
        if v.partition_index and len(v.partitions) == most
    )


def _version_without_histograms(root: str, partitions: int) -> int | None:
    """The newest version with an index and ``partitions`` partitions but no partition
    histograms (how the estimate read before them), if the root has one."""
    from lakestats.store.manifest import load_version, version_numbers

    for number in reversed(version_numbers(StatisticsStore(str(root)))):
        v = load_version(StatisticsStore(str(root)), number)
        if v.partition_index and len(v.partitions) == partitions and not (
            v.partition_histogram_parts
        ):
            return number
    return None


def _old_version(root: str, s3: fs.S3Options | None, partitions: int) -> int:
    """A version with the first ``partitions`` partitions of version 1 and no index (how
    versions before the index read), published after it; its number."""
    from lakestats.store.manifest import load_version, publish, version_numbers

    store = StatisticsStore(root, s3)
    for number in version_numbers(store)[1:]:
        version = load_version(store, number)
        if len(version.partitions) == partitions and version.partition_index is None:
            return number
    version = load_version(store, 1)
    version.partitions = version.partitions[:partitions]
    version.partition_index = None
    return publish(store, version)


def fanout(root: str, s3: fs.S3Options | None, runs: int, old_partitions: int) -> None:
    from lakestats.query.column_stats import column_stats
    from lakestats.store.partition_index import partition_summaries

    rng = random.Random(11)
    reader = StatisticsReader(StatisticsStore(root, s3), 1)
    names = [c["name"] for c in reader.columns]
    index_uri = layout.absolute(reader.root, reader.version.partition_index)
    filesystem, path = fs.resolve(index_uri, s3)
    handle = pq.ParquetFile(filesystem.open_input_file(path))
    print(
        f"partition index: {filesystem.get_file_info(path).size / 2**20:.1f} MiB, "
        f"{handle.metadata.num_rows} rows, {handle.metadata.num_row_groups} row groups, "
        f"footer {handle.metadata.serialized_size / 1024:.0f} KiB"
    )
    print(f"{'10 columns x every partition':40s} {'p50 ms':>8s} {'p90 ms':>8s} {'rows':>8s}")

    def run(label: str, lookup: Callable[[StatisticsReader, list[str]], int], fresh: bool,
            version: int = 1, n: int = runs) -> float:
        samples, rows = [], 0
        warm = StatisticsReader(StatisticsStore(root, s3), version)
        lookup(warm, rng.sample(names, 10))
        for _ in range(n):
            wanted = rng.sample(names, 10)
            start = time.perf_counter()
            rows = lookup(
                StatisticsReader(StatisticsStore(root, s3), version) if fresh else warm, wanted
            )
            samples.append(time.perf_counter() - start)
        ordered = sorted(samples)
        p50 = statistics.median(ordered) * 1000
        p90 = ordered[int(0.9 * (len(ordered) - 1))] * 1000
        print(f"{label:40s} {p50:8.1f} {p90:8.1f} {rows:8d}")
        return p50

    def summaries(r: StatisticsReader, wanted: list[str]) -> int:
        return partition_summaries(r, wanted).num_rows

    def answer(r: StatisticsReader, wanted: list[str]) -> int:
        parts = column_stats(r, wanted)["partitions"]
        return sum(len(p["columns"]) for p in parts)

    count = len(reader.version.partitions)
    run(f"index, Arrow, cold ({count} partitions)", summaries, True)
    run(f"index, Arrow, warm ({count} partitions)", summaries, False)
    run(f"index, stats() dict, cold ({count})", answer, True, n=max(5, runs // 3))
    old = _old_version(root, s3, old_partitions)
    p50 = run(
        f"competitor: per-partition files ({old_partitions})", summaries, True, old,
        max(3, runs // 6),
    )
    print(f"{'competitor per partition':40s} {p50 / old_partitions:8.3f} ms -> "
          f"~{p50 / old_partitions * count / 1000:.1f} s for {count} partitions")


ESTIMATE_WHERE = "id_3 >= 390000 AND float_1 > 120 AND int_4 = 17"
"""3 conjuncts: a range that prunes by min/max (250 of 10,000 partitions survive), a
range inside [min, max] (histogram) and an equality (complete frequencies)."""


def estimate_fanout(root: str, runs: int) -> None:
    """An estimate for a 3-conjunct predicate over every partition: the partition-index
    provider (default) against the per-partition-file provider, in the same run."""
    from lakestats.query import index_source, predicate, sources
    from lakestats.query.estimate import estimate

    def once(
        source: str, reader: StatisticsReader | None, at: int | None = None
    ) -> tuple[float, dict]:
        start = time.perf_counter()
        r = reader or StatisticsReader(StatisticsStore(str(root)), at or number)
        pred = predicate.parse(ESTIMATE_WHERE, sources.column_types(r))
        columns = predicate.columns_of(pred)
        module = index_source if source == "index" else sources
        parts = module.partitions_of(r, columns)
        table = sources.table_level(r, columns)[0]
        answer = estimate(pred, parts, table, r.version.version, r.version.snapshot_id)
        return time.perf_counter() - start, answer.to_json()  # the answer, untimed

    number = _estimate_version(root)
    partitions = len(StatisticsReader(StatisticsStore(str(root)), number).version.partitions)
    print(f"\n# estimate, 3 conjuncts, {partitions} partitions x 100 columns: "
          f"{ESTIMATE_WHERE} (version {number})")
    print(f"{'provider':40s} {'p50 ms':>9s} {'runs':>5s} {'partitions':>11s} {'rows':>9s}")
    warm = StatisticsReader(StatisticsStore(str(root)), number)
    once("index", warm)
    p50s = {}
    results = {}
    before = _version_without_histograms(root, len(warm.version.partitions))
    cases = [
        ("index, cold (new reader)", "index", None, runs, None),
        ("index, warm (manifest cached)", "index", warm, runs, None),
        ("competitor: partition files, cold", "files", None, max(1, runs // 5), None),
    ]
    if before is not None:
        cases.append((f"before: index, no partition histograms (v{before})", "index", None,
                      max(1, runs // 3), before))
    for label, source, reader, n, at in cases:
        samples = []
        for _ in range(n):
            seconds, result = once(source, reader, at)
            samples.append(seconds)
        results[label] = {k: v for k, v in result.items() if k != "version"}
        p50s[label] = statistics.median(samples) * 1000
        print(f"{label:40s} {p50s[label]:9.1f} {n:5d} {len(result['partitions']):11d} "
              f"{result['row_count']:9.1f}")
    index_p50 = p50s["index, cold (new reader)"]
    warm_p50 = p50s["index, warm (manifest cached)"]
    same = all(r == results["index, cold (new reader)"] for r in results.values())
    print(f"same estimate (every number) from every provider: {'yes' if same else 'NO'}")
    print(f"files / index (cold): {p50s['competitor: partition files, cold'] / index_p50:.1f}x;"
          f" target p50 < 50 ms: warm {'met' if warm_p50 < 50 else 'NOT met'}, cold "
          f"{'met' if index_p50 < 50 else 'NOT met'}")


def _moto() -> tuple[object, fs.S3Options]:
    """moto's S3 server in its own process on 127.0.0.1 (as ``tests/store/test_s3.py``), with a
    bucket ``bench``; the caller terminates it."""
    import subprocess
    import sys
    import urllib.request

    import boto3

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    s3 = fs.S3Options(f"http://127.0.0.1:{port}", "us-east-1", "testing", "testing")
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(s3.endpoint_url, timeout=1)
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("moto server did not start within 30 s") from None
            time.sleep(0.2)
    boto3.client(
        "s3",
        endpoint_url=s3.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket="bench")
    return server, s3


def _upload(local: str, remote: str, s3: fs.S3Options) -> None:
    """The statistics root's files (partition statistics files once each, version 1 only)
    onto S3."""
    import os

    target, base = fs.resolve(remote, s3)
    for directory, _, names in os.walk(local, followlinks=True):
        for name in names:
            relative = os.path.relpath(os.path.join(directory, name), local)
            if relative.startswith("partitions/") and name != "statistics.parquet":
                continue
            if "/groups/" in relative or (
                relative.startswith("versions/") and "v00000001" not in relative
            ):
                continue
            with target.open_output_stream(f"{base}/{relative}") as out:
                out.write(Path(directory, name).read_bytes())


def main_fanout(spark, runs: int) -> None:  # noqa: ANN001
    print(f"\n# fan-out lookups  {FANOUT_PARTITIONS} partitions x 100 columns")
    root = build_fanout(spark, DATA / "fanout_stats")
    print("\n## local disk")
    fanout(root, None, runs, 1000)
    estimate_fanout(root, max(5, runs // 3))
    server, s3 = _moto()
    try:
        remote = "s3://bench/fanout_stats"
        _upload(str(Path(root).resolve()), remote, s3)
        print("\n## S3-compatible server (moto, own process, 127.0.0.1)")
        fanout(remote, s3, max(10, runs // 2), 200)
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lookups", type=int, default=200)
    parser.add_argument("--fanout", action="store_true", help="also the fan-out lookups")
    parser.add_argument("--fanout-only", action="store_true", help="only the fan-out lookups")
    parser.add_argument("--fanout-runs", type=int, default=30)
    parser.add_argument(
        "--estimate-only",
        action="store_true",
        help="only the 3-conjunct estimate on the fan-out table (built when missing)",
    )
    parser.add_argument("--estimate-runs", type=int, default=10)
    parser.add_argument(
        "--estimate-partitions",
        type=int,
        default=FANOUT_PARTITIONS,
        help="partitions of the fan-out table when --estimate-only builds it",
    )
    parser.add_argument(
        "--estimate-data",
        type=Path,
        default=DATA,
        help="directory of the fan-out table's files and statistics for --estimate-only",
    )
    args = parser.parse_args()
    if args.estimate_only:
        print(f"# lookup  {dt.date.today()}  {machine()}")
        root = args.estimate_data / "fanout_stats"
        from lakestats.store.manifest import latest_version_number

        if not latest_version_number(StatisticsStore(str(root))):
            root = Path(build_fanout(get_spark("local[2]"), root, args.estimate_partitions))
        else:
            add_partition_histograms(str(root))
        estimate_fanout(str(root), args.estimate_runs)
        return
    if args.fanout_only:
        print(f"# lookup  {dt.date.today()}  {machine()}")
        main_fanout(get_spark("local[2]"), args.fanout_runs)
        return
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
    names = [c["name"] for c in StatisticsReader(StatisticsStore(str(local_root))).columns]
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
    if args.fanout:
        main_fanout(spark, args.fanout_runs)


if __name__ == "__main__":
    main()
