"""Name resolution for the fetcher: the :data:`Resolver` seam, the default resolver, and
:func:`resolve_checked`, which checks every address a name resolves to.

The seam is a coroutine ``(host, port) -> list of IP address strings`` so tests (and
deployments with their own DNS) can make names resolve to chosen addresses.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

from ..errors import WebRequestFailed, WebRequestRefused
from .addresses import IPAddress, address_refusal, parse_ip
from .urls import ParsedTarget

__all__ = ["Resolver", "resolve_checked", "system_resolver"]

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``(host, port) -> IP address strings``; raise ``OSError`` (or return []) when the name
does not resolve."""


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve ``host`` with the event loop's ``getaddrinfo`` (TCP, IPv4 and IPv6)."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    addresses: list[str] = []
    for _family, _type, _proto, _canonname, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


async def resolve_checked(
    target: ParsedTarget, resolver: Resolver, *, allow_loopback: bool
) -> list[IPAddress]:
    """The addresses to connect to for ``target``, in the resolver's order: its literal, or
    every address its name resolves to, once EVERY one passed the check (a name with one
    public and one private address is refused as a whole, so no fallback can reach the
    private one)."""
    if target.literal is not None:
        return [target.literal]
    try:
        answers = await resolver(target.host, target.port)
    except OSError as exc:
        raise WebRequestFailed(
            f"{target.host} could not be resolved ({exc.strerror or exc}): check the host name"
        ) from exc
    addresses = _parse_answers(target.host, answers)
    refusals = [
        reason
        for address in addresses
        if (reason := address_refusal(address, allow_loopback=allow_loopback)) is not None
    ]
    if refusals:
        raise WebRequestRefused(
            f"{target.host} resolves to a blocked address: {'; '.join(refusals)}: refused"
        )
    return addresses


def _parse_answers(host: str, answers: list[str]) -> list[IPAddress]:
    if not answers:
        raise WebRequestFailed(f"{host} has no IP address (empty DNS answer): check the host name")
    try:
        return [parse_ip(answer) for answer in answers]
    except ValueError as exc:
        raise WebRequestFailed(f"the resolver returned a non-address for {host}: {exc}") from exc
