"""The Fetcher against real local servers: refusals happen before any connection, the
connection goes to the checked address, redirects are re-checked, limits hold."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl

import httpcore
import pytest

from clawlog.tools.errors import (
    FetcherClosed,
    InvalidUrl,
    WebRequestFailed,
    WebRequestInvalid,
    WebRequestRefused,
    WebRequestTimedOut,
)
from clawlog.tools.web import Fetcher, WebPolicy, system_resolver
from clawlog.tools.web.transport import PinnedNetworkBackend

from .conftest import LocalServer, Reply, ScriptedResolver, Seen, fullwidth

LOOPBACK = WebPolicy(allow_loopback=True)


async def test_a_page_is_fetched_from_the_loopback_server_when_loopback_is_allowed(
    server: LocalServer,
) -> None:
    server.route("/hello", Reply(200, b"hello", {"Content-Type": "text/plain", "X-Two": "a"}))
    async with Fetcher(LOOPBACK) as fetcher:
        page = await fetcher.fetch(server.url("/hello"))
    assert page.status == 200
    assert page.content == b"hello"
    assert not page.truncated
    assert page.headers["content-type"] == "text/plain"
    assert page.headers["x-two"] == "a"
    assert page.address == "127.0.0.1"
    assert page.url == server.url("/hello")
    assert page.redirects == []
    assert page.elapsed_ms > 0
    assert server.connections == 1
    assert server.requests[0].headers["host"] == f"127.0.0.1:{server.port}"
    assert server.requests[0].headers["accept-encoding"] == "identity"


SPELLINGS_OF_THE_SERVER = [
    "127.0.0.1",
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "0x7f.1",
    "127.1",
    "127.0.0.1.",
    "%31%32%37.0.0.1",
    fullwidth("127.0.0.1"),
]


@pytest.mark.parametrize("spelling", SPELLINGS_OF_THE_SERVER)
async def test_every_spelling_of_loopback_is_refused_before_any_connection(
    server: LocalServer, spelling: str
) -> None:
    server.route("/", Reply(200, b"secret"))
    async with Fetcher(WebPolicy()) as fetcher:
        with pytest.raises(WebRequestRefused, match=r"127\.0\.0\.1 is loopback.*refused"):
            await fetcher.fetch(f"http://{spelling}:{server.port}/")
    assert server.connections == 0


@pytest.mark.parametrize("spelling", SPELLINGS_OF_THE_SERVER)
async def test_every_spelling_reaches_the_server_when_loopback_is_allowed(
    server: LocalServer, spelling: str
) -> None:
    server.route("/", Reply(200, b"ok"))
    async with Fetcher(LOOPBACK) as fetcher:
        page = await fetcher.fetch(f"http://{spelling}:{server.port}/")
    assert (page.content, page.address, server.connections) == (b"ok", "127.0.0.1", 1)


@pytest.mark.parametrize(
    "host",
    [
        "10.0.0.1",
        "172.16.5.4",
        "192.168.0.1",
        "100.64.0.1",
        "169.254.169.254",
        "169.254.254.254",
        "0.0.0.0",
        "0",
        "255.255.255.255",
        "224.0.0.1",
        "240.0.0.1",
        "198.18.0.1",
        "192.0.2.1",
        "[::]",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::ffff:169.254.169.254]",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::]",
        "[fd00::1]",
        "[fe80::1%25lo]",
        "[fec0::1]",
        "[ff02::1]",
        "[::7f00:1]",
    ],
)
async def test_blocked_literals_are_refused_even_with_loopback_allowed_before_any_connection(
    server: LocalServer, host: str
) -> None:
    async with Fetcher(LOOPBACK if host not in ("[::1]",) else WebPolicy()) as fetcher:
        with pytest.raises(WebRequestRefused, match="refused"):
            await fetcher.fetch(f"http://{host}:{server.port}/")
    assert server.connections == 0


@pytest.mark.parametrize(
    "answers",
    [
        ["10.0.0.1"],
        ["169.254.169.254"],
        ["::ffff:10.0.0.1"],
        ["fd00::5"],
        ["8.8.8.8", "10.0.0.1"],
        ["127.0.0.1", "169.254.169.254"],
    ],
)
async def test_a_name_is_refused_when_any_address_it_resolves_to_is_blocked(
    server: LocalServer, resolver: ScriptedResolver, answers: list[str]
) -> None:
    resolver.answer("internal.example", answers)
    async with Fetcher(LOOPBACK, resolver=resolver) as fetcher:
        with pytest.raises(WebRequestRefused, match=r"internal\.example resolves to a blocked"):
            await fetcher.fetch(f"http://internal.example:{server.port}/")
    assert server.connections == 0


async def test_the_connection_goes_to_the_checked_address_not_a_later_dns_answer(
    server: LocalServer, resolver: ScriptedResolver
) -> None:
    # Rebinding: the first answer (checked, allowed) is 127.0.0.1; every later answer is a
    # blocked address. The fetch must connect where the check said, without asking again.
    resolver.answer("rebind.example", ["127.0.0.1"], ["10.0.0.1"])
    server.route("/", Reply(200, b"checked"))
    async with Fetcher(LOOPBACK, resolver=resolver) as fetcher:
        page = await fetcher.fetch(f"http://rebind.example:{server.port}/")
    assert (page.content, page.address) == (b"checked", "127.0.0.1")
    assert resolver.questions == [("rebind.example", server.port)]
    assert server.connections == 1
    assert server.requests[0].headers["host"] == f"rebind.example:{server.port}"


async def test_a_redirect_hop_is_resolved_and_checked_again(
    server: LocalServer, resolver: ScriptedResolver
) -> None:
    resolver.answer("rebind.example", ["127.0.0.1"], ["10.0.0.1"])
    server.route("/a", Reply(302, headers={"Location": "/b"}))
    server.route("/b", Reply(200, b"private"))
    async with Fetcher(LOOPBACK, resolver=resolver) as fetcher:
        with pytest.raises(WebRequestRefused, match=r"10\.0\.0\.1 is private"):
            await fetcher.fetch(f"http://rebind.example:{server.port}/a")
    assert [seen.path for seen in server.requests] == ["/a"]


@pytest.mark.parametrize(
    ("location", "words"),
    [
        ("http://internal.example:{port}/", r"10\.9\.8\.7 is private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[::ffff:a9fe:a9fe]/", "IPv4-mapped form of 169.254.169.254"),
        ("http://0xa9fea9fe/", "link-local"),
        ("file:///etc/passwd", "scheme 'file' is refused"),
        ("gopher://127.0.0.1:{port}/", "scheme 'gopher' is refused"),
        ("http://user:pw@127.0.0.1:{port}/", "credentials"),
    ],
)
async def test_a_redirect_to_a_blocked_target_is_refused(
    server: LocalServer, resolver: ScriptedResolver, location: str, words: str
) -> None:
    resolver.answer("internal.example", ["10.9.8.7"])
    server.route("/go", Reply(302, headers={"Location": location.format(port=server.port)}))
    async with Fetcher(LOOPBACK, resolver=resolver) as fetcher:
        with pytest.raises(WebRequestRefused, match=words) as refused:
            await fetcher.fetch(server.url("/go"))
    assert "redirected to" in str(refused.value)
    assert server.connections == 1
    assert [seen.path for seen in server.requests] == ["/go"]


async def test_redirects_are_followed_and_listed(server: LocalServer) -> None:
    server.route("/one", Reply(301, headers={"Location": "/two?x=1"}))
    server.route("/two", Reply(302, headers={"Location": server.url("/three")}))
    server.route("/three", Reply(200, b"done"))
    async with Fetcher(LOOPBACK) as fetcher:
        page = await fetcher.fetch(server.url("/one"))
    assert page.content == b"done"
    assert page.url == server.url("/three")
    assert page.redirects == [server.url("/two?x=1"), server.url("/three")]


async def test_more_redirects_than_the_limit_fail(server: LocalServer) -> None:
    server.route("/loop", Reply(302, headers={"Location": "/loop"}))
    async with Fetcher(WebPolicy(allow_loopback=True, max_redirects=3)) as fetcher:
        with pytest.raises(WebRequestFailed, match="redirected more than 3 times"):
            await fetcher.fetch(server.url("/loop"))
    assert len(server.requests) == 4


async def test_a_redirect_is_returned_as_is_when_not_followed(server: LocalServer) -> None:
    server.route("/go", Reply(302, b"moved", {"Location": "/elsewhere"}))
    async with Fetcher(LOOPBACK) as fetcher:
        page = await fetcher.fetch(server.url("/go"), follow_redirects=False)
    assert (page.status, page.headers["location"], page.redirects) == (302, "/elsewhere", [])
    assert len(server.requests) == 1


async def test_303_turns_a_post_into_a_get_and_307_repeats_it(server: LocalServer) -> None:
    server.route("/see-other", Reply(303, headers={"Location": "/result"}))
    server.route("/temporary", Reply(307, headers={"Location": "/result"}))
    server.route("/result", Reply(200, b"ok"))
    async with Fetcher(LOOPBACK) as fetcher:
        await fetcher.fetch(
            server.url("/see-other"),
            method="POST",
            body=b"a=1",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        await fetcher.fetch(server.url("/temporary"), method="post", body=b"b=2")
    methods = [(seen.method, seen.path, seen.body) for seen in server.requests]
    assert methods == [
        ("POST", "/see-other", b"a=1"),
        ("GET", "/result", b""),
        ("POST", "/temporary", b"b=2"),
        ("POST", "/result", b"b=2"),
    ]
    assert "content-type" not in server.requests[1].headers


async def test_credentials_are_not_carried_to_another_origin(
    server: LocalServer, resolver: ScriptedResolver
) -> None:
    resolver.answer("a.example", ["127.0.0.1"])
    resolver.answer("b.example", ["127.0.0.1"])
    server.route("/same", Reply(302, headers={"Location": "/cross"}))
    server.route("/cross", Reply(302, headers={"Location": f"http://b.example:{server.port}/end"}))
    server.route("/end", Reply(200, b"end"))
    async with Fetcher(LOOPBACK, resolver=resolver) as fetcher:
        await fetcher.fetch(
            f"http://a.example:{server.port}/same",
            headers={"Authorization": "Bearer t0ken", "Cookie": "s=1", "X-Keep": "yes"},
        )
    seen = {s.path: s.headers for s in server.requests}
    assert seen["/cross"]["authorization"] == "Bearer t0ken"
    assert "authorization" not in seen["/end"]
    assert "cookie" not in seen["/end"]
    assert seen["/end"]["x-keep"] == "yes"
    assert seen["/end"]["host"] == f"b.example:{server.port}"


async def test_the_body_is_cut_at_max_bytes(server: LocalServer) -> None:
    server.route("/big", Reply(200, b"x" * 100_000))
    server.route("/exact", Reply(200, b"y" * 1000))
    async with Fetcher(WebPolicy(allow_loopback=True, max_bytes=1000)) as fetcher:
        big = await fetcher.fetch(server.url("/big"))
        exact = await fetcher.fetch(server.url("/exact"))
    assert (len(big.content), big.truncated) == (1000, True)
    assert (exact.content, exact.truncated) == (b"y" * 1000, False)


async def test_a_stalled_server_hits_the_time_limit(server: LocalServer) -> None:
    server.route("/stall", Reply(200, b"partial", stall=True))
    async with Fetcher(WebPolicy(allow_loopback=True, timeout_s=1.0)) as fetcher:
        with pytest.raises(WebRequestTimedOut, match=r"did not finish within 1 s"):
            await fetcher.fetch(server.url("/stall"))
    assert server.connections == 1


async def test_the_time_limit_covers_name_resolution() -> None:
    never = asyncio.Event()

    async def hanging_resolver(host: str, port: int) -> list[str]:
        await never.wait()
        return []

    async with Fetcher(WebPolicy(timeout_s=0.2), resolver=hanging_resolver) as fetcher:
        with pytest.raises(WebRequestTimedOut, match="redirects included"):
            await fetcher.fetch("https://slow-dns.example/")


async def test_an_unknown_name_fails_with_a_message(resolver: ScriptedResolver) -> None:
    async with Fetcher(resolver=resolver) as fetcher:
        with pytest.raises(WebRequestFailed, match=r"nowhere\.example could not be resolved"):
            await fetcher.fetch("https://nowhere.example/")


async def test_a_closed_port_fails_with_a_message() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with Fetcher(LOOPBACK) as fetcher:
        with pytest.raises(WebRequestFailed, match="could not connect"):
            await fetcher.fetch(f"http://127.0.0.1:{port}/")


async def test_an_idn_host_is_resolved_and_sent_as_punycode(
    server: LocalServer, resolver: ScriptedResolver
) -> None:
    resolver.answer("xn--bcher-kva.example", ["127.0.0.1"])
    server.route("/", Reply(200, b"books"))
    async with Fetcher(LOOPBACK, resolver=resolver) as fetcher:
        page = await fetcher.fetch(f"http://Bücher.example:{server.port}/")
    assert page.content == b"books"
    assert resolver.questions == [("xn--bcher-kva.example", server.port)]
    assert server.requests[0].headers["host"] == f"xn--bcher-kva.example:{server.port}"


async def test_host_lists_apply_to_every_hop(
    server: LocalServer, resolver: ScriptedResolver
) -> None:
    resolver.answer("docs.example", ["127.0.0.1"])
    resolver.answer("other.example", ["127.0.0.1"])
    server.route("/", Reply(302, headers={"Location": f"http://other.example:{server.port}/"}))
    policy = WebPolicy(allow_loopback=True, allow_hosts=("docs.example",))
    async with Fetcher(policy, resolver=resolver) as fetcher:
        with pytest.raises(WebRequestRefused, match=r"other\.example is not on the allow list"):
            await fetcher.fetch(f"http://docs.example:{server.port}/")
        with pytest.raises(WebRequestRefused, match="not on the allow list"):
            await fetcher.fetch(f"http://other.example:{server.port}/")
    assert server.connections == 1


async def test_the_deny_list_refuses_before_resolving(resolver: ScriptedResolver) -> None:
    policy = WebPolicy(deny_hosts=("*.corp.example",))
    async with Fetcher(policy, resolver=resolver) as fetcher:
        with pytest.raises(WebRequestRefused, match=r"deny list \(\*\.corp\.example\)"):
            await fetcher.fetch("https://wiki.corp.example/")
    assert resolver.questions == []


async def test_https_is_verified_against_the_url_host_while_connecting_to_the_pinned_address(
    tls_server: tuple[LocalServer, ssl.SSLContext], resolver: ScriptedResolver
) -> None:
    server, trust = tls_server
    server.route("/", Reply(200, b"secure"))
    resolver.answer("secure.test", ["127.0.0.1"])
    resolver.answer("impostor.test", ["127.0.0.1"])
    async with Fetcher(LOOPBACK, resolver=resolver, ssl_context=trust) as fetcher:
        page = await fetcher.fetch(f"https://secure.test:{server.port}/")
        assert (page.content, page.address) == (b"secure", "127.0.0.1")
        with pytest.raises(WebRequestFailed, match=r"TLS handshake.*not valid for 'impostor"):
            await fetcher.fetch(f"https://impostor.test:{server.port}/")
    assert server.requests[0].headers["host"] == f"secure.test:{server.port}"


async def test_a_redirect_from_https_down_to_http_is_refused(
    tls_server: tuple[LocalServer, ssl.SSLContext], resolver: ScriptedResolver
) -> None:
    server, trust = tls_server
    server.route("/", Reply(302, headers={"Location": "http://secure.test/"}))
    resolver.answer("secure.test", ["127.0.0.1"])
    async with Fetcher(LOOPBACK, resolver=resolver, ssl_context=trust) as fetcher:
        with pytest.raises(WebRequestRefused, match="from https down to http"):
            await fetcher.fetch(f"https://secure.test:{server.port}/")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"method": "GE T"}, "method"),
        ({"method": "CONNECT"}, "method"),
        ({"headers": {"X-Bad": "a\r\nInjected: 1"}}, "cannot be sent"),
        ({"headers": {"Bad Name": "a"}}, "cannot be sent"),
        ({"headers": {"Host": "metadata.google.internal"}}, "set by the fetcher"),
        ({"headers": {"Transfer-Encoding": "chunked"}}, "set by the fetcher"),
    ],
)
async def test_a_request_that_cannot_be_sent_is_invalid_before_any_connection(
    server: LocalServer, kwargs: dict[str, object], words: str
) -> None:
    async with Fetcher(LOOPBACK) as fetcher:
        with pytest.raises(WebRequestInvalid, match=words):
            await fetcher.fetch(server.url("/"), **kwargs)  # type: ignore[arg-type]
    assert server.connections == 0


async def test_an_invalid_url_is_invalid_parameters() -> None:
    async with Fetcher() as fetcher:
        with pytest.raises(InvalidUrl, match="no scheme"):
            await fetcher.fetch("example.com")


async def test_a_closed_fetcher_refuses_to_fetch_and_closes_twice(server: LocalServer) -> None:
    fetcher = Fetcher(LOOPBACK)
    await fetcher.aclose()
    await fetcher.aclose()
    with pytest.raises(FetcherClosed, match="closed"):
        await fetcher.fetch(server.url("/"))


async def test_concurrent_fetches_each_get_their_own_answer(
    server: LocalServer, resolver: ScriptedResolver
) -> None:
    for index in range(5):
        server.route(f"/{index}", (lambda i: lambda _seen: Reply(200, str(i).encode()))(index))
    async with Fetcher(LOOPBACK, resolver=resolver) as fetcher, asyncio.TaskGroup() as group:
        tasks = [group.create_task(fetcher.fetch(server.url(f"/{i}"))) for i in range(5)]
    assert [task.result().content for task in tasks] == [str(i).encode() for i in range(5)]


def _echo(seen: Seen) -> Reply:
    return Reply(200, seen.body)


async def test_a_put_body_reaches_the_server(server: LocalServer) -> None:
    server.route("/echo", _echo)
    async with Fetcher(LOOPBACK) as fetcher:
        page = await fetcher.fetch(server.url("/echo"), method="PUT", body=b'{"a": 1}')
    assert page.content == b'{"a": 1}'


async def test_an_ipv6_literal_and_a_name_resolving_to_ipv6_reach_the_pinned_address(
    server6: LocalServer, resolver: ScriptedResolver
) -> None:
    server6.route("/", Reply(200, b"six"))
    resolver.answer("six.example", ["::1"])
    async with Fetcher(LOOPBACK, resolver=resolver) as fetcher:
        literal = await fetcher.fetch(server6.url("/"))
        named = await fetcher.fetch(f"http://six.example:{server6.port}/")
    assert (literal.content, literal.address) == (b"six", "::1")
    assert (named.content, named.address) == (b"six", "::1")
    assert server6.requests[0].headers["host"] == f"[::1]:{server6.port}"
    async with Fetcher(WebPolicy()) as fetcher:
        with pytest.raises(WebRequestRefused, match="::1 is loopback"):
            await fetcher.fetch(server6.url("/"))
    assert server6.connections == 2


async def test_the_pinned_backend_connects_nowhere_without_a_checked_address(
    server: LocalServer,
) -> None:
    backend = PinnedNetworkBackend()
    with pytest.raises(httpcore.ConnectError, match="no checked address"):
        await backend.connect_tcp("127.0.0.1", server.port)
    backend.pin("name.example", server.port, [ipaddress.IPv4Address("127.0.0.1")])
    stream = await backend.connect_tcp("name.example", server.port)
    await stream.write(b"GET /pinned HTTP/1.1\r\nHost: name.example\r\nConnection: close\r\n\r\n")
    answer = await stream.read(1024)
    await stream.aclose()
    assert answer.startswith(b"HTTP/1.")
    assert [seen.path for seen in server.requests] == ["/pinned"]


async def test_the_checked_addresses_are_tried_in_order_until_one_answers(
    server: LocalServer, resolver: ScriptedResolver
) -> None:
    # Nothing listens on 127.0.0.2 (the server is bound to 127.0.0.1 only): refused, next.
    resolver.answer("two.example", ["127.0.0.2", "127.0.0.1"])
    server.route("/", Reply(200, b"second"))
    async with Fetcher(LOOPBACK, resolver=resolver) as fetcher:
        page = await fetcher.fetch(f"http://two.example:{server.port}/")
    assert (page.content, page.address) == (b"second", "127.0.0.1")
    assert resolver.questions == [("two.example", server.port)]


async def test_the_system_resolver_reaches_localhost_when_loopback_is_allowed(
    server: LocalServer,
) -> None:
    server.route("/", Reply(200, b"local"))
    async with Fetcher(LOOPBACK) as fetcher:
        page = await fetcher.fetch(f"http://localhost:{server.port}/")
    assert (page.content, page.address) == (b"local", "127.0.0.1")
    assert await system_resolver("127.0.0.1", 80) == ["127.0.0.1"]


async def test_an_unreadable_location_is_the_servers_failure(server: LocalServer) -> None:
    server.route("/bad", Reply(302, headers={"Location": "http://exa mple.com/"}))
    async with Fetcher(LOOPBACK) as fetcher:
        with pytest.raises(WebRequestFailed, match="which cannot be read"):
            await fetcher.fetch(server.url("/bad"))
