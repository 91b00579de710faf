"""A delta-rs SQL predicate that selects whole partitions by their values.

``partition_predicate`` turns partitions (column -> JSON-ready value, as a ``PartitionPlan``
has them) into ``("a" = 'x' AND "b" = 3) OR (...)``, typed by the table's Arrow schema, for
``write_deltalake(mode="overwrite", predicate=...)``, which then replaces exactly those
partitions' files in one commit. Types whose literal could compare inexactly (floats,
timestamps, binary) give None: the caller rewrites the table instead.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.types as pat


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: object, dtype: pa.DataType) -> str | None:
    """``value`` (JSON-ready) as a SQL literal of ``dtype``; None when not expressible."""
    if pat.is_dictionary(dtype):
        dtype = dtype.value_type
    if pat.is_boolean(dtype) and isinstance(value, bool):
        return "true" if value else "false"
    if pat.is_integer(dtype) and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if (pat.is_string(dtype) or pat.is_large_string(dtype)) and isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if pat.is_date32(dtype) and isinstance(value, str):
        return f"CAST('{value}' AS DATE)"
    if pat.is_decimal(dtype) and isinstance(value, str | int):
        return f"CAST('{value}' AS DECIMAL({dtype.precision}, {dtype.scale}))"
    return None


def partition_predicate(
    partitions: list[dict[str, object]], schema: pa.Schema, columns: list[str]
) -> str | None:
    """The predicate true on exactly the rows of ``partitions`` (each: partition column
    -> value, None for the null partition); None when a value has no exact literal."""
    terms = []
    for values in partitions:
        conjuncts = []
        for name in columns:
            if name not in values or name not in schema.names:
                return None
            value = values[name]
            if value is None:
                conjuncts.append(f"{_identifier(name)} IS NULL")
                continue
            literal = _literal(value, schema.field(name).type)
            if literal is None:
                return None
            conjuncts.append(f"{_identifier(name)} = {literal}")
        terms.append("(" + " AND ".join(conjuncts) + ")")
    return " OR ".join(terms) if terms else None
