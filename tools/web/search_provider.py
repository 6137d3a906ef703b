"""What ``web_search`` asks of a search provider: the :class:`SearchProvider` protocol and
the :class:`SearchResult` every provider's wire format is read into.

Three providers ship: :class:`~tools.web.search_brave.BraveSearch` (Brave's Web Search
API, keyed), :class:`~tools.web.search_searxng.SearxngSearch` (a SearXNG instance's JSON
API, usually self-hosted) and :class:`~tools.web.search_tavily.TavilySearch` (Tavily's
API, keyed). Another one (a company's own index...) is a class with these three members
(:mod:`tools.web.search_http` does the HTTP part and its error wording); it raises the
:class:`tools.errors.WebSearchError` family for the failures the model can act on (key
rejected, rate limited, timed out, bad answer).
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

import msgspec

__all__ = ["FRESHNESS", "Freshness", "SearchProvider", "SearchResult"]

#: How recent the results must be: published within the last day, week, month or year.
Freshness = Literal["day", "week", "month", "year"]
FRESHNESS: tuple[Freshness, ...] = ("day", "week", "month", "year")


class SearchResult(msgspec.Struct, frozen=True, kw_only=True):
    """One hit, whatever provider found it. Every field is external content."""

    #: The page's title (the URL when the provider gave none).
    title: str
    #: The page's address; providers keep only http and https URLs.
    url: str
    #: The provider's summary of the page, as plain text (markup removed).
    snippet: str = ""
    #: When the page was published or last changed, as the provider says it: an ISO date
    #: (``2024-01-31``) where it gives one, else its own words (``2 days ago``).
    published: str | None = None
    #: Who found it: the provider (``brave``), and for a metasearch engine the engine it
    #: asked (``searxng:duckduckgo``).
    source: str = ""


@runtime_checkable
class SearchProvider(Protocol):
    """A web search service. One instance serves concurrent searches."""

    @property
    def name(self) -> str:
        """Short and lower-case (``brave``, ``searxng``): errors and results name it."""
        ...

    def secrets(self) -> tuple[str, ...]:
        """Values never to show or record (API keys, auth header values)."""
        ...

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
        """At most ``count`` results for ``query``, best first.

        ``offset`` is the zero-based page of results (``count`` per page where the
        provider lets the caller choose the page size); ``country`` a two-letter code
        (``US``), ``language`` a language code (``en``, ``pt-BR``). A provider that cannot
        honour one of them ignores it and says so in its docstring.

        Raises:
            WebSearchKeyRejected: the provider refused the credentials (401/403).
            WebSearchRateLimited: the provider said to slow down (429).
            WebSearchTimedOut: no answer within the provider's time limit.
            WebSearchBadResponse: an answer that is not the provider's wire format.
            WebSearchError: any other failure (5xx, connection refused, another status).
        """
        ...
