"""A column group's row of ``groups.parquet`` (``store/schemas.GROUPS_SCHEMA``), in a
partition and at table level: its most common value combinations in the stored order (by
decreasing count, then increasing keys), the bounds of those left out, and the sketch the
table level unites their distinct count from. The keys stay Arrow arrays up to the file:
a pair of id columns lists 10,000 combinations per partition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.lazy import LazyModule
from lakestats.stats import hashing
from lakestats.stats.key_ints import keys_as_ints

if TYPE_CHECKING:
    from lakestats.stats import sketches
else:  # the estimator reads these rows; only analyze builds a sketch (and loads DataSketches)
    sketches = LazyModule("lakestats.stats.sketches")

KEY_SEPARATOR = b"\x00\xff\x00"
NULL_KEY = b"\x00null\x00"
"""How a combination's keys are joined into the one value its HLL sketch hashes."""



def group_name(columns: tuple[str, ...]) -> str:
    """The group's name in the files and answers: its columns joined by commas."""
    return ",".join(columns)



def key_names(width: int) -> list[str]:
    return [f"k{i}" for i in range(width)]



def combination_hashes(key_columns: list[pa.Array]) -> np.ndarray:
    """The value an HLL sketch is fed for each combination (the same in every partition)."""
    filled = [pc.fill_null(c, pa.scalar(NULL_KEY, pa.binary())) for c in key_columns]
    joined = pc.binary_join_element_wise(*filled, pa.scalar(KEY_SEPARATOR, pa.binary()))
    return hashing.hash_binary(joined.cast(pa.binary())).view(np.int64)



@dataclass(frozen=True)
class Dependency:
    """A functional dependency's degree: the rows whose ``determinant`` values always come
    with one ``dependent`` value (PostgreSQL's degree is this over the rows)."""

    determinant: tuple[str, ...]
    dependent: str
    supporting_rows: int


@dataclass(frozen=True)
class GroupRow:
    """One row of ``groups.parquet``. ``listed``: the listed combinations (keys ``k0`` …,
    ``count``, ``upper``) in the stored order."""

    columns: tuple[str, ...]
    types: tuple[str, ...]
    row_count: int
    distinct_count: int
    distinct_lower: int
    distinct_upper: int
    distinct_exact: bool
    truncated: bool
    unlisted_rows: int
    unlisted_max: int
    listed: pa.Table
    dependencies: tuple[Dependency, ...]
    hll_sketch: bytes | None

    @property
    def name(self) -> str:
        return group_name(self.columns)

    def degree(self, dependency: Dependency) -> float:
        """The dependency's degree: its supporting rows over the rows (1 for none)."""
        return dependency.supporting_rows / self.row_count if self.row_count else 1.0

def most_common(joint: pa.Table, by: str = "count", key_sorted: bool = False) -> pa.Table:
    """``joint``'s rows by decreasing ``by``, ties by increasing keys (the stored order).
    ``key_sorted``: ``joint`` is in increasing key order already, so ties keep their place."""
    if key_sorted:
        return joint.take(pa.array(np.argsort(-joint.column(by).to_numpy(), kind="stable")))
    names = [n for n in joint.column_names if n.startswith("k")]
    fixed = [_fixed_width_order(joint.column(n)) for n in names]
    if joint.num_rows and all(f is not None for f in fixed):
        # numbers sort far faster than Arrow compares binary keys (a pair of id columns
        # has about a distinct combination per row); the same order exactly
        counts = joint.column(by).to_numpy().astype(np.float64)
        order_keys = [part for f in reversed(fixed) for part in reversed(f)]  # type: ignore[arg-type]
        return joint.take(pa.array(np.lexsort([*order_keys, -counts])))
    order = pc.sort_indices(
        joint, sort_keys=[(by, "descending"), *[(n, "ascending") for n in names]],
        null_placement="at_start",
    )
    return joint.take(order)


def _fixed_width_order(column: pa.Array | pa.ChunkedArray) -> list[np.ndarray] | None:
    """(non-null first-is-false flags, ``keys_as_ints`` values): numpy keys ordering 8-byte
    keys as their bytes order them, nulls first; None for keys of other widths."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.null_count == len(column) or not eight_byte_keys(column):
        return None
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    return [valid, keys_as_ints(pc.fill_null(column, pa.scalar(bytes(8), pa.binary())))]


def eight_byte_keys(column: pa.Array) -> bool:
    """Whether every non-null key is 8 bytes long (a number's or a temporal's)."""
    lengths = pc.min_max(pc.binary_length(column))
    return bool(lengths["min"].as_py() == 8 and lengths["max"].as_py() == 8)


Listing = tuple[pa.Table, int | None]


def listing(joint: pa.Table, limit: int, key_sorted: bool = False) -> Listing:
    """The ``limit`` most common rows of ``joint`` in the stored order, and the largest
    count (``upper`` at table level) of the rows left out (None: none is). ``key_sorted``:
    ``joint`` is in increasing key order (``most_common``)."""
    return _listed(joint, limit, "upper" if "upper" in joint.column_names else "count",
                   key_sorted)


def _listed(joint: pa.Table, limit: int, rest_by: str, key_sorted: bool) -> Listing:
    """``listing`` with ``rest_by`` the bound of a row. Only rows as common as the
    ``limit``-th are sorted: a pair of id columns has hundreds of thousands of
    combinations, few of them common."""
    rows = joint.num_rows
    if rows <= limit:
        return most_common(joint, key_sorted=key_sorted), None
    if limit <= 0:
        return joint.slice(0, 0), int(pc.max(joint.column(rest_by)).as_py())
    counts = joint.column("count").to_numpy()
    threshold = np.partition(counts, rows - limit)[rows - limit]  # the limit-th largest
    common = counts >= threshold
    ordered = most_common(joint.filter(pa.array(common)), key_sorted=key_sorted)
    rest = ordered.column(rest_by).to_numpy()[limit:]
    others = joint.column(rest_by).to_numpy()[~common]
    rest_max = max(int(rest.max()) if len(rest) else 0, int(others.max()) if len(others) else 0)
    return ordered.slice(0, limit), rest_max

def group_row(
    columns: tuple[str, ...],
    types: list[str],
    row_count: int,
    joint: pa.Table,
    listed_rows: Listing,
    *,
    distinct: tuple[int, int, int, bool],
    dependencies: list[tuple[tuple[int, ...], int, int]],
    carried: tuple[int, bool, bytes | None] = (0, False, None),
) -> GroupRow:
    """The row of ``joint`` (``k0`` …, ``count`` and, at table level, ``upper``) whose
    most common combinations are ``listed_rows`` (``listing``). ``distinct``: estimate,
    lower, upper, exact. ``carried`` (table level): the bound of the combinations
    ``joint`` itself already leaves out, whether it does, their HLL."""
    unlisted_max, truncated, hll = carried
    names = key_names(len(columns))
    by_upper = "upper" if "upper" in joint.column_names else "count"
    listed, rest_max = listed_rows
    if rest_max is not None:
        truncated = True
        unlisted_max = max(unlisted_max, rest_max)
    if truncated and hll is None:
        hll = sketches.hll_of(combination_hashes([joint.column(n).combine_chunks()
                                                  for n in names]))
    counts = listed.column("count")
    estimate, lower, upper, exact = distinct
    return GroupRow(
        columns=tuple(columns),
        types=tuple(types),
        row_count=row_count,
        distinct_count=estimate,
        distinct_lower=lower,
        distinct_upper=upper,
        distinct_exact=exact,
        truncated=truncated,
        unlisted_rows=max(0, row_count - int(pc.sum(counts).as_py() or 0)),
        unlisted_max=unlisted_max if truncated else 0,
        listed=pa.table({
            **{n: listed.column(n) for n in names},
            "count": counts,
            "upper": listed.column(by_upper),
        }),
        dependencies=tuple(
            Dependency(tuple(columns[i] for i in det), columns[dep], support)
            for det, dep, support in dependencies
        ),
        hll_sketch=hll if truncated else None,
    )
