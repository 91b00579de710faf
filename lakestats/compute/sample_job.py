"""What one sampling task does, free of Spark so it is testable on its own.

A task reads one partition slice by slice through the format's ``PartitionReader``, hashes
every row's identity (``compute/sample_select.py``) and keeps a running bottom-k, so its
memory is one slice plus ``k`` rows; then it writes the partition's sample file straight to
the sample directory. In ``count`` mode it only counts the partition's rows (for formats
whose metadata does not know them, before an exact allocation).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.compute.sample_select import bottom_k, row_hashes
from lakestats.errors import LakestatsError
from lakestats.formats.base import PartitionReader, Slice
from lakestats.store.sample import HASH_COLUMN, data_file

SAMPLE_SUMMARY_SCHEMA = (
    "task long, population long, sample_rows long, file string, file_size long, "
    "bytes_read long, seconds double, error string"
)


@dataclass
class SampleJob:
    """Everything the executors need; pickled once into the tasks' closure."""

    reader: PartitionReader
    slices: list[list[Slice]]  # per task: the slices of one partition
    partition_paths: list[str]
    targets: list[int | None]  # sample rows per task (None in count mode)
    seed: int
    sample_dir: str
    run_id: str
    s3: fs.S3Options | None
    count_columns: list[str] | None = None  # count mode: the one column read
    table_location: str = ""  # file paths in row identities are relative to it


def _summary(task: int, started: float, **fields: object) -> dict[str, object]:
    row = {
        "task": task,
        "population": 0,
        "sample_rows": 0,
        "file": None,
        "file_size": 0,
        "bytes_read": 0,
        "seconds": 0.0,
        "error": None,
    }
    row.update(fields)
    row["seconds"] = time.perf_counter() - started
    return row


def source_of(partition_path: str, part: Slice, location: str = "") -> str:
    """A slice's part of the row identity: its partition and the files it reads (relative
    to the table's location, so a table moved or read through another URI samples alike)."""
    prefix = location.rstrip("/") + "/" if location else ""
    names = (f.path[len(prefix) :] if prefix and f.path.startswith(prefix) else f.path
             for f in part.files)
    return f"{partition_path}|{part.index}|{','.join(sorted(names))}"


def run_sample_task(job: SampleJob, task: int) -> dict[str, object]:
    started = time.perf_counter()
    slices = job.slices[task]
    bytes_read = sum(f.size_bytes for part in slices for f in part.files)
    try:
        if job.targets[task] is None:
            rows = sum(job.reader.read(part, job.count_columns).num_rows for part in slices)
            return _summary(task, started, population=rows, bytes_read=bytes_read)
        k = int(job.targets[task])  # type: ignore[arg-type]
        kept: pa.Table | None = None
        kept_hashes = np.zeros(0, dtype=np.uint64)
        population = 0
        for part in slices:
            table = job.reader.read(part, None)
            population += table.num_rows
            source = source_of(job.partition_paths[task], part, job.table_location)
            hashes = row_hashes(job.seed, source, table.num_rows)
            if kept is not None:
                table = pa.concat_tables([kept, table], promote_options="permissive")
                hashes = np.concatenate([kept_hashes, hashes])
            chosen = bottom_k(hashes, k)
            kept, kept_hashes = table.take(pa.array(chosen)), hashes[chosen]
        if kept is None or kept.num_rows == 0:
            return _summary(task, started, population=population, bytes_read=bytes_read)
        kept = kept.append_column(HASH_COLUMN, pa.array(kept_hashes, type=pa.uint64()))
        relative = data_file(job.partition_paths[task], job.run_id)
        uri = fs.join(job.sample_dir, *relative.split("/"))
        try:
            with fs.open_output(uri, job.s3) as out:
                pq.write_table(kept, out, compression="zstd")
            size = fs.file_info(uri, job.s3).size
        except OSError as exc:
            raise fs.cannot_write(uri, exc) from exc
        return _summary(
            task,
            started,
            population=population,
            sample_rows=kept.num_rows,
            file=relative,
            file_size=size,
            bytes_read=bytes_read,
        )
    except LakestatsError as exc:
        return _summary(task, started, error=str(exc))
