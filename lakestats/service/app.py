"""The ASGI application: ``create_app(configs)``; ``app_from_env()`` for uvicorn workers.

JSON API under ``/api`` (``api_routes``; a planner's questions by location:
``planner_routes``), pages at ``/`` and ``/tables/...`` (``pages``),
vendored CSS/JS under ``/static``, OpenAPI at ``/openapi.json``, Swagger UI at ``/docs`` and
ReDoc at ``/redoc`` from vendored assets (``api_docs``: no CDN, so both work offline),
the login form at ``/login`` (``login``). With tokens, ``access.Access`` admits each
request before routing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from lakestats import config as settings
from lakestats.api import S3Options
from lakestats.service import api_docs, api_routes, errors, login, pages, planner_routes
from lakestats.service.access import Access
from lakestats.service.budget import TimeBudget
from lakestats.service.config import ServiceConfig, TableConfig, demo_tables, load_service
from lakestats.service.tables import TableSet
from lakestats.service.tokens import Token, TokenSet

STATIC = Path(__file__).parent / "static"
CONFIG_ENV = "LAKESTATS_SERVE_TABLES"
THREADS = 8


def create_app(
    configs: list[TableConfig] | None = None,
    warm_up: bool = False,
    request_seconds: float | None = None,
    tokens: list[Token] | None = None,
) -> FastAPI:
    """The service over ``configs`` (default: the demo warehouse's lineitem);
    ``warm_up`` opens every table at startup instead of on its first request;
    ``request_seconds`` is each request's time budget (default: the setting
    ``serve.request_seconds``; see ``budget``); ``tokens``: who may read which table
    (none: open to whoever reaches it)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # lookups are CPU-bound and each thread keeps its own table handles: a few threads
        # per worker (the default pool has 40)
        anyio.to_thread.current_default_thread_limiter().total_tokens = THREADS
        if warm_up:
            app.state.tables.warm_up()
        yield

    app = FastAPI(
        lifespan=lifespan,
        title="lakestats",
        summary="Column statistics of data-lake tables: lookups, estimates, previews.",
        version="0.1.0",
        docs_url=None,  # api_docs serves /docs and /redoc from vendored assets
        redoc_url=None,
    )
    app.state.tables = TableSet(configs if configs is not None else demo_tables())
    app.state.tokens = TokenSet(tokens or ())
    errors.install(app)
    api_docs.install(app)
    app.include_router(api_routes.router)
    app.include_router(planner_routes.router)
    app.include_router(login.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    if request_seconds is None:
        request_seconds = settings.settings().serve_request_seconds
    app.add_middleware(TimeBudget, seconds=request_seconds)
    app.add_middleware(Access, tokens=app.state.tokens, refuse=login.refusal)  # outermost
    return app


def app_from_env() -> FastAPI:
    """For ``uvicorn --factory`` with several workers: the config travels in the
    environment (``LAKESTATS_SERVE_TABLES``: a config file path, a JSON list of tables,
    or ``service_to_json``'s object, tables and tokens)."""
    from lakestats import config

    value = config.settings().serve_tables
    if not value:
        return create_app(warm_up=True)
    if value.startswith("["):
        return create_app([config_from_json(spec) for spec in json.loads(value)], warm_up=True)
    found = service_from_json(json.loads(value)) if value.startswith("{") else load_service(value)
    return create_app(found.tables, warm_up=True, tokens=found.tokens)


def config_to_json(config: TableConfig) -> dict[str, object]:
    return {**vars(config), "s3": vars(config.s3) if config.s3 else None}


def config_from_json(spec: dict[str, Any]) -> TableConfig:
    s3 = spec.get("s3")
    sensitive = tuple(spec.get("sensitive", ()))
    return TableConfig(**{**spec, "s3": S3Options(**s3) if s3 else None, "sensitive": sensitive})


def service_to_json(service: ServiceConfig) -> dict[str, object]:
    """The tables and the tokens' hashes and grants (never a secret: the file has none)."""
    tokens = [
        {"name": t.name, "digest": t.digest, "tables": sorted(t.tables) if t.tables else None}
        for t in service.tokens  # a grant is never empty: None is every table
    ]
    return {"tables": [config_to_json(c) for c in service.tables], "tokens": tokens}


def service_from_json(data: dict[str, Any]) -> ServiceConfig:
    tokens = [
        Token(t["name"], t["digest"], None if t["tables"] is None else frozenset(t["tables"]))
        for t in data.get("tokens", [])
    ]
    return ServiceConfig([config_from_json(c) for c in data["tables"]], tokens)
