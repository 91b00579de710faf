"""Who may read what: every request checked before routing, when tokens are configured.

With no token in the tables file the service is open, as a local tool is (``lakestats
serve`` then refuses to listen beyond this machine: ``server.check_bind``). With tokens,
``Access`` (an ASGI middleware) asks every request for one, except the login page and
what holds no table data (the static assets, ``/openapi.json``, ``/docs``, ``/redoc``):

* the token comes from ``Authorization: Bearer <token>``, else from the ``lakestats_token``
  cookie that the login form (``login``) sets for a browser; a header that is present
  wins, valid or not;
* none, or one that matches no configured hash: 401, with ``WWW-Authenticate: Bearer``;
  JSON on ``/api`` and for scripts, the login page for a browser (``Accept: text/html``);
* a path naming a table (``/api/tables/{table}…``, ``/tables/{table}…``) the token has no
  grant for: 403, whether or not such a table exists (a grant list reveals nothing else);
* the listings (``/api/tables``, ``/``) show only the granted tables (``granted``).

Deny by default: a route added later needs a token too. Checking before routing also
means an unauthenticated request learns nothing from validation errors or 404s, and the
answer cache (shared by all tokens) is only reached by a request allowed its table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from lakestats.errors import AuthenticationError, LakestatsError, PermissionDeniedError
from lakestats.service.tokens import Token, TokenSet

COOKIE = "lakestats_token"
REALM = 'Bearer realm="lakestats"'
PUBLIC_PATHS = frozenset({"/login", "/logout", "/openapi.json", "/docs", "/redoc"})
PUBLIC_PREFIXES = ("/static/", "/static-offline-docs/")

Refusal = Callable[[Request, LakestatsError, int, dict[str, str]], Response]
"""Renders a refusal: (request, error, status, headers) -> response (JSON or a page)."""


def bearer(request: Request) -> str | None:
    """The token a request presents: its ``Authorization: Bearer`` (a malformed header
    presents an empty token), else its cookie; None when neither."""
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, value = header.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else ""
    return request.cookies.get(COOKIE)


def table_of(path: str) -> str | None:
    """The table a path names (``/api/tables/{t}…``, ``/tables/{t}…``), else None."""
    parts = path.split("/")
    if len(parts) > 3 and parts[1] == "api" and parts[2] == "tables":
        return parts[3]
    if len(parts) > 2 and parts[1] == "tables":
        return parts[2]
    return None


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def token_of(request: Request) -> Token | None:
    """The token ``Access`` accepted for this request (None: the service is open)."""
    found: Token | None = request.scope.get("state", {}).get("token")
    return found


def granted(request: Request, names: Iterable[str]) -> list[str]:
    """The table names this request may see: all when the service is open."""
    tokens: TokenSet = request.app.state.tokens
    if not tokens:
        return list(names)
    token = token_of(request)
    return [] if token is None else [n for n in names if token.grants(n)]


class Access:
    """The ASGI middleware that admits a request or refuses it (see the module)."""

    def __init__(self, app: ASGIApp, tokens: TokenSet, refuse: Refusal) -> None:
        self.app = app
        self.tokens = tokens
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.tokens or is_public(scope["path"]):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        secret = bearer(request)
        token = self.tokens.match(secret) if secret else None
        if token is None:
            if secret is None:
                error = AuthenticationError(
                    "this service asks for a token: send Authorization: Bearer <token> "
                    "(browsers: log in at /login)"
                )
                challenge = REALM
            else:
                error = AuthenticationError("the token is not valid here")
                challenge = REALM + ', error="invalid_token"'
            response = self.refuse(request, error, 401, {"WWW-Authenticate": challenge})
            await response(scope, receive, send)
            return
        table = table_of(scope["path"])
        if table is not None and not token.grants(table):
            denied = PermissionDeniedError(f"this token has no grant for table {table!r}")
            await self.refuse(request, denied, 403, {})(scope, receive, send)
            return
        scope.setdefault("state", {})["token"] = token
        await self.app(scope, receive, send)
