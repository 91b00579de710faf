"""``lakestats serve``: run the service under uvicorn.

One worker serves from the process's own app; more workers (``--workers N``) start
``app.app_from_env`` in each, the table config passed as JSON in the environment. uvicorn
runs with httptools (through ``protocol.JsonErrorsProtocol``: JSON refusals, a header
timeout) and uvloop and without an access log: per request, h11, asyncio's pure-Python loop
and log formatting cost more CPU than a cached lookup.

The listening socket is bound here, before anything is printed, so a port in use or an
address this machine does not have is one ``lakestats: error:`` line, not uvicorn's log.
So is a ``--host`` beyond this machine with no token configured (``check_bind``): an open
service is for local use, and the tables file's sensitive columns are checked against the
tables before anything listens.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from typing import Any

from lakestats import config
from lakestats.errors import InsecureBindError, InvalidArgumentError
from lakestats.service.app import CONFIG_ENV, create_app, service_to_json
from lakestats.service.config import ServiceConfig
from lakestats.service.protocol import JsonErrorsProtocol
from lakestats.service.tables import TableSet

FAST: dict[str, Any] = {"loop": "uvloop", "access_log": False, "log_level": "warning"}


def protocol_class(header_seconds: float) -> type[JsonErrorsProtocol]:
    """The HTTP protocol with this header deadline (uvicorn takes a class)."""
    return type("ServiceProtocol", (JsonErrorsProtocol,), {"header_seconds": header_seconds})


def uvicorn_options(header_seconds: float | None = None) -> dict[str, Any]:
    """uvicorn's settings for the service (also the tests' server); the header deadline
    is the setting's unless given."""
    chosen = config.settings().serve_header_seconds if header_seconds is None else header_seconds
    return {**FAST, "http": protocol_class(chosen)}


LOCAL_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})


def is_local(host: str) -> bool:
    """Whether ``host`` names only this machine: ``localhost`` or a loopback address
    (``127.0.0.0/8``, ``::1``); ``0.0.0.0``, ``::`` and any other name are not."""
    if host.lower() in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, service: ServiceConfig) -> None:
    """Refuse to serve beyond this machine with no token configured."""
    if not service.tokens and not is_local(host):
        raise InsecureBindError(
            f"refusing to serve on --host {host} with no token configured: anyone who "
            "reaches it would read every table; add a [tokens.NAME] entry to the tables "
            "file (`lakestats token`) or serve on 127.0.0.1"
        )


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, or one line saying why it cannot be."""
    if not 0 <= port <= 65535:
        raise InvalidArgumentError(f"--port must be between 0 and 65535, got {port}")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InvalidArgumentError(
            f"--host {host!r} is not an address of this machine ({reason}): pass an IP "
            "address or host name such as 127.0.0.1 or 0.0.0.0"
        ) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise InvalidArgumentError(
            f"cannot listen on {host}:{port} ({exc.strerror}): choose another --port or --host"
        ) from None
    sock.set_inheritable(True)
    return sock


def serve(
    service: ServiceConfig, host: str = "127.0.0.1", port: int = 8080, workers: int = 1
) -> None:
    import uvicorn

    sock = listen(host, port)  # a bad --host or --port first, then what the file asks
    try:
        check_bind(host, service)
        TableSet(service.tables).check()  # a sensitive column the table lacks: one line
    except BaseException:
        sock.close()
        raise
    shown = sock.getsockname()[1]
    names = ", ".join(c.name for c in service.tables)
    guarded = f" ({len(service.tokens)} token(s))" if service.tokens else ""
    print(f"lakestats: serving {names} at http://{host}:{shown}/{guarded}")
    if workers <= 1:
        app = create_app(service.tables, warm_up=True, tokens=service.tokens)
        server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options()))
        server.run(sockets=[sock])
        return
    sock.close()  # uvicorn's supervisor binds its own socket for the workers
    os.environ[CONFIG_ENV] = json.dumps(service_to_json(service))
    uvicorn.run(
        "lakestats.service.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        **FAST,
        http=JsonErrorsProtocol,  # a class the workers can import (reads the setting)
        # a busy worker answers the supervisor's ping late; the 5 s default kills it mid-request
        timeout_worker_healthcheck=60,
    )
