"""``groups.parquet`` (``schemas.GROUPS_SCHEMA``) written from and read into typed
``GroupRow``s: the listed combinations go between the file's nested lists and Arrow
arrays without passing through Python objects (a pair of id columns lists 10,000)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakestats.lazy import LazyModule
from lakestats.stats.group_rows import Dependency, GroupRow, key_names
from lakestats.store import schemas
from lakestats.store.handle import StatisticsStore

if TYPE_CHECKING:
    from lakestats.store import writer
else:  # the estimator only reads groups.parquet: the writer's imports are analyze's
    writer = LazyModule("lakestats.store.writer")


def write_groups(rows: list[GroupRow], uri: str, store: StatisticsStore) -> int:
    """Column groups' joint statistics (``schemas.GROUPS_SCHEMA``) at ``uri``; its size."""
    return writer.write_parquet(groups_table(rows), uri, store, write_statistics=False,
                                use_dictionary=False)


def groups_table(rows: list[GroupRow]) -> pa.Table:
    """``rows`` as ``schemas.GROUPS_SCHEMA``: each row's listed keys become its list of
    combinations (a list of one key per column) without passing through Python objects."""
    schema = schemas.GROUPS_SCHEMA
    scalars = {
        name: pa.array([getattr(row, name) for row in rows], schema.field(name).type)
        for name in ("row_count", "distinct_count", "distinct_lower", "distinct_upper",
                     "distinct_exact", "truncated", "unlisted_rows", "unlisted_max",
                     "hll_sketch")
    }
    widths = np.array([len(row.columns) for row in rows], dtype=np.int64)
    listed = np.array([row.listed.num_rows for row in rows], dtype=np.int64)
    flat_keys = [pa.array([], pa.binary())]
    for row, width, count in zip(rows, widths, listed, strict=True):
        keys = [row.listed.column(n).combine_chunks().cast(pa.binary())
                for n in key_names(int(width))]
        # the keys interleaved: combination i's keys at i * width ... i * width + width - 1
        order = (np.arange(count)[:, None] + np.arange(width)[None, :] * count).ravel()
        flat_keys.append(pa.concat_arrays(keys).take(pa.array(order)))
    # each combination's list of keys, then each row's list of combinations
    combination_offsets = np.concatenate([[0], np.cumsum(np.repeat(widths, listed))])
    row_offsets = pa.array(np.concatenate([[0], np.cumsum(listed)]), pa.int32())
    combinations = pa.ListArray.from_arrays(
        pa.array(combination_offsets, pa.int32()), pa.concat_arrays(flat_keys)
    )

    def listed_ints(column: str) -> pa.Array:
        values = [row.listed.column(column).combine_chunks().cast(pa.int64()) for row in rows]
        return pa.ListArray.from_arrays(
            row_offsets, pa.concat_arrays([pa.array([], pa.int64()), *values])
        )

    columns = {
        "group": pa.array([row.name for row in rows], pa.string()),
        "columns": pa.array([list(row.columns) for row in rows], schema.field("columns").type),
        "types": pa.array([list(row.types) for row in rows], schema.field("types").type),
        **scalars,
        "values": pa.ListArray.from_arrays(row_offsets, combinations),
        "counts": listed_ints("count"),
        "counts_upper": listed_ints("upper"),
        "dependencies": pa.array(
            [[{"determinant": list(d.determinant), "dependent": d.dependent,
               "degree": row.degree(d),
               "supporting_rows": d.supporting_rows} for d in row.dependencies]
             for row in rows],
            schema.field("dependencies").type,
        ),
    }
    return pa.Table.from_arrays([columns[name] for name in schema.names], schema=schema)


def read_groups(store: StatisticsStore, relative: str) -> list[GroupRow]:
    """The rows of the ``groups.parquet`` at ``relative`` under ``store``."""
    filesystem, path = store.resolve(store.path(relative))
    with filesystem.open_input_file(path) as handle:
        table = pq.ParquetFile(handle).read(use_threads=False)
    return group_rows(table)


def group_rows(table: pa.Table) -> list[GroupRow]:
    """``table`` (``schemas.GROUPS_SCHEMA``) as rows; each row's combinations as one key
    array per column."""
    rows = table.drop_columns(["values", "counts", "counts_upper"]).to_pylist()
    out = []
    for i, row in enumerate(rows):
        width = len(row["columns"])
        flat = table.column("values")[i].values.flatten()
        listed = {
            name: flat.take(pa.array(np.arange(j, len(flat), width, dtype=np.int64)))
            for j, name in enumerate(key_names(width))
        }
        listed["count"] = table.column("counts")[i].values
        listed["upper"] = table.column("counts_upper")[i].values
        out.append(GroupRow(
            columns=tuple(row["columns"]),
            types=tuple(row["types"]),
            row_count=row["row_count"],
            distinct_count=row["distinct_count"],
            distinct_lower=row["distinct_lower"],
            distinct_upper=row["distinct_upper"],
            distinct_exact=row["distinct_exact"],
            truncated=row["truncated"],
            unlisted_rows=row["unlisted_rows"],
            unlisted_max=row["unlisted_max"],
            listed=pa.table(listed),
            dependencies=tuple(Dependency(tuple(d["determinant"]), d["dependent"],
                                          d["supporting_rows"]) for d in row["dependencies"]),
            hll_sketch=row["hll_sketch"],
        ))
    return out
