"""``store.ranks.LayeredRanks``: a base and signed delta layers merged at read time.

Layers are written in the rank-part layout with tiny row groups (so the search crosses
many groups and parts) from random multisets of integer and string keys; the deltas add
values, remove some of the base's entirely and change counts. Every answer is compared
with the merged multiset computed in plain Python.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats.stats import keys as key_codec
from lakestats.store import ranks
from lakestats.store.handle import StatisticsStore
from lakestats.store.schemas import RANKS_SCHEMA

ROW_GROUP = 5


def _write_layer(store: StatisticsStore, directory: str, rows: dict[int, dict[bytes, int]],
                 first_distinct: dict[int, int]) -> None:
    """One layer: each column's rows in key order over three parts; the index carries the
    layer's distinct-count change on the column's first range."""
    index, part = [], 0
    for column in sorted(rows):
        ordered = sorted(rows[column].items())
        for chunk in np.array_split(np.arange(len(ordered)), 3):
            if not len(chunk):
                continue
            chosen = [ordered[i] for i in chunk]
            counts = np.array([c for _, c in chosen], dtype=np.int64)
            table = pa.table(
                {
                    "column_index": pa.array(np.full(len(chosen), column, np.int32)),
                    "value": pa.array([k for k, _ in chosen], pa.binary()),
                    "count": pa.array(counts),
                    "cumulative": pa.array(np.cumsum(counts)),
                },
                schema=RANKS_SCHEMA,
            )
            path = store.path(f"{directory}/part-{part:05d}.parquet")
            filesystem, local = store.resolve(path)
            filesystem.create_dir(local.rsplit("/", 1)[0], recursive=True)
            pq.write_table(table, local, row_group_size=ROW_GROUP)
            first = not any(r["column_index"] == column for r in index)
            index.append(
                {
                    "part": part,
                    "column_index": column,
                    "distinct_count": first_distinct[column] if first else 0,
                    "total": int(counts.sum()),
                    "min": chosen[0][0],
                    "max": chosen[-1][0],
                }
            )
            part += 1
    ranks.write_index(index, store.path(f"{directory}/{ranks.INDEX_FILE}"), store)


def _encoded(values: list) -> list[bytes]:
    array = pa.array(values)
    return key_codec.encode(array).cast(pa.binary()).to_pylist()


@pytest.mark.parametrize("kind", ["int", "string"])
def test_layers_answer_as_the_merged_multiset(tmp_path, kind: str) -> None:
    rng = np.random.default_rng(8 if kind == "int" else 9)
    drawn = [int(x) for x in rng.choice(99_999, 400, replace=False)]
    universe = _encoded(drawn if kind == "int" else [f"v{x:05d}{'x' * (x % 7)}" for x in drawn])
    base = {k: int(c) for k, c in zip(universe[:250], rng.integers(1, 6, 250), strict=True)}
    layers = [base]
    merged = dict(base)
    for step in range(2):  # two deltas: new values, removals of whole values, changed counts
        change: dict[bytes, int] = {}
        for k in universe[250 + 60 * step : 310 + 60 * step]:
            change[k] = int(rng.integers(1, 4))
        present = [k for k, c in merged.items() if c > 0]
        for k in rng.choice(len(present), 30, replace=False):
            change[present[k]] = -merged[present[k]]  # gone
        for k in rng.choice(len(present), 30, replace=False):
            key = present[k]
            if key not in change:
                change[key] = int(rng.integers(-merged[key] + 1, 4)) or 1
        layers.append(change)
        for k, c in change.items():
            merged[k] = merged.get(k, 0) + c
    merged = {k: c for k, c in merged.items() if c > 0}

    store = StatisticsStore(str(tmp_path))
    distinct_before = 0
    running: dict[bytes, int] = {}
    for number, layer in enumerate(layers):
        for k, c in layer.items():
            running[k] = running.get(k, 0) + c
        distinct_now = sum(1 for c in running.values() if c > 0)
        _write_layer(store, f"l{number}", {0: layer}, {0: distinct_now - distinct_before})
        distinct_before = distinct_now
    opened = ranks.open_layers(store, [f"l{n}/{ranks.INDEX_FILE}" for n in range(len(layers))])
    assert len(opened.deltas) == 2

    ordered = sorted(merged)
    expanded = [k for k in ordered for _ in range(merged[k])]
    assert opened.distinct_count(0) == len(merged)
    assert opened.total(0) == len(expanded)
    for rank in [1, 2, *range(3, len(expanded), 7), len(expanded)]:
        assert opened.value_at(0, rank) == expanded[rank - 1], rank
    probes = [*ordered[::5], *universe[300:], b"", b"\xff" * 9]
    for key in probes:
        below = sum(c for k, c in merged.items() if k < key)
        equal = merged.get(key, 0)
        assert opened.rank_of(0, key) == (below, equal, len(expanded) - below - equal), key
