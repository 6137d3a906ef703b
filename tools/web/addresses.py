"""Which IP addresses a web fetch may never reach, and why.

:func:`address_refusal` returns the reason an address is refused (``None`` when it may be
reached). The table :data:`BLOCKED_RANGES` names every range; IPv6 forms that carry an IPv4
address (IPv4-mapped ``::ffff:0:0/96``, IPv4-compatible ``::/96``, IPv4-translated
``::ffff:0:0:0/96``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``, Teredo ``2001::/32``) are
judged by the IPv4 address inside them, because that is where the packets end up.

Backstop: anything the :mod:`ipaddress` module does not call global is refused too ("not
globally routable"), so a range this table forgets is still blocked. The table exists for
the messages, and because Python 3.11's ``is_global`` calls the 6to4, NAT64, SIIT and
IPv4-compatible forms of 127.0.0.1 global.

``allow_loopback`` lets 127.0.0.0/8 and ::1 through, exactly those: their mapped, NAT64 and
6to4 forms stay refused, as does every other range.
"""

from __future__ import annotations

import ipaddress
from typing import Final

__all__ = ["BLOCKED_RANGES", "IPAddress", "address_refusal", "parse_ip"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

LOOPBACK_V4: Final = _V4("127.0.0.0/8")
LOOPBACK_V6: Final = ipaddress.IPv6Address("::1")

BLOCKED_RANGES: Final[tuple[tuple[_V4 | _V6, str], ...]] = (
    (_V4("0.0.0.0/8"), "unspecified ('this network', 0.0.0.0/8)"),
    (_V4("10.0.0.0/8"), "private (RFC 1918, 10.0.0.0/8)"),
    (_V4("100.64.0.0/10"), "carrier-grade NAT shared space (RFC 6598, 100.64.0.0/10)"),
    (LOOPBACK_V4, "loopback (127.0.0.0/8)"),
    (_V4("169.254.0.0/16"), "link-local (169.254.0.0/16, where cloud metadata services live)"),
    (_V4("172.16.0.0/12"), "private (RFC 1918, 172.16.0.0/12)"),
    (_V4("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"),
    (_V4("192.0.2.0/24"), "documentation (TEST-NET-1, 192.0.2.0/24)"),
    (_V4("192.88.99.0/24"), "6to4 relay anycast (192.88.99.0/24)"),
    (_V4("192.168.0.0/16"), "private (RFC 1918, 192.168.0.0/16)"),
    (_V4("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"),
    (_V4("198.51.100.0/24"), "documentation (TEST-NET-2, 198.51.100.0/24)"),
    (_V4("203.0.113.0/24"), "documentation (TEST-NET-3, 203.0.113.0/24)"),
    (_V4("224.0.0.0/4"), "multicast (224.0.0.0/4)"),
    (_V4("255.255.255.255/32"), "broadcast (255.255.255.255)"),
    (_V4("240.0.0.0/4"), "reserved (240.0.0.0/4)"),
    (_V6("::/128"), "unspecified (::)"),
    (_V6("::1/128"), "loopback (::1)"),
    (_V6("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"),
    (_V6("100::/64"), "discard-only (100::/64)"),
    (_V6("2001:2::/48"), "benchmarking (2001:2::/48)"),
    (_V6("2001:db8::/32"), "documentation (2001:db8::/32)"),
    (_V6("3fff::/20"), "documentation (3fff::/20)"),
    (_V6("5f00::/16"), "segment routing (SRv6 SIDs, 5f00::/16)"),
    (_V6("fc00::/7"), "unique local (ULA, fc00::/7)"),
    (_V6("fe80::/10"), "link-local (fe80::/10)"),
    (_V6("fec0::/10"), "site-local (fec0::/10)"),
    (_V6("ff00::/8"), "multicast (ff00::/8)"),
    (_V6("::/8"), "reserved (::/8)"),  # after the narrower ranges inside it (64:ff9b:1::/48)
)
"""Every named blocked range with the words a refusal uses; the order only matters for
overlapping ranges (the first match names the refusal)."""

_IPV4_COMPATIBLE: Final = _V6("::/96")
_IPV4_TRANSLATED: Final = _V6("::ffff:0:0:0/96")
_NAT64: Final = _V6("64:ff9b::/96")


def parse_ip(text: str) -> IPAddress:
    """An IP address from a resolver answer or a URL literal; an IPv6 zone id (``%eth0``)
    is dropped, since the zone does not change which range an address is in."""
    address, _, _zone = text.partition("%")
    return ipaddress.ip_address(address)


def address_refusal(address: IPAddress, *, allow_loopback: bool = False) -> str | None:
    """Why ``address`` may not be fetched from (``"169.254.169.254 is link-local (...)"``),
    or ``None`` when it may."""
    if allow_loopback and (address in LOOPBACK_V4 or address == LOOPBACK_V6):
        return None
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        form, inner = embedded
        inner_range = _blocked_range(inner)
        if inner_range is not None:
            return f"{address} is the {form} form of {inner}, which is {inner_range}"
        return None  # the packets go to (or through a relay to) a public IPv4 address
    own_range = _blocked_range(address)
    if own_range is not None:
        return f"{address} is {own_range}"
    return None


def _blocked_range(address: IPAddress) -> str | None:
    """The name of the blocked range holding ``address``, if any (the backstop aside)."""
    for network, name in BLOCKED_RANGES:
        if address.version == network.version and address in network:
            return name
    if not address.is_global:
        return "not globally routable (a special-purpose range)"
    return None


def _embedded_ipv4(address: IPAddress) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address an IPv6 address carries, and the name of the form carrying it."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return "IPv4-mapped", address.ipv4_mapped
    if address in _NAT64:
        return "NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _IPV4_TRANSLATED:
        return "IPv4-translated (SIIT)", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return "6to4", address.sixtofour
    if address.teredo is not None:
        return "Teredo", address.teredo[1]
    if address in _IPV4_COMPATIBLE and int(address) > 1:
        return "IPv4-compatible", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None
