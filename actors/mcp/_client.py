"""One connection to one server, on the I/O hub.

A single long-lived task owns the transport's and the session's ``async with`` blocks
from the handshake to the end (anyio requires them to be entered and left by one task).
Calls and pings come from other hub tasks and use the session while it is up; every one
runs under an outer deadline, because the SDK can hang past its own timeouts. The owner
task reports an unexpected end once, through ``on_lost``; ``close`` is idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import tempfile
import time
from collections.abc import Callable
from typing import IO, Any, NamedTuple

import anyio
import mcp.types as mt
from mcp import ClientSession
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from clawlog.events.telemetry import (
    CORRELATION,
    ERROR_TYPE,
    GEN_AI_TOOL,
    MCP_SERVER,
    tracer,
    tracing_enabled,
)
from clawlog.tools.call_telemetry import end_with_call, running_call_correlation

from ..errors import (
    McpCallTimeout,
    McpConnectError,
    McpConnectionLost,
    McpError,
    McpUnavailable,
)
from ._transport import WatchedReadStream, open_transport
from .config import McpServerConfig
from .sdk_errors import translate

__all__ = ["Handshake", "McpClient"]

_STDERR_TAIL = 600
_CLOSE_TIMEOUT_S = 10.0


class Handshake(NamedTuple):
    """What a fresh connection learned: who the server is and its tools."""

    server_name: str
    server_version: str
    protocol_version: str
    tools: list[mt.Tool]
    duration_ms: float


class McpClient:
    """One connection's lifetime: ``open`` → calls and pings → ``close`` (or loss)."""

    def __init__(
        self, config: McpServerConfig, on_lost: Callable[[McpError], None] | None = None
    ) -> None:
        self.config = config
        self.session: ClientSession | None = None
        self._on_lost = on_lost
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[Handshake] | None = None
        self._errlog: IO[bytes] | None = None
        #: Calls running now (read by the actor for its status).
        self.in_flight = 0

    # -- lifecycle ----------------------------------------------------------------------
    async def open(self) -> Handshake:
        """Start the server (stdio) or connect, hand shake and list the tools."""
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(self._ready), name=f"mcp:{self.config.name}")
        return await asyncio.shield(self._ready)

    async def close(self) -> None:
        """End the connection (a stdio server is stopped); safe to call twice."""
        self._closing = True
        self.session = None
        self._wake.set()
        task = self._task
        if task is None or task.done():
            return
        if self._ready is not None and not self._ready.done():
            task.cancel()  # still handshaking: nothing to shut down politely
        # asyncio.wait: the owner's own failure was reported already; ours (a cancelled
        # close) still propagates.
        done, _ = await asyncio.wait([task], timeout=_CLOSE_TIMEOUT_S)
        if not done:
            task.cancel()
            await asyncio.wait([task], timeout=_CLOSE_TIMEOUT_S)

    @property
    def closed(self) -> bool:
        return self._task is not None and self._task.done()

    async def _own(self, ready: asyncio.Future[Handshake]) -> None:
        started = time.perf_counter()
        try:
            if self.config.transport == "stdio":
                self._errlog = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
            await self._run(ready, started)
        except asyncio.CancelledError:
            self._settle(ready, McpConnectError("the connection attempt was cancelled"))
            raise
        except BaseException as exc:  # ExceptionGroups from the SDK's task groups too
            self._settle(ready, self._translate(exc, connecting=not ready.done()))
        finally:
            self.session = None
            if self._errlog is not None:
                self._errlog.close()

    async def _run(self, ready: asyncio.Future[Handshake], started: float) -> None:
        config = self.config
        with anyio.fail_after(config.connect_timeout_s) as handshake_deadline:
            async with open_transport(config, self._errlog) as (read, write):
                watched = WatchedReadStream(read, self._wake)
                async with ClientSession(watched, write) as session:
                    init = await session.initialize()
                    tools = await _list_tools(session)
                    handshake_deadline.deadline = math.inf
                    self.session = session
                    info = init.server_info
                    ready.set_result(
                        Handshake(
                            server_name=info.name,
                            server_version=info.version,
                            protocol_version=str(init.protocol_version),
                            tools=tools,
                            duration_ms=(time.perf_counter() - started) * 1000,
                        )
                    )
                    await self._wake.wait()
                    self.session = None
                    if not self._closing:
                        self._report(McpConnectionLost("the server closed the connection"))

    def _settle(self, ready: asyncio.Future[Handshake], error: McpError) -> None:
        if not ready.done():
            ready.set_exception(error)
        elif not self._closing:
            self._report(error)

    def _report(self, error: McpError) -> None:
        self._closing = True  # once
        if self._on_lost is not None:
            self._on_lost(error)

    def _translate(self, exc: BaseException, *, connecting: bool) -> McpError:
        if connecting and isinstance(exc, TimeoutError):
            error: McpError = McpConnectError(
                f"no handshake within {self.config.connect_timeout_s:g} s"
            )
        else:
            target = self.config.command if self.config.transport == "stdio" else self.config.url
            error = translate(exc, connecting=connecting, what=target if connecting else "")
        tail = self._stderr_tail()
        if connecting and tail:
            error = type(error)(f"{error} (server stderr: {tail})")
        return error

    def _stderr_tail(self) -> str:
        if self._errlog is None or self._errlog.closed:
            return ""
        with contextlib.suppress(OSError):
            size = self._errlog.seek(0, 2)
            self._errlog.seek(max(size - _STDERR_TAIL, 0))
            return self._errlog.read().decode(errors="replace").strip()
        return ""

    # -- use ----------------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> mt.CallToolResult:
        """Call ``tool`` (its name on the server); traced as ``mcp tools/call {server}``, a
        child of the current context (the execute_tool span of the agent's tool call).

        Made by a tool call, the span carries the call's correlation id and, once the
        call's end is recorded, that event's log position (``end_with_call``: the span
        keeps the time the server answered as its end)."""
        if not tracing_enabled():
            return await self._call(tool, arguments, timeout)
        attributes: dict[str, AttributeValue] = {MCP_SERVER: self.config.name, GEN_AI_TOOL: tool}
        if correlation_id := running_call_correlation():
            attributes[CORRELATION] = correlation_id
        span = tracer().start_span(
            f"mcp tools/call {self.config.name}", kind=SpanKind.CLIENT, attributes=attributes
        )
        try:
            # An error raised is recorded on the span (ERROR status, exception event).
            with trace.use_span(span, end_on_exit=False):
                result = await self._call(tool, arguments, timeout)
                if result.is_error:  # the server ran the tool and reports its failure
                    span.set_attribute(ERROR_TYPE, "tool_error")
                    span.set_status(Status(StatusCode.ERROR, "the server reported a tool error"))
        except asyncio.CancelledError:
            span.end()  # the tool call is given up: no end of it will be recorded here
            raise
        except BaseException:
            end_with_call(span)  # the tool call records the failure
            raise
        end_with_call(span)
        return result

    async def _call(
        self, tool: str, arguments: dict[str, Any], timeout: float
    ) -> mt.CallToolResult:
        session = self._session()
        self.in_flight += 1
        try:
            async with asyncio.timeout(timeout):
                return await session.call_tool(tool, arguments)
        except TimeoutError:
            raise McpCallTimeout(f"{tool} got no answer within {timeout:g} s") from None
        except Exception as exc:
            raise translate(exc, what=tool) from exc
        finally:
            self.in_flight -= 1

    async def ping(self, timeout: float) -> float:
        """Round trip in milliseconds."""
        session = self._session()
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                await session.send_ping()
        except TimeoutError:
            raise McpCallTimeout(f"no answer to a ping within {timeout:g} s") from None
        except Exception as exc:
            raise translate(exc, what="ping") from exc
        return (time.perf_counter() - started) * 1000

    def _session(self) -> ClientSession:
        session = self.session
        if session is None:
            raise McpUnavailable(f"MCP server {self.config.name!r} is not connected")
        return session


async def _list_tools(session: ClientSession) -> list[mt.Tool]:
    tools: list[mt.Tool] = []
    cursor: str | None = None
    while True:
        params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools
