"""The browser's way in: a login form that puts the token into a cookie, and a logout.

``GET /login`` shows the form; ``POST /login`` (form field ``token``, and ``next``, the
page to return to) checks the token and answers 303 to ``next`` with the cookie
``lakestats_token`` set: ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other
site's page sends it), ``Secure`` when the request came over HTTPS, for
``COOKIE_SECONDS``. A wrong token is the form again with 401. ``POST /logout`` clears it.
The token never travels in a URL (it would stay in histories and access logs).
``refusal`` renders ``access.Access``'s 401 and 403: JSON for the API and for scripts, the
login form or the error page for a browser.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from lakestats.errors import LakestatsError
from lakestats.service.access import COOKIE
from lakestats.service.errors import error_response
from lakestats.service.pages import templates
from lakestats.service.tokens import TokenSet

COOKIE_SECONDS = 8 * 3600
MAX_FORM_BYTES = 4096
router = APIRouter(include_in_schema=False)


def safe_next(target: str | None) -> str:
    """``next`` as a path on this service, never another site (``//host``, ``\\``)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def login_page(request: Request, status: int, message: str, target: str) -> HTMLResponse:
    context = {"message": message, "next": safe_next(target)}
    return templates.TemplateResponse(request, "login.html", context, status_code=status)


def refusal(
    request: Request, error: LakestatsError, status: int, headers: dict[str, str]
) -> Response:
    """A 401 or 403 as the client reads it: JSON, unless a browser asks for a page."""
    wants_page = "text/html" in request.headers.get("accept", "")
    if request.url.path.startswith("/api") or not wants_page:
        return error_response(status, type(error).__name__, error.message, headers)
    if status == 401:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        page = login_page(request, 401, error.message, target)
    else:
        context = {"kind": type(error).__name__, "message": error.message}
        page = templates.TemplateResponse(request, "error.html", context, status_code=status)
    page.headers.update(headers)
    return page


@router.get("/login", response_class=HTMLResponse)
def login_form(
    request: Request, next: Annotated[str | None, Query(max_length=4096)] = None
) -> HTMLResponse:
    return login_page(request, 200, "", next or "/")


@router.post("/login")
async def log_in(request: Request) -> Response:
    body = await request.body()
    fields = parse_qs(body[:MAX_FORM_BYTES].decode("utf-8", "replace"))
    secret = (fields.get("token") or [""])[0].strip()
    target = safe_next((fields.get("next") or ["/"])[0])
    tokens: TokenSet = request.app.state.tokens
    if tokens and (not secret or tokens.match(secret) is None):
        return login_page(request, 401, "that token is not valid here", target)
    response = RedirectResponse(target, status_code=303)
    if tokens:
        response.set_cookie(
            COOKIE,
            secret,
            max_age=COOKIE_SECONDS,
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
    return response


@router.post("/logout")
def log_out() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response
