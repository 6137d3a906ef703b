"""Direct calls: how agents' tool calls reach a live connection without a trip through
the actor's mailbox, and how a call admitted through the mailbox answers its asker.

The McpConnection actor owns its connection: it opens :class:`DirectCalls` with the
client it just connected (after recording ``mcp.connected``) and closes it, with the
reason a caller should read, whenever it withdraws the tools. A call takes the client
held at that moment and runs on the I/O hub; a call that times out or loses its
connection is reported back to the actor as a message, which decides what that means (a
health check, a reconnect). Calls never wait for the actor, and the actor never waits
for a call. The mailbox path (``CallTool``, :func:`answer_on_hub`) remains for operators
and costs two thread hops more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import mcp.types as mt

from .._bridge import Hub, LoopReply, ThreadReply
from ..errors import HubError, McpCallTimeout, McpConnectionLost, McpError, McpUnavailable
from ._client import McpClient
from .sdk_errors import translate

__all__ = ["DirectCalls", "Reply", "answer_on_hub"]

#: ``(generation, server tool name, error)`` → tell the actor.
Report = Callable[[int, str, McpError], None]
Reply = LoopReply | ThreadReply


class DirectCalls:
    """Opened and closed only by its actor; called from any loop."""

    def __init__(self, hub: Hub, report: Report, reason: str) -> None:
        self._hub = hub
        self._report = report
        #: One tuple, swapped whole: a caller never sees a client with another's generation.
        self._open: tuple[McpClient, int] | None = None
        self._reason = reason

    def open(self, client: McpClient, generation: int) -> None:
        self._open = (client, generation)

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
        client, generation = opened
        try:
            if self._hub.in_hub_thread():
                return await client.call(tool, arguments, timeout)
            try:
                running = self._hub.submit(client.call(tool, arguments, timeout))
            except HubError as exc:
                raise McpUnavailable("clawlog is shutting down") from exc
            return await asyncio.wrap_future(running)
        except (McpCallTimeout, McpConnectionLost) as error:
            self._report(generation, tool, error)
            raise


async def answer_on_hub(
    call: Coroutine[Any, Any, Any], reply: Reply, report: Callable[[McpError], None]
) -> None:
    """Run a call admitted through the mailbox on the hub and answer its asker from there
    (one thread hop less than a ``Piped`` round trip); only failures that say something
    about the server's health go back to the actor (``report``)."""
    try:
        result = await call
    except McpError as error:
        _settle(reply, None, error)
        if isinstance(error, McpCallTimeout | McpConnectionLost):
            report(error)
    except asyncio.CancelledError:
        _settle(reply, None, McpUnavailable("the call was cancelled: clawlog is shutting down"))
        raise
    except Exception as exc:  # a bug: the asker still gets an answer
        _settle(reply, None, translate(exc))
    else:
        _settle(reply, result, None)


def _settle(reply: Reply, value: Any, error: BaseException | None) -> None:
    """Answer; an asker waiting on this very loop (a Session's tool call on the hub) is
    resolved at once instead of through another turn of the loop."""
    if isinstance(reply, LoopReply) and reply.loop is asyncio.get_running_loop():
        future = reply.future
        if not future.done():
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)
    elif error is not None:
        reply.set_error(error)
    else:
        reply.set(value)
