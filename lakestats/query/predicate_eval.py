"""Evaluate a parsed predicate (``lakestats.query.predicate``) on Arrow data, as SQL does.

``evaluate(pred, table)`` returns a boolean array with SQL's three-valued logic: NULL where
the predicate is UNKNOWN (a comparison with a NULL value; ``x IN (1, NULL)`` for
``x <> 1``), combined with Kleene ``AND`` / ``OR`` / ``NOT``; ``matching_rows(pred, table)``
keeps the rows where it is TRUE (``WHERE``'s rule). Values are compared through their
order-preserving keys (``lakestats.stats.keys``), the same keys the statistics store, so
NaN equals NaN and sorts above ``+inf`` and ``-0.0`` equals ``0.0`` (Spark's and DuckDB's
rules), and decimals, dates and zoned timestamps compare by value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakestats.query import predicate as p
from lakestats.stats import keys

_COMPARE = {
    "=": pc.equal,
    "<>": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


def column_of(table: pa.Table | pa.RecordBatch, name: str) -> pa.Array:
    """A column by name; ``a.b`` reaches into struct ``a`` when no column is named so."""
    if name in table.schema.names:
        column = table.column(name)
    else:
        head, *rest = name.split(".")
        column = table.column(head)
        for part in rest:
            column = pc.struct_field(column, part)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    return column


def _on_keys(column: pa.Array, test) -> pa.Array:  # noqa: ANN001
    """``test`` applied to the keys of the non-null values; NULL where the value is NULL."""
    valid = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    out = np.zeros(len(column), dtype=bool)
    if column.null_count < len(column):
        encoded = keys.encode(column.filter(pa.array(valid)) if column.null_count else column)
        out[valid] = np.asarray(test(encoded).to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(out, type=pa.bool_(), mask=None if column.null_count == 0 else ~valid)


def _key(literal: p.Literal) -> pa.Scalar:
    return pa.scalar(literal.key, pa.binary())


def evaluate(pred: p.Predicate, table: pa.Table | pa.RecordBatch) -> pa.Array:
    """The predicate's value on every row: True, False or NULL (unknown)."""
    if isinstance(pred, p.Not):
        return pc.invert(evaluate(pred.child, table))
    if isinstance(pred, p.And | p.Or):
        combine = pc.and_kleene if isinstance(pred, p.And) else pc.or_kleene
        out = evaluate(pred.children[0], table)
        for child in pred.children[1:]:
            out = combine(out, evaluate(child, table))
        return out
    column = column_of(table, pred.column)
    if isinstance(pred, p.IsNull):
        nulls = column.is_null()
        return pc.invert(nulls) if pred.negated else nulls
    if isinstance(pred, p.Compare):
        compare, key = _COMPARE[pred.op], _key(pred.value)
        return _on_keys(column, lambda k: compare(k, key))
    if isinstance(pred, p.Between):
        low, high = _key(pred.low), _key(pred.high)
        out = _on_keys(
            column, lambda k: pc.and_(pc.greater_equal(k, low), pc.less_equal(k, high))
        )
        return pc.invert(out) if pred.negated else out
    if isinstance(pred, p.In):
        wanted = pa.array([v.key for v in pred.values], pa.binary())
        found = _on_keys(column, lambda k: pc.is_in(k, value_set=wanted))
        if pred.has_null:  # not found in a list holding NULL: unknown
            found = pc.if_else(found, True, pa.scalar(None, pa.bool_()))
        return pc.invert(found) if pred.negated else found
    if isinstance(pred, p.PrefixLike):
        out = pc.starts_with(column.cast(pa.large_string()), pred.prefix)
        return pc.invert(out) if pred.negated else out
    if isinstance(pred, p.Like):
        regex = p.like_regex(pred.pattern, pred.escape).pattern
        out = pc.match_substring_regex(column.cast(pa.large_string()), f"(?s)^(?:{regex})$")
        return pc.invert(out) if pred.negated else out
    raise TypeError(pred)


def matching_rows(pred: p.Predicate, table: pa.Table) -> pa.Table:
    """The rows of ``table`` where ``pred`` is TRUE (NULL and FALSE dropped, as WHERE)."""
    if table.num_rows == 0:
        return table
    return table.filter(evaluate(pred, table), null_selection_behavior="drop")


__all__ = ["column_of", "evaluate", "matching_rows"]
