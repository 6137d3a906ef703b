"""The HTTP exchange every search provider makes, and reading its answer.

One GET with one time limit over the whole exchange; redirects followed only on the same
host and never from https down to http (the provider's base URL is the operator's choice,
and its credentials must not travel to a host nobody chose); the body cut at
:data:`MAX_RESPONSE_BYTES`. httpx's errors are translated here, at the boundary, into the
:class:`tools.errors.WebSearchError` family, each message naming the provider, what went
wrong and what the model can do about it, and scrubbed of the provider's secrets (a server
echoing the key in an error page cannot leak it).

A short-lived client per search: a tool has no lifecycle hook in the System that would
close a long-lived one, and a search's time goes to the provider, not to the handshake.
The search endpoints are configured by the operator (a SearXNG instance on a private
network is normal), so this is plain httpx, not the SSRF-guarded fetcher of ``web_fetch``.
"""

from __future__ import annotations

import asyncio
import email.utils
import html
import re
import time
from collections.abc import Iterator, Mapping
from typing import NamedTuple

import httpx
import msgspec

from ..errors import (
    WebSearchBadResponse,
    WebSearchError,
    WebSearchKeyRejected,
    WebSearchRateLimited,
    WebSearchTimedOut,
)
from ..scrub import Scrubber

__all__ = [
    "MAX_REDIRECTS",
    "MAX_RESPONSE_BYTES",
    "ProviderAnswer",
    "bad_shape",
    "decode_json",
    "json_object",
    "plain_text",
    "result_entries",
    "send",
    "status_error",
    "web_url",
]

#: The most a provider's answer may weigh: a page of results is a few dozen KB.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
MAX_REDIRECTS = 3
_DETAIL_CHARS = 300
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


class ProviderAnswer(NamedTuple):
    """A provider's HTTP answer, body read (at most :data:`MAX_RESPONSE_BYTES`)."""

    status: int
    headers: httpx.Headers
    body: bytes


async def send(
    provider: str,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    scrubber: Scrubber,
    params: Mapping[str, str | int] | None = None,
    json: object = None,
) -> ProviderAnswer:
    """Send ``method`` to ``url`` with query ``params`` or a ``json`` body; the answer
    whatever its status. Redirects are followed for GET only (on the same host).

    Raises:
        WebSearchTimedOut: no complete answer within ``timeout_s``.
        WebSearchError: the provider cannot be reached, or redirects elsewhere.
        WebSearchBadResponse: the body is larger than :data:`MAX_RESPONSE_BYTES`.
    """
    try:
        async with asyncio.timeout(timeout_s):
            request = _Request(method, url, headers, params, json)
            return await _exchange(provider, request, timeout_s, scrubber)
    except (TimeoutError, httpx.TimeoutException) as exc:
        raise WebSearchTimedOut(
            f"{provider} did not answer within {timeout_s:g} s. Try again in a moment "
            "(maybe with a simpler query), or continue without web search."
        ) from exc
    except httpx.HTTPError as exc:
        host = httpx.URL(url).host
        problem = scrubber.scrub(f"{type(exc).__name__}: {exc}")[:_DETAIL_CHARS]
        raise WebSearchError(
            f"could not reach {provider} at {host} ({problem}). The service may be down or "
            "unreachable from here: try again later, or continue without web search."
        ) from exc


class _Request(NamedTuple):
    method: str
    url: str
    headers: Mapping[str, str]
    params: Mapping[str, str | int] | None
    json: object


async def _exchange(
    provider: str, asked: _Request, timeout_s: float, scrubber: Scrubber
) -> ProviderAnswer:
    async with httpx.AsyncClient(timeout=timeout_s, follow_redirects=False) as client:
        request = client.build_request(
            asked.method, asked.url, params=asked.params, json=asked.json, headers=asked.headers
        )
        for _ in range(MAX_REDIRECTS + 1):
            response = await client.send(request, stream=True)
            try:
                if response.next_request is None:
                    body = await _read_capped(provider, response)
                    return ProviderAnswer(response.status_code, response.headers, body)
                target = _redirect(provider, request, response.next_request.url, scrubber)
                request = client.build_request("GET", target, headers=asked.headers)
            finally:
                await response.aclose()
    raise WebSearchError(
        f"{provider} redirected more than {MAX_REDIRECTS} times; the operator should "
        "configure its final address as the base URL. Continue without web search."
    )


def _redirect(
    provider: str, request: httpx.Request, target: httpx.URL, scrubber: Scrubber
) -> httpx.URL:
    """``target``, if ``request`` is a GET and it stays on the same host and scheme (or
    goes from http up to https)."""
    source = request.url
    if request.method != "GET":  # re-sending a body elsewhere is never what the operator set
        raise WebSearchError(
            f"{provider} redirected a {request.method} search; the operator should configure "
            "its final address as the base URL. Continue without web search."
        )
    upgrade = source.scheme == "http" and target.scheme == "https"
    if target.host != source.host or (target.scheme != source.scheme and not upgrade):
        where = scrubber.scrub(f"{target.scheme}://{target.host}")
        raise WebSearchError(
            f"{provider} redirected the search to {where}, another host or scheme than its "
            "configured base URL; clawlog does not follow it (the credentials would go "
            "along). The operator should fix the base URL. Continue without web search."
        )
    return target


async def _read_capped(provider: str, response: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise WebSearchBadResponse(
                f"{provider} answered more than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB, "
                "which is no page of search results; the base URL may point at another "
                "service. Continue without web search."
            )
        chunks.append(chunk)
    return b"".join(chunks)


def status_error(
    provider: str,
    answer: ProviderAnswer,
    scrubber: Scrubber,
    *,
    detail: str = "",
    key_problem: str = "the credentials are missing, wrong or expired",
    key_statuses: tuple[int, ...] = (401, 403),
    retry_after: float | None = None,
) -> WebSearchError:
    """The error for an answer whose status is not 200. ``detail`` is what the provider
    said (shown scrubbed and cut); ``key_statuses`` mean the operator's credentials or
    plan were refused; ``retry_after`` overrides the ``Retry-After`` header."""
    status = answer.status
    said = _SPACE.sub(" ", scrubber.scrub(detail)).strip()[:_DETAIL_CHARS]
    said = f": {said}" if said else ""
    if status in key_statuses:
        return WebSearchKeyRejected(
            f"{provider} refused the search with HTTP {status}{said}. {key_problem}: a "
            "configuration problem for the operator, which another query cannot fix. "
            "Continue without web search and tell the user it needs fixing."
        )
    if status == 429:
        wait = retry_after if retry_after is not None else retry_after_header(answer.headers)
        when = f"Wait {wait:g} s before searching again" if wait is not None else "Wait a bit"
        return WebSearchRateLimited(
            f"{provider} is rate limiting searches (HTTP 429{said}). {when}, or continue "
            "without web search.",
            retry_after=wait,
        )
    if status >= 500:
        return WebSearchError(
            f"{provider} failed with HTTP {status}{said}: a problem on its side. Try again "
            "in a moment, or continue without web search."
        )
    return WebSearchError(
        f"{provider} refused the search with HTTP {status}{said}. Check the query and its "
        "options (count, offset, country, language, freshness) and try again."
    )


def retry_after_header(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (a number or an HTTP date), if any."""
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, round(when.timestamp() - (time.time() if now is None else now)))


def decode_json(provider: str, answer: ProviderAnswer, scrubber: Scrubber) -> object:
    """The body as JSON.

    Raises:
        WebSearchBadResponse: it is not JSON; the message quotes its start (scrubbed).
    """
    try:
        return msgspec.json.decode(answer.body)
    except msgspec.DecodeError as exc:
        start = answer.body[:80].decode("utf-8", "replace")
        start = scrubber.scrub(_SPACE.sub(" ", start))
        kind = answer.headers.get("content-type", "no content type")
        raise WebSearchBadResponse(
            f"{provider} answered HTTP {answer.status} with a body that is not JSON ({exc}; "
            f"{kind}, starting {start!r}). Its base URL may point at another service, or the "
            "service is failing: another query will not fix this. Continue without web search."
        ) from exc


def bad_shape(provider: str, problem: str) -> WebSearchBadResponse:
    """The error for JSON that is not the provider's wire format."""
    return WebSearchBadResponse(
        f"{provider} answered JSON that is not its search format ({problem}). The base URL "
        "may point at another service or API version: another query will not fix this. "
        "Continue without web search."
    )


def json_object(provider: str, data: object) -> dict[str, object]:
    """``data`` if it is a JSON object, else the provider's bad-shape error."""
    if not isinstance(data, dict):
        raise bad_shape(provider, f"a JSON {type(data).__name__} instead of an object")
    return data


def result_entries(
    provider: str, items: object, where: str
) -> Iterator[tuple[str, dict[str, object]]]:
    """``(url, entry)`` for each entry of a provider's result list ``items`` (named
    ``where`` in errors): a list of objects; an entry without an http(s) URL is dropped."""
    if not isinstance(items, list):
        raise bad_shape(provider, f"{where} is missing or not a list")
    for item in items:
        if not isinstance(item, dict):
            raise bad_shape(provider, f"an entry of {where} is not an object")
        url = web_url(item.get("url"))
        if url is not None:
            yield url, item


def plain_text(fragment: object) -> str:
    """Markup-free, single-spaced text from a provider's (maybe HTML) string field."""
    if not isinstance(fragment, str):
        return ""
    return _SPACE.sub(" ", html.unescape(_TAG.sub("", fragment))).strip()


def web_url(value: object) -> str | None:
    """``value`` if it is an http(s) URL: a result pointing elsewhere (``javascript:``,
    ``file:``) is dropped."""
    if not isinstance(value, str):
        return None
    url = value.strip()
    head = url[:8].lower()
    return url if head.startswith(("http://", "https://")) and len(url) > 8 else None
