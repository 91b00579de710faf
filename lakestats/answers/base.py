"""What every answer shares: one ``to_json()`` read off the answer's fields.

``Answer.to_json`` walks an answer's dataclass fields in order (or ``json_order``); a
field's metadata (``as_json``) renames, encodes, groups or omits it, so a JSON shape is
read off the class and no answer writes its own. Values are decoded Python values; their
JSON follows ``lakestats.stats.keys.to_json`` (``jsonable``). A statistics row stays a
read-only mapping (``Row``): its fields are the stored statistics, user-defined ones
included, so their set is open.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar, cast

import pyarrow as pa

from lakestats.stats.keys import to_json as value_json

Row = Mapping[str, Any]
T = TypeVar("T")


def jsonable(value: object) -> object:
    """A JSON-ready copy of ``value`` (mappings, sequences and decoded leaves)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value  # the common leaves first: a wide answer has thousands
    if kind is float:
        return value if math.isfinite(value) else value_json(value)  # type: ignore[arg-type]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, Answer):
        return value.to_json()
    return value_json(value)


def frozen_row(row: Mapping[str, object]) -> Row:
    return MappingProxyType(dict(row))


def column_json(row: Row) -> dict[str, object]:
    """A statistics row as JSON: ``name`` first, no ``column``/``column_path``."""
    out: dict[str, object] = {"name": row.get("column", row.get("name"))}
    for key, value in row.items():
        if key not in ("column", "column_path", "name"):
            out[key] = jsonable(value)
    return out


def table_of(rows: Sequence[Mapping[str, object]]) -> pa.Table:
    """JSON rows as an Arrow table; a field whose values mix types becomes text."""
    if not rows:
        return pa.table({})
    names = list(dict.fromkeys(k for r in rows for k in r))
    arrays = {}
    for name in names:
        values = [r.get(name) for r in rows]
        try:
            arrays[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
    return pa.table(arrays)


def rows_json(columns: Sequence[Row]) -> list[dict[str, object]]:
    return [column_json(r) for r in columns]


Encode = Callable[[Any], object]
Omit = Callable[[Any], bool]


def as_json(
    *,
    name: str | None = None,
    encode: Encode | None = None,
    omit: Omit | None = None,
    group: str | None = None,
    flatten: bool = False,
    skip: bool = False,
) -> dict[str, object]:
    """A field's metadata saying how it reads in JSON: ``name`` (else the field's),
    ``encode`` (else ``jsonable``), ``omit`` (given the answer: leave the key out),
    ``group`` (nested under that key), ``flatten`` (its encoded mapping's keys merged in)
    or ``skip``: ``field(metadata=as_json(skip=True))``."""
    meta = {"name": name, "encode": encode, "omit": omit, "group": group,
            "flatten": flatten, "skip": skip}
    return {"json": meta}


def omit_none(attribute: str) -> Omit:
    return lambda answer: getattr(answer, attribute) is None


_Plan = tuple[tuple[str, str, Encode, Omit | None, str | None, bool], ...]


class Answer:
    """One ``to_json()`` for every answer, read off its fields in order (or
    ``json_order``); the plan of each class is built once, since a histogram's bins or
    an estimate's holders call it thousands of times."""

    json_order: ClassVar[tuple[str, ...] | None] = None
    _plans: ClassVar[dict[type, _Plan]] = {}

    @classmethod
    def _plan(cls) -> _Plan:
        plan = Answer._plans.get(cls)
        if plan is None:
            by_name = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
            order = cls.json_order or tuple(by_name)
            steps = []
            for attribute in order:
                meta = by_name[attribute].metadata.get("json", {})
                if meta.get("skip"):
                    continue
                steps.append((attribute, meta.get("name") or attribute,
                              meta.get("encode") or jsonable, meta.get("omit"),
                              meta.get("group"), bool(meta.get("flatten"))))
            plan = Answer._plans[cls] = tuple(steps)
        return plan

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for attribute, key, encode, omit, group, flatten in self._plan():
            if omit is not None and omit(self):
                continue
            value = encode(getattr(self, attribute))
            into = out if group is None else cast(dict[str, object], out.setdefault(group, {}))
            if flatten:
                into.update(cast(Mapping[str, object], value))
            else:
                into[key] = value
        return out


class Tabular(Answer):
    """An answer with ``to_arrow()``: the JSON records of its ``items_field`` (encoded as
    in ``to_json``) as an Arrow table."""

    items_field: ClassVar[str]

    def to_arrow(self) -> pa.Table:
        [found] = [f for f in fields(self) if f.name == self.items_field]  # type: ignore[arg-type]
        encode: Encode = found.metadata.get("json", {}).get("encode") or jsonable
        return table_of(encode(getattr(self, self.items_field)))  # type: ignore[arg-type]


class Listing(Tabular, Generic[T]):
    """A ``Tabular`` answer that is also the sequence of its items (partitions, pairs,
    bins…): ``for b in table.histogram("x")``, ``len(found)``, ``found[0]``."""

    def __iter__(self) -> Iterator[T]:
        return iter(getattr(self, self.items_field))

    def __len__(self) -> int:
        return len(getattr(self, self.items_field))

    def __getitem__(self, index: Any) -> Any:  # noqa: ANN401 - Sequence's int/slice overloads
        return getattr(self, self.items_field)[index]
