"""JSON answers in the CLI's ``--json`` conventions, and ETags.

Answers arrive as ``to_json()`` of the facade's answers (``lakestats.answers``), the
same JSON ``lakestats ... --json`` prints; ``jsonable`` (from there) makes anything else
JSON-ready. ``etag`` names an answer by the
table, the statistics version (and snapshot) it came from: a new ``analyze`` changes it.
``render`` encodes with orjson (the strict JSON the standard library would write, faster);
``cached_answer`` answers from a rendered ``Answer`` (``cache``).
"""

from __future__ import annotations

import hashlib
import json

import orjson
from fastapi import Request, Response

from lakestats.answers import jsonable
from lakestats.service.cache import Answer


def render(content: object) -> bytes:
    """Strict UTF-8 JSON of already ``jsonable`` content: orjson, or the standard
    library for what orjson refuses (integers beyond 64 bits, lone surrogates)."""
    try:
        return orjson.dumps(content)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(
            content, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode("utf-8")


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
