"""The reduction on Spark: the declared stages run as Spark stages, no data scan.

Contract: ``reduce_table`` writes the table-level files of ``job.partitions`` and returns
their paths, the bytes written and the group cache entries used (``cache.GroupCache``),
running ``STAGES`` (``stages.py``) one Spark job per ``PerColumn`` stage (each task folds
some groups; ``groupBy(column_index)`` merges; the driver collects the small result), the
``PerValue`` stage as ``groupBy(column_index, value)`` then ``groupBy(column_index)``, and
every ``Write`` stage in one last task fed by the finalized columns. A small reduction
(``local.LOCAL_CELLS``: partitions x columns) runs the same stages inside one Spark task
instead (``local.py``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakestats.compute.progress import Clock
from lakestats.compute.reduce import wire
from lakestats.compute.reduce.cache import GroupCache
from lakestats.compute.reduce.fold import ReadAhead
from lakestats.compute.reduce.job import ReduceJob
from lakestats.compute.reduce.local import fits_one_task, reduce_in_one_task
from lakestats.compute.reduce.stages import STAGES, PerColumn, PerValue, Reduction, Write
from lakestats.compute.session import default_parallelism, result_schema
from lakestats.stats.arrays import int64_array
from lakestats.store import layout


def _per_group(
    frame: DataFrame, key: str, function: Callable[[pa.Table], pa.Table], ddl: str
) -> DataFrame:
    """``function`` over each value of ``key``'s rows, as ``groupBy(key).applyInArrow`` does
    (the same shuffle and sort), written with ``mapInArrow`` so that PySpark 3.5, which has
    no ``applyInArrow``, runs it too."""
    return (
        frame.repartition(key)
        .sortWithinPartitions(key)
        .mapInArrow(functools.partial(_groups_of, key, function), result_schema(ddl))
    )


def _groups_of(
    key: str, function: Callable[[pa.Table], pa.Table], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The sorted rows of a task cut where ``key`` changes, one ``function`` call a value."""
    held: list[pa.RecordBatch] = []
    held_key: object = None
    for batch in batches:
        keys = batch.column(key).to_numpy(zero_copy_only=False)
        cuts = [0, *(np.flatnonzero(keys[1:] != keys[:-1]) + 1).tolist(), len(keys)]
        for start, end in itertools.pairwise(cuts):
            if start == end:
                continue
            if held and keys[start] != held_key:
                yield from function(pa.Table.from_batches(held)).to_batches()
                held = []
            held.append(batch.slice(start, end - start))
            held_key = keys[start]
    if held:
        yield from function(pa.Table.from_batches(held)).to_batches()


def reduce_table(
    spark: SparkSession, job: ReduceJob, run_id: str
) -> tuple[dict[str, str], int, dict[str, str]]:
    """Write the table-level files of ``job.partitions``; returns their paths, the bytes
    written and the group cache (key -> file) the next incremental reduction can reuse;
    ``job.cache`` is the previous version's."""
    if fits_one_task(len(job.partitions), len(job.columns)):
        return reduce_in_one_task(spark, job, run_id)
    parallelism = max(2, default_parallelism(spark))
    groups = GroupCache(job, f"table/{run_id}/groups", ReadAhead(job))
    reduction = Reduction(
        job,
        groups,
        layout.table_files(run_id),
        layout.partition_index_file(run_id),
        layout.partition_histogram_parts_file(run_id),
    )
    count = len(groups.members)
    frame = spark.range(0, count, 1, numPartitions=max(1, min(count, 2 * parallelism)))
    # the first pass over the groups also prepares the writes (cached index parts, the
    # partition histograms' parts), in parallel; the writing task then lists or reads them
    prepare = [s.prepare for s in STAGES
               if isinstance(s, Write) and s.prepare and s.wanted(job)]
    finalized: DataFrame | None = None
    writes: list[Write] = []
    clock = Clock()
    for stage in STAGES:
        if isinstance(stage, PerColumn):
            if stage.wanted(reduction):
                stage.finish(reduction, _per_column(frame, reduction, stage, prepare))
                prepare = []
                clock.lap(stage.name)
        elif isinstance(stage, PerValue):
            finalized = _per_value(frame, reduction, stage)
        elif stage.wanted(job):
            writes.append(stage)
    written = (
        finalized.repartition(1)
        .mapInArrow(
            functools.partial(_write, reduction, writes), result_schema(wire.WRITTEN_SCHEMA)
        )
        .collect()
    )
    clock.lap("frequencies and write")
    used = groups.expected(reduction.plan.rebinned, reduction.plan.incomplete)
    return reduction.files, sum(r["bytes_written"] for r in written), used


def _per_column(
    frame: DataFrame, reduction: Reduction, stage: PerColumn, prepare: list
) -> dict[int, object]:
    """A ``PerColumn`` stage: groups folded in tasks, merged per column, collected."""
    contributions = frame.mapInArrow(
        functools.partial(_contributions, reduction, stage, prepare),
        result_schema(wire.STATE_SCHEMA),
    )
    rows = _per_group(
        contributions,
        "column_index",
        functools.partial(_merge_column, reduction.job, stage),
        wire.STATE_SCHEMA,
    ).collect()
    return wire.per_column_values(stage.codec, rows)


def _contributions(
    reduction: Reduction, stage: PerColumn, prepare: list, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """This task's groups' contributions, one row per group and column: merged per column
    in group order (``_merge_column``), as in one process, whichever task folded which
    group (a merged sketch depends on the order of its merges)."""
    groups = reduction.groups
    for batch in batches:
        for group in batch.column(0).to_pylist():
            members = groups.members[group]
            # the first pass reads each partition file once for the stage and its prepares
            kinds = groups.first_pass_kinds(members) if prepare else []
            with groups.holding(members, kinds):
                values = stage.group(reduction, members)
                for step in prepare:
                    step(groups, members)
            if values:
                yield wire.per_column_batch(stage.codec, values, group)


def _merge_column(job: ReduceJob, stage: PerColumn, table: pa.Table) -> pa.Table:
    """One column's contributions from every group, merged in group order."""
    table = table.sort_by("group_index")
    values = [stage.codec.decode(b) for b in table.column("state").to_pylist()]
    merged = functools.reduce(lambda into, more: stage.merge(job, into, more), values)
    index = table.column("column_index")[0].as_py()
    return pa.Table.from_batches([wire.per_column_batch(stage.codec, {index: merged})])


def _per_value(frame: DataFrame, reduction: Reduction, stage: PerValue) -> DataFrame:
    """A ``PerValue`` stage: groups' rows summed per value by Spark, finalized per column
    (left on the executors, as ``FREQUENCY_GROUP_SCHEMA`` rows)."""
    rows = frame.mapInArrow(
        functools.partial(_value_rows, reduction, stage),
        result_schema(wire.FREQUENCY_ROW_SCHEMA),
    )
    aggregated = rows.groupBy("column_index", "value").agg(
        F.sum("count").alias("total"),
        F.sum("bound").alias("bound_present"),
        F.flatten(F.collect_list(F.coalesce("holder_list", F.array().cast("array<long>")))).alias(
            "holders"
        ),
    )
    return _per_group(
        aggregated,
        "column_index",
        functools.partial(_finalize_column, reduction, stage),
        wire.FREQUENCY_GROUP_SCHEMA,
    )


def _value_rows(
    reduction: Reduction, stage: PerValue, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for group in batch.column(0).to_pylist():
            yield from stage.group(reduction, reduction.groups.members[group]).to_batches()


def _finalize_column(reduction: Reduction, stage: PerValue, table: pa.Table) -> pa.Table:
    return wire.frequency_payload(*stage.finalize(reduction, table))


def _write(
    reduction: Reduction, writes: list[Write], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The last task: the finalized columns, then every ``Write`` stage in order."""
    reduction.frequencies = wire.frequency_results(batches)
    written = sum(stage.write(reduction) for stage in writes)
    yield pa.RecordBatch.from_arrays([int64_array([written])], names=["bytes_written"])
