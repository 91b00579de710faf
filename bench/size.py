"""Statistics bytes against data bytes, per file and per statistic column.

    python -m bench.size [--tables lineitem,lineitem_year,skewed,skewed12,small200,wide2000,...]
                         [--tag NAME] [--dir bench/data/<branch>] [--scale 1.0]

Tables (generated once under bench/data; data bytes = the table's Parquet files):

* ``lineitem``: TPC-H lineitem scale 1 (tpchgen-cli), hive-partitioned by ship year+month;
* ``skewed``: a skewed narrow table nobody tuned for: 400,000 rows x 7 columns
  (a Zipf key, a Zipf-named category, log-normal amounts, dates clustered on recent days,
  a near-unique id, a small status code, a Zipf word), by a skewed 4-valued region (about
  60/25/10/5 % of the rows); target: statistics <= 25 % of the data;
* ``wide2000``: 2,000 columns of the ``wide*`` mix in partitions of 2,000 rows (a
  histogram of 1,000 bins for 2,000 values), 4 partitions; target <= 100 %;
* ``wide1000``: 1,000 columns (integers, doubles, 50-value strings, unique ids) in 3
  partitions of 3,000 rows;
* ``wide10000``: 10,000 columns of the same mix in 2 partitions of 1,000 rows;
* ``skewed12``: the same skewed rows by a 12-valued skewed month (six months of 12 % of the
  rows, six of 4.7 %); target: statistics <= 15 % of the data;
* ``small200``: 200 partitions of 2,000 rows, 6 narrow uniform and skewed columns (many small
  partitions: the reduction's group caches are written from 64 partitions);
* ``lineitem_year``: TPC-H lineitem scale 0.1 by ship year (``make demo``'s table, as Parquet);
  target <= 10 %;
* ``store_sales``: TPC-DS store_sales scale 1 (2,880,404 rows, 23 columns) by
  ``ss_store_sk`` (12 stores and the null store: 13 partitions of ~220,000 rows; only when
  ``bench/data/tpcds-sf1/store_sales.parquet`` exists; DuckDB's tpcds extension makes it).

``--scale`` scales the rows of ``skewed`` and the partitions and columns of ``wide2000``
(never the rows per partition: the ratio is a partition's) for a quick run.

Generated tables (all but lineitem) and the statistics roots go under ``--dir`` (default
``bench/data``); each table is analyzed into ``<dir>/<table>_stats_<tag>`` (reused when
present: pass another ``--tag`` after changing the writer). The format version each root
was written with is printed. Bytes are attributed to columns with the
footers' column-chunk ``total_compressed_size``; the rest of a file is its footer. The
first figure counts every byte under the statistics root, the reduction's group caches
(``table/<run>/groups/``, which no version file lists) included; the table of files lists
them by kind after the version's files, with the version manifests.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import DATA, machine, partitioned, tpch_lineitem

GROUPS = {
    "names": ("column", "column_path", "type"),
    "counts": (
        "row_count",
        "null_count",
        "nan_count",
        "distinct_count",
        "all_distinct",
        "true_count",
    ),
    "min/max keys": ("min", "max"),
    "moments": ("sum", "mean", "variance", "stddev"),
    "lengths": ("min_length", "avg_length", "max_length"),
    "percentiles": ("p01", "p05", "p25", "p50", "p75", "p95", "p99"),
    "frequency bookkeeping": (
        "frequencies_count",
        "frequencies_truncated",
        "frequencies_omitted",
        "frequencies_min",
    ),
    "histogram edges": ("histogram_lower", "histogram_width", "histogram_bins"),
    "HLL sketch": ("hll_sketch",),
    "KLL sketch": ("kll_sketch",),
}
PURPOSE = {
    "names": "which table column a row describes, and its Arrow type (decodes the keys)",
    "counts": "rows, nulls, NaN, exact distinct values, true values",
    "min/max keys": "order-preserving bounds",
    "moments": "sum, mean, variance, stddev (mergeable by Chan's formulas)",
    "lengths": "string/binary/list lengths",
    "percentiles": "exact nearest-rank percentiles",
    "frequency bookkeeping": "how many value rows are stored, what was cut",
    "histogram edges": "lower edge, width and bin count: every bin edge",
    "HLL sketch": "distinct-count sketch for the roll-up; v3: only where frequencies are partial",
    "KLL sketch": "quantile sketch for the roll-up; v3: only where frequencies are partial",
    "table-level flags": "exactness and bounds of the roll-up (null in partition files)",
    "footer": "Parquet footer: schema, row-group and column-chunk metadata",
}


OUT = DATA  # --dir


def _wide(name: str, columns: int, rows: int, partitions: int) -> Path:
    table_dir = OUT / name
    if (table_dir / "_SUCCESS").exists():
        return table_dir
    rng = np.random.default_rng(11)
    for p in range(partitions):
        data = {}
        for i in range(columns):
            kind = i % 4
            if kind == 0:
                data[f"int_{i}"] = rng.integers(0, 1000, rows)
            elif kind == 1:
                data[f"float_{i}"] = np.round(rng.normal(100, 15, rows), 2)
            elif kind == 2:
                data[f"cat_{i}"] = pa.array(rng.integers(0, 50, rows).astype(str))
            else:
                data[f"id_{i}"] = np.arange(p * rows, (p + 1) * rows) * 7 + i
        (table_dir / f"part={p}").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(data), table_dir / f"part={p}" / "data.parquet")
    (table_dir / "_SUCCESS").touch()
    return table_dir


def _skewed(rows: int) -> Path:
    table_dir = OUT / f"size_skewed_{rows}"
    if (table_dir / "_SUCCESS").exists():
        return table_dir
    rng = np.random.default_rng(27)
    words = np.array([f"w{i:05d}" for i in range(20_000)])
    categories = np.array([f"category-{i:04d}" for i in range(2_000)])
    region = rng.choice(4, rows, p=[0.6, 0.25, 0.1, 0.05])
    days = np.minimum(rng.exponential(90, rows).astype(np.int64), 3_000)
    data = pa.table(
        {
            "key": rng.zipf(1.3, rows) % 1_000_000,
            "category": pa.array(categories[(rng.zipf(1.5, rows) - 1) % len(categories)]),
            "amount": np.round(rng.lognormal(3, 1.2, rows), 2),
            "day": pa.array(
                (np.datetime64("2024-12-31") - days).astype("datetime64[D]"), pa.date32()
            ),
            "id": rng.permutation(rows).astype(np.int64) * 13 + 1_000_000,
            "status": pa.array(rng.choice(6, rows, p=[0.7, 0.2, 0.05, 0.03, 0.015, 0.005]),
                               pa.int8()),
            "word": pa.array(words[(rng.zipf(1.2, rows) - 1) % len(words)]),
        }
    )
    for r in range(4):
        (table_dir / f"region={r}").mkdir(parents=True, exist_ok=True)
        pq.write_table(
            data.filter(pa.array(region == r)), table_dir / f"region={r}" / "data.parquet"
        )
    (table_dir / "_SUCCESS").touch()
    return table_dir


def _skewed12(rows: int) -> Path:
    """``_skewed``'s columns by a skewed month: 12 partitions of unequal size."""
    table_dir = OUT / f"size_skewed12_{rows}"
    if (table_dir / "_SUCCESS").exists():
        return table_dir
    source = pq.read_table(_skewed(rows)).drop_columns(["region"])
    rng = np.random.default_rng(12)
    shares = np.r_[np.full(6, 0.12), np.full(6, 0.28 / 6)]
    month = rng.choice(12, source.num_rows, p=shares / shares.sum())
    for m in range(12):
        (table_dir / f"month={m + 1}").mkdir(parents=True, exist_ok=True)
        pq.write_table(source.filter(pa.array(month == m)),
                       table_dir / f"month={m + 1}" / "data.parquet")  # fmt: skip
    (table_dir / "_SUCCESS").touch()
    return table_dir


def _small(partitions: int, rows: int) -> Path:
    """Many small partitions of a narrow table: uniform and skewed columns."""
    table_dir = OUT / f"size_small{partitions}x{rows}"
    if (table_dir / "_SUCCESS").exists():
        return table_dir
    rng = np.random.default_rng(200)
    codes = np.array([f"code-{i:03d}" for i in range(300)])
    for p in range(partitions):
        data = pa.table({
            "id": np.arange(p * rows, (p + 1) * rows, dtype=np.int64),
            "uniform": rng.integers(0, 100_000, rows),
            "skewed": rng.zipf(1.4, rows) % 50_000,
            "price": np.round(rng.lognormal(2, 1, rows), 2),
            "code": pa.array(codes[(rng.zipf(1.3, rows) - 1) % len(codes)]),
            "flag": rng.random(rows) < 0.1,
        })  # fmt: skip
        (table_dir / f"part={p:04d}").mkdir(parents=True, exist_ok=True)
        pq.write_table(data, table_dir / f"part={p:04d}" / "data.parquet")
    (table_dir / "_SUCCESS").touch()
    return table_dir


def _store_sales() -> Path | None:
    source = DATA / "tpcds-sf1" / "store_sales.parquet"
    out = OUT / "store_sales_by_store"
    if (out / "_SUCCESS").exists():
        return out
    if not source.exists():
        return None
    table = pq.read_table(source)
    table = table.sort_by([("ss_store_sk", "ascending")])
    pq.write_to_dataset(
        table,
        out,
        partition_cols=["ss_store_sk"],
        min_rows_per_group=1 << 20,
        max_rows_per_group=1 << 20,
    )
    (out / "_SUCCESS").touch()
    return out


def tables(names: list[str], scale: float = 1.0) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for name in names:
        if name == "lineitem":
            out[name] = partitioned(tpch_lineitem(1), "month")
        elif name == "lineitem_year":
            out[name] = partitioned(tpch_lineitem(0.1), "year")
        elif name == "skewed":
            out[name] = _skewed(round(400_000 * scale))
        elif name == "skewed12":
            out[name] = _skewed12(round(400_000 * scale))
        elif name == "small200":
            out[name] = _small(200, 2000)
        elif name == "wide2000":
            columns = round(2000 * scale) // 4 * 4
            out[name] = _wide(f"size_wide{columns}x2000", columns, 2000, max(2, round(4 * scale)))
        elif name == "wide1000":
            out[name] = _wide("size_wide1000", 1000, 3000, 3)
        elif name == "wide10000":
            out[name] = _wide("size_wide10000", 10_000, 1000, 2)
        elif name == "store_sales":
            path = _store_sales()
            if path is None:
                print("store_sales: no bench/data/tpcds-sf1/store_sales.parquet, skipped")
            else:
                out[name] = path
    return out


def data_bytes(table_dir: Path) -> int:
    return sum(
        p.stat().st_size
        for p in table_dir.rglob("*.parquet")
        if "_lakestats" not in p.parts and not any(s.endswith("_stats") for s in p.parts)
    )


def attribute(path: Path, into: dict[str, int]) -> None:
    """Add each column's compressed bytes (and the footer's) of one Parquet file."""
    metadata = pq.ParquetFile(path).metadata
    chunks = 0
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for c in range(group.num_columns):
            column = group.column(c)
            name = column.path_in_schema.split(".")[0]
            into[name] += column.total_compressed_size
            chunks += column.total_compressed_size
    into["footer"] += path.stat().st_size - chunks


def report(name: str, table_dir: Path, root: Path) -> None:
    from lakestats.store.handle import StatisticsStore
    from lakestats.store.reader import StatisticsReader

    reader = StatisticsReader(StatisticsStore(str(root)))
    version = reader.version
    data = data_bytes(table_dir)
    per_file: dict[str, dict[str, int]] = {}
    columns: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    # the table level's files, then its partition index and partition histograms (the
    # directory and its parts; a version of est14v's single file counted as it was)
    extra = [
        (kind, getattr(version, kind))
        for kind in ("partition_index", "partition_histograms", "partition_histogram_parts")
        if getattr(version, kind, None)
    ]
    if version.partition_histogram_parts:
        from lakestats.store.partition_histograms import part_paths

        parts = part_paths(reader.store, version.partition_histogram_parts)
        extra += [("partition_histograms parts", rel) for rel in parts]
    for scope, entries in (("partition", version.partitions), ("table", [None])):
        for entry in entries:
            files = (
                [*version.table_files.items(), *extra] if entry is None
                else list(entry.files.items())
            )
            for kind, rel in files:
                path = Path(root) / rel
                key = f"{scope} {kind}"
                per_file.setdefault(key, {"bytes": 0, "files": 0})
                per_file[key]["bytes"] += path.stat().st_size
                per_file[key]["files"] += 1
                attribute(path, columns[key])
    total = sum(v["bytes"] for v in per_file.values())
    everything = sum(p.stat().st_size for p in Path(root).rglob("*") if p.is_file())
    caches = sum(  # the published partition-histogram parts (phist-) are the version's files
        p.stat().st_size
        for p in Path(root).glob("table/*/groups/*")
        if p.is_file() and not p.name.startswith("phist-")
    )
    partition_total = sum(v["bytes"] for k, v in per_file.items() if k.startswith("partition"))
    print(
        f"\n## {name}: {len(version.partitions)} partitions, {len(version.columns)} columns, "
        f"{version.merged_record_count:,} rows, format version {version.format_version}"
    )
    print(
        f"data {data / 1e6:.2f} MB; everything under the root {everything / 1e6:.2f} MB = "
        f"{100 * everything / data:.1f} % of the data (the reduction's group caches "
        f"{caches / 1e6:.2f} MB); the version's files {total / 1e6:.2f} MB = "
        f"{100 * total / data:.1f} % (partition files {100 * partition_total / data:.1f} %, "
        f"table files {100 * (total - partition_total) / data:.1f} %)"
    )
    print(f"{'file':32s} {'files':>6s} {'MB':>9s} {'% data':>7s}")
    for key, value in {**per_file, **_unlisted(Path(root))}.items():
        print(
            f"{key:32s} {value['files']:6d} {value['bytes'] / 1e6:9.3f} "
            f"{100 * value['bytes'] / data:7.2f}"
        )
    for key in ("partition statistics", "partition frequencies", "partition histograms"):
        by_column = columns[key]
        if not by_column:
            continue
        print(f"  {key}: bytes by what they hold (% of this file kind, % of data)")
        file_total = per_file[key]["bytes"]
        rows = _grouped(by_column) if key == "partition statistics" else dict(by_column)
        if key == "partition histograms":
            rows = {
                "bin": by_column.get("bin", 0),
                "counts (one column per numeric column)": sum(
                    v for k, v in by_column.items() if k not in ("bin", "footer")
                ),
                "footer": by_column.get("footer", 0),
            }
        for label, size in sorted(rows.items(), key=lambda kv: -kv[1]):
            purpose = PURPOSE.get(label, "")
            print(
                f"    {label:38s} {size / 1e6:9.3f} MB {100 * size / file_total:6.1f} % "
                f"{100 * size / data:6.2f} %  {purpose}"
            )


def _unlisted(root: Path) -> dict[str, dict[str, int]]:
    """The bytes under the root no version file lists: the reduction's group caches by
    kind (``states-``, ``frequencies-``, ...) and the version manifests."""
    out: dict[str, dict[str, int]] = {}
    found = [(f"cache {p.name.split('-')[0]}", p) for p in root.glob("table/*/groups/*")
             if p.is_file() and not p.name.startswith("phist-")]
    found += [("version manifests", p) for p in root.glob("versions/*.json")]
    for key, path in sorted(found):
        out.setdefault(key, {"bytes": 0, "files": 0})
        out[key]["bytes"] += path.stat().st_size
        out[key]["files"] += 1
    return out


def _grouped(by_column: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    lookup = {c: g for g, cs in GROUPS.items() for c in cs}
    for column, size in by_column.items():
        if column == "footer":
            out["footer"] += size
        elif column in lookup:
            out[lookup[column]] += size
        elif column.endswith(("_exact", "_lower", "_upper", "_error")):
            out["table-level flags"] += size
        else:
            out[f"custom {column}"] += size
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--tables", default="lineitem,skewed,wide2000,wide1000,wide10000,store_sales"
    )
    parser.add_argument("--scale", type=float, default=1.0,
                        help="rows of skewed, columns and partitions of wide2000")
    parser.add_argument("--tag", default="current", help="names the statistics roots")
    parser.add_argument("--dir", type=Path, default=DATA, help="generated tables and roots")
    args = parser.parse_args()
    global OUT
    OUT = args.dir
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"# size  {dt.date.today()}  tag {args.tag}  {machine()}")
    spark = None
    for name, table_dir in tables(args.tables.split(","), args.scale).items():
        label = name if args.scale == 1 else f"{name}x{args.scale:g}"
        root = OUT / f"{label}_stats_{args.tag}"
        if not (root / "latest.json").exists():
            import lakestats.api as ls
            from lakestats.compute.session import get_spark

            spark = spark or get_spark("local[2]")
            ls.open_table(str(table_dir), stats_root=str(root)).analyze(spark=spark)
        report(name, table_dir, root)


if __name__ == "__main__":
    main()
