"""Which partitions a ``--where`` predicate can match: the seam of ``stats --where``.

``partitions_that_can_match(where, partitions, summaries)`` returns the positions of the
partitions (in the version's list) whose rows may satisfy ``where``. ``summaries`` fetches
per-partition column statistics on demand (``store.partition_index.partition_summaries``:
one row per partition x column, by ``partition_id``), so a filter that needs only partition
values reads nothing else.

For now a predicate is a conjunction (``AND``) of ``column = literal`` and
``column IN (literals)`` over partition columns, compared with the partition values as the
manifest stores them (as text); anything else is a one-line error. The selectivity
estimator's ``can_match`` (pruning by min/max, null counts and complete frequencies) takes
this function's place when it lands; its signature is the contract.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from lakestats.errors import ColumnNotFoundError, InvalidArgumentError
from lakestats.store.manifest import PartitionEntry

Summaries = Callable[[list[str]], pa.Table]


def partitions_that_can_match(
    where: str, partitions: Sequence[PartitionEntry], summaries: Summaries
) -> list[int]:
    """Positions of the partitions whose rows can satisfy ``where``."""
    allowed = _partition_equalities(where)
    keys = {k for p in partitions for k in p.values}
    for name in allowed:
        if name not in keys:
            known = ", ".join(sorted(keys)) or "none (the table is unpartitioned)"
            raise ColumnNotFoundError(
                f"--where can filter on partition columns only for now; {name!r} is not one "
                f"(partition columns: {known})"
            )
    return [
        i
        for i, p in enumerate(partitions)
        if all(_text(p.values.get(name)) in values for name, values in allowed.items())
    ]


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _partition_equalities(where: str) -> dict[str, set[str]]:
    """``{column: allowed values}`` of a conjunction of ``=`` and ``IN`` terms."""
    import sqlglot
    from sqlglot import expressions as exp

    try:
        tree = sqlglot.parse_one(where)
    except sqlglot.errors.ParseError as exc:
        first = str(exc).splitlines()[0]
        raise InvalidArgumentError(f"cannot parse --where {where!r}: {first}") from None
    terms = list(tree.flatten()) if isinstance(tree, exp.And) else [tree]
    allowed: dict[str, set[str]] = {}
    for term in terms:
        if isinstance(term, exp.Paren):
            term = term.unnest()
        if isinstance(term, exp.EQ) and isinstance(term.this, exp.Column):
            column, literals = term.this, [term.expression]
        elif isinstance(term, exp.In) and isinstance(term.this, exp.Column) and term.expressions:
            column, literals = term.this, term.expressions
        else:
            raise InvalidArgumentError(
                f"--where supports only partition-column = value and IN (...) joined by AND "
                f"for now; {term.sql()!r} is not one"
            )
        values = {_literal(v, where) for v in literals}
        name = column.name
        allowed[name] = allowed[name] & values if name in allowed else values
    return allowed


def _literal(node: object, where: str) -> str:
    from sqlglot import expressions as exp

    if isinstance(node, exp.Literal):
        return str(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return f"-{node.this.this}"
    if isinstance(node, exp.Boolean):
        return "True" if node.this else "False"
    raise InvalidArgumentError(f"--where {where!r}: expected a literal, got {node}")
