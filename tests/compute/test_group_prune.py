"""A group's pruned frequency candidates: the first ``keep`` by (count desc, value asc) of
each incomplete column, with bounds that account for what was dropped, whatever order the
group's rows come in (so incremental and full reductions keep the same candidates)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.compute.reduce.combine import COMBINED_ARROW, HEAVY_ROWS
from lakestats.compute.reduce.prune import prune

KEEP = 100
# 0: heavy, ranked alone; 1-4 light, ranked together: two columns over ``KEEP`` (so each
# column's ranks start at its own offset), one with exactly ``KEEP`` rows, one complete
SLACK = np.array([2, 3, 1, 4, 0], dtype=np.int64)
INCOMPLETE = np.array([True, True, True, True, False])
SIZES = [HEAVY_ROWS + 500, 700, 450, KEEP, 300]


def _column(index: int, n: int, rng: np.random.Generator) -> pa.Table:
    counts = np.where(rng.random(n) < 0.05, rng.integers(2, 40, n), 1)  # ties at the cut
    return pa.table(
        {
            "column_index": pa.array(np.full(n, index, dtype=np.int32)),
            "value": pa.array([f"c{index}-{x}".encode() for x in rng.permutation(n)]),
            "count": pa.array(counts.astype(np.int64)),
            "bound": pa.array(rng.integers(0, 2, n).astype(np.int64)),
        },
        schema=COMBINED_ARROW,
    )


def _expected(columns: list[pa.Table]) -> tuple[set, dict[int, int]]:
    rows, ceilings = set(), {}
    for index, table in enumerate(columns):
        counts = table.column("count").to_numpy()
        present = table.column("bound").to_numpy()
        values = table.column("value").to_pylist()
        if not INCOMPLETE[index]:
            triples = zip(values, counts, present, strict=True)
            rows |= {(index, v, int(c), int(b)) for v, c, b in triples}
            continue
        order = pc.sort_indices(
            table, sort_keys=[("count", "descending"), ("value", "ascending")]
        ).to_numpy()
        kept, dropped = order[:KEEP], order[KEEP:]
        upper = counts + SLACK[index] - present
        ceiling = int(max(SLACK[index], upper[dropped].max(initial=0)))
        ceilings[index] = ceiling
        rows |= {
            (index, values[r], int(counts[r]), int(SLACK[index] - present[r] - ceiling))
            for r in kept
        }
    return rows, ceilings


def _pruned(combined: pa.Table) -> tuple[set, dict[int, int]]:
    out = prune(combined, INCOMPLETE, SLACK, KEEP)
    markers = out.filter(pc.is_null(out.column("value")))
    rows = out.filter(pc.is_valid(out.column("value")))
    return (
        set(
            zip(
                rows.column("column_index").to_pylist(),
                rows.column("value").to_pylist(),
                rows.column("count").to_pylist(),
                rows.column("bound").to_pylist(),
                strict=True,
            )
        ),
        dict(
            zip(
                markers.column("column_index").to_pylist(),
                markers.column("bound").to_pylist(),
                strict=True,
            )
        ),
    )


def test_prune_keeps_the_first_by_count_then_value_in_any_row_order() -> None:
    rng = np.random.default_rng(3)
    columns = [_column(index, size, rng) for index, size in enumerate(SIZES)]
    want = _expected(columns)
    assert _pruned(pa.concat_tables(columns)) == want
    shuffled = [t.take(pa.array(rng.permutation(t.num_rows))) for t in reversed(columns)]
    assert _pruned(pa.concat_tables(shuffled)) == want
    assert len(want[0]) == 4 * KEEP + 300
    assert want[1][3] == SLACK[3]  # nothing dropped: the ceiling is the slack
