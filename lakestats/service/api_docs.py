"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) from vendored assets, so both work offline.

The JavaScript and CSS are the ones the ``fastapi-offline`` package ships (pinned in
pyproject), served under ``/static-offline-docs``. The pages also carry a
Content-Security-Policy that keeps the browser on this origin: ReDoc's bundle draws its
attribution logo from a CDN, which would otherwise be fetched (and fail offline).
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(fastapi_offline.__file__).parent / "static"
ASSETS_URL = "/static-offline-docs"
# inline scripts: Swagger UI's page starts it inline; blob: workers: ReDoc's search
POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'"
)


def install(app: FastAPI) -> None:
    """Mount the assets and add the two pages (``app`` built with ``docs_url=None``)."""
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS), name="static-offline-docs")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        page = get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None},  # no badge from swagger.io
        )
        page.headers["Content-Security-Policy"] = POLICY
        return page

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        page = get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            with_google_fonts=False,
        )
        page.headers["Content-Security-Policy"] = POLICY
        return page
