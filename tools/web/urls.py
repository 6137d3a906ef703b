"""Parsing and normalizing the URLs a web tool is asked to fetch.

Hosts are read the way browsers read them (the WHATWG URL standard's host parser), so the
guard judges the address a browser or a libc resolver would reach, whatever the spelling:
percent-encoded hosts are decoded, Unicode is mapped (UTS #46: full-width digits, case) and
IDN labels become punycode, and a host whose last label is a number is an IPv4 address in any
of the forms ``inet_aton`` accepts -- decimal ``2130706433``, octal ``0177.0.0.1``, hex
``0x7f.1``, short ``127.1``, one trailing dot. IPv6 literals may carry a zone id
(``[fe80::1%25eth0]``).

What is refused and why:

- schemes other than http and https (``file:``, ``gopher:``, ``ftp:`` ... reach things a web
  fetch must not);
- userinfo (``https://user:pass@host/``): ``trusted.example@evil.example`` is the classic way
  to disguise the real host, and credentials in a URL end up in logs and events; a credential
  belongs in a header;
- control characters, spaces and backslashes (read differently by different parsers).

The request is built from the :class:`ParsedTarget`, never from the original string, so what
was checked is what is fetched.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from typing import Final

import idna
import msgspec

from ..errors import InvalidUrl, WebRequestRefused
from .addresses import IPAddress, parse_ip

__all__ = ["DEFAULT_PORTS", "ParsedTarget", "parse_ipv4_host", "parse_url", "resolve_location"]

DEFAULT_PORTS: Final = {"http": 80, "https": 443}

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f\\]")
_HOST_NAME = re.compile(r"^[a-z0-9_\-]+(\.[a-z0-9_\-]+)*$")
_PATH_SAFE: Final = "/%:@!$&'()*+,;=-._~"
_QUERY_SAFE: Final = _PATH_SAFE + "?"


class ParsedTarget(msgspec.Struct, frozen=True, kw_only=True):
    """A URL after parsing and normalization: what the fetcher requests."""

    scheme: str
    """``http`` or ``https``."""
    host: str
    """Lower case, IDN as punycode, no trailing dot; an IP literal in canonical form
    (IPv6 without brackets or zone id)."""
    port: int
    literal: IPAddress | None
    """The address when the host is an IP literal (in any spelling), else ``None``."""
    target: str
    """Path and query, percent-encoded (``/`` at least); the fragment is dropped."""

    @property
    def authority(self) -> str:
        """``host[:port]`` as it goes in the URL and the Host header (port only if not the
        scheme's default; IPv6 in brackets)."""
        host = (
            f"[{self.host}]"
            if self.literal is not None and self.literal.version == 6
            else self.host
        )
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """The normalized URL."""
        return f"{self.scheme}://{self.authority}{self.target}"

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


def parse_url(url: str) -> ParsedTarget:
    """Parse and normalize ``url``.

    Raises :class:`~tools.errors.InvalidUrl` when it cannot be read and
    :class:`~tools.errors.WebRequestRefused` for a scheme other than http(s) or userinfo.
    """
    text = url.strip()
    if not text:
        raise InvalidUrl(
            "the URL is empty: give an absolute http(s) URL such as https://example.com/"
        )
    match = _SCHEME.match(text)
    if match is None:
        raise InvalidUrl(f"{_show(url)} has no scheme: write it as https://{_show(text)}")
    scheme = match.group(1).lower()
    if scheme not in DEFAULT_PORTS:
        raise WebRequestRefused(
            f"{_show(url)}: the scheme {scheme!r} is refused; "
            "only http and https URLs can be fetched"
        )
    rest = text[match.end() :]
    if not rest.startswith("//"):
        raise InvalidUrl(f"{_show(url)} has no host: write it as {scheme}://host/path")
    rest = rest[2:]
    if _FORBIDDEN.search(rest):
        raise InvalidUrl(
            f"{_show(url)} contains a space, a control character or a backslash: "
            "percent-encode it (%20, %5C) or remove it"
        )
    end = len(rest)
    for delimiter in "/?#":
        found = rest.find(delimiter)
        if found != -1:
            end = min(end, found)
    authority, remainder = rest[:end], rest[end:]
    if "@" in authority:
        raise WebRequestRefused(
            f"{_show(url)} contains credentials (user@host): refused, because user@host hides "
            "which host is really contacted and credentials in a URL end up in logs; "
            "send credentials in a header instead"
        )
    host_text, port = _split_port(authority, scheme, url)
    host, literal = _parse_host(host_text, url)
    return ParsedTarget(
        scheme=scheme, host=host, port=port, literal=literal, target=_target(remainder)
    )


def resolve_location(base: ParsedTarget, location: str) -> ParsedTarget:
    """A redirect's ``Location`` (absolute, scheme-relative or relative) against ``base``."""
    return parse_url(urllib.parse.urljoin(base.url, location.strip()))


def parse_ipv4_host(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``host`` spells, or ``None`` when it is a domain name.

    WHATWG "ends in a number": a host whose last label (one trailing dot ignored) is decimal
    digits or ``0x`` + hex is an IPv4 address, and must parse as one (``ValueError`` if not):
    1 to 4 parts, each decimal, ``0``-prefixed octal or ``0x`` hex, the last one filling the
    remaining bytes (``127.1`` is 127.0.0.1, ``2130706433`` too).
    """
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if not _is_number_label(parts[-1]):
        return None
    if len(parts) > 4:
        raise ValueError(f"{host!r} has more than four numeric parts")
    numbers = [_ipv4_number(part, host) for part in parts]
    if any(number > 255 for number in numbers[:-1]):
        raise ValueError(f"{host!r} has a part above 255")
    if numbers[-1] >= 256 ** (5 - len(numbers)):
        raise ValueError(f"{host!r} has a last part too large for its position")
    value = numbers[-1]
    for index, number in enumerate(numbers[:-1]):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _is_number_label(label: str) -> bool:
    if label.isascii() and label.isdigit():
        return True
    lower = label.lower()
    return lower.startswith("0x") and all(char in "0123456789abcdef" for char in lower[2:])


def _ipv4_number(part: str, host: str) -> int:
    if part == "":
        raise ValueError(f"{host!r} has an empty part")
    lower = part.lower()
    try:
        if lower.startswith("0x"):
            return int(lower[2:], 16) if len(lower) > 2 else 0
        if len(part) > 1 and part.startswith("0"):
            return int(part[1:], 8)
        if not part.isascii() or not part.isdigit():
            raise ValueError(part)
        return int(part, 10)
    except ValueError:
        raise ValueError(f"{host!r}: {part!r} is not a decimal, octal or hex number") from None


def _split_port(authority: str, scheme: str, url: str) -> tuple[str, int]:
    if authority.startswith("["):
        close = authority.find("]")
        if close == -1:
            raise InvalidUrl(f"{_show(url)}: an IPv6 address must be closed with ']'")
        host_text, after = authority[: close + 1], authority[close + 1 :]
        if after and not after.startswith(":"):
            raise InvalidUrl(f"{_show(url)}: unexpected {after!r} after the IPv6 address")
        port_text = after[1:] if after else ""
    else:
        host_text, _, port_text = authority.partition(":")
    if port_text == "":
        return host_text, DEFAULT_PORTS[scheme]
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        raise InvalidUrl(f"{_show(url)}: the port {port_text!r} is not a number from 1 to 65535")
    return host_text, int(port_text)


def _parse_host(text: str, url: str) -> tuple[str, IPAddress | None]:
    if text.startswith("["):
        inner = urllib.parse.unquote(text[1:-1])
        try:
            address = parse_ip(inner)
        except ValueError:
            raise InvalidUrl(f"{_show(url)}: {text} is not a valid IPv6 address") from None
        if address.version != 6:
            raise InvalidUrl(f"{_show(url)}: brackets are for IPv6 addresses, not {inner}")
        return str(address), address
    if text == "":
        raise InvalidUrl(f"{_show(url)} has no host: write it as scheme://host/path")
    try:
        decoded = urllib.parse.unquote(text, errors="strict")
        mapped = idna.uts46_remap(decoded, std3_rules=False, transitional=False)
    except (UnicodeDecodeError, idna.IDNAError) as exc:
        raise InvalidUrl(
            f"{_show(url)}: the host {text!r} is not a valid host name ({exc})"
        ) from None
    try:
        literal = parse_ipv4_host(mapped)
    except ValueError as exc:
        raise InvalidUrl(
            f"{_show(url)}: the host looks like an IPv4 address but is not one: {exc}"
        ) from None
    if literal is not None:
        return str(literal), literal
    return _domain(mapped.removesuffix("."), text, url), None


def _domain(mapped: str, text: str, url: str) -> str:
    labels: list[str] = []
    for label in mapped.split("."):
        if not label.isascii():
            try:
                label = idna.encode(label, uts46=False).decode("ascii")
            except idna.IDNAError as exc:
                raise InvalidUrl(
                    f"{_show(url)}: the host {text!r} is not a valid domain name ({exc})"
                ) from None
        labels.append(label)
    host = ".".join(labels)
    if not _HOST_NAME.match(host) or len(host) > 253 or any(len(label) > 63 for label in labels):
        raise InvalidUrl(
            f"{_show(url)}: the host {text!r} is not a valid domain name "
            "(letters, digits, '-' and '_' in dot-separated labels of at most 63 characters)"
        )
    return host


def _target(remainder: str) -> str:
    without_fragment = remainder.partition("#")[0]
    path, question, query = without_fragment.partition("?")
    path = urllib.parse.quote(path, safe=_PATH_SAFE) or "/"
    if not path.startswith("/"):
        path = "/" + path
    return path + (question + urllib.parse.quote(query, safe=_QUERY_SAFE) if question else "")


def _show(url: str, limit: int = 200) -> str:
    """The URL as it appears in a message: cut, so a huge URL does not flood the model."""
    return repr(url if len(url) <= limit else url[:limit] + "...")
