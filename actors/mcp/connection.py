"""The McpConnection actor (seed 001 §12): one per server, the single writer of
``mcp/{server}``.

It owns the connection and never waits on the server. Connecting and health pings run
on the I/O hub (:class:`~actors.mcp._link.Link`) and come back as ``Piped`` messages.
Agents' tool calls go through the actor's call gate (:mod:`actors.mcp._gate`), which it
opens with the live link and closes whenever it withdraws the tools; operators' calls
go through its mailbox (:mod:`actors.mcp._calls`). Either way a call runs on the hub and
only a timeout or a lost connection comes back here, so status asks, grants and other
calls are answered while a call hangs. Every state change is an event: connecting,
connected with its tools, a failed attempt and the backoff before the next, a call that
ran into its deadline (a health check follows at once), a lost connection (its tools
leave the agents' lists), failed after ``max_attempts``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
from typing import Any

from clawlog.events import Event
from clawlog.events.domain.mcp import (
    McpConnected,
    McpConnectFailed,
    McpConnecting,
    McpDisconnected,
    McpFailed,
    McpReconnectScheduled,
    McpServerConfigured,
    McpToolsDiscovered,
    McpToolsWithdrawn,
)
from clawlog.tools import Scrubber

from ..actor import DEFERRED, EventSourcedActor
from ..errors import (
    HubError,
    McpConfigError,
    McpError,
)
from ..messages import Message, Piped
from ._access import AccessHandlers
from ._calls import CallHandlers
from ._commands import OperatorCommands
from ._gate import CallGate
from ._link import Handshake, Link
from .config import McpServerConfig
from .directory import McpDirectory, ServerView
from .discovery import discover_tools
from .messages import (
    CallFailed,
    CallTool,
    GetStatus,
    HealthDue,
    LinkLost,
    ReconfigureServer,
    Reconnect,
    RemoveServer,
    RetryDue,
    SetEnabled,
)
from .sdk_errors import translate
from .state import McpServerState, McpServerStatus, apply_mcp_event, config_digest
from .tool import McpTool

__all__ = ["McpConnection", "mcp_stream"]

_STOP_WAIT_S = 15.0


def mcp_stream(server: str) -> str:
    return f"mcp/{server}"


class McpConnection(
    CallHandlers, OperatorCommands, AccessHandlers, EventSourcedActor[McpServerState]
):
    kind = "mcp"
    snapshot_every = 500

    def __init__(
        self,
        *args: Any,
        config: McpServerConfig,
        directory: McpDirectory,
        source: str = "api",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.config = config
        self.directory = directory
        self.source = source
        self._scrubber = Scrubber(config.secrets())
        self._link: Link | None = None
        self._generation = 0
        #: Consecutive failures (a lost connection counts): the next backoff's exponent.
        self._failed_in_row = 0
        self._attempt_started = 0.0
        self._checking = False
        #: The health timer in force; an older HealthDue (superseded) is ignored.
        self._health_timer = 0
        self._removed = False
        self._closing: list[concurrent.futures.Future[Any]] = []
        self._tools: dict[str, McpTool] = {}
        starting = f"MCP server {config.name!r} is starting"
        self._gate = CallGate(self.runtime.hub, self._report_call, starting)

    # -- fold ---------------------------------------------------------------------------
    def initial_state(self) -> McpServerState:
        return McpServerState()

    def apply(self, state: McpServerState, event: Event) -> McpServerState:
        return apply_mcp_event(state, event, time.time())

    def on_recovered(self, restarted: bool) -> None:
        if restarted:
            self._close_link()  # its calls fail with "connection lost"
        self._settle_previous_run()
        self._record_config()
        self._refresh_tools()
        self._publish()
        if self.state.enabled:
            self._failed_in_row = 0
            self._connect(1)

    # -- messages -----------------------------------------------------------------------
    def handle(self, message: Message) -> Any:
        try:
            return self._route(message)
        except McpError as exc:  # bad input: the asker gets our error, nothing changed
            reply = self.defer_reply()
            if reply is not None:
                reply.set_error(exc)
            return DEFERRED

    def _route(self, message: Message) -> Any:
        match message:
            case CallTool():
                return self._call(message)
            case CallFailed():
                self._call_failed(message)
            case Piped(label="connect"):
                self._connect_done(message)
            case Piped(label="health"):
                self._health_done(message)
            case LinkLost(generation=generation, error=error):
                if generation == self._generation and self.state.state == "connected":
                    self._lost("connection_lost", translate(error))
            case RetryDue(generation=generation):
                if generation == self._generation and self.state.state == "reconnecting":
                    self._connect(self.state.attempt)
            case HealthDue(generation=generation, timer=timer):
                if generation == self._generation and timer == self._health_timer:
                    self._check_health()
            case GetStatus():
                return McpServerStatus.of(self.state, self._link.in_flight if self._link else 0)
            case Reconnect(by=by):
                return self._reconnect(f"reconnect requested by {by or 'an operator'}")
            case ReconfigureServer(config=config, source=source):
                return self._reconfigure(config, source)
            case SetEnabled(enabled=enabled, by=by):
                return self._set_enabled(enabled, by)
            case RemoveServer(by=by):
                return self._remove(by)
            case _:
                handled = self.handle_access(message)
                return super().handle(message) if handled is NotImplemented else handled
        return None

    # -- connecting ---------------------------------------------------------------------
    def _connect(self, attempt: int) -> None:
        self._close_link()
        self._generation += 1
        generation = self._generation
        link = Link(self.config, on_lost=lambda error: self._tell_self(_lost(generation, error)))
        self._link = link
        self.emit(
            [
                McpConnecting(
                    server=self.config.name, attempt=attempt, transport=self.config.transport
                )
            ]
        )
        self._attempt_started = time.monotonic()
        self._publish()
        self.pipe(link.open(), "connect", key=str(generation))

    def _connect_done(self, message: Piped) -> None:
        if int(message.key) != self._generation:
            return  # an attempt that was superseded; its link is being closed
        if message.error is not None:
            self._attempt_failed(translate(message.error, connecting=True))
            return
        handshake: Handshake = message.value
        tools, skipped = discover_tools(self.config, handshake.tools, self._scrubber)
        self._failed_in_row = 0
        self.emit(
            [
                McpConnected(
                    server=self.config.name,
                    attempt=self.state.attempt,
                    server_name=handshake.server_name,
                    server_version=handshake.server_version,
                    protocol_version=handshake.protocol_version,
                    duration_ms=round(handshake.duration_ms, 3),
                ),
                McpToolsDiscovered(server=self.config.name, tools=tools, skipped=skipped),
            ]
        )
        self._refresh_tools()
        self._publish()
        self.log.info("MCP server connected", tools=len(tools), skipped=len(skipped))
        self._schedule_health()

    def _attempt_failed(self, error: McpError) -> None:
        attempt = self.state.attempt
        self._close_link()
        self._failed_in_row += 1
        message = self._scrubber.scrub(str(error))
        events: list[Event] = [
            McpConnectFailed(
                server=self.config.name,
                attempt=attempt,
                error_kind=error.kind,
                message=message,
                duration_ms=round((time.monotonic() - self._attempt_started) * 1000, 3),
            )
        ]
        self.log.warning("MCP connection attempt failed", attempt=attempt, error=message)
        hopeless = isinstance(error, McpConfigError)
        if hopeless or attempt >= self.config.max_attempts:
            events.append(McpFailed(server=self.config.name, attempts=attempt, message=message))
            self.emit(events)
            self.log.error("MCP server failed: no more attempts", attempts=attempt)
        else:
            self.emit(events + self._retry_events(attempt + 1))
        self._publish()

    def _retry_events(self, attempt: int) -> list[Event]:
        delay = self.config.backoff_s(self._failed_in_row)
        self._schedule(RetryDue(generation=self._generation), delay)
        return [
            McpReconnectScheduled(
                server=self.config.name,
                attempt=attempt,
                delay_s=delay,
                max_attempts=self.config.max_attempts,
            )
        ]

    def _lost(self, cause: str, error: McpError) -> None:
        """The live connection is gone: withdraw its tools, reconnect after a backoff."""
        self.log.warning("MCP connection lost", cause=cause, error=self._scrubber.scrub(str(error)))
        self._close_link()
        self._failed_in_row = 1
        events = self._disconnect_events(cause, error)
        if self.state.enabled:
            events += self._retry_events(1)
        self.emit(events)
        self._publish()

    def _disconnect_events(self, cause: str, error: McpError | None = None) -> list[Event]:
        events: list[Event] = []
        if self.state.state == "connected":
            events.append(
                McpDisconnected(
                    server=self.config.name,
                    cause=cause,
                    error_kind=error.kind if error is not None else "",
                    message=self._scrubber.scrub(str(error)) if error is not None else "",
                )
            )
        if self.state.offered:
            events.append(
                McpToolsWithdrawn(
                    server=self.config.name, names=self.state.offered_names(), reason=cause
                )
            )
        return events

    # -- health -------------------------------------------------------------------------
    def _check_health(self) -> None:
        link = self._link
        if self._checking or link is None or self.state.state != "connected":
            return
        self._checking = True
        self.pipe(link.ping(self.config.health_timeout_s), "health", key=str(self._generation))

    def _health_done(self, message: Piped) -> None:
        if int(message.key) != self._generation:
            return  # an old link's ping: the current link's may be in flight
        self._checking = False
        if self.state.state != "connected":
            return
        if message.error is not None:
            self._lost("health_check", translate(message.error))
            return
        self._schedule_health()

    def _schedule_health(self) -> None:
        """(Re)arm the one health timer: any HealthDue scheduled before is void."""
        self._health_timer += 1
        due = HealthDue(generation=self._generation, timer=self._health_timer)
        self._schedule(due, self.config.health_interval_s)

    # -- recording and publishing -------------------------------------------------------
    def _settle_previous_run(self) -> None:
        """A log that ends connected was left by a process that is gone: say so."""
        events = self._disconnect_events("restart")
        if events:
            self.emit(events)

    def _record_config(self) -> None:
        config = self.config
        event = McpServerConfigured(
            server=config.name,
            transport=config.transport,
            command=config.command,
            args=[self._scrubber.scrub(a) for a in config.args],
            url=self._scrubber.scrub(config.url),
            cwd=config.cwd or "",
            env_keys=sorted(config.env),
            header_names=sorted(config.headers),
            enabled=config.enabled,
            description=config.description,
            tool_prefix=config.prefix,
            settings=config.settings(),
            source=self.source,
        )
        if self.state.state == "removed" or config_digest(event) != self.state.config_digest:
            self.emit([event])

    def _refresh_tools(self) -> None:
        """Tool objects for the last discovery, reusing unchanged ones (gateways then
        need not register them again)."""
        old, fresh = self._tools, {}
        gate, timeout = self._gate, self.config.call_timeout_s

        def call(tool: str, arguments: dict[str, Any]) -> Any:
            return gate.call(tool, arguments, timeout)

        for info in self.state.tools:
            kept = old.get(info.registered_name)
            if (
                kept is not None
                and kept.info == info
                and kept.call_timeout_s == timeout
                and kept.scrubber is self._scrubber
            ):
                fresh[info.registered_name] = kept
            else:
                fresh[info.registered_name] = McpTool(
                    info,
                    server=self.config.name,
                    call=call,
                    call_timeout_s=self.config.call_timeout_s,
                    scrubber=self._scrubber,
                )
        self._tools = fresh

    def _publish(self) -> None:
        state = self.state
        link = self._link
        if state.state == "connected" and state.offered and link is not None:
            self._gate.open(link, self._generation)
        else:
            self._gate.close(str(self._unavailable()))
        if self._removed:
            return
        self.directory.publish(
            ServerView(
                name=self.config.name,
                state=state.state,
                available=self._gate.is_open,
                tools=tuple(self._tools.values()),
                agent_grants=dict(state.agent_grants),
                user_grants=dict(state.user_grants),
                scrubber=self._scrubber,
            )
        )

    # -- hub plumbing -------------------------------------------------------------------
    def _schedule(self, message: Message, delay: float) -> None:
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, message)

    def _close_link(self) -> None:
        link, self._link = self._link, None
        self._checking = False
        if link is None:
            return
        self._closing = [f for f in self._closing if not f.done()]
        with contextlib.suppress(HubError):
            self._closing.append(self.runtime.hub.submit(link.close()))

    def on_stop(self) -> None:
        if self._start_error is None and not self._given_up:
            try:
                events = self._disconnect_events("stopped")
                if events:
                    self.emit(events)
            except Exception as exc:  # the store may be closing already
                self.log.warning("could not record the disconnection", error=str(exc))
        self._close_link()  # calls in flight fail with "connection lost"
        self._gate.close(f"the MCP connection {self.config.name!r} stopped")
        concurrent.futures.wait(self._closing, timeout=_STOP_WAIT_S)
        if not self._removed and self._start_error is None:
            view = self.directory.views().get(self.config.name)
            if view is not None:
                self.directory.publish(view._replace(state="stopped", available=False))
        super().on_stop()


def _lost(generation: int, error: McpError) -> LinkLost:
    return LinkLost(generation=generation, error=error)
