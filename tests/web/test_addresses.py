"""Which addresses the guard refuses, and the words it uses."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clawlog.tools.web import address_refusal, parse_ip
from clawlog.tools.web.addresses import BLOCKED_RANGES

REFUSED = [
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("10.1.2.3", "RFC 1918"),
    ("172.16.0.1", "RFC 1918"),
    ("172.31.255.254", "RFC 1918"),
    ("192.168.1.1", "RFC 1918"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.254", "carrier-grade NAT"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("169.254.169.254", "link-local"),
    ("169.254.254.254", "link-local"),
    ("192.0.0.8", "IETF protocol assignments"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("192.88.99.1", "6to4 relay"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("fc00::1", "unique local"),
    ("fd12:3456::1", "unique local"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fec0::1", "site-local"),
    ("ff02::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("100::1", "discard-only"),
    ("64:ff9b:1::1", "local-use NAT64"),
    # IPv6 forms carrying a blocked IPv4 address: judged by the address inside.
    ("::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1, which is loopback"),
    ("::ffff:169.254.169.254", "IPv4-mapped form of 169.254.169.254, which is link-local"),
    ("::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1"),
    ("64:ff9b::7f00:1", "NAT64 form of 127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254"),
    ("2002:7f00:1::", "6to4 form of 127.0.0.1"),
    ("2002:c0a8:101::1", "6to4 form of 192.168.1.1"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo form of 127.0.0.1"),
    ("::7f00:1", "IPv4-compatible form of 127.0.0.1"),
    ("::ffff:0:7f00:1", "IPv4-translated (SIIT) form of 127.0.0.1"),
    ("::ffff:0:a9fe:a9fe", "IPv4-translated (SIIT) form of 169.254.169.254"),
    ("::1:2:3", "reserved (::/8)"),
    ("2001:10::1", "not globally routable"),
    ("::a9fe:a9fe", "IPv4-compatible form of 169.254.169.254"),
]


@pytest.mark.parametrize(("text", "words"), REFUSED)
def test_blocked_addresses_are_refused_with_their_range_named(text: str, words: str) -> None:
    reason = address_refusal(parse_ip(text))
    assert reason is not None
    assert words in reason


@pytest.mark.parametrize(
    "text",
    [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.215.14",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ],
)
def test_public_addresses_pass(text: str) -> None:
    assert address_refusal(parse_ip(text)) is None


def test_the_cloud_metadata_message_says_what_it_is() -> None:
    reason = address_refusal(parse_ip("169.254.169.254"))
    assert reason == (
        "169.254.169.254 is link-local (169.254.0.0/16, where cloud metadata services live)"
    )


@pytest.mark.parametrize("text", ["127.0.0.1", "127.1.2.3", "::1"])
def test_allow_loopback_lets_loopback_through(text: str) -> None:
    assert address_refusal(parse_ip(text), allow_loopback=True) is None


@pytest.mark.parametrize(
    "text",
    [
        "10.0.0.1",
        "169.254.169.254",
        "0.0.0.0",
        "::",
        "::ffff:127.0.0.1",
        "64:ff9b::7f00:1",
        "2002:7f00:1::",
        "fe80::1",
        "fd00::1",
    ],
)
def test_allow_loopback_keeps_every_other_range_and_loopback_disguises_blocked(
    text: str,
) -> None:
    assert address_refusal(parse_ip(text), allow_loopback=True) is not None


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_every_ipv4_address_in_a_named_range_is_refused_and_its_mapped_form_too(
    value: int,
) -> None:
    address = ipaddress.IPv4Address(value)
    in_named_range = any(
        address in network for network, _ in BLOCKED_RANGES if network.version == 4
    )
    verdict = address_refusal(address)
    if in_named_range:
        assert verdict is not None
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    nat64 = ipaddress.IPv6Address((0x64FF9B << 96) | value)
    sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (value << 80))
    translated = ipaddress.IPv6Address((0xFFFF << 48) | value)
    for form in (mapped, nat64, sixtofour, translated):
        assert (address_refusal(form) is None) == (verdict is None), form


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_an_address_python_does_not_call_global_is_refused(value: int) -> None:
    address = ipaddress.IPv4Address(value)
    if not address.is_global:
        assert address_refusal(address) is not None


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_an_ipv6_address_passes_only_if_global_or_carrying_a_public_ipv4_address(
    value: int,
) -> None:
    address = ipaddress.IPv6Address(value)
    if address_refusal(address) is None:
        carried = [
            address.ipv4_mapped,
            address.sixtofour,
            address.teredo[1] if address.teredo else None,
            ipaddress.IPv4Address(value & 0xFFFFFFFF)
            if value >> 32 in (0, 0xFFFF, 0xFFFF << 16)
            else None,
            ipaddress.IPv4Address(value & 0xFFFFFFFF) if value >> 32 == 0x64FF9B << 64 else None,
        ]
        assert address.is_global or any(
            inner is not None and inner.is_global for inner in carried
        ), address
