"""A SearXNG instance's JSON API as a :class:`~tools.web.search_provider.SearchProvider`.

The wire format (SearXNG's "Search API" documentation): ``GET {base}/search`` with the
query parameters ``q``, ``format=json``, ``pageno`` (from 1), ``categories``, ``engines``,
``language`` (``en``, ``en-US``), ``time_range`` (``day`` ``week`` ``month`` ``year``) and
``safesearch`` (0, 1, 2). The answer is an object whose ``results`` lists ``{title, url,
content, publishedDate, engine, ...}``. An instance answers 403 when ``json`` is not among
the formats its ``settings.yml`` enables (many public instances), and 429 when its limiter
refuses the client.

SearXNG picks the page size itself: ``count`` takes the first results of the page
``offset + 1``. It has no country parameter: a ``country`` joins ``language`` as
``en-US``, and is ignored without one.

SearXNG has no API key; an instance behind a proxy that wants one gets it through
``headers`` (``{"Authorization": "Bearer ..."}``), whose values are treated like a key:
masked in the repr, scrubbed from errors, never logged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from ..errors import WebSearchConfigError
from ..scrub import Scrubber
from .search_config import Secret, check_base_url, check_timeout
from .search_http import (
    decode_json,
    json_object,
    plain_text,
    result_entries,
    send,
    status_error,
)
from .search_provider import Freshness, SearchResult

__all__ = ["SearxngSearch"]

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")


class SearxngSearch:
    """Web search through a SearXNG instance (``name``: ``searxng``)."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str | Secret] | None = None,
        timeout_s: float = 10.0,
        categories: str = "general",
        engines: str | None = None,
        safesearch: Literal[0, 1, 2] | None = None,
    ) -> None:
        """``base_url`` is the instance's root (``http://searxng:8080``, or with a path
        prefix: ``https://example.org/searx``).

        Raises:
            WebSearchConfigError: a bad ``base_url`` (plain http with ``headers`` is only
                allowed to a loopback host), a header that is no string, a timeout that is
                not positive, a ``safesearch`` other than 0, 1, 2.
        """
        self._headers = _check_headers(headers or {})
        self.base_url = check_base_url("searxng", base_url, carries_secret=bool(self._headers))
        if safesearch not in (None, 0, 1, 2):
            raise WebSearchConfigError(
                f"searxng: safesearch must be 0, 1, 2 or None, not {safesearch!r}"
            )
        self.timeout_s = check_timeout("searxng", timeout_s)
        self.categories = categories
        self.engines = engines
        self.safesearch = safesearch
        self._scrubber = Scrubber(self.secrets())

    @property
    def name(self) -> str:
        return "searxng"

    def secrets(self) -> tuple[str, ...]:
        return tuple(value.reveal() for value in self._headers.values())

    def __repr__(self) -> str:
        masked = {name: "***" for name in self._headers}
        return (
            f"SearxngSearch(base_url={self.base_url!r}, headers={masked!r}, "
            f"timeout_s={self.timeout_s:g}, categories={self.categories!r})"
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
        """See :meth:`SearchProvider.search`: the first ``count`` results of page
        ``offset + 1``; ``country`` only as part of ``language``."""
        params: dict[str, str | int] = {"q": query, "format": "json", "pageno": offset + 1}
        if self.categories:
            params["categories"] = self.categories
        if self.engines:
            params["engines"] = self.engines
        if language:
            params["language"] = f"{language}-{country.upper()}" if country else language
        if freshness:
            params["time_range"] = freshness
        if self.safesearch is not None:
            params["safesearch"] = self.safesearch
        headers = {"Accept": "application/json"}
        headers |= {name: value.reveal() for name, value in self._headers.items()}
        answer = await send(
            self.name,
            "GET",
            self.base_url + "/search",
            headers=headers,
            timeout_s=self.timeout_s,
            scrubber=self._scrubber,
            params=params,
        )
        if answer.status != 200:
            raise status_error(
                self.name,
                answer,
                self._scrubber,
                key_problem="The instance does not allow format=json (its settings.yml "
                "must list json under search.formats), or its access control refused "
                "this client",
            )
        return self._results(decode_json(self.name, answer, self._scrubber))[:count]

    def _results(self, data: object) -> list[SearchResult]:
        items = json_object(self.name, data).get("results")
        results: list[SearchResult] = []
        for url, item in result_entries(self.name, items, "results"):
            engine = item.get("engine")
            results.append(
                SearchResult(
                    title=plain_text(item.get("title")) or url,
                    url=url,
                    snippet=plain_text(item.get("content")),
                    published=_published(item.get("publishedDate")),
                    source=f"searxng:{engine}" if isinstance(engine, str) and engine else "searxng",
                )
            )
        return results


def _published(value: object) -> str | None:
    if isinstance(value, str) and (date := _ISO_DATE.match(value)):
        return date.group(0)
    return None


def _check_headers(headers: Mapping[str, str | Secret]) -> dict[str, Secret]:
    if not isinstance(headers, Mapping):
        raise WebSearchConfigError(
            f"searxng: headers must be a mapping of names to values, not {type(headers).__name__}"
        )
    checked: dict[str, Secret] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or _HEADER_NAME.fullmatch(name) is None:
            raise WebSearchConfigError(f"searxng: {name!r} is not an HTTP header name")
        text = value.reveal() if isinstance(value, Secret) else value
        if not isinstance(text, str) or not text or not text.isprintable() or not text.isascii():
            raise WebSearchConfigError(
                f"searxng: the value of header {name} must be a non-empty ASCII string "
                "without control characters (its value is not shown)"
            )
        checked[name] = Secret(text)
    return checked
