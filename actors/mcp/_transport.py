"""The transports, on the official SDK: one function from a config to (read, write).

The read stream is wrapped so the connection learns at once when the server goes away
(a killed stdio server, a dropped SSE stream) instead of at the next call or health
check: the SDK's session ends quietly when its read stream ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import IO, Any

import anyio
import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ..errors import McpConfigError
from .config import McpServerConfig

__all__ = ["WatchedReadStream", "open_transport"]

#: How long an idle SSE stream may stay silent before the SDK drops it (health pings
#: every 30 s keep it busy).
_SSE_READ_TIMEOUT_S = 300.0


@contextlib.asynccontextmanager
async def open_transport(
    config: McpServerConfig, errlog: IO[Any] | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """Open the server's transport; ``errlog`` receives a stdio server's stderr."""
    if config.oauth is not None:
        raise McpConfigError(
            f"MCP server {config.name!r} is configured with OAuth, which clawlog does not "
            "support yet; pass a token in 'headers' instead"
        )
    if config.transport == "stdio":
        params = StdioServerParameters(
            command=config.command, args=list(config.args), env=dict(config.env), cwd=config.cwd
        )
        async with stdio_client(params, errlog=errlog) as streams:  # type: ignore[arg-type]
            yield streams
    elif config.transport == "sse":
        async with sse_client(
            config.url,
            headers=dict(config.headers) or None,
            timeout=config.connect_timeout_s,
            sse_read_timeout=_SSE_READ_TIMEOUT_S,
        ) as streams:
            yield streams
    else:
        timeout = httpx2.Timeout(config.connect_timeout_s, read=_SSE_READ_TIMEOUT_S)
        client = httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout)
        async with client, streamable_http_client(config.url, http_client=client) as streams:
            yield streams


class WatchedReadStream:
    """A transport's read stream (the SDK's ``ReadStream`` protocol) that sets ``ended``
    when the server side ends it."""

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            self._ended.set()
            raise

    def __aiter__(self) -> WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
