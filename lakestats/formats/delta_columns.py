"""Delta column mapping (``delta.columnMapping.mode = name``): physical names in files.

Data files name columns (and struct fields, at any depth) by their physical names, which the
table schema records in each field's ``delta.columnMapping.physicalName``. ``physical_type``
gives the Arrow type the files hold; ``relabel`` turns what was read back into the logical
type. Arrow's cast does not rename struct fields, hence the rebuild.
"""

from __future__ import annotations

import json

import pyarrow as pa

PHYSICAL_NAME = "delta.columnMapping.physicalName"


def physical_schema(schema_json: str, logical: pa.Schema) -> pa.Schema:
    """``logical`` with every column and nested field under its physical name."""
    fields = json.loads(schema_json)["fields"]
    return pa.schema(
        [
            pa.field(_physical(spec), physical_type(spec["type"], f.type), f.nullable)
            for spec, f in zip(fields, logical, strict=True)
        ]
    )


def _physical(spec: dict) -> str:
    return (spec.get("metadata") or {}).get(PHYSICAL_NAME, spec["name"])


def physical_type(spec: object, logical: pa.DataType) -> pa.DataType:
    """The Arrow type as the files hold it, from the Delta type ``spec`` (JSON)."""
    if not isinstance(spec, dict):
        return logical  # a primitive type
    if spec.get("type") == "struct":
        return pa.struct(
            [
                pa.field(_physical(child), physical_type(child["type"], f.type), f.nullable)
                for child, f in zip(spec["fields"], logical, strict=True)
            ]
        )
    if spec.get("type") == "array":
        value = physical_type(spec["elementType"], logical.value_type)
        return pa.list_(pa.field(logical.value_field.name, value, logical.value_field.nullable))
    if spec.get("type") == "map":
        return pa.map_(
            physical_type(spec["keyType"], logical.key_type),
            physical_type(spec["valueType"], logical.item_type),
        )
    return logical


def relabel(array: pa.Array | pa.ChunkedArray, logical: pa.DataType) -> pa.Array:
    """``array`` (read under physical names) as ``logical``: same values, logical names."""
    if isinstance(array, pa.ChunkedArray):
        return pa.chunked_array([relabel(c, logical) for c in array.chunks], type=logical)
    if pa.types.is_nested(logical) and array.offset:
        array = pa.concat_arrays([array])  # a slice: offsets and validity from zero
    if pa.types.is_struct(logical):
        children = [
            relabel(array.field(i), logical.field(i).type) for i in range(logical.num_fields)
        ]
        return pa.StructArray.from_arrays(
            children, fields=list(logical), mask=array.is_null() if array.null_count else None
        )
    if pa.types.is_list(logical) or pa.types.is_large_list(logical):
        values = relabel(array.values, logical.value_type)
        kind = pa.ListArray if pa.types.is_list(logical) else pa.LargeListArray
        return kind.from_arrays(
            array.offsets, values, type=logical, mask=array.is_null() if array.null_count else None
        )
    if pa.types.is_map(logical):
        return pa.MapArray.from_arrays(
            array.offsets,
            relabel(array.keys, logical.key_type),
            relabel(array.items, logical.item_type),
            type=logical,
            mask=array.is_null() if array.null_count else None,
        )
    return array if array.type == logical else array.cast(logical)
