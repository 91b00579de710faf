"""A uvicorn server on a thread of the test process, for the tests that need real sockets
(a browser, raw requests): started, waited for (30 s at most), stopped."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn


@contextlib.contextmanager
def serving(server: uvicorn.Server, **run: object) -> Iterator[None]:
    """``server.run(**run)`` on a daemon thread while the block runs."""
    thread = threading.Thread(target=server.run, kwargs=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start within 30 s"
        time.sleep(0.05)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)
