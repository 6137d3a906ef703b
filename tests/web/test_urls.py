"""URL parsing and normalization, and check_url: the guard's pure part (no DNS, no I/O)."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clawlog.tools.errors import InvalidUrl, PolicyError, WebRequestRefused
from clawlog.tools.web import WebPolicy, check_url, host_matches, parse_url
from clawlog.tools.web.urls import parse_ipv4_host, resolve_location

from .conftest import fullwidth

LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "2130706433",
    "0x7f000001",
    "0X7F000001",
    "017700000001",
    "0177.0.0.1",
    "0177.0000.0000.0001",
    "0x7f.0.0.1",
    "0x7f.0x0.0x0.0x1",
    "0x7f.1",
    "127.1",
    "127.0.1",
    "127.0.0.1.",
    "127.1.",
    "%31%32%37.0.0.1",
    fullwidth("127.0.0.1"),
    "127\u30020\u30020\u30021",  # ideographic full stops
]


@pytest.mark.parametrize("spelling", LOOPBACK_SPELLINGS)
def test_every_ipv4_spelling_of_loopback_normalizes_to_127_0_0_1(spelling: str) -> None:
    target = parse_url(f"http://{spelling}:8080/path")
    assert target.literal == ipaddress.IPv4Address("127.0.0.1")
    assert target.url == "http://127.0.0.1:8080/path"


@pytest.mark.parametrize("spelling", LOOPBACK_SPELLINGS)
def test_every_spelling_of_loopback_is_refused_by_the_default_policy(spelling: str) -> None:
    with pytest.raises(WebRequestRefused, match=r"127\.0\.0\.1 is loopback"):
        check_url(f"http://{spelling}/", WebPolicy())


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("HTTP://Example.COM/a?b=c#frag", "http://example.com/a?b=c"),
        ("https://example.com:443/", "https://example.com/"),
        ("http://example.com:80", "http://example.com/"),
        ("http://example.com.:8080/x", "http://example.com:8080/x"),
        ("https://bücher.example/", "https://xn--bcher-kva.example/"),
        ("https://BÜCHER.example/", "https://xn--bcher-kva.example/"),
        ("https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"),
        ("http://example.com/é?q=ü", "http://example.com/%C3%A9?q=%C3%BC"),
        ("http://[::1]:8080/", "http://[::1]:8080/"),
        ("http://[0:0:0:0:0:ffff:7f00:1]/", "http://[::ffff:7f00:1]/"),
        ("http://[fe80::1%25eth0]/", "http://[fe80::1]/"),
        ("http://a_b.example.com/", "http://a_b.example.com/"),
    ],
)
def test_urls_are_normalized(url: str, normalized: str) -> None:
    assert parse_url(url).url == normalized


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("", "empty"),
        ("example.com/path", "no scheme"),
        ("http:example.com", "no host"),
        ("http:///path", "no host"),
        ("http://exa mple.com/", "space"),
        ("http://example.com\\@127.0.0.1/", "backslash"),
        ("http://example.com/\nHost: evil", "control character"),
        ("http://1.2.3.4.5/", "more than four"),
        ("http://256.0.0.1/", "above 255"),
        ("http://1.2.3.256/", "too large"),
        ("http://0x7g.1/", "not a decimal, octal or hex"),
        ("http://08.0.0.1/", "not a decimal, octal or hex"),
        ("http://example.com:99999/", "port"),
        ("http://example.com:http/", "port"),
        ("http://[::1/", "closed"),
        ("http://[127.0.0.1]/", "brackets are for IPv6"),
        ("http://[::g]/", "not a valid IPv6"),
        ("http://exa$mple.com/", "not a valid domain name"),
        ("http://" + "a" * 64 + ".com/", "not a valid domain name"),
    ],
)
def test_unreadable_urls_are_invalid_with_a_reason(url: str, words: str) -> None:
    with pytest.raises(InvalidUrl, match=words):
        parse_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "ftp://example.com/",
        "javascript:alert(1)",
    ],
)
def test_other_schemes_are_refused(url: str) -> None:
    with pytest.raises(WebRequestRefused, match="only http and https"):
        parse_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://user:pass@example.com/",
        "http://example.com@127.0.0.1/",
        "http://@example.com/",
        "http://user@[::1]/",
    ],
)
def test_userinfo_is_refused_saying_why(url: str) -> None:
    with pytest.raises(WebRequestRefused, match=r"credentials \(user@host\).*hides"):
        parse_url(url)


def test_a_policy_with_https_only_refuses_http() -> None:
    with pytest.raises(WebRequestRefused, match="only https"):
        check_url("http://example.com/", WebPolicy(schemes=("https",)))
    assert check_url("https://example.com/", WebPolicy(schemes=("https",))).scheme == "https"


def test_the_deny_list_wins_over_the_allow_list() -> None:
    policy = WebPolicy(allow_hosts=("*.example.com",), deny_hosts=("secret.example.com",))
    assert check_url("https://docs.example.com/", policy).host == "docs.example.com"
    with pytest.raises(WebRequestRefused, match=r"deny list \(secret\.example\.com\)"):
        check_url("https://SECRET.example.com./x", policy)


def test_the_allow_list_refuses_other_hosts_and_the_bare_domain_of_a_wildcard() -> None:
    policy = WebPolicy(allow_hosts=("*.example.com", "example.org"))
    with pytest.raises(WebRequestRefused, match="not on the allow list"):
        check_url("https://example.com/", policy)
    with pytest.raises(WebRequestRefused, match="not on the allow list"):
        check_url("https://evil-example.com/", policy)
    with pytest.raises(WebRequestRefused, match="not on the allow list"):
        check_url("https://example.org.evil.net/", policy)
    assert check_url("https://a.b.example.com/", policy).host == "a.b.example.com"
    assert check_url("https://EXAMPLE.org/", policy).host == "example.org"


def test_host_patterns_are_normalized_like_hosts() -> None:
    assert host_matches("*.Bücher.example", "www.xn--bcher-kva.example")
    assert host_matches("2130706433", "127.0.0.1")
    assert not host_matches("*.example.com", "example.com")


@pytest.mark.parametrize(
    "pattern", ["https://example.com", "example.com:443", "*.*.example.com", "a/b"]
)
def test_a_host_pattern_that_is_not_a_host_is_a_policy_error(pattern: str) -> None:
    with pytest.raises(PolicyError, match="bare host name"):
        WebPolicy(allow_hosts=(pattern,))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"schemes": ("ftp",)},
        {"schemes": ()},
        {"max_bytes": 0},
        {"timeout_s": 0},
        {"max_redirects": -1},
    ],
)
def test_an_unusable_policy_is_a_policy_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(PolicyError):
        WebPolicy(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST.", "api.localhost"])
def test_localhost_names_are_refused_without_dns_unless_loopback_is_allowed(host: str) -> None:
    with pytest.raises(WebRequestRefused, match="names this machine"):
        check_url(f"http://{host}/", WebPolicy())
    assert check_url(f"http://{host}/", WebPolicy(allow_loopback=True)).literal is None


def test_a_relative_redirect_resolves_against_the_current_url() -> None:
    base = parse_url("https://example.com/a/b?x=1")
    assert resolve_location(base, "../c").url == "https://example.com/c"
    assert resolve_location(base, "//other.example/d").url == "https://other.example/d"
    assert resolve_location(base, "http://0x7f.1/").url == "http://127.0.0.1/"


# --- the same address, spelled every way: same normalization, same verdict ------------------


def _spellings(value: int) -> list[str]:
    octets = [(value >> shift) & 0xFF for shift in (24, 16, 8, 0)]
    a, b, c, d = octets
    return [
        ".".join(str(o) for o in octets),
        str(value),
        hex(value),
        "0" + oct(value)[2:],
        ".".join("0" + oct(o)[2:] for o in octets),
        ".".join(hex(o) for o in octets),
        f"{hex(a)}.{b}.0{oct(c)[2:]}.{d}",
        f"{a}.{(b << 16) | (c << 8) | d}",
        f"{a}.{b}.{(c << 8) | d}",
        f"{hex(a)}.{hex((b << 16) | (c << 8) | d)}",
        ".".join(str(o) for o in octets) + ".",
        "".join(f"%{ord(ch):02X}" for ch in ".".join(str(o) for o in octets)),
        fullwidth(".".join(str(o) for o in octets)),
    ]


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1), st.booleans())
def test_every_spelling_of_an_ipv4_address_gets_the_same_verdict(
    value: int, allow_loopback: bool
) -> None:
    expected = ipaddress.IPv4Address(value)
    policy = WebPolicy(allow_loopback=allow_loopback)
    verdicts: set[str] = set()
    for spelling in _spellings(value):
        target = parse_url(f"http://{spelling}/")
        assert target.literal == expected, spelling
        try:
            verdicts.add(check_url(f"http://{spelling}/", policy).url)
        except WebRequestRefused as exc:
            verdicts.add(str(exc))
    assert len(verdicts) == 1, verdicts


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_ipv4_parsing_agrees_with_the_c_library(value: int) -> None:
    for spelling in _spellings(value)[:10]:
        libc = ipaddress.IPv4Address(socket.inet_aton(spelling))
        assert parse_ipv4_host(spelling) == libc, spelling
