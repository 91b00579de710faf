"""Flatten a table schema into the leaf columns that get one statistics row each.

Struct fields are flattened recursively into dotted names (``address.city``); a part
that itself contains a dot or a backtick is quoted in backticks so names stay
unambiguous. A top-level column keeps its name as it is (``x.y`` stays ``x.y``) unless
that name is also a struct leaf's dotted name (a struct ``x`` holding ``y`` beside a
column named ``x.y``): then the column's name is quoted in backticks, as Spark quotes
it, and ``x.y`` is the struct leaf, so every leaf has its own name. Lists and maps stay
single leaves (counts and lengths).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.types as pat


@dataclass(frozen=True)
class Leaf:
    """One statistics row: a top-level column or a struct leaf."""

    name: str
    path: tuple[str, ...]
    type: pa.DataType


def _quote(part: str) -> str:
    if "." in part or "`" in part:
        return "`" + part.replace("`", "``") + "`"
    return part


def leaf_name(path: tuple[str, ...]) -> str:
    if len(path) == 1:
        return path[0]
    return ".".join(_quote(part) for part in path)


def leaves_of(schema: pa.Schema) -> list[Leaf]:
    out: list[Leaf] = []

    def walk(path: tuple[str, ...], dtype: pa.DataType) -> None:
        if pat.is_struct(dtype) and dtype.num_fields > 0:
            for i in range(dtype.num_fields):
                child = dtype.field(i)
                walk((*path, child.name), child.type)
        else:
            out.append(Leaf(leaf_name(path), path, dtype))

    for field in schema:
        walk((field.name,), field.type)
    nested = {leaf.name for leaf in out if len(leaf.path) > 1}
    return [
        Leaf(_quote(leaf.name), leaf.path, leaf.type)
        if len(leaf.path) == 1 and leaf.name in nested
        else leaf
        for leaf in out
    ]


def quoted_name(path: tuple[str, ...]) -> str:
    """``path``'s name with every part that holds a dot or backtick quoted in backticks,
    top-level ones too: the form ``leaves_of`` gives a column whose plain name is also a
    struct leaf's."""
    return ".".join(_quote(part) for part in path)


def leaf_array(table: pa.Table, leaf: Leaf) -> pa.ChunkedArray:
    """The values of ``leaf`` in ``table``; a null struct makes its leaves null."""
    column = table.column(leaf.path[0])
    for part in leaf.path[1:]:
        chunks = []
        for chunk in column.chunks:
            struct = chunk
            index = struct.type.get_field_index(part)
            chunks.append(struct.flatten()[index])
        column = pa.chunked_array(chunks, type=column.type.field(part).type)
    return column
