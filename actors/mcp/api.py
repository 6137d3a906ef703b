"""The MCP part of the System API.

    servers = mcp_servers(system)            # one per System
    await servers.add(McpServerConfig(name="everything", command="node", args=[...]))
    await servers.grant_agent("everything", "main")
    await system.register_agent(config, model, gateway=servers.gateway(config))

Every method is a coroutine safe to call from the embedding application's loop; the
servers' actors do the work and record it on ``mcp/{server}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from clawlog.events.domain.mcp import McpGrantScope, McpToolInfo
from clawlog.events.streams import mcp_stream
from clawlog.events.telemetry import context_carrier
from clawlog.tools import ToolResult

from .._bridge import run_in_thread
from ..agents.pipeline_gateway import PipelineGateway
from ..errors import ActorDead, McpConfigError, McpUnavailable
from ..runtime import ActorHandle
from .config import McpServerConfig, load_servers_file
from .connection import McpConnection
from .gateway import McpGateway
from .grants import AccessRequest, AccessRequestStatus
from .messages import (
    CallTool,
    GetAccessRequests,
    GetStatus,
    ReconfigureServer,
    Reconnect,
    RemoveServer,
    RequestAccess,
    ReviewAccess,
    RevokeGrant,
    SetEnabled,
    SetGrant,
)
from .state import McpServerStatus
from .tool import McpTool
from .views import ServerViews, Views

if TYPE_CHECKING:
    from ..actor import EventSourcedActor
    from ..agents.config import AgentConfig
    from ..agents.gateway import ToolGateway
    from ..runtime import Runtime
    from ..supervision import SupervisionPolicy

__all__ = ["McpHost", "McpServers", "mcp_servers"]

_SERVICE = "mcp"


class McpHost(Protocol):
    """What :class:`McpServers` uses of its :class:`actors.system.System`: a protocol, so
    this module does not import actors.system, which imports it lazily for ``System.mcp``."""

    runtime: Runtime

    def actor(self, path: str) -> ActorHandle[Any] | None: ...

    async def spawn(
        self,
        cls: type[EventSourcedActor[Any]],
        path: str,
        *args: Any,
        policy: SupervisionPolicy | None = None,
        **kwargs: Any,
    ) -> ActorHandle[Any]: ...

    def default_gateway(
        self, config: AgentConfig, extra_tools: Sequence[Any] = ()
    ) -> ToolGateway: ...


def mcp_servers(system: McpHost) -> McpServers:
    """The MCP servers of ``system`` (created on first use; never raises)."""
    found = system.runtime.services.get(_SERVICE)
    if found is None:
        found = system.runtime.services[_SERVICE] = McpServers(system)
    return found  # type: ignore[no-any-return]


class McpServers:
    """Configure servers, grant them, and hand their tools to agents.

    Every coroutine here that reaches a server's actor can also raise what
    :meth:`System.ask` raises (listed in each as ``AskTimeout, ActorUnavailable``).
    """

    def __init__(self, system: McpHost) -> None:
        self.system = system
        self.views = ServerViews()

    # -- servers ------------------------------------------------------------------------
    async def add(self, config: McpServerConfig, *, source: str = "api") -> ActorHandle[Any]:
        """Start the server's connection (or reconfigure a running one). Returns at once:
        connecting happens in the background (see :meth:`wait_connected`).

        Raises:
            TypeError: ``config`` is not an :class:`McpServerConfig`.
            SystemClosed: the System is closed or closing.
            StreamOwnedElsewhere: another process runs this server (owns ``mcp/{name}``).
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        if not isinstance(config, McpServerConfig):
            raise TypeError("config must be an actors.mcp.McpServerConfig")
        running = self.system.actor(mcp_stream(config.name))
        if running is not None and running.is_alive():
            await running.ask(ReconfigureServer(config=config, source=source))
            return running
        return await self.system.spawn(
            McpConnection,
            mcp_stream(config.name),
            config=config,
            views=self.views,
            source=source,
        )

    async def load_file(self, path: str | Path) -> list[str]:
        """Add every server of an ``mcp-servers.json``; returns their names.

        Raises:
            McpConfigError: the file cannot be read, is not JSON, or an entry is invalid
                (nothing was added then).
            SystemClosed, StreamOwnedElsewhere: as :meth:`add`.
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        configs = load_servers_file(path)
        for config in configs:
            await self.add(config, source=str(path))
        return [c.name for c in configs]

    async def remove(self, server: str, *, by: str = "") -> bool:
        """Withdraw the server's tools, record the removal, stop its connection. False if
        no server of that name runs.

        Raises:
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        handle = self._find(server)
        if handle is None:
            return False
        await handle.ask(RemoveServer(by=by))
        await run_in_thread(handle.stop, name="clawlog-mcp-remove")
        return True

    async def reconnect(self, server: str, *, by: str = "") -> bool:
        """Connect again from attempt 1 (also after ``failed``).

        Raises:
            ActorDead: no server of that name was added (or it was removed).
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        return await self._server(server).ask(Reconnect(by=by))  # type: ignore[no-any-return]

    async def set_enabled(self, server: str, enabled: bool, *, by: str = "") -> bool:
        """Disable (tools withdrawn, disconnected) or enable (connect) a server.

        Raises:
            ActorDead: no server of that name was added (or it was removed).
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        request = SetEnabled(enabled=enabled, by=by)
        return await self._server(server).ask(request)  # type: ignore[no-any-return]

    async def status(self, server: str | None = None) -> list[McpServerStatus]:
        """Live status of one server or of all (state, tools offered, last error...).

        Raises:
            ActorDead: ``server`` names no running server.
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        names = [server] if server is not None else sorted(self.views.snapshot())
        found = []
        for name in names:
            handle = self._server(name) if server is not None else self._find(name)
            if handle is not None and handle.is_alive():
                found.append(await handle.ask(GetStatus()))
        return found

    def names(self) -> list[str]:
        """The servers added in this process (removed ones excluded; never raises)."""
        return sorted(self.views.snapshot())

    async def wait_connected(self, server: str, timeout: float = 30.0) -> None:
        """Return once ``server``'s tools are offered.

        Raises:
            TimeoutError: they were not offered within ``timeout`` seconds.
        """
        await self.wait_until(lambda views: _up(views, server), timeout)

    async def wait_until(self, predicate: Any, timeout: float = 30.0) -> None:
        """Wait for ``predicate(views)`` over the published server views.

        Raises:
            TimeoutError: it did not hold within ``timeout`` seconds.
            Exception: what ``predicate`` raises, unchanged.
        """
        await self.views.wait_until(predicate, timeout)

    # -- tools --------------------------------------------------------------------------
    def tools_for(self, agent: str, user: str = "") -> list[McpTool]:
        """The MCP tools ``agent`` may use when acting for ``user``, right now (never
        raises)."""
        return list(self.views.tools_for(agent, user))

    def gateway(self, config: AgentConfig, tools: Sequence[Any] = ()) -> McpGateway:
        """The agent's tool gateway (:meth:`System.default_gateway`) plus its MCP tools.

        Raises:
            DuplicateTool, ProtectedName: (``tools.RegistryError``) two of ``tools``, or one
                and a built-in, share a name.
            InvalidSchema: a tool's parameters are not a JSON Schema that compiles.
            TypeError: an item of ``tools`` is not a ``tools.Tool``.
            ValueError: a tool's name is not letters, digits, ``_`` and ``-``.
        """
        base = self.system.default_gateway(config, tools)
        if not isinstance(base, PipelineGateway):
            raise TypeError("the System's default gateway is not a PipelineGateway")
        return McpGateway.wrap(base, self.views)

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any] | None = None
    ) -> ToolResult:
        """Call a server's tool directly (no agent, no pipeline): for operators and tests.

        Raises:
            ActorDead: no server of that name was added (or it was removed).
            McpUnavailable: the server is down, reconnecting, failed or disabled (not sent).
            McpConnectionLost: the connection broke while the call was in flight.
            McpCallTimeout: the call ran into its deadline.
            McpProtocolError: the server answered with a JSON-RPC error.
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        handle = self._server(server)
        call = CallTool(tool=tool, arguments=dict(arguments or {}), trace_context=context_carrier())
        result = await handle.ask(call)
        view = self.views.snapshot().get(server)
        found = next((t for t in view.tools if t.remote_name == tool), None) if view else None
        if found is None:  # not listed (yet)
            info = McpToolInfo(name=tool, registered_name=tool)
            scrubber = view.scrubber if view else None
            found = McpTool(
                info, server=server, call=_no_call, call_timeout_s=0.0, scrubber=scrubber
            )
        return found.to_result(result)

    # -- grants and access requests -----------------------------------------------------
    async def grant_agent(
        self,
        server: str,
        agent: str,
        *,
        tool_allow: Sequence[str] | None = None,
        tool_deny: Sequence[str] = (),
        enabled: bool = True,
        by: str = "",
    ) -> None:
        """Let ``agent`` (``*``: every agent) use ``server``'s tools.

        Raises:
            ActorDead: no server of that name was added (or it was removed).
            McpAccessError: ``agent`` is not a valid agent key (nor ``*``).
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        await self._grant("agent", server, agent, tool_allow, tool_deny, enabled, by)

    async def grant_user(
        self,
        server: str,
        user: str,
        *,
        tool_allow: Sequence[str] | None = None,
        tool_deny: Sequence[str] = (),
        enabled: bool = True,
        by: str = "",
    ) -> None:
        """Narrow (or with ``enabled=False`` hide) ``server`` for ``user``.

        Raises:
            ActorDead: no server of that name was added (or it was removed).
            McpAccessError: ``user`` is empty or longer than the limit.
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        await self._grant("user", server, user, tool_allow, tool_deny, enabled, by)

    async def revoke_agent(self, server: str, agent: str, *, by: str = "") -> bool:
        """Remove ``agent``'s grant; False if it had none.

        Raises:
            ActorDead: no server of that name was added (or it was removed).
            McpAccessError: ``agent`` is not a valid agent key (nor ``*``).
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        request = RevokeGrant(scope="agent", subject=agent, by=by)
        return await self._server(server).ask(request)  # type: ignore[no-any-return]

    async def revoke_user(self, server: str, user: str, *, by: str = "") -> bool:
        """Remove ``user``'s grant; False if they had none.

        Raises:
            ActorDead: no server of that name was added (or it was removed).
            McpAccessError: ``user`` is empty or longer than the limit.
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        request = RevokeGrant(scope="user", subject=user, by=by)
        return await self._server(server).ask(request)  # type: ignore[no-any-return]

    async def request_access(
        self,
        server: str,
        *,
        agent: str | None = None,
        user: str | None = None,
        tool_allow: Sequence[str] | None = None,
        reason: str = "",
        by: str = "",
    ) -> str:
        """Ask for a grant for one agent or one user; returns the request id.

        Raises:
            McpConfigError: neither or both of ``agent`` and ``user`` were given.
            ActorDead: no server of that name was added (or it was removed).
            McpAccessError: the agent key or user id is invalid, or ``*``.
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        if (agent is None) == (user is None):
            raise McpConfigError("request access for exactly one of agent= or user=")
        request = RequestAccess(
            scope="agent" if agent is not None else "user",
            subject=agent if agent is not None else str(user),
            tool_allow=list(tool_allow) if tool_allow is not None else None,
            reason=reason,
            requested_by=by,
        )
        return await self._server(server).ask(request)  # type: ignore[no-any-return]

    async def review_access(
        self, server: str, request_id: str, *, approve: bool, by: str = "", note: str = ""
    ) -> AccessRequest:
        """Approve (creating the grant) or reject a pending request.

        Raises:
            ActorDead: no server of that name was added (or it was removed).
            McpAccessError: no such request, or it was already reviewed.
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        request = ReviewAccess(request_id=request_id, approve=approve, by=by, note=note)
        return await self._server(server).ask(request)  # type: ignore[no-any-return]

    async def access_requests(
        self, server: str | None = None, *, status: AccessRequestStatus | None = "pending"
    ) -> list[AccessRequest]:
        """Access requests of one server or of all running ones (``status=None``: all).

        Raises:
            ActorDead: ``server`` names no running server.
            AskTimeout, ActorUnavailable: as :meth:`System.ask` (the server's actor did
                not answer in time, or waits for the event store).
        """
        if server is not None:
            handles = [self._server(server)]
        else:
            handles = [h for h in map(self._find, self.names()) if h is not None and h.is_alive()]
        found: list[AccessRequest] = []
        for handle in handles:
            found += await handle.ask(GetAccessRequests(status=status))
        return found

    async def _grant(
        self,
        scope: McpGrantScope,
        server: str,
        subject: str,
        tool_allow: Sequence[str] | None,
        tool_deny: Sequence[str],
        enabled: bool,
        by: str,
    ) -> None:
        request = SetGrant(
            scope=scope,
            subject=subject,
            enabled=enabled,
            tool_allow=list(tool_allow) if tool_allow is not None else None,
            tool_deny=list(tool_deny),
            by=by,
        )
        await self._server(server).ask(request)

    # -- helpers ------------------------------------------------------------------------
    def _find(self, server: str) -> ActorHandle[Any] | None:
        return self.system.actor(mcp_stream(server))

    def _server(self, server: str) -> ActorHandle[Any]:
        handle = self._find(server)
        if handle is None or not handle.is_alive():
            raise ActorDead(f"unknown MCP server {server!r}: add it with mcp_servers(system).add()")
        return handle


async def _no_call(tool: str, arguments: dict[str, Any]) -> Any:
    raise McpUnavailable(f"{tool} is not a listed tool")


def _up(views: Views, server: str) -> bool:
    view = views.get(server)
    return view is not None and view.available
