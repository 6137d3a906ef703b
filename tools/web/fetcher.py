"""The SSRF-guarded fetcher under ``web_fetch`` and ``http``: one request, redirects
followed by hand, every hop's URL and every resolved address checked, the connection pinned
to the checked address, the body streamed and cut at the policy's size, one time limit.

    async with Fetcher(WebPolicy(allow_hosts=("*.example.com",))) as fetcher:
        page = await fetcher.fetch("https://docs.example.com/")

Pinning: httpcore opens its TCP connections through a network backend; ours
(:class:`~.transport.PinnedNetworkBackend`) connects to the address this fetch checked,
whatever host name httpcore asks for, while TLS (SNI and certificate verification) and the
Host header keep the URL's host name. A DNS answer that changes between the check and the
connect (rebinding) is never consulted again. httpx's client is not used: it would read
proxy settings from the environment (a proxy makes pinning meaningless) and follow
redirects without our checks.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Final

import httpcore
import httpx
import msgspec

from clawlog.events.logging import get_logger

from ..errors import (
    FetcherClosed,
    InvalidUrl,
    WebRequestFailed,
    WebRequestInvalid,
    WebRequestRefused,
    WebRequestTimedOut,
)
from .policy import WebPolicy, check_url
from .resolver import Resolver, resolve_checked, system_resolver
from .transport import PinnedNetworkBackend
from .urls import ParsedTarget, resolve_location

__all__ = ["FetchedPage", "Fetcher", "Resolver"]

_log = get_logger(__name__)

DEFAULT_POLICY: Final = WebPolicy()
"""The policy of a Fetcher built without one: public addresses only, 5 MB, 30 s, 5 hops."""

USER_AGENT: Final = "clawlog-web/1 (+https://github.com/clawlog)"

_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_BAD_VALUE = re.compile(r"[\r\n\x00]")
# The fetcher frames the request itself: these would contradict it (or, for Host, send
# a request for another site to the checked address).
_MANAGED_HEADERS: Final = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te"}
)
# Never carried to another origin by a redirect (what browsers and httpx do).
_CREDENTIAL_HEADERS: Final = frozenset({"authorization", "cookie", "proxy-authorization"})
_BODY_HEADERS: Final = frozenset({"content-type", "content-encoding", "content-language"})


class FetchedPage(msgspec.Struct, frozen=True, kw_only=True):
    """The final response of a fetch (after redirects)."""

    url: str
    """The final URL (after redirects), normalized."""
    status: int
    headers: dict[str, str]
    """Response headers with lower-cased names; repeated headers joined with ``", "``."""
    content: bytes
    """The body as received, at most ``policy.max_bytes``. The fetcher asks for the identity
    encoding; a server that compresses anyway says so in ``content-encoding``."""
    truncated: bool
    """Whether the body was cut at ``policy.max_bytes``."""
    redirects: list[str]
    """Every redirect hop's URL, in order (empty when there was no redirect)."""
    address: str
    """The IP address the final response came from (the checked, pinned address)."""
    elapsed_ms: float
    """Wall time of the whole fetch, redirects included."""


class _Hop(msgspec.Struct, frozen=True, kw_only=True):
    """One request of a fetch: where, how, and what came back."""

    target: ParsedTarget
    status: int
    headers: dict[str, str]
    content: bytes
    truncated: bool
    address: str


class Fetcher:
    """Fetches URLs under a :class:`WebPolicy`; an async context manager.

    ``resolver`` maps ``(host, port)`` to IP address strings; the default asks the event
    loop's ``getaddrinfo``. Tests inject one to make names resolve to chosen addresses.
    ``ssl_context`` verifies servers (default: the certifi bundle, as httpx does).
    Each fetch has its own connections, closed when it returns: pins never leak between
    fetches.
    """

    def __init__(
        self,
        policy: WebPolicy = DEFAULT_POLICY,
        *,
        resolver: Resolver | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._policy = policy
        self._resolver = resolver if resolver is not None else system_resolver
        self._ssl_context = ssl_context if ssl_context is not None else httpx.create_ssl_context()
        self._pools: set[httpcore.AsyncConnectionPool] = set()
        self._closed = False

    @property
    def policy(self) -> WebPolicy:
        return self._policy

    async def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        follow_redirects: bool = True,
    ) -> FetchedPage:
        """Fetch ``url``; raise ``InvalidUrl``/``WebRequestInvalid``, ``WebRequestRefused``,
        ``WebRequestFailed`` or ``WebRequestTimedOut`` (tools.errors), each worded for the
        model.

        Redirects are followed up to ``policy.max_redirects`` (more is an error); with
        ``follow_redirects=False`` a 3xx response is returned as is (seed 004's ``http``).
        A 303, and a 301/302 after POST, continue as GET without a body (what browsers do);
        307/308 repeat the method and body. A hop to another origin drops the Authorization,
        Cookie and Proxy-Authorization headers; a hop from https to http is refused.
        The request asks for the identity encoding (a caller's Accept-Encoding is replaced),
        so ``max_bytes`` bounds what the caller decodes, not just what crossed the wire.
        """
        if self._closed:
            raise FetcherClosed("this web fetcher was closed: the tool is shutting down")
        method = _check_method(method)
        request_headers = _request_headers(headers)
        target = check_url(url, self._policy)
        started = time.perf_counter()
        backend = PinnedNetworkBackend()
        pool = httpcore.AsyncConnectionPool(
            ssl_context=self._ssl_context, network_backend=backend, retries=0
        )
        self._pools.add(pool)
        try:
            async with asyncio.timeout(self._policy.timeout_s):
                hop, redirects = await self._follow(
                    pool, backend, target, method, request_headers, body, follow_redirects
                )
        except WebRequestRefused:
            # The host only: the message repeats URLs, whose path or query may carry a token
            # (the caller records the message, scrubbed, with the tool call).
            _log.info("web request refused", host=target.host)
            raise
        except TimeoutError as exc:
            raise WebRequestTimedOut(
                f"{target.url} did not finish within {self._policy.timeout_s:g} s (the limit for "
                "the whole fetch, redirects included): try again later or another URL"
            ) from exc
        finally:
            self._pools.discard(pool)
            await pool.aclose()
        return FetchedPage(
            url=hop.target.url,
            status=hop.status,
            headers=hop.headers,
            content=hop.content,
            truncated=hop.truncated,
            redirects=redirects,
            address=hop.address,
            elapsed_ms=(time.perf_counter() - started) * 1000.0,
        )

    async def _follow(
        self,
        pool: httpcore.AsyncConnectionPool,
        backend: PinnedNetworkBackend,
        target: ParsedTarget,
        method: str,
        headers: dict[str, str],
        body: bytes | None,
        follow_redirects: bool,
    ) -> tuple[_Hop, list[str]]:
        start = target.url
        redirects: list[str] = []
        came_from: ParsedTarget | None = None
        while True:
            try:
                addresses = await resolve_checked(
                    target, self._resolver, allow_loopback=self._policy.allow_loopback
                )
            except (WebRequestRefused, WebRequestFailed) as exc:
                if came_from is None:
                    raise
                raise type(exc)(f"{came_from.url} redirected to {target.url}: {exc}") from exc
            backend.pin(target.host, target.port, addresses)
            hop = await self._exchange(pool, target, method, headers, body)
            _log.debug(
                "web response",
                host=target.host,
                address=hop.address,
                status=hop.status,
                size=len(hop.content),
                truncated=hop.truncated,
            )
            location = hop.headers.get("location")
            if not follow_redirects or hop.status not in _REDIRECTS or location is None:
                return hop, redirects
            if len(redirects) >= self._policy.max_redirects:
                raise WebRequestFailed(
                    f"{start} redirected more than "
                    f"{self._policy.max_redirects} times (last to {location!r}): stopped; "
                    "fetch the final URL directly if you know it"
                )
            next_target = self._redirect_target(target, location)
            if (hop.status == 303 and method != "HEAD") or (
                hop.status in (301, 302) and method == "POST"
            ):
                method, body = "GET", None
                headers = {k: v for k, v in headers.items() if k not in _BODY_HEADERS}
            if next_target.origin != target.origin:
                headers = {k: v for k, v in headers.items() if k not in _CREDENTIAL_HEADERS}
            redirects.append(next_target.url)
            came_from, target = target, next_target

    def _redirect_target(self, current: ParsedTarget, location: str) -> ParsedTarget:
        try:
            following = resolve_location(current, location)
            following = check_url(following.url, self._policy)
        except InvalidUrl as exc:
            raise WebRequestFailed(
                f"{current.url} redirected to {location!r}, which cannot be read: {exc}"
            ) from exc
        except WebRequestRefused as exc:
            raise WebRequestRefused(f"{current.url} redirected to {location!r}: {exc}") from exc
        if current.scheme == "https" and following.scheme == "http":
            raise WebRequestRefused(
                f"{current.url} redirected to {following.url}, from https down to http: refused, "
                "because the page would come over an unencrypted, unauthenticated connection; "
                "fetch the http URL directly if that is acceptable"
            )
        return following

    async def _exchange(
        self,
        pool: httpcore.AsyncConnectionPool,
        target: ParsedTarget,
        method: str,
        headers: dict[str, str],
        body: bytes | None,
    ) -> _Hop:
        wire_headers = [("Host", target.authority), *headers.items()]
        request_url = httpcore.URL(
            scheme=target.scheme.encode("ascii"),
            host=target.host.encode("ascii"),
            port=target.port,
            target=target.target.encode("ascii"),
        )
        try:
            async with pool.stream(
                method, request_url, headers=wire_headers, content=body
            ) as response:
                content, truncated = await self._read_body(response)
                return _Hop(
                    target=target,
                    status=response.status,
                    headers=_response_headers(response.headers),
                    content=content,
                    truncated=truncated,
                    address=_peer_address(response, target),
                )
        except httpcore.TimeoutException as exc:
            raise WebRequestTimedOut(
                f"{target.url} timed out ({_describe(exc)}): try again later"
            ) from exc
        except httpcore.ConnectError as exc:
            # httpcore's pool re-raises ``from None``: the ssl error survives as the context.
            if isinstance(exc.__cause__ or exc.__context__, ssl.SSLError):
                raise WebRequestFailed(
                    f"the TLS handshake with {target.url} failed ({_describe(exc)}): the server's "
                    "certificate is not valid for this host name; do not work around it"
                ) from exc
            raise WebRequestFailed(
                f"could not connect to {target.url} ({_describe(exc)}): the server is down or "
                "refuses connections; check the URL or try again later"
            ) from exc
        except (httpcore.ProtocolError, httpcore.NetworkError) as exc:
            raise WebRequestFailed(
                f"{target.url} broke off or sent an invalid HTTP response ({_describe(exc)})"
            ) from exc

    async def _read_body(self, response: httpcore.Response) -> tuple[bytes, bool]:
        """The body up to ``max_bytes``; stops reading (and drops the connection) past it."""
        limit = self._policy.max_bytes
        chunks: list[bytes] = []
        received = 0
        stream = response.aiter_stream()
        async for chunk in stream:
            chunks.append(chunk)
            received += len(chunk)
            if received > limit:
                return b"".join(chunks)[:limit], True
        return b"".join(chunks), False

    async def aclose(self) -> None:
        """Close the connections of fetches in progress; safe twice. A closed fetcher
        refuses new fetches (``FetcherClosed``)."""
        self._closed = True
        pools, self._pools = list(self._pools), set()
        for pool in pools:
            await pool.aclose()

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _check_method(method: str) -> str:
    upper = method.upper()
    if not _TOKEN.match(upper) or upper in ("CONNECT", "TRACE"):
        raise WebRequestInvalid(
            f"the HTTP method {method!r} cannot be sent: use GET, HEAD, POST, PUT, PATCH, "
            "DELETE or OPTIONS"
        )
    return upper


def _request_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """The caller's headers, checked, with lower-cased names; ours filled in."""
    checked: dict[str, str] = {"user-agent": USER_AGENT, "accept": "*/*"}
    for name, value in (headers or {}).items():
        lower = name.lower()
        if not _TOKEN.match(name) or _BAD_VALUE.search(value) or not value.isascii():
            raise WebRequestInvalid(
                f"the header {name!r} cannot be sent: names are letters, digits and -, values "
                "are ASCII text on one line"
            )
        if lower in _MANAGED_HEADERS:
            raise WebRequestInvalid(
                f"the header {name!r} is set by the fetcher itself: leave it out"
            )
        checked[lower] = value
    checked["accept-encoding"] = "identity"
    return checked


def _response_headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


def _peer_address(response: httpcore.Response, target: ParsedTarget) -> str:
    """The address the socket is really connected to (not what we meant to pin)."""
    stream = response.extensions.get("network_stream")
    if stream is not None:
        server = stream.get_extra_info("server_addr")
        if server is not None:
            return str(server[0])
    raise WebRequestFailed(f"{target.url}: the connection's peer address is unknown")


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
