"""The console's ASGI app: its routes, its static files, and the safety rules.

:func:`create_app` builds a Starlette app over one :class:`~.console.Console` (the log and
its read models), opened in the app's lifespan, or passed in already open (``clawlog ui``
opens it first, so a missing log is one line on stderr rather than a server that fails).

Safety, on every request (:class:`Guard`):

- with a token, the request must carry it: ``?token=T`` (then a cookie keeps it for the
  pages and the live stream), a ``clawlog_token`` cookie, or ``Authorization: Bearer T``;
  else 401. Compared in constant time.
- without a token (a loopback console), the ``Host`` header must name a loopback address
  or ``localhost``, else 403: a web page on a DNS-rebinding name (one that resolves to
  127.0.0.1) could otherwise make the operator's browser read the log, as Jupyter guards.
- read-only: only GET and HEAD, plus POST to the re-run form (which replays into a scratch
  store, never the log); anything else is 405. A POST sent from another origin (its
  ``Origin`` or ``Sec-Fetch-Site`` says so) is 403: with no token, any page the operator
  visits could otherwise submit re-runs to the console (cross-site request forgery).
- a Content-Security-Policy allowing only the console's own scripts and styles: a
  ``<script>`` that slipped into a page could not run, and no asset is fetched elsewhere.
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import AsyncIterator
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .config import ConsoleConfig, is_loopback
from .console import Console, open_console
from .live import routes as live_routes
from .pages import routes as page_routes
from .timeline_pages import routes as timeline_routes

__all__ = ["COOKIE", "Guard", "console_of", "create_app"]

STATIC = Path(__file__).parent / "static"
#: The cookie that keeps the token once a URL carried it.
COOKIE = "clawlog_token"
#: Paths that may be POSTed to (forms that never write the log).
_POST_PATHS = ("/rerun",)
_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    # The token may be in the URL: no other origin sees it. (Not no-referrer: under it a
    # browser sends the re-run form with ``Origin: null``, which the cross-site check refuses.)
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


def console_of(request: Request) -> Console:
    """The open log and read models of the app serving ``request``."""
    console: Console = request.app.state.console
    return console


def create_app(config: ConsoleConfig, *, console: Console | None = None) -> Starlette:
    """The console over ``config.db``; with ``console``, over that open one (its owner
    closes it), else one opened at startup and closed at shutdown."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if console is not None:
            app.state.console = console
            yield
            return
        async with open_console(config) as opened:
            app.state.console = opened
            yield

    routes: list[BaseRoute] = [
        *page_routes,
        *live_routes,
        *timeline_routes,
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(Guard, token=config.token)
    return app


class Guard:
    """The token check, the read-only rule and the security headers (pure ASGI: it
    wraps streamed responses, the live events too, without buffering them)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if method not in ("GET", "HEAD") and not (
            method == "POST" and scope["path"] in _POST_PATHS
        ):
            answer = PlainTextResponse(
                f"{method} is not allowed: the console is read-only (GET pages only)",
                status_code=405,
                headers={"allow": "GET, HEAD"},
            )
            await answer(scope, receive, self._secured(send, None))
            return
        headers = _headers(scope)
        if self.token is None and not _names_loopback(headers.get("host", "")):
            answer = PlainTextResponse(
                f"403: this console answers only to a loopback address (127.0.0.1, ::1, "
                f"localhost), not to the host {headers.get('host', '')!r}: open the URL "
                "`clawlog ui` printed, or serve it with --token to reach it by another name",
                status_code=403,
            )
            await answer(scope, receive, self._secured(send, None))
            return
        if method == "POST" and not _same_origin(headers):
            answer = PlainTextResponse(
                "403: this form was sent from another site (its Origin is "
                f"{headers.get('origin', headers.get('sec-fetch-site', ''))!r}): submit it "
                "from the console's own page",
                status_code=403,
            )
            await answer(scope, receive, self._secured(send, None))
            return
        from_query = self._from_query(scope)
        if self.token is not None and not self._carries_token(scope, from_query):
            answer = PlainTextResponse(
                "401: this console needs its token: open the URL `clawlog ui` printed "
                "(…?token=T), or send `Authorization: Bearer T`",
                status_code=401,
                headers={"www-authenticate": "Bearer"},
            )
            await answer(scope, receive, self._secured(send, None))
            return
        cookie = from_query if self.token is not None and from_query else None
        await self.app(scope, receive, self._secured(send, cookie))

    def _secured(self, send: Send, cookie: str | None) -> Send:
        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend(_HEADERS)
                if cookie is not None:
                    value = f"{COOKIE}={cookie}; Path=/; HttpOnly; SameSite=Strict"
                    headers.append((b"set-cookie", value.encode()))
                message = {**message, "headers": headers}
            await send(message)

        return secured

    @staticmethod
    def _from_query(scope: Scope) -> str | None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        values = query.get("token")
        return values[-1] if values else None

    def _carries_token(self, scope: Scope, from_query: str | None) -> bool:
        assert self.token is not None
        offered: list[str] = []
        if from_query is not None:
            offered.append(from_query)
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, credential = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer":
                    offered.append(credential.strip())
            elif name == b"cookie":
                jar: SimpleCookie = SimpleCookie()
                with contextlib.suppress(Exception):
                    jar.load(value.decode("latin-1"))
                if COOKIE in jar:
                    offered.append(jar[COOKIE].value)
        expected = self.token.encode()
        return any(hmac.compare_digest(candidate.encode(), expected) for candidate in offered)


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (the last one of a repeated name)."""
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}


def _names_loopback(host_header: str) -> bool:
    """Whether a ``Host`` header (``name``, ``name:port``, ``[v6]:port``) names a loopback
    address or ``localhost``: a DNS-rebinding name never does."""
    if not host_header:
        return False
    name = urlsplit(f"//{host_header}").hostname
    return name is not None and is_loopback(name)


def _same_origin(headers: dict[str, str]) -> bool:
    """Whether a POST comes from the console's own pages: a browser names the page's
    origin (``Origin``, ``Sec-Fetch-Site``); a client that names neither (curl, a script)
    is no forged form."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()
