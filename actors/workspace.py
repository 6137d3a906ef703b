"""Give agents the workspace tools, ``exec`` and the Docker sandbox through the System.

    async with System.open("app.db") as system:
        async with await AgentWorkspaces.open(system, "workspaces/") as workspaces:
            await workspaces.register_agent(AgentConfig(key="main", kind="open"), model)
            await system.send("main", "u1", "write notes.md", user="telegram:42")

``workspace`` (default: a folder per user, read-only when the sandbox mounts it ``ro``),
``exec_config`` and ``sandbox`` (None: commands run on the host) configure the tools.
Every agent gets the file tools (with their aliases), memory_search / memory_get, exec and
process, run through its tool pipeline like any tool (so their calls, refusals and results
are ``tool.*`` events on the session stream). The workspace is ``{root}/{agent}`` unless
the config names one, with a folder per user inside (``per_user``). Streams the tools
write, beside the actors' own (whose versions their actors hold):

- ``workspace/{agent}``: context files and memory documents (folded back at ``open``);
- ``exec/{agent}/{session}``: background processes (started, output, input, signals, exit)
  and a sandbox that could not be used;
- ``sandbox/{agent}/{session}``: the session's container started and removed.

A session that stops (idle or at close) kills its background processes and removes its
container; :meth:`AgentWorkspaces.aclose` removes everything before the system closes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from clawlog.events import ANY, Event
from clawlog.events.domain.agent import AgentRegistered
from clawlog.events.logging import get_logger
from clawlog.events.streams import exec_stream, sandbox_stream, workspace_stream
from clawlog.tools import Scrubber, Tool, ToolContext
from clawlog.tools.exec import ExecConfig, ProcessRegistry, exec_tools
from clawlog.tools.sandbox import SandboxConfig, SandboxManager
from clawlog.tools.workspace import (
    ContextStore,
    MemoryStore,
    WorkspaceConfig,
    WorkspaceEnv,
    workspace_path,
)
from clawlog.tools.workspace import workspace_tools as file_tools

from .agents.config import AgentConfig, validate_agent_key
from .agents.prompt import PromptBuilder
from .agents.session import SESSION_END_HOOKS
from .errors import ArgumentTypeError, SystemClosed, UnknownAgent
from .providers.base import Model
from .runtime import ActorHandle

if TYPE_CHECKING:
    from .system import System

__all__ = ["SESSION_END_HOOKS", "AgentWorkspaces"]

_log = get_logger(__name__)
_FOLDED = (
    "workspace.context_file_written",
    "workspace.context_file_deleted",
    "workspace.memory_document_written",
    "workspace.memory_document_deleted",
)


class AgentWorkspaces:
    """The workspace, exec and sandbox tools of one System's agents."""

    def __init__(
        self,
        system: System,
        root: str | Path,
        *,
        workspace: WorkspaceConfig | None = None,
        exec_config: ExecConfig | None = None,
        sandbox: SandboxConfig | None = None,
        aliases: bool = True,
    ) -> None:
        for name, value, kind in (
            ("workspace", workspace, WorkspaceConfig),
            ("exec_config", exec_config, ExecConfig),
            ("sandbox", sandbox, SandboxConfig),
        ):
            if value is not None and not isinstance(value, kind):
                problem = f"must be {kind.__name__} or None, not {type(value).__name__}"
                raise ArgumentTypeError(name, problem)
        self.system = system
        self.root = Path(root).resolve()
        self.scrubber = Scrubber()
        scrub = self.scrubber.scrub
        self.context = ContextStore(self._record, stream_for=workspace_stream, scrub=scrub)
        self.memory = MemoryStore(self._record, stream_for=workspace_stream, scrub=scrub)
        # seed 002 §8: with the workspace mounted ro in the sandbox, write and edit are off
        read_only = sandbox is not None and sandbox.workspace_access == "ro"
        config = workspace or WorkspaceConfig(per_user=True, read_only=read_only)
        self.env = WorkspaceEnv(config, context=self.context, memory=self.memory)
        self.exec_config = exec_config or ExecConfig()
        self.sandbox = (
            SandboxManager(sandbox, record=self._record, stream_for=sandbox_stream)
            if sandbox is not None
            else None
        )
        self.processes = ProcessRegistry(
            self._record,
            scrub=scrub,
            max_per_session=self.exec_config.max_processes_per_session,
            stream_for=_exec_stream,
        )
        self.tools: list[Tool] = [
            *file_tools(self.env, aliases=aliases),
            *exec_tools(
                self.exec_config,
                workspace=self.env,
                sandbox=self.sandbox,
                processes=self.processes,
                record=self._record,
            ),
        ]
        self._closed = False

    @classmethod
    async def open(cls, system: System, root: str | Path, **options: Any) -> AgentWorkspaces:
        """Build the tools and fold the context files and memory documents already in
        the log; session ends release their processes and containers from now on.

        Raises:
            ArgumentTypeError: (a TypeError) ``workspace``, ``exec_config`` or ``sandbox``
                of the wrong type.
            TypeError: an unknown option, or a ``root`` that is not a path.
            SystemClosed: the System is closed or closing.
            EventStoreError: the log could not be read.
        """
        if system.closed or system.runtime.closing:
            raise SystemClosed("the System is closed")
        workspaces = cls(system, root, **options)
        await workspaces._load()
        hooks = system.runtime.services.setdefault(SESSION_END_HOOKS, [])
        hooks.append(workspaces._session_ended)
        return workspaces

    async def _load(self) -> None:
        position = 1
        while True:
            page = await self.system.store.read_all(
                position, 1000, stream_prefix=workspace_stream(""), types=list(_FOLDED)
            )
            for recorded in page:
                if isinstance(recorded.event, Event):
                    self.context.apply(recorded.event)
                    self.memory.apply(recorded.event)
            if len(page) < 1000:
                return
            position = page[-1].position + 1

    async def register_agent(
        self,
        config: AgentConfig,
        model: Model,
        *,
        tools: Sequence[Any] = (),
        **options: Any,
    ) -> ActorHandle[Any]:
        """``system.register_agent`` with the workspace tools added, the workspace set
        (``{root}/{key}`` unless ``config.workspace`` names one) and the context store
        feeding the agent's system prompt.

        Raises:
            ArgumentTypeError: (a TypeError) ``config`` is not an :class:`AgentConfig`.
            Exception: everything :meth:`System.register_agent` raises.
        """
        if not isinstance(config, AgentConfig):
            problem = f"must be a clawlog.AgentConfig, not {type(config).__name__}"
            raise ArgumentTypeError("config", problem)
        if config.workspace is None:
            config = msgspec.structs.replace(config, workspace=str(self.root / config.key))
        self.context.apply(AgentRegistered(key=config.key, config=msgspec.to_builtins(config)))
        prompts = self.system.runtime.services.setdefault("prompts", {})
        builder = prompts.setdefault(config.key, PromptBuilder(self.context))
        if builder._context is None:  # made earlier (a team or link added a section)
            builder._context = self.context
        return await self.system.register_agent(
            config, model, tools=[*self.tools, *tools], **options
        )

    def workspace_path(self, agent: str, user: str = "") -> Path:
        """The directory where the file and exec tools of ``agent`` work for ``user``
        (``""``: calls without a user): ``{workspace}/users/{user}`` with per-user
        workspaces (the default), else the agent's workspace. Computed as the tools compute
        it; the directory is created by the first tool call that uses it.

        Raises:
            TypeError: ``user`` is not a str.
            ValueError: ``agent`` is not a valid agent key, or the agent was registered
                without a workspace (not through :meth:`register_agent`).
            UnknownAgent: (an ActorDead) ``agent`` is not registered with the System.
        """
        validate_agent_key(agent)
        if not isinstance(user, str):
            raise TypeError(f"user must be a str, not {type(user).__name__}")
        configs: dict[str, AgentConfig] = self.system.runtime.services.get("agent_configs", {})
        config = configs.get(agent)
        if config is None:
            raise UnknownAgent(agent, list(configs))
        if config.workspace is None:
            raise ValueError(
                f"agent {agent!r} has no workspace: register it with "
                "AgentWorkspaces.register_agent() or set AgentConfig.workspace"
            )
        return workspace_path(config.workspace, user, self.env.config)

    # -- the record port ----------------------------------------------------------------
    async def _record(self, stream: str, events: Sequence[Event]) -> object:
        """Append to a stream no actor owns; durable when it returns. Called on the hub
        (tools run there) or on the application's loop."""
        return await self.system.store.append(stream, list(events), expected_version=ANY)

    # -- lifecycle ----------------------------------------------------------------------
    def _session_ended(self, agent: str, session_key: str) -> None:
        """From a stopping Session's thread: kill its processes, remove its container."""
        if self._closed:
            return
        ctx = ToolContext(agent=agent, session_key=session_key)
        with contextlib.suppress(Exception):
            self.system.runtime.hub.submit(self._release(ctx))

    async def _release(self, ctx: ToolContext) -> None:
        try:
            await self.processes.close_session(ctx.session_id)
            if self.sandbox is not None:
                await self.sandbox.release(ctx.effective_sandbox_key)
        except Exception as exc:
            _log.warning("session resources not released", session=ctx.session_id, error=str(exc))

    async def aclose(self) -> None:
        """Kill every background process and remove every container. Safe twice. Call it
        before the System closes (``async with`` in that order does).

        Raises:
            HubError: the System was closed first; its hub no longer runs anything.
        """
        if self._closed:
            return
        self._closed = True
        hooks = self.system.runtime.services.get(SESSION_END_HOOKS, [])
        with contextlib.suppress(ValueError):
            hooks.remove(self._session_ended)
        hub = self.system.runtime.hub
        await hub.run_async(self.processes.aclose())
        if self.sandbox is not None:
            await hub.run_async(self.sandbox.aclose())
        self.memory.close()

    async def __aenter__(self) -> AgentWorkspaces:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _exec_stream(ctx: ToolContext) -> str:
    return exec_stream(ctx.agent, ctx.session_key)
