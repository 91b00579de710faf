"""``lakestats serve``: run the service under uvicorn.

One worker serves from the process's own app; more workers (``--workers N``) start
``app.app_from_env`` in each, the table config passed as JSON in the environment. uvicorn
runs with httptools and uvloop and without an access log: per request, h11, asyncio's
pure-Python loop and log formatting cost more CPU than a cached lookup.
"""

from __future__ import annotations

import json
import os

from lakestats.service.app import CONFIG_ENV, config_to_json, create_app
from lakestats.service.config import TableConfig

FAST = {"http": "httptools", "loop": "uvloop", "access_log": False, "log_level": "warning"}


def serve(
    configs: list[TableConfig], host: str = "127.0.0.1", port: int = 8080, workers: int = 1
) -> None:
    import uvicorn

    print(f"lakestats: serving {', '.join(c.name for c in configs)} at http://{host}:{port}/")
    if workers <= 1:
        uvicorn.run(create_app(configs, warm_up=True), host=host, port=port, **FAST)
        return
    os.environ[CONFIG_ENV] = json.dumps([config_to_json(c) for c in configs])
    uvicorn.run(
        "lakestats.service.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        **FAST,
        # a busy worker answers the supervisor's ping late; the 5 s default kills it mid-request
        timeout_worker_healthcheck=60,
    )
