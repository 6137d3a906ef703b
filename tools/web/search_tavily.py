"""Tavily's search API as a :class:`~tools.web.search_provider.SearchProvider`.

The wire format (Tavily's REST API, as its Python client sends it): ``POST {base}/search``
with ``Authorization: Bearer <key>`` and a JSON body ``{query, max_results (at most 20),
search_depth, topic, time_range (day week month year)}``. The answer is an object whose
``results`` lists ``{title, url, content, score, published_date?}``. Failures carry
``{"detail": {"error": "..."}}``: 401 a bad key, 403/432/433 a key without the plan or
credits for the call, 429 too many requests, 400 a bad request.

Tavily has no pages: ``offset`` asks for ``count * (offset + 1)`` results (at most 20) and
keeps the last ``count``. Its ``country`` wants a country's English name, not a code, and
it has no language filter: both are ignored.

The key: ``TavilySearch(api_key=...)`` from the application's config, else the environment
variable named by ``api_key_env`` (``TAVILY_API_KEY``); never shown (see
:mod:`tools.web.search_config`).
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from ..errors import WebSearchConfigError
from ..scrub import Scrubber
from .search_config import Secret, api_key_from, check_base_url, check_timeout
from .search_http import (
    decode_json,
    json_object,
    plain_text,
    result_entries,
    send,
    status_error,
)
from .search_provider import Freshness, SearchResult

__all__ = ["TavilySearch"]

SearchDepth = Literal["basic", "advanced"]
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SIGNUP = "get one at https://app.tavily.com"


class TavilySearch:
    """Web search through Tavily's API (``name``: ``tavily``)."""

    DEFAULT_BASE_URL = "https://api.tavily.com"
    MAX_RESULTS = 20

    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        api_key_env: str = "TAVILY_API_KEY",
        base_url: str = DEFAULT_BASE_URL,
        timeout_s: float = 15.0,
        search_depth: SearchDepth = "basic",
    ) -> None:
        """Raises:
        WebSearchConfigError: no key (neither ``api_key`` nor ``$api_key_env``), a bad
            ``base_url`` (plain http is only allowed to a loopback host), a timeout that is
            not positive, an unknown ``search_depth``.
        """
        self._key = api_key_from("Tavily", api_key, api_key_env, _SIGNUP)
        self.base_url = check_base_url("tavily", base_url, carries_secret=True)
        if search_depth not in ("basic", "advanced"):
            raise WebSearchConfigError(
                f"tavily: search_depth must be 'basic' or 'advanced', not {search_depth!r}"
            )
        self.timeout_s = check_timeout("tavily", timeout_s)
        self.search_depth: SearchDepth = search_depth
        self._scrubber = Scrubber([self._key.reveal()])

    @property
    def name(self) -> str:
        return "tavily"

    def secrets(self) -> tuple[str, ...]:
        return (self._key.reveal(),)

    def __repr__(self) -> str:
        return (
            f"TavilySearch(base_url={self.base_url!r}, api_key='***', "
            f"timeout_s={self.timeout_s:g}, search_depth={self.search_depth!r})"
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
        """See :meth:`SearchProvider.search`; ``country`` and ``language`` are ignored."""
        count = max(1, min(count, self.MAX_RESULTS))
        skip = min(count * max(offset, 0), self.MAX_RESULTS - count)
        body: dict[str, str | int] = {
            "query": query,
            "max_results": skip + count,
            "search_depth": self.search_depth,
            "topic": "general",
        }
        if freshness:
            body["time_range"] = freshness
        answer = await send(
            self.name,
            "POST",
            self.base_url + "/search",
            headers={
                "Accept": "application/json",
                "Authorization": f"Bearer {self._key.reveal()}",
            },
            timeout_s=self.timeout_s,
            scrubber=self._scrubber,
            json=body,
        )
        if answer.status != 200:
            raise status_error(
                self.name,
                answer,
                self._scrubber,
                detail=_error_detail(answer.body),
                key_problem="Tavily did not accept the API key, or its plan has no credits "
                "left for this call",
                key_statuses=(401, 403, 432, 433),
            )
        return self._results(decode_json(self.name, answer, self._scrubber))[skip:][:count]

    def _results(self, data: object) -> list[SearchResult]:
        items = json_object(self.name, data).get("results")
        results: list[SearchResult] = []
        for url, item in result_entries(self.name, items, "results"):
            published = item.get("published_date")
            date = _ISO_DATE.match(published) if isinstance(published, str) else None
            results.append(
                SearchResult(
                    title=plain_text(item.get("title")) or url,
                    url=url,
                    snippet=plain_text(item.get("content")),
                    published=date.group(0) if date else None,
                    source=self.name,
                )
            )
        return results


def _error_detail(body: bytes) -> str:
    """``detail.error`` (or a plain ``detail`` string) from Tavily's error body."""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return ""
    detail = data.get("detail") if isinstance(data, dict) else None
    if isinstance(detail, dict):
        detail = detail.get("error")
    return detail if isinstance(detail, str) else ""
