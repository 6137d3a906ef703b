"""The search providers against local servers speaking their wire formats: Brave's Web
Search API and a SearXNG instance's JSON API. Each server records the request, so the
tests assert what went on the wire (query parameters, the key header) as well as what
came back (results, and each failure as the error the model can act on)."""

from __future__ import annotations

import email.utils
import json
import socket
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from clawlog.tools.errors import (
    WebSearchBadResponse,
    WebSearchConfigError,
    WebSearchError,
    WebSearchKeyRejected,
    WebSearchRateLimited,
    WebSearchTimedOut,
)
from clawlog.tools.web.search_brave import BraveSearch
from clawlog.tools.web.search_config import Secret
from clawlog.tools.web.search_http import MAX_RESPONSE_BYTES
from clawlog.tools.web.search_provider import SearchProvider, SearchResult
from clawlog.tools.web.search_searxng import SearxngSearch
from clawlog.tools.web.search_tavily import TavilySearch
from tests.web.conftest import LocalServer, Reply, Seen

KEY = "BSAtestkey-0123456789abcdefXYZ"
BRAVE_PATH = "/res/v1/web/search"


def as_json(value: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(
        status=status,
        body=json.dumps(value).encode(),
        headers={"Content-Type": "application/json", **headers},
    )


def query_of(seen: Seen) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(seen.path).query).items()}


def brave_item(title: str, url: str, description: str = "", **extra: Any) -> dict[str, Any]:
    item = {"title": title, "url": url, "description": description, "type": "search_result"}
    return item | extra


def brave_page(*items: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "search",
        "query": {"original": "q"},
        "web": {"type": "search", "results": list(items)},
    }


def brave(server: LocalServer, **options: Any) -> BraveSearch:
    return BraveSearch(api_key=KEY, base_url=server.url(""), **options)


def stall(server: LocalServer) -> None:
    """The route's handler waits until the server closes: a provider that never answers."""

    def stalled(_seen: Seen) -> Reply:
        server.release.wait()
        return Reply(200, b"{}")

    server.route(BRAVE_PATH, stalled)
    server.route("/search", stalled)


# -- Brave ------------------------------------------------------------------------------


async def test_brave_sends_the_query_options_and_key_the_way_brave_reads_them(
    server: LocalServer,
) -> None:
    server.route(
        BRAVE_PATH,
        as_json(
            brave_page(
                brave_item(
                    "<strong>Event</strong> sourcing &amp; actors",
                    "https://example.org/es",
                    "Store <strong>every</strong>\n change.",
                    page_age="2024-01-31T10:03:02",
                    age="January 31, 2024",
                ),
                brave_item("", "https://example.org/untitled", age="2 days ago"),
                brave_item("Script", "javascript:alert(1)"),
                brave_item("Third", "http://example.net/3"),
                brave_item("Fourth", "https://example.net/4"),
            )
        ),
    )
    results = await brave(server).search(
        "event sourcing", count=3, offset=1, country="de", language="EN", freshness="week"
    )

    [seen] = server.requests
    assert seen.method == "GET"
    assert urlsplit(seen.path).path == BRAVE_PATH
    assert query_of(seen) == {
        "q": "event sourcing",
        "count": "3",
        "offset": "1",
        "country": "DE",
        "search_lang": "en",
        "freshness": "pw",
        "safesearch": "moderate",
        "text_decorations": "false",
    }
    assert seen.headers["x-subscription-token"] == KEY
    assert seen.headers["accept"] == "application/json"
    assert results == [
        SearchResult(
            title="Event sourcing & actors",
            url="https://example.org/es",
            snippet="Store every change.",
            published="2024-01-31",
            source="brave",
        ),
        SearchResult(
            title="https://example.org/untitled",
            url="https://example.org/untitled",
            published="2 days ago",
            source="brave",
        ),
        SearchResult(title="Third", url="http://example.net/3", source="brave"),
    ]


async def test_brave_caps_count_and_offset_at_its_limits(server: LocalServer) -> None:
    server.route(BRAVE_PATH, as_json(brave_page()))
    await brave(server).search("x", count=50, offset=30)
    assert query_of(server.requests[0])["count"] == "20"
    assert query_of(server.requests[0])["offset"] == "9"


async def test_brave_without_a_web_section_found_nothing(server: LocalServer) -> None:
    server.route(BRAVE_PATH, as_json({"type": "search", "query": {"original": "zzqx"}}))
    assert await brave(server).search("zzqx", count=5) == []


@pytest.mark.parametrize("status", [401, 403])
async def test_brave_refusing_the_key_is_an_operator_problem(
    server: LocalServer, status: int
) -> None:
    body = {
        "type": "ErrorResponse",
        "error": {
            "id": "e1",
            "status": status,
            "code": "SUBSCRIPTION_TOKEN_INVALID",
            "detail": "The provided subscription token is invalid.",
        },
    }
    server.route(BRAVE_PATH, as_json(body, status))
    with pytest.raises(WebSearchKeyRejected) as caught:
        await brave(server).search("x", count=5)
    message = str(caught.value)
    assert f"brave refused the search with HTTP {status}" in message
    assert "The provided subscription token is invalid. (SUBSCRIPTION_TOKEN_INVALID)" in message
    assert "operator" in message and "another query cannot fix" in message
    assert caught.value.kind == "external_service"


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"X-RateLimit-Remaining": "0, 9000", "X-RateLimit-Reset": "1, 1419704"}, 1.0),
        ({"X-RateLimit-Remaining": "3, 0", "X-RateLimit-Reset": "1, 86400"}, 86400.0),
        ({}, None),
    ],
)
async def test_brave_rate_limiting_says_how_long_to_wait(
    server: LocalServer, headers: dict[str, str], wait: float | None
) -> None:
    body = {"type": "ErrorResponse", "error": {"code": "RATE_LIMITED", "detail": "slow down"}}
    server.route(BRAVE_PATH, as_json(body, 429, **headers))
    with pytest.raises(WebSearchRateLimited) as caught:
        await brave(server).search("x", count=5)
    assert caught.value.retry_after == wait
    assert caught.value.kind == "rate_limited"
    message = str(caught.value)
    assert "brave is rate limiting searches (HTTP 429: slow down (RATE_LIMITED))" in message
    assert (f"Wait {wait:g} s" if wait is not None else "Wait a bit") in message


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_brave_server_errors_say_the_problem_is_on_its_side(
    server: LocalServer, status: int
) -> None:
    server.route(BRAVE_PATH, Reply(status, b"<html>bad gateway</html>"))
    with pytest.raises(WebSearchError) as caught:
        await brave(server).search("x", count=5)
    assert type(caught.value) is WebSearchError
    assert f"brave failed with HTTP {status}: a problem on its side" in str(caught.value)


async def test_brave_rejecting_the_parameters_asks_to_check_them(server: LocalServer) -> None:
    body = {"type": "ErrorResponse", "error": {"code": "VALIDATION", "detail": "bad country"}}
    server.route(BRAVE_PATH, as_json(body, 422))
    with pytest.raises(WebSearchError) as caught:
        await brave(server).search("x", count=5, country="zz")
    assert "HTTP 422: bad country (VALIDATION). Check the query and its options" in str(
        caught.value
    )


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Reply(200, b"<!doctype html><p>Welcome to nginx"), "body that is not JSON"),
        (Reply(200, b'{"web": {"results": [ {"title": '), "body that is not JSON"),
        (as_json([1, 2]), "a JSON list instead of an object"),
        (as_json({"web": {"results": "none"}}), "web.results is missing or not a list"),
        (as_json({"web": {"results": ["a"]}}), "an entry of web.results is not an object"),
    ],
)
async def test_brave_answers_in_another_format_are_bad_responses(
    server: LocalServer, reply: Reply, problem: str
) -> None:
    server.route(BRAVE_PATH, reply)
    with pytest.raises(WebSearchBadResponse) as caught:
        await brave(server).search("x", count=5)
    assert str(caught.value).startswith("brave answered")
    assert problem in str(caught.value)


async def test_a_provider_that_never_answers_times_out(server: LocalServer) -> None:
    stall(server)
    with pytest.raises(WebSearchTimedOut) as caught:
        await brave(server, timeout_s=0.5).search("x", count=5)
    assert str(caught.value).startswith("brave did not answer within 0.5 s")
    assert caught.value.kind == "timeout"


async def test_an_unreachable_provider_is_named_with_its_host() -> None:
    with socket.socket() as probe:  # a port nobody listens on any more
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = BraveSearch(api_key=KEY, base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(WebSearchError) as caught:
        await provider.search("x", count=5)
    assert str(caught.value).startswith("could not reach brave at 127.0.0.1 (ConnectError")


async def test_an_error_page_echoing_the_key_never_shows_it(server: LocalServer) -> None:
    body = {"type": "ErrorResponse", "error": {"code": "X", "detail": f"token {KEY} unknown"}}
    server.route(BRAVE_PATH, as_json(body, 401))
    with pytest.raises(WebSearchKeyRejected) as caught:
        await brave(server).search("x", count=5)
    assert KEY not in str(caught.value)
    assert "token [REDACTED] unknown" in str(caught.value)

    server.route(BRAVE_PATH, Reply(200, f"oops {KEY}".encode()))
    with pytest.raises(WebSearchBadResponse) as bad:
        await brave(server).search("x", count=5)
    assert KEY not in str(bad.value)


async def test_a_redirect_to_another_host_is_not_followed(server: LocalServer) -> None:
    elsewhere = server.url("/stolen", host="localhost")
    server.route(BRAVE_PATH, Reply(302, b"", {"Location": elsewhere}))
    server.route("/stolen", as_json(brave_page()))
    with pytest.raises(WebSearchError) as caught:
        await brave(server).search("x", count=5)
    assert "redirected the search to http://localhost" in str(caught.value)
    assert [urlsplit(s.path).path for s in server.requests] == [BRAVE_PATH]


async def test_a_redirect_on_the_same_host_is_followed_with_the_key(server: LocalServer) -> None:
    server.route(BRAVE_PATH, Reply(308, b"", {"Location": "/v2/search?q=x"}))
    server.route("/v2/search", as_json(brave_page(brave_item("A", "https://a.example/"))))
    results = await brave(server).search("x", count=5)
    assert [r.url for r in results] == ["https://a.example/"]
    assert server.requests[1].headers["x-subscription-token"] == KEY


async def test_an_answer_past_the_size_cap_is_refused(server: LocalServer) -> None:
    server.route(BRAVE_PATH, Reply(200, b" " * (MAX_RESPONSE_BYTES + 1)))
    with pytest.raises(WebSearchBadResponse, match="answered more than 4 MiB"):
        await brave(server).search("x", count=5)


# -- Brave's key and settings ------------------------------------------------------------


async def test_the_key_can_come_from_a_named_environment_variable(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_BRAVE_KEY", KEY)
    server.route(BRAVE_PATH, as_json(brave_page()))
    provider = BraveSearch(api_key_env="APP_BRAVE_KEY", base_url=server.url(""))
    await provider.search("x", count=1)
    assert server.requests[0].headers["x-subscription-token"] == KEY


def test_a_missing_key_names_both_ways_to_give_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    with pytest.raises(WebSearchConfigError) as caught:
        BraveSearch()
    assert "pass api_key=" in str(caught.value)
    assert "environment variable BRAVE_API_KEY" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_key_with_a_stray_newline_is_refused_without_showing_it() -> None:
    with pytest.raises(WebSearchConfigError) as caught:
        BraveSearch(api_key=KEY + "\n")
    assert "stray newline" in str(caught.value)
    assert KEY not in str(caught.value)


def test_a_key_with_non_ascii_characters_is_refused_without_showing_it() -> None:
    with pytest.raises(WebSearchConfigError, match="non-ASCII") as caught:
        BraveSearch(api_key=KEY + "\u201d")
    assert KEY not in str(caught.value)


def test_no_repr_shows_the_key() -> None:
    provider = BraveSearch(api_key=Secret(KEY))
    for text in (repr(provider), str(provider), repr(vars(provider)), f"{provider._key}"):
        assert KEY not in text
    assert "api_key='***'" in repr(provider)
    assert provider.secrets() == (KEY,)


@pytest.mark.parametrize(
    ("base_url", "problem"),
    [
        ("http://search.example.com", "would send the credentials in clear"),
        ("ftp://search.example.com", "is not an http(s) URL"),
        ("https://user:pw@search.example.com", "must not have a query, a fragment or a user"),
        ("https://search.example.com/?a=1", "must not have a query"),
        ("https://search.example.com:port", "is no URL"),
    ],
)
def test_bad_base_urls_are_refused_when_the_provider_is_built(base_url: str, problem: str) -> None:
    with pytest.raises(WebSearchConfigError, match="brave") as caught:
        BraveSearch(api_key=KEY, base_url=base_url)
    assert problem in str(caught.value)


def test_plain_http_is_allowed_to_loopback_and_providers_satisfy_the_protocol() -> None:
    assert BraveSearch(api_key=KEY, base_url="http://127.0.0.1:9/").base_url == (
        "http://127.0.0.1:9"
    )
    assert isinstance(BraveSearch(api_key=KEY), SearchProvider)
    assert isinstance(SearxngSearch("http://searxng:8080"), SearchProvider)


# -- SearXNG -----------------------------------------------------------------------------


def searx_page(*items: dict[str, Any]) -> dict[str, Any]:
    return {
        "query": "q",
        "number_of_results": 0,
        "results": list(items),
        "answers": [],
        "suggestions": [],
        "unresponsive_engines": [],
    }


def searx_item(title: str, url: str, content: str = "", **extra: Any) -> dict[str, Any]:
    return {"title": title, "url": url, "content": content, "engine": "duckduckgo"} | extra


async def test_searxng_sends_format_json_and_reads_results(server: LocalServer) -> None:
    server.route(
        "/searx/search",
        as_json(
            searx_page(
                searx_item(
                    "Actors in Python",
                    "https://example.org/pykka",
                    "Pykka &mdash; actors\tfor Python",
                    publishedDate="2023-06-01T00:00:00",
                ),
                searx_item("No date", "https://example.org/b", engine="wikipedia"),
                searx_item("Local", "file:///etc/passwd"),
                searx_item("Third", "https://example.org/c"),
            )
        ),
    )
    provider = SearxngSearch(server.url("/searx/"), safesearch=1)
    results = await provider.search(
        "python actors", count=2, offset=2, country="at", language="de", freshness="month"
    )

    [seen] = server.requests
    assert urlsplit(seen.path).path == "/searx/search"
    assert query_of(seen) == {
        "q": "python actors",
        "format": "json",
        "pageno": "3",
        "categories": "general",
        "language": "de-AT",
        "time_range": "month",
        "safesearch": "1",
    }
    assert "x-subscription-token" not in seen.headers
    assert results == [
        SearchResult(
            title="Actors in Python",
            url="https://example.org/pykka",
            snippet="Pykka — actors for Python",
            published="2023-06-01",
            source="searxng:duckduckgo",
        ),
        SearchResult(title="No date", url="https://example.org/b", source="searxng:wikipedia"),
    ]


async def test_searxng_with_no_results_found_nothing(server: LocalServer) -> None:
    server.route("/search", as_json(searx_page()))
    assert await SearxngSearch(server.url("")).search("zzqx", count=5) == []
    assert "language" not in query_of(server.requests[0])


async def test_searxng_403_explains_the_json_format_setting(server: LocalServer) -> None:
    server.route("/search", Reply(403, b"<html>403 Forbidden</html>"))
    with pytest.raises(WebSearchKeyRejected) as caught:
        await SearxngSearch(server.url("")).search("x", count=5)
    assert "searxng refused the search with HTTP 403" in str(caught.value)
    assert "settings.yml must list json under search.formats" in str(caught.value)


async def test_searxng_429_with_an_http_date_says_how_long_to_wait(
    server: LocalServer,
) -> None:
    later = email.utils.formatdate(time.time() + 120, usegmt=True)
    server.route("/search", Reply(429, b"Too Many Requests", {"Retry-After": later}))
    with pytest.raises(WebSearchRateLimited) as caught:
        await SearxngSearch(server.url("")).search("x", count=5)
    assert caught.value.retry_after is not None
    assert 60 <= caught.value.retry_after <= 121


async def test_searxng_html_instead_of_json_is_a_bad_response(server: LocalServer) -> None:
    server.route("/search", Reply(200, b"<!DOCTYPE html>\n<html><body>results</body></html>"))
    with pytest.raises(WebSearchBadResponse) as caught:
        await SearxngSearch(server.url("")).search("x", count=5)
    assert "searxng answered HTTP 200 with a body that is not JSON" in str(caught.value)
    assert "starting '<!DOCTYPE html> <html>" in str(caught.value)


async def test_searxng_json_without_results_is_a_bad_response(server: LocalServer) -> None:
    server.route("/search", as_json({"query": "x"}))
    with pytest.raises(WebSearchBadResponse, match="results is missing or not a list"):
        await SearxngSearch(server.url("")).search("x", count=5)


async def test_searxng_times_out(server: LocalServer) -> None:
    stall(server)
    with pytest.raises(WebSearchTimedOut, match=r"searxng did not answer within 0\.5 s"):
        await SearxngSearch(server.url(""), timeout_s=0.5).search("x", count=5)


async def test_searxng_auth_headers_are_sent_and_treated_as_secrets(server: LocalServer) -> None:
    token = "Bearer proxy-token-9f8e7d6c5b4a"
    server.route("/search", Reply(401, f"bad credentials {token}".encode()))
    provider = SearxngSearch(server.url(""), headers={"Authorization": token})
    with pytest.raises(WebSearchKeyRejected) as caught:
        await provider.search("x", count=5)
    assert server.requests[0].headers["authorization"] == token
    assert "proxy-token" not in str(caught.value)
    assert "proxy-token" not in repr(provider)
    assert "headers={'Authorization': '***'}" in repr(provider)


def test_searxng_settings_are_checked() -> None:
    with pytest.raises(WebSearchConfigError, match="would send the credentials in clear"):
        SearxngSearch("http://searx.example.org", headers={"Authorization": "Bearer abcdef"})
    with pytest.raises(WebSearchConfigError, match="is not an HTTP header name"):
        SearxngSearch("http://127.0.0.1", headers={"Bad Header": "x"})
    with pytest.raises(WebSearchConfigError, match="safesearch must be 0, 1, 2"):
        SearxngSearch("http://127.0.0.1", safesearch=5)  # type: ignore[arg-type]
    with pytest.raises(WebSearchConfigError, match="timeout_s must be a positive"):
        SearxngSearch("http://127.0.0.1", timeout_s=0)
    # a private-network instance over plain http without credentials is normal
    assert SearxngSearch("http://searxng:8080").base_url == "http://searxng:8080"


# -- Tavily ------------------------------------------------------------------------------


def tavily_item(title: str, url: str, content: str = "", **extra: Any) -> dict[str, Any]:
    return {"title": title, "url": url, "content": content, "score": 0.9} | extra


def tavily(server: LocalServer, **options: Any) -> TavilySearch:
    return TavilySearch(api_key=KEY, base_url=server.url(""), **options)


async def test_tavily_posts_json_with_a_bearer_key_and_pages_by_slicing(
    server: LocalServer,
) -> None:
    items = [tavily_item(f"T{n}", f"https://t.example/{n}", f"c{n}") for n in range(6)]
    items[4]["published_date"] = "Tue, 02 Apr 2024"  # not ISO: no date shown
    items[5]["published_date"] = "2024-04-02T10:00:00Z"
    server.route("/search", as_json({"query": "q", "results": items, "response_time": 0.4}))
    results = await tavily(server).search(
        "rust actors", count=2, offset=2, country="us", language="en", freshness="year"
    )
    [seen] = server.requests
    assert seen.method == "POST"
    assert urlsplit(seen.path).path == "/search"
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(seen.body) == {
        "query": "rust actors",
        "max_results": 6,
        "search_depth": "basic",
        "topic": "general",
        "time_range": "year",
    }
    assert results == [
        SearchResult(title="T4", url="https://t.example/4", snippet="c4", source="tavily"),
        SearchResult(
            title="T5",
            url="https://t.example/5",
            snippet="c5",
            published="2024-04-02",
            source="tavily",
        ),
    ]


@pytest.mark.parametrize("status", [401, 432, 433])
async def test_tavily_key_and_plan_refusals_are_operator_problems(
    server: LocalServer, status: int
) -> None:
    server.route("/search", as_json({"detail": {"error": "Unauthorized: missing credits"}}, status))
    with pytest.raises(WebSearchKeyRejected) as caught:
        await tavily(server).search("x", count=5)
    assert f"tavily refused the search with HTTP {status}: Unauthorized: missing credits" in str(
        caught.value
    )


async def test_tavily_rate_limits_and_bad_answers(server: LocalServer) -> None:
    server.route("/search", as_json({"detail": {"error": "Too many requests"}}, 429))
    with pytest.raises(WebSearchRateLimited, match="HTTP 429: Too many requests"):
        await tavily(server).search("x", count=5)
    server.route("/search", as_json({"answer": "42"}))
    with pytest.raises(WebSearchBadResponse, match="results is missing"):
        await tavily(server).search("x", count=5)


async def test_a_post_search_is_never_redirected(server: LocalServer) -> None:
    server.route("/search", Reply(307, b"", {"Location": "/elsewhere"}))
    with pytest.raises(WebSearchError, match="redirected a POST search"):
        await tavily(server).search("x", count=5)
    assert len(server.requests) == 1


def test_tavily_hides_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", KEY)
    provider = TavilySearch()
    assert KEY not in repr(provider) and provider.secrets() == (KEY,)
    assert isinstance(provider, SearchProvider)
