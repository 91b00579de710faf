"""What a task of ``analyze --from-sample`` does with its partition's sample rows, besides
the usual statistics, so the sample is read once (by the tasks) and no driver pass reads it
again or rewrites every partition's files.

``SampleHook.run`` (on the executor, right after the task wrote the sample partition's
three files into the analysis scratch root): each column's frequency of frequencies in the
partition's sample (``value_counts_of``), then the partition's **scaled** files
(and column groups, ``sample.groups``) written into the statistics root
(``sample.files.scale_files``: distinct counts by ``select_estimator`` on that profile,
counts × N/n, bounds from the table's metadata that the driver looked up before the job),
and each column's distinct values as rows ``(column, value_hash, value_count)`` (a 64-bit
hash of the value's order-preserving key, ``stats/keys.encode`` +
``stats/hashing.hash_binary``). ``SampleHook.aggregate`` (the same Spark job: two
aggregations after the tasks, a shuffle, no second read of the sample) sums each value's
count over the partitions and counts values per total: the whole sample's frequency of
frequencies per column, which the table level's distinct estimates need; the tasks'
summary rows pass through it as groups of their own.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.compute.sample.files import Scaling, scale_files
from lakestats.compute.sample.groups import scale_groups
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.hashing import hash_binary
from lakestats.stats.keys import encode
from lakestats.stats.kinds import VALUE_KINDS
from lakestats.stats.leaves import leaf_array
from lakestats.stats.ndv.profile import profile_of_counts
from lakestats.store import layout
from lakestats.store.handle import StatisticsStore

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakestats.compute.tasks import Job

VALUE_FIELDS = [
    pa.field("column", pa.int32()),
    pa.field("value_hashes", pa.binary()),
    pa.field("value_counts", pa.binary()),
]
VALUE_SCHEMA = "column int, value_hashes binary, value_counts binary"
"""The extra columns of the analyze job's task output (null in its summary rows): one row
per column of each sample partition, its distinct values' int64 hashes and counts as
NumPy buffers. A row per value would cost a JVM row conversion and a shuffle record each
(~3 us: seconds for a 1 % sample of 60M rows); these few rows cross the shuffle as
blobs."""
PROFILE_FIELDS = "column int, times long, count long"


@dataclass
class SampleHook:
    """Shipped to the executors inside the analyze ``Job``: where the scaled files go
    (``target``, ``run_id``: the sampled version's) and each sample partition's
    ``Scaling`` (N, n, metadata bounds) by partition path; ``tasks``: how many Spark tasks
    share the partitions (a sample partition is small: one task each would cost more in
    scheduling than in work). ``table_profiles`` is filled on the driver by ``aggregate``."""

    target: StatisticsStore
    run_id: str
    scalings: dict[str, Scaling]
    tasks: int | None = None  # Spark tasks: several small sample partitions share one
    table_profiles: dict[str, np.ndarray] = field(default_factory=dict)
    extra_fields: list[pa.Field] = field(default_factory=lambda: list(VALUE_FIELDS))
    extra_schema: str = VALUE_SCHEMA

    def run(
        self,
        job: Job,
        partition: int,
        table: pa.Table,
        files: dict[str, pa.Table],
        accumulators: list[ColumnAccumulator],
    ) -> tuple[int, pa.Table]:
        """The task's extra work on its partition's rows (``files``: the three files' rows
        the task wrote for them; ``accumulators``: its columns' states, whose exact value
        counts are reused): bytes written, value rows."""
        path = job.partition_paths[partition]
        profiles: dict[str, np.ndarray] = {}
        parts: list[pa.Table] = []
        for index, (leaf, accumulator) in enumerate(zip(job.leaves, accumulators, strict=True)):
            if accumulator.kind in VALUE_KINDS:  # counted already, as the partition's files say
                counted = counts_of(*accumulator.value_counts())
            else:
                counted = value_counts_of(leaf_array(table, leaf))
            if counted is None:
                continue
            profiles[leaf.name], hashed = counted
            if hashed is not None:
                hashes, counts = hashed
                parts.append(
                    pa.table(
                        [pa.array([index], pa.int32()), pa.array([hashes.tobytes()]),
                         pa.array([counts.tobytes()])],
                        schema=pa.schema(VALUE_FIELDS),
                    )
                )
        scaling = dataclasses.replace(self.scalings[path], profiles=profiles)
        written = scale_files(files, self.target, layout.partition_files(path, self.run_id),
                              scaling)
        if job.has_groups:  # analyze --column-groups: the partition's groups, scaled too
            written += scale_groups(
                job.store, self.target, layout.groups_file(path, job.run_id),
                layout.groups_file(path, self.run_id), scaling.population, scaling.sample_rows,
            )
        rows = pa.concat_tables(parts) if parts else pa.schema(VALUE_FIELDS).empty_table()
        return written, rows

    def aggregate(self, stage: DataFrame, keys: list[str], names: list[str]) -> list[dict]:
        """One Spark job over the tasks' output: their summary rows (``keys``) pass
        through; their value blobs, brought together by column, give the whole sample's
        frequency of frequencies per column (``names``: the job's leaf names by column
        index), kept in ``table_profiles``. Returns the summaries."""
        from pyspark.sql.types import StructType

        from lakestats.compute.session import collect_small, result_schema

        schema = StructType([stage.schema[k] for k in keys] + result_schema(PROFILE_FIELDS).fields)
        rows = collect_small(
            stage.repartition("column").mapInArrow(
                functools.partial(_profiles, keys, schema.names), schema
            )
        )
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


def _profiles(
    keys: list[str], names: list[str], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """A shuffle partition's summary rows as they are, and per column in it the frequency
    of frequencies of the values' totals over every sample partition: (column, times,
    number of values seen ``times`` times)."""
    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if not tables:
        return
    rows = pa.concat_tables(tables)
    blobs = rows.filter(pc.is_valid(rows.column("column")))
    summaries = rows.filter(pc.is_null(rows.column("column")))
    if summaries.num_rows:
        yield from summaries.select(keys).append_column(
            "column", pa.nulls(summaries.num_rows, pa.int32())
        ).append_column("times", pa.nulls(summaries.num_rows, pa.int64())).append_column(
            "count", pa.nulls(summaries.num_rows, pa.int64())
        ).select(names).to_batches()
    columns = blobs.column("column").to_numpy(zero_copy_only=False)
    for column in np.unique(columns).tolist():
        picked = np.flatnonzero(columns == column)
        hashes = np.concatenate(
            [np.frombuffer(blobs.column("value_hashes")[int(i)].as_py(), np.int64) for i in picked]
        )
        counts = np.concatenate(
            [np.frombuffer(blobs.column("value_counts")[int(i)].as_py(), np.int64) for i in picked]
        )
        if not hashes.size:  # no value in any partition (every row null): no profile
            continue
        # equal hashes brought together; their order among themselves does not matter to
        # the sums (an unstable sort: a third of a stable one's time on 64-bit keys)
        order = np.argsort(hashes)
        hashes, counts = hashes[order], counts[order]
        starts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]])
        tally = np.bincount(np.add.reduceat(counts, starts))
        times = np.flatnonzero(tally)
        values = tally[times]
        out = {k: pa.nulls(len(times), rows.schema.field(k).type) for k in keys}
        out.update(
            column=pa.array(np.full(len(times), column, np.int32)),
            times=pa.array(times.astype(np.int64)),
            count=pa.array(values.astype(np.int64)),
        )
        yield from pa.table({n: out[n] for n in names}).to_batches()


def value_counts_of(
    values: pa.ChunkedArray | pa.Array,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None] | None:
    """One count of a column's non-null values (NaN one value) giving its frequency of
    frequencies (``stats/ndv/profile.py``: ``f[i]`` values occur ``i + 1`` times) and its
    distinct values as 64-bit hashes with their counts (None for a type without an
    order-preserving key). None for a type Arrow cannot count (lists, maps)."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    try:
        counted = pc.value_counts(array.drop_null())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):
        return None
    counts = counted.field("counts").to_numpy(zero_copy_only=False)
    return counts_of(counted.field("values"), counts)


def counts_of(
    distinct: pa.Array, counts: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """``value_counts_of`` from a column's distinct values and their counts."""
    counts = counts.astype(np.int64)
    profile = profile_of_counts(counts)
    try:
        keys = encode(distinct)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError,
            ValueError, NotImplementedError):
        return profile, None
    return profile, (hash_binary(keys).view(np.int64), counts)
