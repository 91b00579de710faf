"""uvicorn's httptools protocol, with the service's error shape and a header timeout.

Requests the HTTP parser rejects never reach the app, so uvicorn answers them itself with
a plain-text ``400 Invalid HTTP request received.``. Here they get the JSON body every
other 4xx has: a URL over ``MAX_URL_BYTES`` is a 414, an unknown method or a malformed
request line or header a 400. A client that sends its request line and headers slower
than ``header_seconds`` (a slow-header socket holding a connection open) gets a 408 and is
disconnected: uvicorn's keep-alive timeout stops counting at the first byte.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from lakestats import config

MAX_URL_BYTES = 64 * 1024
LINGER_SECONDS = 2.0


class _Refused(Exception):
    """Raised from a parser callback: the request is refused with this status."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class JsonErrorsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` whose own refusals are JSON and whose headers have a deadline.

    ``header_seconds`` is the setting ``serve.header_seconds``, read by the first connection
    (uvicorn builds the protocol from a class, one instance per connection, in each worker);
    ``server.protocol_class`` makes a subclass with a fixed deadline."""

    header_seconds: float | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - uvicorn's own
        super().__init__(*args, **kwargs)
        if type(self).header_seconds is None:
            type(self).header_seconds = config.settings().serve_header_seconds
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_deadline = 0.0
        self._refusal: _Refused | None = None
        self._refused = False

    # -- the header deadline: from the connection (or the last answer) to the headers' end

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        seconds = self.header_seconds
        assert seconds is not None  # set by the first connection (``__init__``)
        self._header_deadline = time.monotonic() + seconds
        self._header_timer = self.loop.call_later(seconds, self._headers_too_slow)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        early = self._header_deadline - time.monotonic()
        if early > 0:  # uvloop's timers count from a cached loop time: never cut off early
            self._header_timer = self.loop.call_later(early, self._headers_too_slow)
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered; its own budget applies
        self._refusal = _Refused(
            408,
            "RequestTimeout",
            f"the request line and headers did not arrive within {self.header_seconds:g} s",
        )
        self.send_400_response("")

    # -- the parser's refusals

    def on_url(self, url: bytes) -> None:
        if len(self.url) + len(url) > MAX_URL_BYTES:
            # httptools wraps what a callback raises in its own parser error: keep the reason
            self._refusal = _Refused(
                414,
                "URITooLong",
                f"the URL is over {MAX_URL_BYTES // 1024} KiB: shorten the query, or "
                "send a long predicate (an IN list of many values) in the JSON body of "
                "POST /api/tables/{table}/estimate",
            )
            raise self._refusal
        super().on_url(url)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's plain-text refusal, as ``{"error": {"type", "message"}}``."""
        refused = self._refusal or _BAD_HTTP
        self._refusal = None
        self._cancel_header_timer()
        body = orjson.dumps({"error": {"type": refused.kind, "message": refused.message}})
        content = [STATUS_LINE[refused.status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                body,
            ]
        )
        self.transport.write(b"".join(content))
        self._linger()

    def _linger(self) -> None:
        """Close after the answer without losing it: closing with unread bytes (the rest
        of a long URL) resets the connection, and the client may never read the answer.
        So stop writing, read and drop what still comes for up to ``LINGER_SECONDS``."""
        self._refused = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # the rest of a refused request
        super().data_received(data)


_BAD_HTTP = _Refused(
    400,
    "BadRequest",
    "not an HTTP/1.1 request this service reads (unknown method, malformed request line "
    "or header): send GET requests (see /openapi.json)",
)
