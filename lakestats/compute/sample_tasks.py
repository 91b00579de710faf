"""What a task of ``analyze --from-sample`` does with its partition's sample rows, besides
the usual statistics, so the sample is read once (by the tasks) and no driver pass reads it
again or rewrites every partition's files.

``SampleHook.run`` (on the executor, right after the task wrote the sample partition's
three files into the analysis scratch root): each column's frequency of frequencies in the
partition's sample (``sample_files.profile_of``), then the partition's **scaled** files
written into the statistics root (``sample_files.scale_files``: distinct counts by
``select_estimator`` on that profile, counts × N/n, bounds from the table's metadata that
the driver looked up before the job), and each column's distinct values as rows
``(column, value_hash, value_count)`` (a 64-bit hash of the value's order-preserving key,
``stats/keys.encode`` + ``stats/hashing.hash_binary``). ``SampleHook.aggregate`` (the
same Spark job: two aggregations after the tasks, a shuffle, no second read of the sample)
sums each value's count over the partitions and counts values per total: the whole
sample's frequency of frequencies per column, which the table level's distinct estimates
need; the tasks' summary rows pass through it as groups of their own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats import fs
from lakestats.compute.sample_files import Scaling, profile_of, scale_files
from lakestats.stats.hashing import hash_binary
from lakestats.stats.keys import encode
from lakestats.stats.leaves import leaf_array
from lakestats.store import layout

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakestats.compute.tasks import Job

VALUE_FIELDS = [
    pa.field("column", pa.int32()),
    pa.field("value_hash", pa.int64()),
    pa.field("value_count", pa.int64()),
]
VALUE_SCHEMA = "column int, value_hash long, value_count long"
"""The extra columns of the analyze job's task output (null in its summary rows)."""


@dataclass
class SampleHook:
    """Shipped to the executors inside the analyze ``Job``: where the scaled files go
    (``target_root``, ``run_id``: the sampled version's) and each sample partition's
    ``Scaling`` (N, n, metadata bounds) by partition path; ``tasks``: how many Spark tasks
    share the partitions (a sample partition is small: one task each would cost more in
    scheduling than in work). ``table_profiles`` is filled on the driver by ``aggregate``."""

    target_root: str
    run_id: str
    scalings: dict[str, Scaling]
    s3: fs.S3Options | None
    tasks: int | None = None  # Spark tasks: several small sample partitions share one
    table_profiles: dict[str, np.ndarray] = field(default_factory=dict)
    extra_fields: list[pa.Field] = field(default_factory=lambda: list(VALUE_FIELDS))
    extra_schema: str = VALUE_SCHEMA

    def run(self, job: Job, partition: int, table: pa.Table) -> tuple[int, pa.Table]:
        """The task's extra work on its partition's rows: bytes written, value rows."""
        path = job.partition_paths[partition]
        profiles: dict[str, np.ndarray] = {}
        parts: list[pa.Table] = []
        for index, leaf in enumerate(job.leaves):
            values = leaf_array(table, leaf)
            profile = profile_of(values)
            if profile is None:
                continue
            profiles[leaf.name] = profile
            hashed = value_hashes(values)
            if hashed is not None:
                hashes, counts = hashed
                parts.append(
                    pa.table(
                        [pa.array(np.full(hashes.size, index, np.int32)), pa.array(hashes),
                         pa.array(counts)],
                        schema=pa.schema(VALUE_FIELDS),
                    )
                )
        scaling = dataclasses.replace(self.scalings[path], profiles=profiles)
        written = scale_files(
            job.root, self.target_root, job.files(partition),
            layout.partition_files(path, self.run_id), scaling, self.s3,
        )
        rows = pa.concat_tables(parts) if parts else pa.schema(VALUE_FIELDS).empty_table()
        return written, rows

    def aggregate(self, stage: DataFrame, keys: list[str], names: list[str]) -> list[dict]:
        """One Spark job over the tasks' output: their summary rows (``keys``; each its own
        group) and, from their value rows, the whole sample's frequency of frequencies per
        column (``names``: the job's leaf names by column index), kept in
        ``table_profiles``. Returns the summaries."""
        from pyspark.sql import functions as F

        from lakestats.compute.session import collect_small

        totals = stage.groupBy(*keys, "column", "value_hash").agg(
            F.sum("value_count").alias("times")
        )
        rows = collect_small(totals.groupBy(*keys, "column", "times").count())
        by_column: dict[int, dict[int, int]] = {}
        summaries = []
        for row in rows:
            if row["kind"] is not None:
                summaries.append({k: row[k] for k in keys})
            else:
                by_column.setdefault(row["column"], {})[row["times"]] = row["count"]
        self.table_profiles = {}
        for column, counts in by_column.items():
            dense = np.zeros(max(counts), dtype=np.int64)
            for times, count in counts.items():
                dense[times - 1] = count
            self.table_profiles[names[column]] = dense
        return summaries


def value_hashes(values: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """A column's distinct non-null values as 64-bit hashes with their counts (NaN one
    value), None for a type without an order-preserving key."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    try:
        counted = pc.value_counts(array.drop_null())
        keys = encode(counted.field("values"))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError,
            ValueError, NotImplementedError):
        return None
    hashes = hash_binary(keys).view(np.int64)
    counts = counted.field("counts").to_numpy(zero_copy_only=False).astype(np.int64)
    return hashes, counts
