"""How agents' tool calls reach a live connection without a trip through the actor's
mailbox.

The McpConnection actor owns its connection: it opens the gate with the link it just
connected (after recording ``mcp.connected``) and closes it, with the reason a caller
should read, whenever it withdraws the tools. A call takes the link the gate holds at
that moment and runs on the I/O hub; a call that times out or loses its connection is
reported back to the actor as a message, which decides what that means (a health check,
a reconnect). Calls never wait for the actor, and the actor never waits for a call.
The mailbox path (``CallTool``) remains for operators and costs two thread hops more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import mcp.types as mt

from .._bridge import Hub
from ..errors import HubError, McpCallTimeout, McpConnectionLost, McpError, McpUnavailable
from ._link import Link

__all__ = ["CallGate"]

#: ``(generation, server tool name, error)`` → tell the actor.
Report = Callable[[int, str, McpError], None]


class CallGate:
    """Opened and closed only by its actor; called from any loop."""

    def __init__(self, hub: Hub, report: Report, reason: str) -> None:
        self._hub = hub
        self._report = report
        #: One tuple, swapped whole: a caller never sees a link with another's generation.
        self._open: tuple[Link, int] | None = None
        self._reason = reason

    def open(self, link: Link, generation: int) -> None:
        self._open = (link, generation)

    def close(self, reason: str) -> None:
        self._reason = reason
        self._open = None

    @property
    def is_open(self) -> bool:
        return self._open is not None

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> mt.CallToolResult:
        opened = self._open
        if opened is None:
            raise McpUnavailable(self._reason)
        link, generation = opened
        try:
            if self._hub.in_hub_thread():
                return await link.call(tool, arguments, timeout)
            try:
                running = self._hub.submit(link.call(tool, arguments, timeout))
            except HubError as exc:
                raise McpUnavailable("clawlog is shutting down") from exc
            return await asyncio.wrap_future(running)
        except (McpCallTimeout, McpConnectionLost) as error:
            self._report(generation, tool, error)
            raise
