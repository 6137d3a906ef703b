"""Brave Search's Web Search API as a :class:`~tools.web.search_provider.SearchProvider`.

The wire format (Brave's API reference): ``GET {base}/res/v1/web/search`` with the query
parameters ``q``, ``count`` (at most 20), ``offset`` (the zero-based page, at most 9),
``country`` (two letters), ``search_lang``, ``freshness`` (``pd`` ``pw`` ``pm`` ``py``),
``safesearch`` and ``text_decorations``, and the headers ``Accept: application/json`` and
``X-Subscription-Token: <key>``. The answer is an object whose ``web.results`` lists
``{title, url, description, age, page_age, ...}`` (``web`` is absent when nothing was
found); a failure is ``{"type": "ErrorResponse", "error": {"status", "code", "detail"}}``
with the HTTP status, and a 429 carries ``X-RateLimit-Remaining`` / ``X-RateLimit-Reset``
(comma-separated, one value per window: per second, per month).

The key: ``BraveSearch(api_key=...)`` from the application's config, else the environment
variable named by ``api_key_env`` (``BRAVE_API_KEY``). It never appears in a repr, a log
line, an error or an event (see :mod:`tools.web.search_config`).
"""

from __future__ import annotations

import re
from typing import Literal

import httpx
import msgspec

from ..errors import WebSearchConfigError
from ..scrub import Scrubber
from .search_config import Secret, api_key_from, check_base_url, check_timeout
from .search_http import (
    ProviderAnswer,
    decode_json,
    json_object,
    plain_text,
    result_entries,
    send,
    status_error,
)
from .search_provider import Freshness, SearchResult

__all__ = ["BraveSearch"]

SafeSearch = Literal["off", "moderate", "strict"]
_FRESHNESS: dict[str, str] = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SIGNUP = "get one at https://api-dashboard.search.brave.com"


class BraveSearch:
    """Web search through Brave's API (``name``: ``brave``)."""

    DEFAULT_BASE_URL = "https://api.search.brave.com"
    PATH = "/res/v1/web/search"
    #: Brave's limits on ``count`` and ``offset``.
    MAX_COUNT = 20
    MAX_OFFSET = 9

    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        api_key_env: str = "BRAVE_API_KEY",
        base_url: str = DEFAULT_BASE_URL,
        timeout_s: float = 10.0,
        safesearch: SafeSearch = "moderate",
    ) -> None:
        """Raises:
        WebSearchConfigError: no key (neither ``api_key`` nor ``$api_key_env``), a bad
            ``base_url`` (plain http is only allowed to a loopback host), a timeout that is
            not positive, an unknown ``safesearch``.
        """
        self._key = api_key_from("Brave Search", api_key, api_key_env, _SIGNUP)
        self.base_url = check_base_url("brave", base_url, carries_secret=True)
        if safesearch not in ("off", "moderate", "strict"):
            raise WebSearchConfigError(
                f"brave: safesearch must be 'off', 'moderate' or 'strict', not {safesearch!r}"
            )
        self.timeout_s = check_timeout("brave", timeout_s)
        self.safesearch: SafeSearch = safesearch
        self._scrubber = Scrubber([self._key.reveal()])

    @property
    def name(self) -> str:
        return "brave"

    def secrets(self) -> tuple[str, ...]:
        return (self._key.reveal(),)

    def __repr__(self) -> str:
        return (
            f"BraveSearch(base_url={self.base_url!r}, api_key='***', "
            f"timeout_s={self.timeout_s:g}, safesearch={self.safesearch!r})"
        )

    async def search(
        self,
        query: str,
        *,
        count: int,
        offset: int = 0,
        country: str | None = None,
        language: str | None = None,
        freshness: Freshness | None = None,
    ) -> list[SearchResult]:
        """See :meth:`SearchProvider.search`; ``count`` is capped at 20, ``offset`` at 9."""
        params: dict[str, str | int] = {
            "q": query,
            "count": max(1, min(count, self.MAX_COUNT)),
            "offset": max(0, min(offset, self.MAX_OFFSET)),
            "safesearch": self.safesearch,
            "text_decorations": "false",
        }
        if country:
            params["country"] = country.upper()
        if language:
            params["search_lang"] = language.lower()
        if freshness:
            params["freshness"] = _FRESHNESS[freshness]
        headers = {"Accept": "application/json", "X-Subscription-Token": self._key.reveal()}
        answer = await send(
            self.name,
            "GET",
            self.base_url + self.PATH,
            headers=headers,
            timeout_s=self.timeout_s,
            scrubber=self._scrubber,
            params=params,
        )
        if answer.status != 200:
            raise self._status_error(answer)
        return self._results(decode_json(self.name, answer, self._scrubber))[:count]

    def _status_error(self, answer: ProviderAnswer) -> Exception:
        return status_error(
            self.name,
            answer,
            self._scrubber,
            detail=_error_detail(answer.body),
            key_problem="Brave did not accept the API key (wrong, revoked, or without a "
            "plan for the Web Search API)",
            retry_after=_rate_limit_reset(answer.headers),
        )

    def _results(self, data: object) -> list[SearchResult]:
        web = json_object(self.name, data).get("web")
        if web is None:  # Brave leaves ``web`` out when no page matched
            return []
        items = web.get("results") if isinstance(web, dict) else None
        return [
            SearchResult(
                title=plain_text(item.get("title")) or url,
                url=url,
                snippet=plain_text(item.get("description")),
                published=_published(item),
                source=self.name,
            )
            for url, item in result_entries(self.name, items, "web.results")
        ]


def _published(item: dict[str, object]) -> str | None:
    page_age = item.get("page_age")
    if isinstance(page_age, str) and (date := _ISO_DATE.match(page_age)):
        return date.group(0)
    return plain_text(item.get("age")) or None


def _error_detail(body: bytes) -> str:
    """``detail (CODE)`` from Brave's ErrorResponse body; ``""`` for any other body."""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return ""
    detail, code = error.get("detail"), error.get("code")
    text = detail if isinstance(detail, str) else ""
    return f"{text} ({code})" if isinstance(code, str) and code else text


def _rate_limit_reset(headers: httpx.Headers) -> float | None:
    """Seconds until Brave lets searches through again: the ``Retry-After`` header if it
    sent one, else the reset of the longest exhausted window in ``X-RateLimit-Reset``."""
    if headers.get("retry-after"):
        return None  # status_error reads Retry-After itself
    resets = _numbers(headers.get("x-ratelimit-reset", ""))
    remaining = _numbers(headers.get("x-ratelimit-remaining", ""))
    if not resets:
        return None
    exhausted = [r for r, left in zip(resets, remaining, strict=False) if left <= 0]
    return max(exhausted) if exhausted else resets[0]


def _numbers(value: str) -> list[float]:
    found: list[float] = []
    for part in value.split(","):
        try:
            found.append(float(part.strip()))
        except ValueError:
            return []
    return found
