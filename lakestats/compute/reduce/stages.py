"""The reduction as a declared list of stages, and its one planning function.

Contract: ``STAGES`` is the reduction, in order; ``local.py`` runs it inside one process
and ``spark.py`` on Spark, each stage by its shape:

* ``PerColumn``: every group contributes one value per column (``group``), contributions
  of a column merge pairwise (``merge``), the merged values are kept (``finish``). On
  Spark: ``mapInArrow`` over groups, ``groupBy(column_index)``, collected to the driver;
  values cross processes with the stage's ``codec`` (``wire.py``).
* ``PerValue``: every group contributes frequency rows (``group``), summed per
  (column, value) and then finalized per column (``finalize``). On Spark:
  ``groupBy(column_index, value)`` then ``groupBy(column_index)``; the results stay on
  the executors until the writing task; in one process, ``combine.aggregate_column``.
* ``Write``: a file written from what the earlier stages merged (``write``: the bytes
  written), when the job wants it (``wanted``). On Spark every ``Write`` runs, in order,
  in one task after the others; a ``prepare`` runs per group in Spark's first pass (so
  that task reads cached parts; the table files' prepare combines the frequency rows the
  frequencies stage then prunes).

``plan`` turns the merged scalar states into the table grids, and is called once, by the
first stage, whichever runner runs it. A new stage (ranks, a per-group index, …) is one
more record here with plain functions; a runner needs no change unless it has a new shape.
``analyze --exact`` is not a stage: it scans the staged value files after the reduction
(``compute/exact/job.py``, called from ``compute/analyze/run.py``) and patches its files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lakestats.compute.reduce import wire
from lakestats.compute.reduce.finalize import (
    column_frequencies,
    write_partition_histograms,
    write_partition_index,
    write_tables,
)
from lakestats.compute.reduce.fold import fold_deferred_sketches, merge_state
from lakestats.compute.reduce.job import ReduceJob
from lakestats.stats.rebin import Grid
from lakestats.stats.scalar_state import ScalarState
from lakestats.stats.table_frequencies import FrequencyResult

if TYPE_CHECKING:
    from lakestats.compute.reduce.cache import GroupCache


@dataclass(frozen=True)
class Plan:
    """The table grids, planned once from the merged scalar states."""

    grids: dict[int, Grid]  # every column with a table histogram
    rebinned: dict[int, Grid]  # those whose histogram is re-binned (frequencies incomplete)
    incomplete: np.ndarray  # per column: some partition did not list all its values


def plan(job: ReduceJob, states: dict[int, ScalarState]) -> Plan:
    """The table grid of each column over its partitions' histogram ranges, and which
    columns' frequencies are incomplete (their histograms are re-binned, not exact)."""
    grids = {}
    for index, state in states.items():
        grid = state.grid(job.dtype(index), job.bins)
        if grid is not None:
            grids[index] = grid
    rebinned = {i: g for i, g in grids.items() if not states[i].frequencies_complete}
    incomplete = np.array(
        [not states[i].frequencies_complete for i in range(len(job.columns))], dtype=bool
    )
    return Plan(grids, rebinned, incomplete)


@dataclass
class Reduction:
    """One reduction's inputs and what its stages have merged so far."""

    job: ReduceJob
    groups: GroupCache
    files: dict[str, str]  # the table files (kind -> path relative to the root)
    index_file: str  # the partition index (relative to the root)
    histograms_file: str  # the directory of partition histogram parts (relative to the root)
    states: dict[int, ScalarState] = field(default_factory=dict)
    plan: Plan | None = None
    rebinned: dict[int, np.ndarray] = field(default_factory=dict)
    frequencies: dict[int, FrequencyResult] = field(default_factory=dict)


def _always(reduction: Reduction) -> bool:
    return True


@dataclass(frozen=True)
class PerColumn:
    name: str
    group: Callable[[Reduction, list[int]], dict[int, Any]]
    merge: Callable[[ReduceJob, Any, Any], Any]
    codec: wire.Codec
    finish: Callable[[Reduction, dict[int, Any]], None]
    wanted: Callable[[Reduction], bool] = _always


@dataclass(frozen=True)
class PerValue:
    name: str
    group: Callable[[Reduction, list[int]], pa.Table]  # ``wire.FREQUENCY_ROW_ARROW`` rows
    finalize: Callable[[Reduction, pa.Table], tuple[int, FrequencyResult]]
    finish: Callable[[Reduction, dict[int, FrequencyResult]], None]


def _every_job(job: ReduceJob) -> bool:
    return True


@dataclass(frozen=True)
class Write:
    name: str
    write: Callable[[Reduction], int]
    prepare: Callable[[GroupCache, list[int]], None] | None = None
    wanted: Callable[[ReduceJob], bool] = _every_job


Stage = PerColumn | PerValue | Write


def _group_states(reduction: Reduction, members: list[int]) -> dict[int, ScalarState]:
    return reduction.groups.states(members)


def _planned(reduction: Reduction, states: dict[int, ScalarState]) -> None:
    reduction.states = states
    reduction.plan = plan(reduction.job, states)


def _deferred(reduction: Reduction) -> list[int]:
    """Columns the table level must estimate (some partition did not list all values)
    whose merged state still waits for sketches a complete group left out."""
    return [
        i
        for i, state in reduction.states.items()
        if state.sketches_deferred and not state.frequencies_complete
    ]


def _some_deferred(reduction: Reduction) -> bool:
    return bool(_deferred(reduction))


def _group_deferred_sketches(reduction: Reduction, members: list[int]) -> dict[int, ScalarState]:
    return fold_deferred_sketches(
        reduction.job, reduction.groups.ahead, members, _deferred(reduction)
    )


def _merge_sketches(job: ReduceJob, into: ScalarState, other: ScalarState) -> ScalarState:
    into.merge(other)
    return into


def _add_deferred(reduction: Reduction, sketches: dict[int, ScalarState]) -> None:
    for i in _deferred(reduction):
        state = reduction.states[i]
        if i in sketches:
            state.merge(sketches[i])
        state.sketches_deferred = False


def _group_histograms(reduction: Reduction, members: list[int]) -> dict[int, np.ndarray]:
    return reduction.groups.histograms(members, reduction.plan.rebinned)


def _add(job: ReduceJob, counts: np.ndarray, more: np.ndarray) -> np.ndarray:
    return counts + more


def _keep_histograms(reduction: Reduction, sums: dict[int, np.ndarray]) -> None:
    reduction.rebinned = sums


def _some_rebinned(reduction: Reduction) -> bool:
    return bool(reduction.plan.rebinned)


def _group_frequency_rows(reduction: Reduction, members: list[int]) -> pa.Table:
    return reduction.groups.frequency_rows(members, reduction.plan.incomplete)


def _finalize(reduction: Reduction, aggregated: pa.Table) -> tuple[int, FrequencyResult]:
    return column_frequencies(reduction.job, reduction.states, reduction.plan.grids, aggregated)


def _keep_frequencies(reduction: Reduction, results: dict[int, FrequencyResult]) -> None:
    reduction.frequencies = results


def _table_files(reduction: Reduction) -> int:
    r = reduction
    return write_tables(r.job, r.states, r.plan.grids, r.rebinned, r.files, r.frequencies)


def _combined_rows(groups: GroupCache, members: list[int]) -> None:
    groups.ensure_combined_rows(members)  # for the frequencies stage, which writes none


def _kept(job: ReduceJob) -> bool:
    """Whether the version is kept: only then do lookups read its partition index and
    parts (``ReduceJob.kept``)."""
    return job.kept


def _partition_index(reduction: Reduction) -> int:
    return write_partition_index(reduction.groups, reduction.index_file)


def _index_part(groups: GroupCache, members: list[int]) -> None:
    groups.ensure_index_part(members)


def _partition_histograms(reduction: Reduction) -> int:
    return write_partition_histograms(reduction.groups, reduction.histograms_file)


def _histograms_part(groups: GroupCache, members: list[int]) -> None:
    groups.ensure_partition_histograms_part(members)


STAGES: tuple[Stage, ...] = (
    PerColumn("scalar states", _group_states, merge_state, wire.STATES, _planned),
    # only when a column is complete in some groups (sketches left out) and not in others
    PerColumn(
        "deferred sketches",
        _group_deferred_sketches,
        _merge_sketches,
        wire.STATES,
        _add_deferred,
        wanted=_some_deferred,
    ),
    PerColumn(
        "histograms",
        _group_histograms,
        _add,
        wire.HISTOGRAMS,
        _keep_histograms,
        wanted=_some_rebinned,
    ),
    PerValue("frequencies", _group_frequency_rows, _finalize, _keep_frequencies),
    Write("table files", _table_files, prepare=_combined_rows),
    Write("partition index", _partition_index, prepare=_index_part, wanted=_kept),
    Write("partition histograms", _partition_histograms, prepare=_histograms_part,
          wanted=_kept),
)
"""The reduction, in order (see the module docstring for how each shape runs)."""
