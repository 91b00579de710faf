"""Errors as ``{"error": {"type", "message"}}`` with a 4xx status; never a traceback.

``LakestatsError`` subclasses map to statuses by what the client got wrong: no valid
token -> 401 (``access``); no grant, or a sensitive column's values -> 403; unknown
table, column, partition or statistics -> 404; a bad predicate, value or option -> 400;
a tables file the table contradicts (``ConfigurationError``) -> 500 saying so;
FastAPI's request validation -> 400 (one line naming the parameter); unknown routes and
methods keep their 404/405. Messages name tables, never where they live on the server
(``TableSet.redact``). Anything else is a bug: logged with its traceback on the
server, answered with a JSON 500 that says only that.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from lakestats import errors as le
from lakestats.service.jsonio import LakestatsJSON

log = logging.getLogger("lakestats.service")

STATUS: list[tuple[type[le.LakestatsError], int]] = [
    (le.AuthenticationError, 401),
    (le.PermissionDeniedError, 403),  # includes SensitiveColumnError
    (le.ConfigurationError, 500),
    (le.TableNotFoundError, 404),
    (le.NotATableError, 404),
    (le.ColumnNotFoundError, 404),
    (le.PartitionNotFoundError, 404),
    (le.StatisticsNotFoundError, 404),
    (le.SnapshotNotFoundError, 404),
    (le.ConflictError, 409),
    (le.InvalidArgumentError, 400),  # includes bad predicates
    (le.UnsupportedFeatureError, 400),
]
ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["type", "message"],
            "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
        }
    },
}


def status_of(exc: le.LakestatsError) -> int:
    for kind, status in STATUS:
        if isinstance(exc, kind):
            return status
    return 400  # storage and data-file errors: the request cannot be answered as asked


def error_response(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> LakestatsJSON:
    body = {"error": {"type": kind, "message": message}}
    return LakestatsJSON(body, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""

    @app.exception_handler(le.LakestatsError)
    async def lakestats_error(request: Request, exc: le.LakestatsError) -> LakestatsJSON:
        message = request.app.state.tables.redact(exc.message)
        return error_response(status_of(exc), type(exc).__name__, message)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> LakestatsJSON:
        return error_response(400, "ValidationError", validation_message(exc))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> LakestatsJSON:
        kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.url.path}; see /docs or /openapi.json"
        return error_response(exc.status_code, kind, message, getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> LakestatsJSON:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "InternalError", "internal error; see the server's log")


def validation_message(exc: RequestValidationError) -> str:
    """One line: which parameter is wrong and what it must be."""
    parts = []
    for error in exc.errors()[:3]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p not in ("query", "path"))
        parts.append(f"{where or 'request'}: {error.get('msg', 'invalid')}")
    return "bad request: " + "; ".join(parts)
