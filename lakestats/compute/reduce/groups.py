"""The table level of column groups (``analyze --column-groups``): every partition's
``groups.parquet`` read on the driver (a row per group, its lists capped like frequencies)
and folded into the table's; of the pairs found automatically, those every partition
found and whose columns are dependent.

* combinations: counts summed; a partition that did not list a combination may still hold
  up to its ``unlisted_max`` rows of it, so each listed count has a sound upper bound
  (``counts_upper``) and a combination listed nowhere at most the sum of those;
* distinct combinations: exact when every partition listed all of its own, else the
  union of the partitions' HLL sketches kept within sound bounds;
* dependency degrees: supporting rows summed over rows (weighted by rows).
"""

from __future__ import annotations

import datasketches as ds
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.stats import sketches
from lakestats.stats.auto_groups import AUTO_KEPT, AUTO_MIN_DISTANCE, dependence
from lakestats.stats.group_rows import (
    GroupRow,
    combination_hashes,
    group_row,
    key_names,
    listing,
)
from lakestats.store import group_files, layout, manifest
from lakestats.store.handle import StatisticsStore
from lakestats.threads import thread_map


def reduce_groups(
    store: StatisticsStore,
    partitions: list[manifest.PartitionEntry],
    run_id: str,
    max_frequencies: int,
    table_files: dict[str, str],
    declared: list[str],
) -> tuple[dict[str, str], int]:
    """Write the table-level ``groups.parquet``; the table files with it, and its bytes.
    The ``declared`` groups (by name), then the pairs found automatically
    (``analyze --column-groups auto``) that every partition found, the most dependent
    first: at most ``AUTO_KEPT``, each with a dependence of ``AUTO_MIN_DISTANCE`` or more
    (``stats/auto_groups.py``)."""
    read = thread_map(lambda e: group_files.read_groups(store, e.files["groups"]), partitions)
    by_name = [{row.name: row for row in part} for part in read]
    found = [name for name in (by_name[0] if by_name else {})
             if all(name in part for part in by_name)]
    rows = [table_group([part[name] for part in by_name], max_frequencies)
            for name in found if name in declared]
    taken = {frozenset(r.columns) for r in rows}
    scored = []
    for name in found:
        if name in declared or frozenset(name.split(",")) in taken:
            continue
        row = table_group([part[name] for part in by_name], max_frequencies)
        score = dependence(row)
        if score is not None and score >= AUTO_MIN_DISTANCE:
            scored.append((-score, name, row))
    rows += [row for _, _, row in sorted(scored, key=lambda s: s[:2])[:AUTO_KEPT]]
    relative = layout.table_groups_file(run_id)
    written = group_files.write_groups(rows, store.path(relative), store)
    return {**table_files, "groups": relative}, written


def table_group(parts: list[GroupRow], max_frequencies: int) -> GroupRow:
    """One group's table-level row from its partitions' rows."""
    first = parts[0]
    columns = first.columns
    names = key_names(len(columns))
    budget = sum(p.unlisted_max for p in parts if p.truncated)
    pieces = [
        pa.table({
            **{n: p.listed.column(n) for n in names},
            "count": p.listed.column("count"),
            "held": pa.array(np.full(p.listed.num_rows, p.unlisted_max if p.truncated else 0,
                                     dtype=np.int64)),
        })
        for p in parts if p.listed.num_rows
    ]
    if pieces:
        summed = pa.concat_tables(pieces).group_by(names, use_threads=False).aggregate(
            [("count", "sum"), ("held", "sum")]
        )
        joint = pa.table(
            {
                **{n: summed.column(n) for n in names},
                "count": summed.column("count_sum"),
                "upper": pc.add(summed.column("count_sum"),
                                pc.subtract(budget, summed.column("held_sum"))),
            }
        )
    else:
        joint = pa.table(
            {**{n: pa.array([], pa.binary()) for n in names},
             "count": pa.array([], pa.int64()), "upper": pa.array([], pa.int64())}
        )
    row_count = sum(p.row_count for p in parts)
    truncated = any(p.truncated for p in parts)
    union = joint.num_rows
    hll = None
    if truncated:
        estimate, lower, upper, hll = _distinct(parts, joint, names, union, row_count)
        distinct = (estimate, lower, upper, False)
    else:
        distinct = (union, union, union, True)
    supporting: dict[tuple[tuple[str, ...], str], int] = {}
    for p in parts:
        for d in p.dependencies:
            key = (d.determinant, d.dependent)
            supporting[key] = supporting.get(key, 0) + d.supporting_rows
    position = {c: i for i, c in enumerate(columns)}
    return group_row(
        columns,
        list(first.types),
        row_count,
        joint,
        listing(joint, max_frequencies),
        distinct=distinct,
        dependencies=[
            (tuple(position[c] for c in det), position[dep], support)
            for (det, dep), support in supporting.items()
        ],
        carried=(budget, truncated, hll),
    )


def _distinct(
    parts: list[GroupRow], joint: pa.Table, names: list[str], union: int, row_count: int
) -> tuple[int, int, int, bytes]:
    """Distinct combinations where some partition did not list all of its own: the HLL
    union of the truncated partitions' sketches and the listed combinations, within
    [the most any one partition or the listed union holds, what the partitions hold]."""
    sketch = ds.hll_union(sketches.HLL_LG_K)
    for p in parts:
        if p.truncated and p.hll_sketch is not None:
            sketch.update(sketches.order_free_hll(p.hll_sketch))
    if joint.num_rows:
        listed = sketches.hll_of(combination_hashes([joint.column(n).combine_chunks()
                                                     for n in names]))
        sketch.update(sketches.order_free_hll(listed))
    result = sketch.get_result()
    lower = max([union, *[p.distinct_count for p in parts]])
    unlisted = sum(p.distinct_count - p.listed.num_rows for p in parts)
    upper = max(lower, min(row_count, sum(p.distinct_count for p in parts), union + unlisted))
    estimate = min(max(round(result.get_estimate()), lower), upper)
    return estimate, lower, upper, result.serialize_compact()
