"""moto's S3 server with S3's atomic conditional writes, and faults on chosen requests, run as
a script by the fixtures.

moto checks ``If-None-Match: *`` and then stores the object, two steps a concurrent request
can fall between: under load two publishers both "created" one statistics version. S3
itself does both at once, which ``StatisticsStore.create_exclusive`` relies on. A lock around
moto's ``put_object`` makes the emulator's conditional write atomic like S3's.

Faults, as S3 and the network give them, on the requests a test chooses: ``POST /_faults``
with ``{"rules": [{"method": "PUT", "contains": "/versions/", "fault": F, "times": N}]}``
(the rules replace the previous ones; ``times`` -1: every matching request) makes the first
``times`` requests whose method is ``method`` and whose path contains ``contains`` (a string,
or a list of strings it contains all of) fail with F:

* ``503``: ``503 SlowDown`` (S3's throttling), nothing stored;
* ``500``: ``500 InternalError``, nothing stored;
* ``reset``: the connection reset (TCP RST) before the request reaches the store;
* ``reset-after``: the request stored, then the connection reset before the answer (the
  client cannot know it succeeded).

``GET /_faults`` answers the rules with ``hits``: how many requests each failed.

    python tests/s3_server.py -H 127.0.0.1 -p PORT
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable, Iterable

import moto.server
from moto.s3.responses import S3Response
from moto.server import main

_put_object = S3Response.put_object
_lock = threading.Lock()


def _atomic_put_object(self: S3Response):
    with _lock:
        return _put_object(self)


S3Response.put_object = _atomic_put_object

_ERRORS = {
    "503": ("503 Slow Down", "SlowDown", "Please reduce your request rate."),
    "500": ("500 Internal Server Error", "InternalError",
            "We encountered an internal error. Please try again."),
}


class Faults:
    """WSGI middleware before moto: the fault rules, and the control path ``/_faults``."""

    def __init__(self, app: Callable) -> None:
        self.app = app
        self.rules: list[dict] = []
        self.lock = threading.Lock()

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/_faults":
            return self._control(environ, start_response)
        rule = self._match(environ)
        if rule is None:
            return self.app(environ, start_response)
        fault = rule["fault"]
        if fault in _ERRORS:
            _body(environ)  # read, never stored
            status, code, message = _ERRORS[fault]
            body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                    f"<Message>{message}</Message></Error>").encode()
            start_response(status, [("Content-Type", "application/xml"),
                                    ("Content-Length", str(len(body)))])
            return [body]
        if fault == "reset-after":
            for _ in self.app(environ, lambda *_: None):  # stored; the answer is lost
                pass
        _reset(environ["werkzeug.socket"])
        raise ConnectionResetError("fault injected: connection reset")

    def _match(self, environ: dict) -> dict | None:
        with self.lock:
            for rule in self.rules:
                wanted = rule["contains"]
                wanted = [wanted] if isinstance(wanted, str) else wanted
                if (
                    environ.get("REQUEST_METHOD") == rule["method"]
                    and all(w in environ.get("PATH_INFO", "") for w in wanted)
                    and rule["times"] != 0
                ):
                    rule["times"] -= 1
                    rule["hits"] += 1
                    return rule
        return None

    def _control(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") == "POST":
            rules = json.loads(_body(environ) or b"{}").get("rules", [])
            with self.lock:
                self.rules = [{**r, "hits": 0} for r in rules]
        with self.lock:
            body = json.dumps({"rules": self.rules}).encode()
        start_response("200 OK", [("Content-Type", "application/json"),
                                  ("Content-Length", str(len(body)))])
        return [body]


def _body(environ: dict) -> bytes:
    """The request's body (its length, or a chunked body to its end: the raw stream has no
    end of its own)."""
    if environ.get("wsgi.input_terminated"):
        return environ["wsgi.input"].read()
    return environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))


def _reset(connection: socket.socket) -> None:
    """Close the connection with a TCP reset (``SO_LINGER`` 0), whatever else holds it."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection._io_refs = 0  # type: ignore[attr-defined]  # the handler's reader holds one
    connection.close()


_run_simple = moto.server.run_simple


def _run_with_faults(host: str, port: int, app: Callable, **kwargs: object) -> None:
    _run_simple(host, port, Faults(app), **kwargs)


moto.server.run_simple = _run_with_faults

if __name__ == "__main__":
    main()
