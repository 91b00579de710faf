"""What an analyze reads and records of the table's columns: the leaves it computes
(``select_columns``), the version's record of each (``column_records``) and the row
subset of ``analyze --where`` (``RowSubset``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from lakestats.errors import ColumnNotFoundError, InvalidArgumentError
from lakestats.formats.base import TableFormat
from lakestats.stats.column_groups import supported
from lakestats.stats.leaves import Leaf, leaves_of


@dataclass(frozen=True)
class RowSubset:
    """``analyze --where`` (``lakestats.store.derived``): ``row_filter`` (a
    ``lakestats.query.predicate`` tree) keeps only the rows where it is TRUE, inside each
    task; ``keep_partition`` (partition name, plan fingerprint) skips partitions that cannot
    match; ``extra`` goes into the version."""

    row_filter: object
    keep_partition: Callable[[str, str], bool] | None = None
    extra: dict[str, object] = field(default_factory=dict)


def select_columns(schema: pa.Schema, columns: tuple[str, ...] | None) -> tuple[list, list | None]:
    leaves = leaves_of(schema)
    if not columns:
        return leaves, None
    wanted = []
    for name in columns:
        matches = [leaf for leaf in leaves if leaf.name == name or leaf.path[0] == name]
        if not matches:
            raise ColumnNotFoundError(
                f"column {name!r} is not in the table; its columns are: "
                f"{', '.join(schema.names[:20])}{' …' if len(schema.names) > 20 else ''}"
            )
        wanted.extend(m for m in matches if m not in wanted)
    ordered = [leaf for leaf in leaves if leaf in wanted]
    top = [n for n in schema.names if any(leaf.path[0] == n for leaf in ordered)]
    return ordered, top


def group_leaves(
    schema: pa.Schema, groups: tuple[tuple[str, ...], ...]
) -> list[tuple[tuple[str, ...], tuple[Leaf, ...]]]:
    """Each column group's leaves (``analyze --column-groups``); a name that is not a
    column of the table, or a nested one, is one error line."""
    by_name = {leaf.name: leaf for leaf in leaves_of(schema)}
    found = []
    for names in groups:
        leaves = []
        for name in names:
            leaf = by_name.get(name)
            if leaf is None:
                raise ColumnNotFoundError(
                    f"--column-groups {','.join(names)!r}: column {name!r} is not in the "
                    f"table; its columns are: {', '.join(schema.names[:20])}"
                    f"{' …' if len(schema.names) > 20 else ''}"
                )
            if not supported(leaf):
                raise InvalidArgumentError(
                    f"--column-groups {','.join(names)!r}: column {name!r} is {leaf.type}; "
                    "a group holds columns of single values (not lists, maps or nulls)"
                )
            leaves.append(leaf)
        found.append((names, tuple(leaves)))
    return found


def auto_leaves(leaves: list[Leaf], plans: list) -> tuple[Leaf, ...]:
    """The analyzed columns ``analyze --column-groups auto`` pairs: not a partition column
    (one value per partition), of single values (``stats/auto_groups.py``)."""
    keys = {name for plan in plans for name, _ in plan.key}
    return tuple(leaf for leaf in leaves if supported(leaf) and leaf.path[0] not in keys)


def column_records(
    table: TableFormat, snapshot: int | None, leaves: list[Leaf]
) -> list[dict[str, object]]:
    """The version's record of each analyzed leaf: name, the table's type and, where the
    format has them, its field id: the identity ``staleness`` compares with the table."""
    ids = table.field_ids(snapshot)
    native = table.native_types(snapshot)
    return [
        {
            "name": leaf.name,
            "type": str(leaf.type),
            **({"field_id": ids[leaf.name]} if leaf.name in ids else {}),
            **({"table_type": native[leaf.name]} if leaf.name in native else {}),
        }
        for leaf in leaves
    ]
