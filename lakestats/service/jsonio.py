"""JSON answers in the CLI's ``--json`` conventions, and ETags.

``jsonable`` turns decoded statistics (``Decimal``, ``datetime``, ``bytes``, NaN, numpy
scalars) into JSON values with ``lakestats.stats.keys.to_json``, recursively, so the HTTP
API and ``lakestats ... --json`` print the same values. ``etag`` names an answer by the
table, the statistics version (and snapshot) it came from: a new ``analyze`` changes it.
``render`` encodes with orjson (the strict JSON the standard library would write, faster);
``cached_answer`` answers from a rendered ``Answer`` (``cache``).
"""

from __future__ import annotations

import hashlib
import json
import math

import orjson
from fastapi import Request, Response

from lakestats.service.cache import Answer
from lakestats.stats.keys import to_json


def jsonable(value: object) -> object:
    """A JSON-ready copy of ``value`` (dicts, lists, tuples and decoded leaves)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value  # the common leaves first: a wide answer has thousands
    if kind is float:
        return value if math.isfinite(value) else to_json(value)
    if kind is dict:
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return to_json(value)


def render(content: object) -> bytes:
    """Strict UTF-8 JSON of already ``jsonable`` content: orjson, or the standard
    library for what orjson refuses (integers beyond 64 bits, lone surrogates)."""
    try:
        return orjson.dumps(content)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(
            content, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode("utf-8")


def column_row(row: dict[str, object]) -> dict[str, object]:
    """A statistics row as the CLI prints it: ``name`` first, no ``column``/``column_path``."""
    out: dict[str, object] = {"name": row.get("column", row.get("name"))}
    for key, value in row.items():
        if key not in ("column", "column_path", "name"):
            out[key] = jsonable(value)
    return out


class LakestatsJSON(Response):
    """Strict JSON (no NaN literals: the values are already converted), UTF-8."""

    media_type = "application/json"

    def render(self, content: object) -> bytes:
        return render(content)


def etag(*parts: object) -> str:
    """A strong ETag over ``parts`` (table name, version, snapshot, ...)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=12).hexdigest()
    return f'"{digest}"'


def not_modified(request: Request, tag: str) -> bool:
    """Does the client already hold ``tag`` (``If-None-Match``)?"""
    header = request.headers.get("if-none-match")
    if not header:
        return False
    if header.strip() == "*":
        return True
    return tag in [t.strip().removeprefix("W/") for t in header.split(",")]


def answer(request: Request, data: object, tag: str, status_code: int = 200) -> Response:
    """``data`` as JSON with its ETag, or an empty 304 when the client holds the tag."""
    headers = {"ETag": tag, "Cache-Control": "no-cache"}
    if not_modified(request, tag):
        return Response(status_code=304, headers=headers)
    return LakestatsJSON(jsonable(data), status_code=status_code, headers=headers)


def cached_answer(request: Request, answer_of: Answer) -> Response:
    """A rendered answer (``cache.Answer``), or an empty 304 when the client holds its tag."""
    headers = {"ETag": answer_of.etag, "Cache-Control": "no-cache"}
    if not_modified(request, answer_of.etag):
        return Response(status_code=304, headers=headers)
    return Response(answer_of.body, media_type="application/json", headers=headers)


def rendered(data: object, tag: str) -> Answer:
    """``data`` (decoded values) as a cacheable ``Answer``."""
    return Answer(render(jsonable(data)), tag)
