"""The McpConnection actor (seed 001 §12): one per server, the single writer of
``mcp/{server}``.

It owns the connection and never waits on the server. Connecting and health pings run
on the I/O hub (:class:`~actors.mcp._client.McpClient`) and come back as ``Piped``
messages. Agents' tool calls go through the actor's direct calls
(:mod:`actors.mcp._direct`), which it opens with the live client and closes whenever it
withdraws the tools; operators' calls (``CallTool``) go through its mailbox. Either way a
call runs on the hub and only a timeout or a lost connection comes back here (as
``CallFailed``: a timeout triggers a health check at once, a lost connection a
reconnect), so status asks, grants and other calls are answered while a call hangs.

Every state change is an event: connecting, connected with its tools, a failed attempt
and the backoff before the next, a call that ran into its deadline, a lost connection
(its tools leave the agents' lists), failed after ``max_attempts``; operators' commands
(reconnect, reconfigure, enable or disable, remove) record what they changed before the
connection is touched; grants and access requests are recorded as asked (a review that
approves a request appends the grant in the same batch as the review, as GoClaw creates
it in the same transaction, so the log never shows one without the other).

``clawlog.mcp.servers`` counts this server in the state it last published, until it stops.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
import uuid
from typing import Any, cast

from clawlog.events import Event
from clawlog.events.domain.mcp import (
    McpAccessRequested,
    McpAccessReviewed,
    McpAgentGrantRevoked,
    McpCallTimedOut,
    McpConnected,
    McpConnectFailed,
    McpConnecting,
    McpDisconnected,
    McpFailed,
    McpReconnectScheduled,
    McpServerConfigured,
    McpServerEnabledChanged,
    McpServerRemoved,
    McpToolsDiscovered,
    McpToolsWithdrawn,
    McpUserGrantRevoked,
)
from clawlog.events.telemetry import METRIC_STATE, instruments, metrics_enabled
from clawlog.tools import Scrubber

from ..actor import DEFERRED, EventSourcedActor
from ..errors import (
    HubError,
    McpAccessError,
    McpCallTimeout,
    McpConfigError,
    McpConnectionLost,
    McpError,
    McpUnavailable,
)
from ..messages import Message, Piped
from ._client import Handshake, McpClient
from ._direct import DirectCalls, answer_on_hub
from .config import McpServerConfig, Transport
from .discovery import discover_tools
from .grants import EVERYONE, AccessRequest, check_subject, grant_event
from .messages import (
    CallFailed,
    CallTool,
    ClientLost,
    GetAccessRequests,
    GetStatus,
    HealthDue,
    ReconfigureServer,
    Reconnect,
    RemoveServer,
    RequestAccess,
    RetryDue,
    ReviewAccess,
    RevokeGrant,
    SetEnabled,
    SetGrant,
)
from .sdk_errors import translate
from .state import McpServerState, McpServerStatus, apply_mcp_event, config_digest
from .tool import McpTool
from .views import ServerView, ServerViews

__all__ = ["McpConnection"]

_STOP_WAIT_S = 15.0


class McpConnection(EventSourcedActor[McpServerState]):
    kind = "mcp"
    snapshot_every = 500

    def __init__(
        self,
        *args: Any,
        config: McpServerConfig,
        views: ServerViews,
        source: str = "api",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.config = config
        self.views = views
        self.source = source
        self._scrubber = Scrubber(config.secrets())
        self._client: McpClient | None = None
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
        self._direct = DirectCalls(self.runtime.hub, self._report_call, starting)
        #: The state this server is counted in by ``clawlog.mcp.servers`` (None: not counted).
        self._counted_state: str | None = None

    # -- fold ---------------------------------------------------------------------------
    def initial_state(self) -> McpServerState:
        return McpServerState()

    def apply(self, state: McpServerState, event: Event) -> McpServerState:
        return apply_mcp_event(state, event, time.time())

    def on_recovered(self, restarted: bool) -> None:
        if restarted:
            self._close_client()  # its calls fail with "connection lost"
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
            case ClientLost(generation=generation, error=error):
                if generation == self._generation and self.state.state == "connected":
                    self._lost("connection_lost", translate(error))
            case RetryDue(generation=generation):
                if generation == self._generation and self.state.state == "reconnecting":
                    self._connect(self.state.attempt)
            case HealthDue(generation=generation, timer=timer):
                if generation == self._generation and timer == self._health_timer:
                    self._check_health()
            case GetStatus():
                client = self._client
                return McpServerStatus.of(self.state, client.in_flight if client else 0)
            case Reconnect(by=by):
                return self._reconnect(f"reconnect requested by {by or 'an operator'}")
            case ReconfigureServer(config=config, source=source):
                return self._reconfigure(config, source)
            case SetEnabled(enabled=enabled, by=by):
                return self._set_enabled(enabled, by)
            case RemoveServer(by=by):
                return self._remove(by)
            case _:
                return self._route_access(message)
        return None

    def _route_access(self, message: Message) -> Any:
        match message:
            case SetGrant():
                return self._set_grant(message)
            case RevokeGrant():
                return self._revoke_grant(message)
            case RequestAccess():
                return self._request_access(message)
            case ReviewAccess():
                return self._review_access(message)
            case GetAccessRequests(status=status):
                found = self.state.requests.values()
                return [r for r in found if status is None or r.status == status]
        return super().handle(message)

    # -- connecting ---------------------------------------------------------------------
    def _connect(self, attempt: int) -> None:
        self._close_client()
        self._generation += 1
        generation = self._generation
        client = McpClient(
            self.config, on_lost=lambda error: self._tell_self(_client_lost(generation, error))
        )
        self._client = client
        self.emit(
            [
                McpConnecting(
                    server=self.config.name, attempt=attempt, transport=self.config.transport
                )
            ]
        )
        self._attempt_started = time.monotonic()
        self._publish()
        self.pipe(client.open(), "connect", key=str(generation))

    def _connect_done(self, message: Piped) -> None:
        if int(message.key) != self._generation:
            return  # an attempt that was superseded; its client is being closed
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
        self._close_client()
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
        self._close_client()
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

    # -- calls through the mailbox -------------------------------------------------------
    def _call(self, message: CallTool) -> Any:
        reply = self.defer_reply()
        if reply is None:
            return None  # a told call has nobody to answer
        client = self._client
        if self.state.state != "connected" or client is None or client.session is None:
            reply.set_error(self._unavailable())
            return DEFERRED
        generation, tool = self._generation, message.tool

        def report(error: McpError) -> None:  # runs on the hub: only enqueue
            self._report_call(generation, tool, error)

        call = client.call(tool, dict(message.arguments), self.config.call_timeout_s)
        try:
            self.runtime.hub.submit(answer_on_hub(call, reply, report))
        except HubError:
            call.close()
            reply.set_error(McpUnavailable("clawlog is shutting down"))
        return DEFERRED

    def _report_call(self, generation: int, tool: str, error: McpError) -> None:
        """From the hub (either path): only enqueue."""
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
        return McpUnavailable(f"MCP server {self.config.name!r} is {detail}{last}")

    # -- health -------------------------------------------------------------------------
    def _check_health(self) -> None:
        client = self._client
        if self._checking or client is None or self.state.state != "connected":
            return
        self._checking = True
        self.pipe(client.ping(self.config.health_timeout_s), "health", key=str(self._generation))

    def _health_done(self, message: Piped) -> None:
        if int(message.key) != self._generation:
            return  # an old client's ping: the current client's may be in flight
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

    # -- operators' commands ------------------------------------------------------------
    def _reconnect(self, cause: str) -> bool:
        if self._removed:
            raise McpUnavailable(f"MCP server {self.config.name!r} was removed")
        events = self._disconnect_events(cause)
        if not self.state.enabled:
            events.append(McpServerEnabledChanged(server=self.config.name, enabled=True))
        if events:
            self.emit(events)
        self._failed_in_row = 0
        self._connect(1)
        return True

    def _reconfigure(self, config: McpServerConfig, source: str) -> bool:
        if config.name != self.config.name:
            raise McpConfigError("an MCP server's name cannot change; remove it and add another")
        if config == self.config and source == self.source:
            return False
        self._stop_connection("reconfigured")  # the old connection, under the old config
        self.config, self.source = config, source
        self._scrubber = Scrubber(config.secrets())
        self._record_config()
        if self.state.enabled:
            self._failed_in_row = 0
            self._connect(1)
        else:
            self._publish()
        return True

    def _set_enabled(self, enabled: bool, by: str) -> bool:
        if enabled == self.state.enabled:
            return False
        if enabled:
            self.emit([McpServerEnabledChanged(server=self.config.name, enabled=True, by=by)])
            self._failed_in_row = 0
            self._connect(1)
        else:
            self._stop_connection(
                "disabled", McpServerEnabledChanged(server=self.config.name, enabled=False, by=by)
            )
        return True

    def _remove(self, by: str) -> bool:
        self._stop_connection("removed", McpServerRemoved(server=self.config.name, by=by))
        self._removed = True
        self.views.withdraw(self.config.name)
        return True

    def _stop_connection(self, cause: str, last: Event | None = None) -> None:
        self._close_client()
        self._generation += 1  # timers and results of the old connection are stale now
        events = self._disconnect_events(cause) + ([last] if last is not None else [])
        if events:
            self.emit(events)
        self._publish()

    # -- grants and access requests -----------------------------------------------------
    def _set_grant(self, message: SetGrant) -> bool:
        subject = check_subject(message.scope, message.subject)
        event = grant_event(
            self.config.name,
            message.scope,
            subject,
            enabled=message.enabled,
            tool_allow=message.tool_allow,
            tool_deny=list(message.tool_deny),
            by=message.by,
        )
        self.emit([event])
        self._publish()
        return True

    def _revoke_grant(self, message: RevokeGrant) -> bool:
        subject = check_subject(message.scope, message.subject)
        grants = self.state.agent_grants if message.scope == "agent" else self.state.user_grants
        if subject not in grants:
            return False
        server = self.config.name
        event: Event = (
            McpAgentGrantRevoked(server=server, agent=subject, by=message.by)
            if message.scope == "agent"
            else McpUserGrantRevoked(server=server, user=subject, by=message.by)
        )
        self.emit([event])
        self._publish()
        return True

    def _request_access(self, message: RequestAccess) -> str:
        subject = check_subject(message.scope, message.subject)
        if subject == EVERYONE:
            raise McpAccessError("an access request is for one agent or one user, not '*'")
        request_id = uuid.uuid4().hex[:12]
        self.emit(
            [
                McpAccessRequested(
                    server=self.config.name,
                    request_id=request_id,
                    scope=message.scope,
                    subject=subject,
                    tool_allow=message.tool_allow,
                    reason=message.reason[:2000],
                    requested_by=message.requested_by,
                )
            ]
        )
        return request_id

    def _review_access(self, message: ReviewAccess) -> AccessRequest:
        request = self.state.requests.get(message.request_id)
        if request is None:
            raise McpAccessError(
                f"no access request {message.request_id!r} on MCP server {self.config.name!r}"
            )
        if request.status != "pending":
            raise McpAccessError(
                f"access request {message.request_id!r} was already {request.status} by "
                f"{request.reviewed_by or 'someone'}"
            )
        events: list[Event] = [
            McpAccessReviewed(
                server=self.config.name,
                request_id=request.request_id,
                decision="approved" if message.approve else "rejected",
                by=message.by,
                note=message.note[:2000],
            )
        ]
        if message.approve:
            events.append(
                grant_event(
                    self.config.name,
                    request.scope,
                    request.subject,
                    tool_allow=request.tool_allow,
                    by=message.by,
                    request_id=request.request_id,
                )
            )
        self.emit(events)
        self._publish()
        return self.state.requests[request.request_id]

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
            # never "" here: McpServerConfig.__post_init__ infers it
            transport=cast("Transport", config.transport),
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
        direct, timeout = self._direct, self.config.call_timeout_s

        def call(tool: str, arguments: dict[str, Any]) -> Any:
            return direct.call(tool, arguments, timeout)

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
        self._count_state(state.state)
        client = self._client
        if state.state == "connected" and state.offered and client is not None:
            self._direct.open(client, self._generation)
        else:
            self._direct.close(str(self._unavailable()))
        if self._removed:
            return
        self.views.publish(
            ServerView(
                name=self.config.name,
                state=state.state,
                available=self._direct.is_open,
                tools=tuple(self._tools.values()),
                agent_grants=dict(state.agent_grants),
                user_grants=dict(state.user_grants),
                scrubber=self._scrubber,
            )
        )

    def _count_state(self, state: str | None) -> None:
        """Move this server to ``state`` in ``clawlog.mcp.servers`` (None: out of it)."""
        counted = self._counted_state
        if state == counted or (counted is None and not metrics_enabled()):
            return
        servers = instruments().mcp_servers
        if counted is not None:
            servers.add(-1, {METRIC_STATE: counted})
        if state is not None:
            servers.add(1, {METRIC_STATE: state})
        self._counted_state = state

    # -- hub plumbing -------------------------------------------------------------------
    def _schedule(self, message: Message, delay: float) -> None:
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, message)

    def _close_client(self) -> None:
        client, self._client = self._client, None
        self._checking = False
        if client is None:
            return
        self._closing = [f for f in self._closing if not f.done()]
        with contextlib.suppress(HubError):
            self._closing.append(self.runtime.hub.submit(client.close()))

    def on_stop(self) -> None:
        if self._start_error is None and not self._given_up:
            try:
                events = self._disconnect_events("stopped")
                if events:
                    self.emit(events)
            except Exception as exc:  # the store may be closing already
                self.log.warning("could not record the disconnection", error=str(exc))
        self._close_client()  # calls in flight fail with "connection lost"
        self._direct.close(f"the MCP connection {self.config.name!r} stopped")
        concurrent.futures.wait(self._closing, timeout=_STOP_WAIT_S)
        if not self._removed and self._start_error is None:
            view = self.views.snapshot().get(self.config.name)
            if view is not None:
                self.views.publish(view._replace(state="stopped", available=False))
        self._count_state(None)
        super().on_stop()


def _client_lost(generation: int, error: McpError) -> ClientLost:
    return ClientLost(generation=generation, error=error)
