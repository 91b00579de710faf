"""Every request's time budget: an answer within ``seconds``, else a JSON 503.

The routes are plain functions, so FastAPI runs them in a bounded thread pool
(``app.THREADS``) and the event loop keeps accepting and answering other requests while one
computes. A request still computing when its budget runs out is answered with
``{"error": {"type": "TimeBudgetExceeded", ...}}`` at once; its thread finishes in the
background and what it then sends is dropped (a thread cannot be stopped from outside).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("lakestats.service")


class TimeBudget:
    """ASGI middleware: answer each HTTP request within ``seconds``."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.seconds <= 0:
            await self.app(scope, receive, send)
            return
        state = {"started": False, "abandoned": False}

        async def guarded(message: Message) -> None:
            if state["abandoned"]:
                return  # answered already: the late result goes nowhere
            state["started"] = True
            await send(message)

        task = asyncio.ensure_future(self.app(scope, receive, guarded))
        done, _ = await asyncio.wait({task}, timeout=self.seconds)
        if task in done or state["started"]:
            await task  # finished, or streaming its answer already
            return
        state["abandoned"] = True
        task.add_done_callback(_log_late_failure)
        body = orjson.dumps(
            {
                "error": {
                    "type": "TimeBudgetExceeded",
                    "message": f"no answer within the request time budget of {self.seconds:g} s"
                    " (serve.request_seconds): narrow the request (fewer columns, a simpler "
                    "predicate) and retry",
                }
            }
        )
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", b"1"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _log_late_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("a request answered late failed", exc_info=task.exception())
