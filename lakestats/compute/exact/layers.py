"""Whether an incremental exact step writes delta layers or compacts them into a new base.

The ranks (``store/ranks.py``) and the table frequencies of the columns the step rewrites
(``store/frequency_layers.py``) are layers: a base and deltas merged on read. ``plan``
names what the step merges and the layers it would write on; ``compact`` says when the
deltas would grow too many or too large, so the step writes a new base instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow.parquet as pq

from lakestats.compute.exact import sources
from lakestats.compute.exact.ranges import Group
from lakestats.compute.exact.scenarios import Scenario
from lakestats.compute.reduce.job import ReduceJob
from lakestats.store import frequency_layers, ranks
from lakestats.store.manifest import Version
from lakestats.store.partition_rows import PartitionRows

LAYERED = (Scenario.DISJOINT.value, Scenario.AGGREGATE.value, Scenario.BATCHED.value)
"""Scenarios whose table frequencies the step rewrites (only their repeated values): a
delta layer keeps their changed values only."""

MAX_DELTA_LAYERS = 4
"""Delta layers a version's ranks may have; the next incremental analyze compacts them."""

DELTA_SHARE = 0.25
"""Compact when the deltas would hold more rows than this share of the base's: a read
merges the layers, so they stay small beside it."""


@dataclass(frozen=True)
class Plan:
    """What the step merges and what it writes: ``sources`` (the partitions, or a previous
    version's rank parts plus the changed partitions), whether it writes a delta layer over
    the previous layers (``layers``: their index files, base first; ``files``: their parts;
    ``rows``: their rows) or a new base."""

    sources: list[sources.Source]
    delta: bool = False
    layers: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    rows: tuple[int, ...] = ()
    # the frequency layers (store/frequency_layers.py): files, base first, the columns
    # they hold (their repeated values), and each one's number of values listed
    frequency_files: tuple[str, ...] = ()
    frequency_columns: frozenset[int] = frozenset()
    listed: dict[int, int] = field(default_factory=dict)


def plan(job: ReduceJob, previous: Version | None, report: dict[str, object]) -> Plan:
    """Every partition, or (with an exact ``previous`` version of the same columns) its
    rank parts, the added partitions and the removed ones (-1): as a delta layer while
    the previous deltas are few and small, else compacted into a new base."""

    def of(entries: list, sign: int, rows: PartitionRows | None = None) -> list[sources.Source]:
        return [
            sources.Source(
                e.files.get("values", ""),
                sign,
                e.files["statistics"],
                e,
                rows or job.rows,
                e.name,
            )
            for e in entries
        ]

    exact = (previous.extra.get("exact") or {}) if previous else {}
    parts = list(exact.get("files") or [])
    if previous is None or not parts or previous.columns != job.columns:
        report["incremental"] = False
        return Plan(of(job.partitions, 1))
    before = {e.files["statistics"]: e for e in previous.partitions}
    now = {e.files["statistics"]: e for e in job.partitions}
    added = [e for path, e in now.items() if path not in before]
    removed = [e for path, e in before.items() if path not in now]
    report.update(incremental=True, partitions_added=len(added), partitions_removed=len(removed))
    layers = tuple(ranks.layer_indexes(previous.table_files or {}, exact))
    rows = tuple(exact.get("layer_rows") or ())
    gone = of(removed, -1, PartitionRows(job.store, previous))  # rows in the previous parts
    chosen = [sources.Source(part) for part in parts] + of(added, 1) + gone
    layered = len(rows) == len(layers) and len(layers) <= MAX_DELTA_LAYERS
    held = frequency_layers.FrequencyLayers.of(previous)
    if held is None:  # a base version: its table file lists these columns' values
        names = [c["name"] for c in job.columns]
        scenarios = exact.get("scenarios") or {}
        columns = frozenset(
            names.index(n) for n, s in scenarios.items() if n in names and s in LAYERED
        )
        base = (previous.table_files or {}).get("frequencies")
        held = frequency_layers.FrequencyLayers((base,) if base else (), columns)
    listed = _repeated_listed(job, previous, held.columns)
    if listed is None:  # a version listing every value of them: rewritten whole, once
        held, listed = frequency_layers.FrequencyLayers((), frozenset()), {}
    return Plan(chosen, layered, layers, tuple(parts), rows, held.files, held.columns, listed)


def _repeated_listed(
    job: ReduceJob, previous: Version, columns: frozenset[int]
) -> dict[int, int] | None:
    """Each column's number of values listed in ``previous``'s table frequencies, or None
    when one of them lists more than its repeated values (written before the table
    frequencies of these columns listed only repeated values)."""
    relative = (previous.table_files or {}).get("statistics")
    if not columns or relative is None:
        return {}
    with job.store.open_input_file(job.store.path(relative)) as handle:
        rows = pq.ParquetFile(handle).read(
            columns=["duplicates_only", "frequencies_count"], use_threads=False
        ).to_pylist()
    if any(i >= len(rows) or not rows[i]["duplicates_only"] for i in columns):
        return None
    return {i: rows[i]["frequencies_count"] or 0 for i in columns}


def compact(plan: Plan, groups: dict[int, list[Group]]) -> bool:
    """Whether a planned delta layer would make the deltas too large (the changed
    partitions' rows, from the outlines, over the base's rows)."""
    if not plan.delta:
        return False
    changed = sum(
        g.rows
        for column in groups.values()
        for g in column
        if plan.sources[g.source].statistics is not None
    )
    return sum(plan.rows[1:]) + changed > DELTA_SHARE * plan.rows[0]
