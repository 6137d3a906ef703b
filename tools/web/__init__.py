"""The web tools: the SSRF guard and the pinned :class:`Fetcher` under ``web_fetch`` and
``http``.

    policy = WebPolicy(deny_hosts=("*.internal.example",))
    async with Fetcher(policy) as fetcher:
        page = await fetcher.fetch("https://example.com/")   # FetchedPage

Every URL (and every redirect hop) is parsed and normalized the way browsers read hosts
(decimal, octal, hex and short IPv4 forms, IDN), checked against the policy's host lists and
the blocked address ranges (loopback, private, CGNAT, link-local incl. cloud metadata, ULA,
multicast, reserved ... and their IPv4-mapped, NAT64 and 6to4 forms); every address the host
resolves to is checked, and the connection goes to the checked address only.

``web_fetch`` (GET, the page as Markdown or text) and ``http`` (any method, approved per
call, outbound secrets refused) are tools over such a fetcher; what they read is wrapped as
external content with prompt-injection markers neutralized. One policy per tool instance,
so per agent::

    policy = WebPolicy(allow_hosts=("docs.python.org",))
    await system.register_agent(config, model, tools=[WebFetchTool(policy), HttpTool(policy)])

``web_search`` asks a search provider the operator configured (not the guarded fetcher:
the endpoint is the operator's choice, a SearXNG instance may live on a private network)::

    tool = WebSearchTool(BraveSearch(api_key=settings.brave_key))  # or $BRAVE_API_KEY
    tool = WebSearchTool(SearxngSearch("http://searxng:8080"))
    await system.register_agent(config, model, tools=[tool])

Errors an application meets: :class:`~clawlog.tools.PolicyError` from a ``WebPolicy`` that
cannot be used, :class:`WebSearchConfigError` from a provider that cannot be set up (no
API key, a bad base URL), and the :class:`WebError` family from :meth:`Fetcher.fetch`
(what the tools turn into failures the model reads).
"""

from ..errors import WebError, WebSearchConfigError
from .addresses import address_refusal, parse_ip
from .fetch_tool import WebFetchTool
from .fetcher import FetchedPage, Fetcher
from .http_tool import HttpTool
from .policy import WebPolicy, check_url, host_matches
from .resolver import Resolver, system_resolver
from .search_brave import BraveSearch
from .search_config import Secret
from .search_provider import SearchProvider, SearchResult
from .search_searxng import SearxngSearch
from .search_tavily import TavilySearch
from .search_tool import WebSearchConfig, WebSearchTool
from .urls import ParsedTarget, parse_url

__all__ = [
    "BraveSearch",
    "FetchedPage",
    "Fetcher",
    "HttpTool",
    "ParsedTarget",
    "Resolver",
    "SearchProvider",
    "SearchResult",
    "SearxngSearch",
    "Secret",
    "TavilySearch",
    "WebError",
    "WebFetchTool",
    "WebPolicy",
    "WebSearchConfig",
    "WebSearchConfigError",
    "WebSearchTool",
    "address_refusal",
    "check_url",
    "host_matches",
    "parse_ip",
    "parse_url",
    "system_resolver",
]
