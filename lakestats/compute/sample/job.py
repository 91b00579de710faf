"""What one sampling task does, free of Spark so it is testable on its own.

A task owns one partition. It reads the partition's read units (``SampleUnit``: a data
file with its deletes, a Hudi file group, Paimon's merged files) one at a time, hashes
every row's identity (``compute/sample/select.py``: the unit's key and the row's ordinal in
the unit's read) and keeps a running set of candidates, the rows with the smallest hashes:
the first ``k`` are the partition's sample, the next ``reserve_size(k)`` its reserve. It
writes both as Parquet files straight to the sample directory.

In refresh mode it starts from the partition's stored candidates, drops the rows of units
that changed or left, and reads only the units that are new or changed; the candidates stay
"every row whose hash is at or below a threshold", so the bottom-k of what survives plus
what is new is the bottom-k of the current partition, identical to a fresh draw. When too
few candidates remain for the new ``k`` (many deletes) it reads every unit of the partition.
In ``count`` mode it only counts the partition's rows (for formats whose metadata does not
know them, before an exact allocation).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.compute.sample.select import merge_candidates, row_hashes, size_for_fraction
from lakestats.errors import LakestatsError
from lakestats.formats.base import PartitionReader, SampleUnit, Slice
from lakestats.stats.arrays import ddl_schema
from lakestats.store.handle import StatisticsStore
from lakestats.store.sample import HASH_COLUMN, UNIT_COLUMN, data_file

SAMPLE_SUMMARY_SCHEMA = (
    "task long, population long, sample_rows long, file string, file_size long, "
    "reserve string, reserve_rows long, threshold string, units string, "
    "bytes_read long, files_read long, state_bytes_read long, resampled boolean, "
    "seconds double, error string"
)
SUMMARY_ARROW = ddl_schema(SAMPLE_SUMMARY_SCHEMA)


@dataclass
class SampleTask:
    """One partition's work. Create: ``read`` is every unit, ``target`` the exact k.
    Refresh: ``state`` names the stored candidate files, ``gone`` the units whose rows
    leave, ``read`` the new or changed units, ``known_rows`` the rows of the units kept,
    and k follows from the job's rate and the partition's new row count."""

    path: str  # the partition directory (layout.partition_dir_of)
    units: list[SampleUnit]  # every unit of the partition (a resample reads them all)
    read: list[str]  # keys of the units to read
    target: int | None = None  # exact k (create); None: k = rate * rows (refresh)
    state: list[str] = field(default_factory=list)  # candidate files, relative
    gone: frozenset[str] = frozenset()
    threshold: int | None = None
    known_rows: int = 0


@dataclass
class SampleJob:
    """Everything the executors need; pickled once into the tasks' closure."""

    reader: PartitionReader
    slices: list[list[Slice]]  # count mode: per task, the slices of one partition
    partition_paths: list[str]
    targets: list[int | None]  # sample rows per task (None in count mode)
    seed: int
    sample: StatisticsStore | None  # the sample's directory (None in count mode)
    run_id: str
    count_columns: list[str] | None = None  # count mode: the one column read
    table_location: str = ""
    tasks: list[SampleTask] = field(default_factory=list)  # sample mode
    rate: float | None = None  # refresh: a partition's k is round(rate * rows)


def _summary(task: int, started: float, **fields: object) -> dict[str, object]:
    row = {
        "task": task,
        "population": 0,
        "sample_rows": 0,
        "file": None,
        "file_size": 0,
        "reserve": None,
        "reserve_rows": 0,
        "threshold": None,
        "units": "{}",
        "bytes_read": 0,
        "files_read": 0,
        "state_bytes_read": 0,
        "resampled": False,
        "seconds": 0.0,
        "error": None,
    }
    row.update(fields)
    row["seconds"] = time.perf_counter() - started
    return row


class _Candidates:
    """A running candidate set: rows (with hash and unit columns) and their hashes."""

    def __init__(self) -> None:
        self.rows: pa.Table | None = None
        self.hashes = np.zeros(0, dtype=np.uint64)

    def add(self, rows: pa.Table) -> None:
        hashes = rows.column(HASH_COLUMN).to_numpy().astype(np.uint64)
        if self.rows is None:
            self.rows, self.hashes = rows, hashes
        else:
            self.rows = pa.concat_tables([self.rows, rows], promote_options="permissive")
            self.hashes = np.concatenate([self.hashes, hashes])

    def trim(self, threshold: int | None, k: int) -> tuple[int | None, bool]:
        if self.rows is None:
            return threshold, False
        merged = merge_candidates(self.hashes, threshold, k)
        if merged.exhausted:
            return threshold, True
        self.rows = self.rows.take(pa.array(merged.order))
        self.hashes = self.hashes[merged.order]
        return merged.threshold, False


def _hashed(job: SampleJob, unit: SampleUnit) -> pa.Table:
    rows = job.reader.read(unit.piece, None)
    hashes = row_hashes(job.seed, unit.key, rows.num_rows)
    rows = rows.append_column(HASH_COLUMN, pa.array(hashes, type=pa.uint64()))
    return rows.append_column(UNIT_COLUMN, pa.array([unit.key] * rows.num_rows, pa.string()))


def _below(rows: pa.Table, threshold: int | None) -> pa.Table:
    if threshold is None:
        return rows
    hashes = rows.column(HASH_COLUMN).to_numpy().astype(np.uint64)
    return rows.filter(pa.array(hashes <= np.uint64(threshold)))


def _write(job: SampleJob, rows: pa.Table, relative: str) -> int:
    assert job.sample is not None
    uri = job.sample.join(*relative.split("/"))
    try:
        with job.sample.open_output(uri) as out:
            pq.write_table(rows, out, compression="zstd")
        return job.sample.file_info(uri).size
    except OSError as exc:
        raise fs.cannot_write(uri, exc, job.sample.s3) from exc


def _draw(job: SampleJob, task: SampleTask) -> tuple[_Candidates, dict, int | None, int, int]:
    """Every unit read: the partition's candidates from scratch. Returns them, the units'
    fingerprints and rows, the threshold, k, and the bytes and files read."""
    candidates, units, threshold, k = _Candidates(), {}, None, task.target
    bytes_read = files = 0
    for unit in task.units:
        rows = _hashed(job, unit)
        units[unit.key] = [unit.fingerprint, rows.num_rows]
        bytes_read, files = bytes_read + unit.size_bytes, files + len(unit.piece.files)
        candidates.add(_below(rows, threshold))
        if k is not None:  # k is known: keep memory at k plus the reserve
            threshold, _ = candidates.trim(threshold, k)
    if k is None:  # refresh: k follows from the rows just read
        k = size_for_fraction(job.rate or 0.0, sum(n for _, n in units.values()))
    threshold, _ = candidates.trim(threshold, k)
    return candidates, units, threshold, k, bytes_read, files


def _run_task(job: SampleJob, index: int, started: float) -> dict[str, object]:
    task = job.tasks[index]
    by_key = {u.key: u for u in task.units}
    state_bytes = bytes_read = files = 0
    candidates, threshold, units = _Candidates(), task.threshold, {}
    population, k, resampled = task.known_rows, 0, not task.state
    if task.state:
        for relative in task.state:
            assert job.sample is not None
            uri = job.sample.path(relative)  # named by the manifest
            with job.sample.open_input_file(uri) as handle:
                stored = pq.read_table(handle)
            state_bytes += job.sample.file_info(uri).size
            owner = stored.column(UNIT_COLUMN).to_numpy(zero_copy_only=False)
            candidates.add(stored.filter(pa.array(~np.isin(owner, list(task.gone)))))
        for key in task.read:
            unit = by_key[key]
            rows = _hashed(job, unit)
            units[key] = [unit.fingerprint, rows.num_rows]
            population += rows.num_rows
            bytes_read, files = bytes_read + unit.size_bytes, files + len(unit.piece.files)
            candidates.add(_below(rows, threshold))
        k = size_for_fraction(job.rate or 0.0, population)
        threshold, resampled = candidates.trim(threshold, k)
    if resampled:  # a new partition, or too few candidates left: read every unit
        candidates, units, threshold, k, more_bytes, more_files = _draw(job, task)
        bytes_read, files = bytes_read + more_bytes, files + more_files
        population = sum(n for _, n in units.values())
    rows = candidates.rows
    n = min(k, rows.num_rows) if rows is not None else 0
    out = _summary(
        index, started, population=population, units=json.dumps(units),
        bytes_read=bytes_read, files_read=files, state_bytes_read=state_bytes,
        resampled=resampled, threshold=None if threshold is None else str(threshold),
    )
    if rows is None:
        return out
    if n:
        relative = data_file(task.path, job.run_id)
        out.update(file=relative, sample_rows=n, file_size=_write(job, rows.slice(0, n), relative))
    if rows.num_rows > n:
        relative = data_file(task.path, job.run_id, "reserve")
        _write(job, rows.slice(n), relative)
        out.update(reserve=relative, reserve_rows=rows.num_rows - n)
    return out


def run_sample_task(job: SampleJob, task: int) -> dict[str, object]:
    started = time.perf_counter()
    try:
        if job.targets and job.targets[task] is None:
            slices = job.slices[task]
            bytes_read = sum(f.size_bytes for part in slices for f in part.files)
            rows = sum(job.reader.read(part, job.count_columns).num_rows for part in slices)
            return _summary(task, started, population=rows, bytes_read=bytes_read,
                            files_read=sum(len(part.files) for part in slices))
        return _run_task(job, task, started)
    except LakestatsError as exc:
        return _summary(task, started, error=str(exc))
