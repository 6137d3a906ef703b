"""The network backend that pins httpcore's connections to checked addresses.

httpcore opens every TCP connection through an ``AsyncNetworkBackend`` and passes it the
URL's host name; TLS (SNI and certificate verification) and the Host header are derived
from the URL, not from the socket. :class:`PinnedNetworkBackend` ignores the name and
connects to the addresses the fetcher checked for that ``(host, port)``, trying them in
order until one answers (a dual-stack name whose IPv6 route is down still works), so no
second DNS lookup happens between the check and the connect: a rebinding answer is never
consulted. A host with no pinned address is refused: nothing reaches the network unchecked.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence

import httpcore

from .addresses import IPAddress

__all__ = ["PinnedNetworkBackend"]


class PinnedNetworkBackend(httpcore.AsyncNetworkBackend):
    """Connects ``(host, port)`` to the addresses pinned for it with :meth:`pin`."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._backend = backend if backend is not None else httpcore.AnyIOBackend()
        self._pins: dict[tuple[str, int], tuple[IPAddress, ...]] = {}

    def pin(self, host: str, port: int, addresses: Sequence[IPAddress]) -> None:
        """Connections to ``host:port`` go to ``addresses`` (all checked, tried in order)
        from now on."""
        if not addresses:
            raise ValueError(f"pin {host}:{port} to at least one address")
        self._pins[(host, port)] = tuple(addresses)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = self._pins.get((host, port))
        if addresses is None:
            # httpcore only connects to the origins we pinned; anything else is a bug.
            raise httpcore.ConnectError(f"{host}:{port} has no checked address to connect to")
        options = list(socket_options) if socket_options is not None else None
        failures: list[str] = []
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=options,
                )
            except httpcore.ConnectError as exc:
                failures.append(f"{address}: {exc}")
        raise httpcore.ConnectError("; ".join(failures))

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("the web fetcher never connects to Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)
