"""What one Spark task does, free of Spark so it is testable on its own.

A task reads one slice of one partition through the format's ``PartitionReader``,
folds every column into a ``ColumnAccumulator`` and either writes the partition's
three files (a partition of one slice) or writes its partial state to the staging
area for ``merge_partition`` (a partition split into several slices).
"""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass, field

import pyarrow as pa

from lakestats import fs
from lakestats.compute.outcome import TaskOutcome
from lakestats.errors import LakestatsError
from lakestats.formats.base import PartitionReader, Slice
from lakestats.options import AnalyzeOptions
from lakestats.stats import value_counts
from lakestats.stats.accumulator import ColumnAccumulator
from lakestats.stats.arrays import ddl_schema
from lakestats.stats.auto_groups import AutoPairs
from lakestats.stats.column_groups import GroupAccumulator
from lakestats.stats.leaves import Leaf, leaf_array
from lakestats.stats.registry import SummaryStatistic
from lakestats.store import group_files, layout, writer
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import FileKind

SUMMARY_SCHEMA = (
    "task_id long, partition long, kind string, row_count long, bytes_written long, "
    "seconds double, error string"
)
SUMMARY_FIELDS = list(ddl_schema(SUMMARY_SCHEMA))
"""``SUMMARY_SCHEMA`` in Arrow (what the tasks yield)."""


@dataclass
class Job:
    """Everything executors need; pickled once into the tasks' closure."""

    reader: PartitionReader
    read_columns: list[str] | None
    leaves: list[Leaf]
    options: AnalyzeOptions
    statistics: list[SummaryStatistic]
    store: StatisticsStore  # the statistics root (picklable: a URI and S3 options)
    run_id: str
    slices: list[Slice]
    partition_paths: list[str]  # per partition index
    slice_partition: list[int] = field(default_factory=list)  # task -> partition index
    row_filter: object | None = None  # a lakestats.query.predicate tree: only rows where TRUE
    # extra work on each partition's rows (``compute/sample/tasks.SampleHook``); its rows
    # travel in the summary under "extra", its bytes count in "bytes_written"
    hook: object | None = None
    # leaf name -> Iceberg type: store each partition column's theta sketch (Puffin)
    theta_types: dict[str, str] | None = None
    # column groups (analyze --column-groups): their names and leaves, in declared order
    groups: list[tuple[tuple[str, ...], tuple[Leaf, ...]]] = field(default_factory=list)
    # analyze --column-groups auto: the columns pairs are found among (None: not asked)
    auto_leaves: tuple[Leaf, ...] | None = None
    # frequency and histogram rows go to the run's hand-off files (a partitioned table)
    handoff: bool = True
    # every partition file keeps its HLL and KLL sketches (a version only reduced once and
    # deleted, ``analyze --from-sample``'s: its reduction need not rebuild them)
    every_sketch: bool = False

    @property
    def has_groups(self) -> bool:
        return bool(self.groups) or self.auto_leaves is not None

    def group_accumulators(self) -> list[GroupAccumulator | AutoPairs]:
        found: list[GroupAccumulator | AutoPairs] = [
            GroupAccumulator(names, leaves) for names, leaves in self.groups
        ]
        if self.auto_leaves is not None:
            found.append(AutoPairs(self.auto_leaves))
        return found

    def files(self, partition: int) -> dict[str, str]:
        """A computed partition's files: its frequency and histogram rows handed to the
        reduction (``handoff``; the version's parts are their home), or, for an
        unpartitioned table, kept beside its statistics (they are the table level's)."""
        path = self.partition_paths[partition]
        files = layout.partition_files(path, self.run_id)
        if self.handoff:
            files.update(layout.handoff_files(path, self.run_id))
        return files

    def states_dir(self) -> str:
        """Where sliced partitions' partial states wait (deleted once merged)."""
        return fs.join(layout.staging_dir(self.store.uri, self.run_id), "states")

    def state_uri(self, partition: int, index: int) -> str:
        return fs.join(self.states_dir(), f"{partition}", f"{index}.pkl")


def _summary(
    task_id: int,
    partition: int,
    kind: TaskOutcome,
    rows: int = 0,
    written: int = 0,
    started: float = 0.0,
    error: str | None = None,
) -> dict[str, object]:
    return {
        "task_id": task_id,
        "partition": partition,
        "kind": kind,
        "row_count": rows,
        "bytes_written": written,
        "seconds": time.perf_counter() - started,
        "error": error,
    }


def _finalize_and_write(
    job: Job,
    partition: int,
    accumulators: list[ColumnAccumulator],
    groups: list[GroupAccumulator | AutoPairs],
) -> tuple[int, dict[FileKind, pa.Table]]:
    """The partition's files written; their bytes and the three files' rows (which
    ``analyze --from-sample``'s hook scales without reading them back)."""
    thetas = job.theta_types or {}
    results = [
        a.finalize(job.options.bins, job.options.max_frequencies, thetas.get(a.leaf.name),
                   job.every_sketch)
        for a in accumulators
    ]
    uris = {k: job.store.path(v) for k, v in job.files(partition).items()}
    custom = [(s.name, s.result_type) for s in job.statistics]
    tables = writer.partition_tables(results, custom, job.options.bins)
    written = writer.write_tables(tables, uris, job.store)
    if job.options.exact:
        staged = value_counts.staged_values(accumulators, results)
        relative = layout.values_file(job.partition_paths[partition], job.run_id)
        uri = job.store.path(relative)
        written += writer.write_values(staged, uri, job.store)
    if groups:
        rows = [r for g in groups for r in g.finalize_rows(job.options.max_frequencies)]
        relative = layout.groups_file(job.partition_paths[partition], job.run_id)
        written += group_files.write_groups(rows, job.store.path(relative), job.store)
    return written, tables


def run_slice(job: Job, task_id: int) -> dict[str, object]:
    started = time.perf_counter()
    part = job.slices[task_id]
    partition = job.slice_partition[task_id]
    try:
        if job.hook is None and job.row_filter is None:  # only counted: codes will do
            table = job.reader.read_encoded(part, job.read_columns)
        else:
            table = job.reader.read(part, job.read_columns)
        if job.row_filter is not None:  # statistics of a predicate (analyze --where)
            from lakestats.query.predicate_eval import matching_rows

            table = matching_rows(job.row_filter, table)
        accumulators = [ColumnAccumulator(leaf, list(job.statistics), key_order=job.options.exact)
                        for leaf in job.leaves]
        for accumulator in accumulators:
            accumulator.observe(leaf_array(table, accumulator.leaf))
        groups = job.group_accumulators()
        for group in groups:
            group.observe(table)
        rows = table.num_rows
        if part.count == 1:
            written, files = _finalize_and_write(job, partition, accumulators, groups)
            extra = None
            if job.hook is not None:
                more, extra = job.hook.run(  # type: ignore[attr-defined]
                    job, partition, table, files, accumulators
                )
                written += more
            del table
            summary = _summary(task_id, partition, TaskOutcome.DONE, rows, written, started)
            return summary if extra is None else {**summary, "extra": extra}
        del table
        if job.hook is not None:
            raise LakestatsError("a partition with a task hook must be read by one task")
        for accumulator in accumulators:
            accumulator.statistics = []  # functions travel with the job, not the state
        state = pickle.dumps((accumulators, groups), protocol=5)
        job.store.write_bytes_atomic(job.state_uri(partition, part.index), state)
        return _summary(task_id, partition, TaskOutcome.PARTIAL, rows, len(state), started)
    except LakestatsError as exc:
        return _summary(task_id, partition, TaskOutcome.ERROR, started=started, error=str(exc))


def merge_partition(job: Job, partition: int, slice_count: int) -> dict[str, object]:
    started = time.perf_counter()
    try:
        merged: list[ColumnAccumulator] | None = None
        merged_groups: list[GroupAccumulator | AutoPairs] = []
        for index in range(slice_count):
            state, groups = pickle.loads(job.store.read_bytes(job.state_uri(partition, index)))
            for accumulator in state:
                accumulator.statistics = list(job.statistics)
            if merged is None:
                merged, merged_groups = state, groups
            else:
                for mine, theirs in zip(merged, state, strict=True):
                    mine.merge(theirs)
                for group, other in zip(merged_groups, groups, strict=True):
                    group.merge(other)  # type: ignore[arg-type]
        assert merged is not None
        written, _ = _finalize_and_write(job, partition, merged, merged_groups)
        rows = merged[0].row_count if merged else 0
        return _summary(partition, partition, TaskOutcome.DONE, rows, written, started)
    except LakestatsError as exc:
        return _summary(partition, partition, TaskOutcome.ERROR, started=started, error=str(exc))
