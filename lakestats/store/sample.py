"""Where a table's stored sample lives and what its manifest says.

``<stats root>/sample/`` holds the sample as a hive-partitioned Parquet directory
(``data/<partition dir>/<run id>.parquet``: the partition's sampled rows, every table
column plus ``_lakestats_row_hash`` and ``_lakestats_row_unit``), the partition's reserve
(``reserve/<partition dir>/<run id>.parquet``: the next rows by hash, which refresh uses
when rows leave the sample), the sibling table of the table's own format where a Python
writer exists (``iceberg/``, ``delta/``, ``paimon/``: the sample rows, the table's columns
only) and ``sample.json``, the manifest: which table snapshot the sample reflects, how it
was drawn (seed, rows or fraction, hash and row identity), the sibling table and, per
partition, its population ``N`` (rows in the table), sample ``n``, the fingerprint of the
files it was drawn from, each read unit's fingerprint and rows, the reserve's hash
threshold and its files. The manifest is the only truth: a file under ``data/`` or
``reserve/`` that it does not name is a leftover. ``lakestats.formats.sample.SampleTableFormat``
opens the sample as a table (plans from the manifest), so the normal analyze job runs over it.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.errors import StatisticsNotFoundError
from lakestats.store import layout
from lakestats.store.handle import StatisticsStore

SAMPLE_DIR = "sample"
MANIFEST = "sample.json"
HASH_COLUMN = "_lakestats_row_hash"
UNIT_COLUMN = "_lakestats_row_unit"
HIDDEN_COLUMNS = (HASH_COLUMN, UNIT_COLUMN)
HASH_NAME = "splitmix64(blake2b-64(seed, unit) + ordinal * golden)"
IDENTITY = (
    "(read unit: the data file, or the files read together (a Hudi file group, Paimon's "
    "merged files), relative to the table location; row ordinal in that unit's read, "
    "deletes applied)"
)


class SampleNotFoundError(StatisticsNotFoundError):
    """The table has no stored sample (never created, or deleted by hand)."""


def no_sample(table: str, why: str = "") -> SampleNotFoundError:
    return SampleNotFoundError(
        f"no sample of {table}{why}; run `lakestats sample create {table}`"
    )


@dataclass
class SamplePartition:
    path: str  # partition directory (layout.partition_dir_of)
    name: str
    values: dict[str, object]
    population: int  # N: rows of the partition in the sampled snapshot
    sample_rows: int  # n
    fingerprint: str  # of the partition's files when it was sampled
    file: str | None  # relative to the sample directory; None when n == 0
    file_size: int = 0
    population_from: str = "metadata"  # "metadata" or "read" (counted while sampling)
    # read unit key -> [fingerprint, rows]: what refresh compares with the table's files
    units: dict[str, list] = field(default_factory=dict)
    reserve: str | None = None  # relative file of the reserve rows (ranks n+1 …)
    reserve_rows: int = 0
    # the candidates (sample + reserve) are every row whose hash is <= threshold
    # (None: every row of the partition)
    threshold: int | None = None


@dataclass
class SampleManifest:
    table: dict[str, str]
    snapshot_id: int | None
    snapshot_timestamp_ms: int | None
    seed: int
    rows: int | None  # what was asked: --rows …
    fraction: float | None  # … or --fraction
    rate: float  # n / N over the table when drawn: the fraction refreshed partitions get
    partitions: list[SamplePartition]
    run_id: str
    created_at: str
    refreshed_at: str | None = None
    method: str = "bottom-k per partition by hash of row identity"
    hash: str = HASH_NAME
    identity: str = IDENTITY
    schema_columns: list[str] = field(default_factory=list)
    sibling: dict[str, object] | None = None  # the sample as a table of the table's format
    changes: dict[str, object] | None = None  # what the last refresh read and why

    @property
    def population(self) -> int:
        return sum(p.population for p in self.partitions)

    @property
    def sample_rows(self) -> int:
        return sum(p.sample_rows for p in self.partitions)

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "population": self.population, "sample_rows": self.sample_rows}

    @classmethod
    def from_json(cls, data: dict) -> SampleManifest:
        data = {k: v for k, v in data.items() if k not in ("population", "sample_rows")}
        data["partitions"] = [SamplePartition(**p) for p in data["partitions"]]
        return cls(**data)


def sample_dir(stats_root: StatisticsStore) -> str:
    return stats_root.join(SAMPLE_DIR)


def data_file(partition_path: str, run_id: str, kind: str = "data") -> str:
    return f"{kind}/{partition_path}/{run_id}.parquet"


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def save(stats_root: StatisticsStore, sample: SampleManifest) -> None:
    """Replace the manifest atomically (the sample changes in one step)."""
    uri = fs.join(sample_dir(stats_root), MANIFEST)
    stats_root.write_bytes_atomic(uri, json.dumps(sample.to_json(), indent=1).encode())


def load(
    stats_root: StatisticsStore, table: str, check_files: bool = True
) -> SampleManifest:
    """The manifest; ``SampleNotFoundError`` (one line) when there is none or when a sample
    file it names is gone (a sample deleted by hand)."""
    uri = fs.join(sample_dir(stats_root), MANIFEST)
    try:
        sample = SampleManifest.from_json(json.loads(stats_root.read_bytes(uri)))
    except FileNotFoundError:
        raise no_sample(table) from None
    except (ValueError, TypeError, KeyError) as exc:
        raise no_sample(table, f" that can be read ({uri} is damaged: {exc})") from exc
    if check_files:
        for p in sample.partitions:
            for name in (p.file, p.reserve):
                if name and not stats_root.exists(
                    fs.join(sample_dir(stats_root), *name.split("/"))
                ):
                    raise no_sample(table, f" (its file {name} was deleted)")
    return sample


def delete_unreferenced(
    stats_root: StatisticsStore, sample: SampleManifest
) -> int:
    """Remove sample files the manifest no longer names (after a refresh or re-create)."""
    keep = {p.file for p in sample.partitions if p.file}
    keep |= {p.reserve for p in sample.partitions if p.reserve}
    removed = 0
    for kind in ("data", "reserve"):
        base = fs.join(sample_dir(stats_root), kind)
        if not stats_root.exists(base):
            continue
        filesystem, base_path = stats_root.resolve(base)
        for info in stats_root.list_files(base, recursive=True):
            relative = f"{kind}/" + info.path[len(base_path) :].lstrip("/")
            if info.is_file and relative.endswith(".parquet") and relative not in keep:
                filesystem.delete_file(info.path)
                removed += 1
    return removed


def read_file(stats_root: StatisticsStore, relative: str) -> pa.Table:
    """One of the sample's own Parquet files (sample or reserve rows, hidden columns kept)."""
    with stats_root.open_input_file(layout.absolute(sample_dir(stats_root), relative)) as handle:
        return pq.read_table(handle)


def visible(table: pa.Table) -> pa.Table:
    """The table's own columns: the sample's bookkeeping columns dropped."""
    return table.drop_columns([c for c in HIDDEN_COLUMNS if c in table.column_names])
