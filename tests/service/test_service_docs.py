"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) work offline: the pages name no external
URL, every asset they load is served by the app itself, a Content-Security-Policy keeps the
browser on the app's origin, and in headless Chromium both render the service's operations
without a single request leaving the app."""

from __future__ import annotations

import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lakestats.service.app import create_app
from tests.service.uvicorn_thread import serving

PAGES = ("/docs", "/redoc")
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def _referenced(html: str) -> list[str]:
    """What a page loads: script sources, link targets, and the OpenAPI document."""
    return re.findall(r'(?:src|href|spec-url)="([^"]+)"', html) + re.findall(
        r"url: '([^']+)'", html
    )


@pytest.mark.parametrize("path", PAGES)
def test_docs_page_and_its_assets_come_from_the_app(path: str) -> None:
    client = TestClient(create_app([]))
    page = client.get(path)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert not re.findall(r"https?://", page.text), "the page names an external URL"
    assets = _referenced(page.text)
    assert "/openapi.json" in assets
    assert any(a.endswith(".js") for a in assets)
    for asset in assets:
        assert asset.startswith("/") and not asset.startswith("//"), asset
        answer = client.get(asset)
        assert answer.status_code == 200, asset
        assert len(answer.content) > 0, asset
    if path == "/docs":
        assert any(a.endswith(".css") for a in assets)
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "img-src 'self' data:" in policy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    import uvicorn

    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.fail("chromium is not installed: run `make browser` (apt-get install chromium)")
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app([]), host="127.0.0.1", port=port, log_level="warning")
    )
    with serving(server):
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(
    ("path", "rendered"),
    [("/docs", ".opblock-summary-path"), ("/redoc", "[data-section-id^='operation']")],
)
def test_docs_page_renders_offline_in_a_browser(base_url: str, path: str, rendered: str) -> None:
    from playwright.sync_api import sync_playwright

    outside: list[str] = []

    def only_the_app(route, request) -> None:
        if request.url.startswith(base_url) or request.url.startswith("data:"):
            route.continue_()
        else:
            outside.append(request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
        try:
            page = browser.new_page()
            page.set_default_timeout(30_000)
            page.route("**/*", only_the_app)
            page.goto(f"{base_url}{path}")
            page.wait_for_selector(rendered)
            shown = " ".join(page.locator(rendered).all_inner_texts())
        finally:
            browser.close()
    assert outside == []
    assert "/api/tables" in shown or "tables" in shown.lower()
