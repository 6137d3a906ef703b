"""Tool calls through the McpConnection actor's mailbox (``CallTool``), and what the
actor does when a call reports trouble (from either path: mailbox or call gate).

A call the actor admits runs on the I/O hub and answers its asker from there (one thread
hop less than a ``Piped`` round trip); only a timeout or a lost connection comes back to
the actor, as ``CallFailed``: a timeout triggers a health check at once, a lost
connection a reconnect.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from clawlog.events import Event
from clawlog.events.domain.mcp import McpCallTimedOut

from .._bridge import LoopReply, ThreadReply
from ..actor import DEFERRED
from ..errors import HubError, McpCallTimeout, McpConnectionLost, McpError, McpUnavailable
from .messages import CallFailed, CallTool
from .sdk_errors import translate

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ._link import Link
    from .config import McpServerConfig
    from .state import McpServerState

__all__ = ["CallHandlers"]

Reply = LoopReply | ThreadReply


class CallHandlers:
    """Mixed into the McpConnection actor."""

    state: McpServerState
    config: McpServerConfig
    runtime: Runtime
    _link: Link | None
    _generation: int

    if TYPE_CHECKING:  # provided by the actor

        def emit(self, events: Sequence[Event], **kwargs: Any) -> Any: ...
        def defer_reply(self) -> Reply | None: ...
        def _tell_self(self, message: object) -> None: ...
        def _check_health(self) -> None: ...
        def _lost(self, cause: str, error: McpError) -> None: ...

    def _call(self, message: CallTool) -> Any:
        reply = self.defer_reply()
        if reply is None:
            return None  # a told call has nobody to answer
        link = self._link
        if self.state.state != "connected" or link is None or link.session is None:
            reply.set_error(self._unavailable())
            return DEFERRED
        generation, tool = self._generation, message.tool

        def report(error: McpError) -> None:  # runs on the hub: only enqueue
            self._report_call(generation, tool, error)

        call = link.call(tool, dict(message.arguments), self.config.call_timeout_s)
        try:
            self.runtime.hub.submit(_answer(call, reply, report))
        except HubError:
            call.close()
            reply.set_error(McpUnavailable("clawlog is shutting down"))
        return DEFERRED

    def _report_call(self, generation: int, tool: str, error: McpError) -> None:
        """From the hub (the call gate): only enqueue."""
        self._tell_self(CallFailed(generation=generation, tool=tool, error=error))

    def _call_failed(self, message: CallFailed) -> None:
        """A call's deadline passed or its connection broke: check the server now."""
        if message.generation != self._generation or self.state.state != "connected":
            return
        error = message.error
        if isinstance(error, McpCallTimeout):
            timeout = self.config.call_timeout_s
            self.emit(
                [McpCallTimedOut(server=self.config.name, tool=message.tool, timeout_s=timeout)]
            )
            self._check_health()
        elif isinstance(error, McpConnectionLost):
            self._lost("connection_lost", error)

    def _unavailable(self) -> McpUnavailable:
        state = self.state
        name = self.config.name
        match state.state:
            case "reconnecting":
                detail = f"reconnecting (attempt {state.attempt} of {state.max_attempts} is next)"
            case "connecting" if state.retrying:
                # the same retry cycle as above, during an attempt instead of its backoff
                detail = (
                    f"reconnecting (attempt {state.attempt} of {state.max_attempts} is running)"
                )
            case "failed":
                detail = f"failed after {state.attempt} attempts; an operator must reconnect it"
            case other:
                detail = str(other)
        last = f"; last error: {state.last_error}" if state.last_error else ""
        return McpUnavailable(f"MCP server {name!r} is {detail}{last}")


async def _answer(
    call: Coroutine[Any, Any, Any], reply: Reply, report: Callable[[McpError], None]
) -> None:
    """Run a call on the hub and answer its asker from there (one thread hop less than
    a ``Piped`` round trip); only failures that say something about the server's health
    go back to the actor."""
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
