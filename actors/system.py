"""The System facade: the one object an embedding application holds.

    async with System.open("clawlog.db") as system:
        counter = await system.spawn(Counter, "counter/1")
        total = await counter.ask(Add(amount=2))

``open`` starts the I/O hub, opens the store on it and starts the guardian. ``close``
stops actors top-down (each handles what is already in its mailbox first), flushes and
closes the store, stops the hub, and is idempotent.

The whole public API is this one class, in sections: actors (``spawn``, ``tell``,
``ask``), agents (``register_agent``, ``send``, ``stream``, ``cancel``, ``approve``,
``session_status``...), teams (``create_team``, ``team_board``), delegation
(``link_agents``, ``delegation_directory``), MCP servers (the :attr:`System.mcp`
collaborator, :class:`actors.mcp.McpServers`), custom tools (``define_tool``,
``remove_tool``, ``custom_tools``: :mod:`clawlog.tools.custom`), the outbox and the
lifecycle. The arguments' checks and size limits are in :mod:`actors.boundary`; the
agents, teams and delegation packages hold the actors these calls reach.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Collection, Generator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
import pykka

from clawlog.events import Event, EventStore, StorageBackend, default_registry, open_store
from clawlog.events.domain.agent import HandoffCleared, HandoffRouted
from clawlog.events.domain.delegation import LinkConfigured
from clawlog.events.domain.team import TeamMember
from clawlog.events.domain.tool import ApprovalDecision
from clawlog.events.logging import get_logger
from clawlog.events.store import DEFAULT_MAX_PAYLOAD_BYTES
from clawlog.events.streams import (
    agent_stream,
    guardian_stream,
    handoff_stream,
    link_stream,
    team_stream,
)
from clawlog.events.telemetry import context_carrier
from clawlog.tools.approvals import ApprovalConfig
from clawlog.tools.custom import CustomToolCatalog, CustomToolEntry
from clawlog.tools.errors import CustomToolTypeError, InvalidCustomTool

from ._bridge import AskEnvelope, Hub, run_in_thread
from .actor import EventSourcedActor, launch
from .agents.budgets import Budgets
from .agents.compaction import check_summarizer, keep_summarizer
from .agents.config import AgentConfig, check_tool_choice_offered
from .agents.delta_sink import DeltaSink
from .agents.gateway import CallerContext, ToolGateway
from .agents.handoff import RouteState
from .agents.messages import (
    AnswerApproval,
    CancelTurn,
    ClearSession,
    CompactSession,
    DrainSessions,
    GetSessionStatus,
    SessionStatus,
)
from .agents.metering import check_metering, install_metering, prepare_metering
from .agents.ports import AgentPorts
from .agents.prompt import PromptBuilder
from .agents.remote import RemoteSessions
from .agents.router import Placement, SessionRouter
from .agents.session_state import CompactionInfo
from .agents.streaming import TurnStream
from .agents.supervisor import AgentSupervisor, Reconfigure
from .agents.user_message import user_message
from .automation.api import Routines
from .automation.port import RoutinesPort
from .boundary import (
    Limits,
    check_agent_key,
    check_count,
    check_decision,
    check_flag,
    check_members,
    check_model,
    check_name,
    check_optional,
    check_session_key,
    check_team_id,
    check_timeout,
    check_tools,
    check_users,
)
from .delegation.directory import DelegationDirectory
from .delegation.link import DelegationLink
from .delegation.ports import DelegationPorts
from .errors import (
    ActorDead,
    ArgumentTypeError,
    InvalidArgument,
    SystemClosed,
    UnknownAgent,
)
from .guardian import Adopt, Guardian, RecordDeadLetter
from .hub_store import HubStore
from .internal import AwaitRecovery
from .messages import Message, Request
from .outbox import Outbox
from .ownership import DEFAULT_LEASE_TTL_S
from .providers.base import ContentPart, Model
from .providers.catalog import ModelCatalog
from .runtime import ActorHandle, Runtime
from .supervision import SupervisionPolicy
from .teams.messages import GetBoard, TeamView
from .teams.prompt import team_md
from .teams.team import Team
from .timers.clock import Clock

if TYPE_CHECKING:
    from .mcp.api import McpServers

__all__ = ["System"]

A = TypeVar("A", bound=EventSourcedActor[Any])
R = TypeVar("R")
_log = get_logger(__name__)


class System:
    """A running clawlog: hub, store, guardian and the actors under it."""

    #: Seconds ``send`` waits for a turn to finish unless told otherwise.
    turn_timeout: float = 600.0

    def __init__(self, runtime: Runtime, guardian: ActorHandle[Any]) -> None:
        self.runtime = runtime
        self.guardian = guardian
        self.store = HubStore(runtime.hub, runtime.store)
        self.escalations: list[tuple[str, str]] = []
        self._routines = Routines(self._agent, lambda: self.limits)
        self._closed = False
        self._closing: asyncio.Future[None] | None = None

    @classmethod
    def open(
        cls,
        location: str | Path | StorageBackend,
        *,
        policy: SupervisionPolicy | None = None,
        ask_timeout: float = 30.0,
        event_types: Sequence[type[Event]] = (),
        approvals: ApprovalConfig | None = None,
        limits: Limits | None = None,
        model_catalog: ModelCatalog | None = None,
        budgets: Budgets | None = None,
        clock: Clock | None = None,
        placement: Placement | None = None,
        lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
        **store_options: Any,
    ) -> _Opener:
        """Open a System on an SQLite path, ``memory:``, a ``postgresql://`` URL or an
        unopened backend. Use ``async with System.open(...)`` or ``await System.open(...)``.

        ``event_types`` registers the application's own event classes beside clawlog's.
        ``approvals`` is the System-wide approval configuration of tool calls (security and
        ask modes, the approval timeout, safe bins); an agent whose
        :attr:`AgentConfig.approvals` is set uses its own instead. Default:
        ``ApprovalConfig()`` (security=full, ask=on-miss, 120 s).
        ``limits`` are the sizes the public calls accept (:class:`actors.boundary.Limits`:
        a message's bytes, a name's characters, a tool result's characters); opening fails
        if they do not fit the store's event limit. Default: ``Limits()``, its message
        limit lowered to fit a store opened with a smaller ``max_payload_bytes``.
        ``model_catalog`` holds the models' context windows and prices (the estimated cost
        recorded with each model reply); default: ``ModelCatalog.default()``.
        ``budgets`` are the token and cost budgets of every agent whose
        :attr:`AgentConfig.budgets` is not set (actors.agents.budgets); default: none.
        ``clock`` is the time durable timers are set and fire by (approval timeouts,
        delegation deadlines, cron jobs, heartbeats, routines: :mod:`actors.timers`);
        default: real time. A :class:`~actors.timers.ManualClock` moves only when told.
        ``placement`` (:class:`~actors.agents.router.Placement`) and ``lease_ttl_s``
        matter on a log several processes share (PostgreSQL): which agents' and sessions'
        streams this process takes the lease of, and how long a lease lasts when its
        owner stops renewing it before another process takes the stream over (default
        30 s). A message for a session another process serves reaches it through the log.

        Raises:
            ArgumentTypeError: (a TypeError) ``approvals``, ``limits``, ``model_catalog`` or
                ``budgets`` of the wrong type;
                raised by the call itself, before anything opens.
            InvalidArgument: (a ValueError) ``limits`` that do not fit the store's event
                limit; raised by the call itself.
            TypeError: ``location`` is an opened :class:`EventStore`; raised by the call
                itself. Awaiting it also raises TypeError for an unknown store option.
            ValueError: ``location`` is not a store location (``""``, an http URL).
            NotAClawlogDatabase: the file or database is something else.
            StoreLocked: another process holds the write lock of this SQLite file.
            StoreUnavailable: the PostgreSQL server cannot be reached; the SQLite file cannot
                be read (permissions, a full disk, an I/O error).
            StoreDamaged: the log is a damaged clawlog log (a missing table or column, a
                truncated file); ``clawlog doctor`` lists what is wrong.
            EventStoreError: the store cannot be opened otherwise (a folder, no permission).
            MissingDependency: a ``postgresql://`` URL without the ``postgres`` extra (an
                ``ImportError`` too; the message says what to install).
        """
        check_optional(placement, Placement, "placement", "clawlog Placement")
        check_optional(clock, Clock, "clock", "clawlog Clock (now, subscribe)")
        check_optional(limits, Limits, "limits", "clawlog.actors.Limits")
        check_optional(approvals, ApprovalConfig, "approvals", "clawlog.ApprovalConfig")
        if (
            isinstance(lease_ttl_s, bool)
            or not isinstance(lease_ttl_s, int | float)
            or not (1.0 <= lease_ttl_s <= 3600.0)
        ):
            raise InvalidArgument("lease_ttl_s", f"must be 1 to 3600 seconds, not {lease_ttl_s!r}")
        check_metering(model_catalog, budgets)
        if event_types:
            registry = store_options.setdefault("registry", default_registry())
            registry.register(*event_types)
        if isinstance(location, EventStore):
            raise TypeError(
                "pass the store's location or an unopened backend: the System opens the "
                "store on its own I/O hub loop"
            )
        limits = (limits or Limits()).fitted(
            store_options.get("max_payload_bytes", DEFAULT_MAX_PAYLOAD_BYTES),
            given=limits is not None,
        )
        scale_out = _ScaleOut(placement, float(lease_ttl_s))
        starting = cls._start(
            location, policy, ask_timeout, approvals, limits, clock, scale_out, store_options
        )
        return _Opener(install_metering(starting, model_catalog, budgets))

    @classmethod
    async def _start(
        cls,
        location: str | Path | StorageBackend,
        policy: SupervisionPolicy | None,
        ask_timeout: float,
        approvals: ApprovalConfig | None,
        limits: Limits,
        clock: Clock | None,
        scale_out: _ScaleOut,
        store_options: dict[str, Any],
    ) -> System:
        hub = Hub()
        hub.start()
        try:
            store = await hub.run_async(open_store(location, **store_options))
        except BaseException:
            hub.stop()
            raise
        runtime = Runtime(hub, store, ask_timeout=ask_timeout, default_policy=policy, clock=clock)
        runtime.ownership.ttl_s = scale_out.lease_ttl_s
        await hub.run_async(runtime.ownership.start())
        await hub.run_async(runtime.timers.start())
        escalations: list[tuple[str, str]] = []
        guardian = launch(
            runtime,
            Guardian,
            guardian_stream(runtime.ownership.owner if runtime.ownership.enabled else ""),
            None,
            None,
            on_escalation=lambda path, reason: escalations.append((path, reason)),
        )
        system = cls(runtime, guardian)
        runtime.services["runtime"] = runtime
        runtime.services["approval_config"] = approvals or ApprovalConfig()
        runtime.services["limits"] = limits
        runtime.services["agents"] = AgentPorts(runtime, guardian)
        runtime.services["delegation"] = DelegationPorts(runtime, system.delegation_directory())
        runtime.services["routines"] = RoutinesPort()
        if runtime.ownership.enabled:  # a log several processes share
            router = SessionRouter(runtime, scale_out.placement)
            runtime.services["router"] = router
            runtime.services["remote"] = RemoteSessions(runtime, router)
        system.escalations = escalations
        runtime.dead_letter_sink = system._record_dead_letter
        try:
            await guardian.ask(AwaitRecovery())
            if "router" in runtime.services:
                await hub.run_async(runtime.services["router"].start())
            custom_tools = CustomToolCatalog(system.store)
            await custom_tools.load()  # before any agent registers: each gets its tools
            runtime.services["custom_tools"] = custom_tools
        except BaseException:
            await system.close()
            raise
        _log.info("system open", location=str(location))
        return system

    # -- actors -------------------------------------------------------------------------
    async def spawn(
        self,
        cls: type[A],
        path: str,
        *args: Any,
        policy: SupervisionPolicy | None = None,
        **kwargs: Any,
    ) -> ActorHandle[Any]:
        """Start a top-level actor under the guardian; returns once it has recovered.

        Raises:
            SystemClosed: the System is closed or closing.
            InvalidAppend: ``path`` is not a valid stream name.
            ValueError: an actor is already running for ``path``.
            StreamOwnedElsewhere: another process owns the stream ``path``.
            ActorUnavailable: the event store cannot be reached.
            AskTimeout: the actor did not recover within the System's ``ask_timeout``.
            Exception: what ``cls(...)`` raises for the given arguments, unchanged.
        """
        self._check_open()
        handle = launch(self.runtime, cls, path, self.guardian, policy, *args, **kwargs)
        self.guardian.tell(Adopt(handle=handle))
        await handle.ask(AwaitRecovery())
        return handle

    def registered_agents(self) -> list[str]:
        """The keys of the agents registered and running, sorted. Never raises."""
        configs: dict[str, Any] = self.runtime.services.get("agent_configs", {})
        handles = {key: self.actor(agent_stream(key)) for key in configs}
        return sorted(key for key, h in handles.items() if h is not None and h.is_alive())

    def actor(self, path: str) -> ActorHandle[Any] | None:
        """The running actor for ``path``, if any (never raises)."""
        return self.runtime.lookup(path)

    def tell(self, target: ActorHandle[Any] | str, message: Message) -> None:
        """Send ``message`` without waiting; to a stopped actor it becomes a dead letter.

        Raises:
            SystemClosed: the System is closed or closing.
            ActorDead: no actor is running for the path ``target``.
        """
        self._resolve(target).tell(message)

    async def ask(
        self, target: ActorHandle[Any] | str, request: Request[R], timeout: float | None = None
    ) -> R:
        """Send ``request`` and wait for the actor's answer (``timeout``: the System's
        ``ask_timeout`` when None).

        Raises:
            SystemClosed: the System is closed or closing.
            ActorDead: no actor is running for ``target``, or it stopped.
            AskTimeout: no answer within the timeout (the request may still be handled).
            Rejected: the actor refused the request; its state is unchanged.
            ActorCrashed: the actor's handler raised; the actor restarts from its stream.
            ActorUnavailable: the actor is waiting for the event store.
            Escalated: the actor gave up after failing too often.
        """
        return await self._resolve(target).ask(request, timeout)  # type: ignore[no-any-return]

    def _resolve(self, target: ActorHandle[Any] | str) -> ActorHandle[Any]:
        self._check_open()
        if isinstance(target, ActorHandle):
            return target
        handle = self.runtime.lookup(target)
        if handle is None:
            self.runtime.dead_letter(target, None, "no such actor")
            raise ActorDead(f"no actor is running for {target!r}")
        return handle

    def _record_dead_letter(self, path: str, message: object, reason: str) -> None:
        record = RecordDeadLetter(path=path, message_type=type(message).__name__, reason=reason)
        # The guardian itself may be gone (shutdown): the runtime has logged the letter.
        with contextlib.suppress(pykka.ActorDeadError):
            self.guardian.ref.tell(record)

    # -- agents -------------------------------------------------------------------------
    async def register_agent(
        self,
        config: AgentConfig,
        model: Model,
        *,
        tools: Sequence[Any] = (),
        gateway: ToolGateway | None = None,
        prompt: PromptBuilder | None = None,
        summarizer: Model | None = None,
    ) -> ActorHandle[Any]:
        """Register (or reconfigure) an agent. Its config is recorded on ``agent/{key}``.

        ``tools`` adds ``tools.Tool`` objects (file tools, exec, MCP...) to the built-ins.
        ``summarizer`` writes the summaries of compacted conversations (a smaller, cheaper
        model); default: ``model`` (actors.agents.compaction).

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError: (a TypeError) ``config`` is no :class:`AgentConfig`,
                ``model`` or ``summarizer`` no :class:`Model`, or ``tools`` no list.
            TypeError, ValueError, DuplicateTool, ProtectedName, InvalidSchema: a tool in
                ``tools`` is no ``tools.Tool``, has an invalid or taken name, or a schema
                that does not compile (see :meth:`default_gateway`).
            StreamOwnedElsewhere: another process runs this agent (owns ``agent/{key}``).
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask` (no answer
                in time; the event store is unreachable; the handler failed).
            InvalidArgument: (a ValueError) a budget limits the cost but the model catalog
                has no price for ``model``; ``config.tool_choice`` names a tool the agent
                does not have, or is "required" and it has none.
        """
        self._check_open()
        if not isinstance(config, AgentConfig):
            raise ArgumentTypeError(
                "config", f"must be an actors.agents.AgentConfig, not {type(config).__name__}"
            )
        check_model(model)
        check_summarizer(summarizer)
        check_tools(tools)
        gateway = gateway or self.default_gateway(config, tools)
        check_tool_choice_offered(config, gateway)
        prompt = prompt or self.prompt_for(config.key)
        await prepare_metering(
            config,
            model.name,
            self.runtime.services,
            self.store,
            summarizer=summarizer.name if summarizer is not None else None,
        )
        self.runtime.services.setdefault("agent_configs", {})[config.key] = config
        keep_summarizer(self.runtime.services, config.key, summarizer)
        self.delegation_directory().describe(config)
        running = self.actor(agent_stream(config.key))
        if running is not None and running.is_alive():
            await running.ask(
                Reconfigure(config=config, model=model, gateway=gateway, prompt=prompt)
            )
            return running
        return await self.spawn(
            AgentSupervisor,
            agent_stream(config.key),
            config=config,
            model=model,
            gateway=gateway,
            prompt=prompt,
        )

    def prompt_for(self, agent: str) -> PromptBuilder:
        """The prompt builder of ``agent`` (shared by its sessions; sections can be added).
        Never raises."""
        builders: dict[str, PromptBuilder] = self.runtime.services.setdefault("prompts", {})
        if agent not in builders:
            builders[agent] = PromptBuilder()
        return builders[agent]

    def default_gateway(self, config: AgentConfig, extra_tools: Sequence[Any] = ()) -> ToolGateway:
        """The tool pipeline with clawlog's built-in tools and ``extra_tools``, under the
        agent's tool policy (profile, allow, deny, subagent and leaf deny lists) and approval
        configuration (``config.approvals``, else the System's).

        Raises:
            TypeError: an item of ``extra_tools`` is no ``tools.Tool``.
            ValueError: a tool's name is not letters, digits, ``_`` and ``-``.
            DuplicateTool, ProtectedName: (``tools.RegistryError``) two tools share a name,
                or one takes a built-in's.
            InvalidSchema: a tool's parameters are not a JSON Schema that compiles.
        """
        from clawlog.tools import Tool
        from clawlog.tools.builtins import EchoTool, JsonTool, TimeTool

        from .agents.pipeline_gateway import ActorToolAdapter, PipelineGateway
        from .agents.tools import ACTOR_TOOLS, MessageTool
        from .automation.cron_tool import CronTool
        from .delegation.tools import DELEGATION_TOOLS
        from .teams.tools import TEAM_TOOLS

        services, store = self.runtime.services, self.runtime.store
        actor_tools = (*ACTOR_TOOLS, MessageTool, *TEAM_TOOLS, *DELEGATION_TOOLS, CronTool)
        tools: list[Tool] = [ActorToolAdapter(cls(services, store)) for cls in actor_tools]
        tools += [EchoTool(), TimeTool(), JsonTool(), *extra_tools]
        gateway = PipelineGateway(
            config,
            tools,
            services=services,
            policy=self.runtime.services.get("tool_policy"),
            approvals=config.approvals or self.runtime.services.get("approval_config"),
            max_result_chars=self.limits.max_tool_result_chars,
        )
        self._custom_tools().attach(config.key, gateway.pipeline)
        return gateway

    async def send(
        self,
        agent: str,
        session_key: str,
        text: str,
        *,
        parts: Sequence[ContentPart] | None = None,
        channel: str = "",
        chat_id: str = "",
        user: str = "",
        sender: str = "user",
        timeout: float | None = None,
    ) -> str:
        """Send ``text`` to ``agent`` in ``session_key``; return the turn's reply.

        ``parts`` come with the text, sent to the model after it in order: images
        (``ImagePart``: base64 ``data`` with its ``media_type``, or a ``url``), PDF
        documents (``DocumentPart``) and more text (``TextPart``), from
        ``clawlog.actors.providers``. They are recorded on the turn's start and stay in
        the conversation like the text.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError: (a TypeError) an argument of the wrong type (names it).
            InvalidArgument: (a ValueError) an invalid agent key, session key, empty
                ``text``, a name with control characters or too long, a timeout <= 0; a
                part whose base64 data does not decode or is not its media type, whose URL
                is no http(s) URL or holds a secret, or that the agent's model cannot take
                (nothing is recorded then).
            MessageTooLarge: (an InvalidArgument) ``text``, with ``parts``, is over
                ``Limits.max_message_bytes``.
            UnknownAgent: (an ActorDead) no agent is registered under ``agent``.
            TurnFailedError: the turn ended without a reply (iteration limit, model error).
            TurnCancelledError: the turn was cancelled (:meth:`cancel`).
            AskTimeout: no reply within ``timeout`` (default :attr:`turn_timeout`); the
                turn goes on (stop it with :meth:`cancel`).
            ActorUnavailable, ActorCrashed: as :meth:`System.ask`.
            EventStoreError: with ``channel`` and ``chat_id``, the handoff route could not
                be read.
        """
        self._check_session(agent, session_key)
        where = {"channel": channel, "chat_id": chat_id, "user": user, "sender": sender}
        message = user_message(self.limits, session_key, text, parts, **where)
        timeout = check_timeout(timeout)
        if channel and chat_id:  # a handoff route beats normal routing (seed 001 §10)
            agent = await self.routed_agent(channel, chat_id) or agent
        supervisor = self._agent(agent)
        return await supervisor.ask(message, timeout or self.turn_timeout)  # type: ignore[no-any-return]

    def stream(
        self,
        agent: str,
        session_key: str,
        text: str,
        *,
        parts: Sequence[ContentPart] | None = None,
        channel: str = "",
        chat_id: str = "",
        user: str = "",
        sender: str = "user",
        timeout: float | None = None,
    ) -> TurnStream:
        """The turn :meth:`send` runs, its text read as the model writes it:

            async with system.stream("main", "chat-1", "hi") as turn:
                async for delta in turn:  # TurnDelta(text, iteration)
                    print(delta.text, end="")
            reply = turn.reply

        The log records the same events as for ``send`` (the complete reply, once). The
        turn starts when the stream is entered or first iterated; closing the stream early
        only detaches the reader: the turn goes on and its reply goes to the outbox
        (:mod:`clawlog.actors.agents.streaming`). ``parts`` as for :meth:`send`.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument, MessageTooLarge: an argument as
                :meth:`send` refuses it (raised by this call; nothing was sent), or (while
                iterating, nothing recorded) a part the agent's model cannot take.
            UnknownAgent: (an ActorDead; when the stream is entered or first iterated) no
                agent is registered under ``agent``.
            TurnFailedError: (while iterating, after the text that came before it) the
                turn ended without a reply; a stream cut off mid-reply is a model error
                whose message names ``stream_cut``: the text shown is not a reply.
            TurnCancelledError: (while iterating) the turn was cancelled (:meth:`cancel`).
            AskTimeout: (while iterating) the turn did not end within ``timeout``
                (default :attr:`turn_timeout`, counted from the start); it goes on.
            ActorUnavailable, ActorCrashed, EventStoreError: as :meth:`send`.
        """
        self._check_session(agent, session_key)
        where = {"channel": channel, "chat_id": chat_id, "user": user, "sender": sender}
        turn_id = uuid.uuid4().hex[:16]
        message = user_message(self.limits, session_key, text, parts, turn_id=turn_id, **where)
        timeout = check_timeout(timeout) or self.turn_timeout

        async def start(sink: DeltaSink) -> None:
            target = agent
            if channel and chat_id:
                target = await self.routed_agent(channel, chat_id) or agent
            supervisor = self._agent(target)
            streamed = msgspec.structs.replace(message, deltas=sink)
            try:
                supervisor.ref.tell(AskEnvelope(streamed, sink))
            except pykka.ActorDeadError as exc:
                raise ActorDead(f"{supervisor.path} is not running") from exc

        what = f"the turn {message.turn_id} of {agent}/{session_key}"
        return TurnStream(start, turn_id=message.turn_id, timeout=timeout, what=what)

    async def routed_agent(self, channel: str, chat_id: str) -> str | None:
        """The agent a handoff routed (channel, chat) to, if any.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: ``channel`` or ``chat_id`` is not a
                non-empty name.
            EventStoreError: the route could not be read.
        """
        self._check_open()
        check_name(channel, "channel", self.limits, required=True)
        check_name(chat_id, "chat_id", self.limits, required=True)
        state = RouteState()
        for recorded in await self.store.read_stream(handoff_stream(channel, chat_id)):
            event = recorded.event
            if isinstance(event, HandoffRouted):
                state.agent = event.to_agent
            elif isinstance(event, HandoffCleared):
                state.agent = None
        return state.agent

    async def cancel(self, agent: str, session_key: str, *, by: str = "user") -> bool:
        """Cancel the running turn of a session; False if it had none.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``agent``, ``session_key`` or
                ``by`` (names it).
            UnknownAgent: (an ActorDead) no agent is registered under ``agent``.
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask` (no answer
                in time; the event store is unreachable; the handler failed).
        """
        self._check_session(agent, session_key)
        check_name(by, "by", self.limits, required=True)
        return await self._agent(agent).ask(CancelTurn(session_key=session_key, by=by))  # type: ignore[no-any-return]

    async def approve(
        self,
        agent: str,
        session_key: str,
        call_id: str,
        decision: ApprovalDecision,
        *,
        by: str = "user",
    ) -> bool:
        """Answer a pending approval: ``allow-once``, ``allow-always`` or ``deny``.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``agent``, ``session_key``,
                ``call_id``, ``decision`` or ``by`` (names it).
            UnknownAgent: (an ActorDead) no agent is registered under ``agent``.
            Rejected: no approval is pending for ``call_id`` in that session (answered,
                timed out, or never asked).
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask` (no answer
                in time; the event store is unreachable; the handler failed).
        """
        self._check_session(agent, session_key)
        check_name(call_id, "call_id", self.limits, required=True)
        check_decision(decision)
        check_name(by, "by", self.limits, required=True)
        request = AnswerApproval(session_key=session_key, call_id=call_id, decision=decision, by=by)
        return await self._agent(agent).ask(request)  # type: ignore[no-any-return]

    async def session_status(self, agent: str, session_key: str) -> SessionStatus:
        """What a session is doing (busy, the calls awaiting approval...) and its context:
        the next request's estimated tokens, the window, the tokens used, the last
        compaction (actors.agents.compaction).

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``agent`` or ``session_key``.
            UnknownAgent: (an ActorDead) no agent is registered under ``agent``.
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask` (no answer
                in time; the event store is unreachable; the handler failed).
        """
        self._check_session(agent, session_key)
        return await self._agent(agent).ask(GetSessionStatus(session_key=session_key))  # type: ignore[no-any-return]

    async def compact(
        self, agent: str, session_key: str, *, timeout: float | None = None
    ) -> CompactionInfo | None:
        """Compact a session's conversation now (seed 003's ``/compact``): old tool
        results are pruned and the turns before the agent's last
        ``compaction.keep_recent_turns`` are summarized, whatever the estimate. Recorded
        as ``session.compacted``; returns what it did, or None when there was nothing to
        prune or summarize. ``timeout``: for the summary (default :attr:`turn_timeout`).

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``agent``, ``session_key`` or
                ``timeout``.
            UnknownAgent: (an ActorDead) no agent is registered under ``agent``.
            Rejected: the session is in a turn or already compacting: try again once it
                has ended.
            CompactionFailedError: the summarizer failed (recorded as
                ``session.compaction_failed``); what was pruned stays pruned.
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask` (no answer
                in time; the event store is unreachable; the handler failed).
        """
        self._check_session(agent, session_key)
        timeout = check_timeout(timeout)
        request = CompactSession(session_key=session_key, trace_context=context_carrier())
        return await self._agent(agent).ask(request, timeout or self.turn_timeout)  # type: ignore[no-any-return]

    async def clear(self, agent: str, session_key: str, *, by: str = "user") -> bool:
        """Start a fresh context for a session (seed 003's ``/clear``): its next turn sees
        no earlier message. Recorded as ``session.cleared``; the earlier turns stay in the
        log. False when the conversation was empty already.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``agent``, ``session_key`` or
                ``by``.
            UnknownAgent: (an ActorDead) no agent is registered under ``agent``.
            Rejected: the session is in a turn or compacting: try again once it has ended
                (or cancel the turn).
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask` (no answer
                in time; the event store is unreachable; the handler failed).
        """
        self._check_session(agent, session_key)
        check_name(by, "by", self.limits, required=True)
        return await self._agent(agent).ask(ClearSession(session_key=session_key, by=by))  # type: ignore[no-any-return]

    def _agent(self, agent: str) -> ActorHandle[Any]:
        check_agent_key(agent)
        handle = self.actor(agent_stream(agent))
        if handle is None or not handle.is_alive():
            self._check_open()  # closing stops every agent: that is not an unknown agent
            # Recorded as a dead letter on system/guardian, so the log shows the attempt.
            self.runtime.dead_letter(agent_stream(agent), None, "unknown agent")
            raise UnknownAgent(agent, self.registered_agents())
        return handle

    # -- teams --------------------------------------------------------------------------
    async def create_team(
        self,
        team_id: str,
        *,
        name: str,
        lead: str,
        members: list[tuple[str, str]],
    ) -> ActorHandle[Any]:
        """Create (or reopen) a team. Register its agents first: the lead gets TEAM.md.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``team_id``, ``name``, ``lead``
                or ``members`` (not (agent key, role) pairs, an agent twice, the lead
                among them); names the parameter.
            UnknownAgent: (an ActorDead) the lead or a member is not registered.
            StreamOwnedElsewhere: another process runs this team (owns ``team/{id}``).
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask`.
        """
        self._check_open()
        check_team_id(team_id)
        check_name(name, "name", self.limits, required=True)
        check_agent_key(lead, "lead")
        members = check_members(members, self.limits)
        if lead in [m for m, _ in members]:
            raise InvalidArgument("members", "the lead is not listed among the members")
        registered = self.registered_agents()
        for parameter, key in [("lead", lead), *(("members", m) for m, _ in members)]:
            if key not in registered:
                raise UnknownAgent(key, registered, parameter)
        handle = self.actor(team_stream(team_id))
        if handle is None or not handle.is_alive():
            handle = await self.spawn(
                Team,
                team_stream(team_id),
                team_id=team_id,
                name=name,
                lead=lead,
                members=[TeamMember(agent=a, role=r) for a, r in members],
            )
        view: TeamView = await handle.ask(GetBoard())
        section_text = team_md(view)

        def section(config: AgentConfig, ctx: CallerContext) -> tuple[str, str] | None:
            return ("TEAM.md", section_text) if config.key == view.lead else None

        self.prompt_for(view.lead).add_section(f"TEAM.md:{team_id}", section)
        self.runtime.services.setdefault("teams_by_agent", {}).setdefault(view.lead, set()).add(
            team_id
        )
        for agent, _ in view.members:
            self.runtime.services["teams_by_agent"].setdefault(agent, set()).add(team_id)
        return handle

    async def team_board(self, team_id: str) -> TeamView:
        """The team's members and task board.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``team_id``.
            ActorDead: no team ``team_id`` was created in this process.
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask`.
        """
        self._check_open()
        check_team_id(team_id)
        handle = self.actor(team_stream(team_id))
        if handle is None:
            raise ActorDead(f"unknown team {team_id!r}: create it with system.create_team()")
        return await handle.ask(GetBoard())  # type: ignore[no-any-return]

    # -- delegation ---------------------------------------------------------------------
    def delegation_directory(self) -> DelegationDirectory:
        """Link targets for DELEGATION.md and delegate_search. Set ``.embedder`` to rank by
        meaning too (before registering agents, so their descriptions are embedded).
        Never raises."""
        directory = self.runtime.services.get("delegation_directory")
        if directory is None:
            directory = self.runtime.services["delegation_directory"] = DelegationDirectory()
        return directory  # type: ignore[no-any-return]

    async def link_agents(
        self,
        source: str,
        target: str,
        *,
        max_concurrent: int = 5,
        user_allow: list[str] | None = None,
        user_deny: list[str] | None = None,
        bidirectional: bool = False,
        enabled: bool = True,
    ) -> list[ActorHandle[Any]]:
        """Allow ``source`` to delegate to ``target`` (and back, if bidirectional).

        Register both agents first. Returns the link actors (one per direction).

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``source``, ``target``,
                ``max_concurrent`` (an int >= 1), ``user_allow``, ``user_deny``,
                ``bidirectional`` or ``enabled``, or ``source == target``; names it.
            UnknownAgent: (an ActorDead) ``source`` or ``target`` is not registered.
            StreamOwnedElsewhere: another process runs this link (owns its stream).
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask`.
        """
        self._check_open()
        check_agent_key(source, "source")
        check_agent_key(target, "target")
        if source == target:
            raise InvalidArgument("target", "an agent cannot be linked to itself")
        check_count(max_concurrent, "max_concurrent")
        user_allow = check_users(user_allow, "user_allow", self.limits)
        user_deny = check_users(user_deny, "user_deny", self.limits)
        check_flag(bidirectional, "bidirectional")
        check_flag(enabled, "enabled")
        registered = self.registered_agents()
        for parameter, key in (("source", source), ("target", target)):
            if key not in registered:
                raise UnknownAgent(key, registered, parameter)
        pairs = [(source, target)] + ([(target, source)] if bidirectional else [])
        handles = []
        for src, dst in pairs:
            configured = LinkConfigured(
                source=src,
                target=dst,
                max_concurrent=max_concurrent,
                user_allow=list(user_allow or []),
                user_deny=list(user_deny or []),
                enabled=enabled,
            )
            running = self.actor(link_stream(src, dst))
            if running is not None and running.is_alive():
                running.stop()
            handles.append(
                await self.spawn(DelegationLink, link_stream(src, dst), configured=configured)
            )
            directory = self.delegation_directory()
            directory.add_link(src, dst)
            self.prompt_for(src).add_section("DELEGATION.md", directory.prompt_section)
        return handles

    # -- scale-out ----------------------------------------------------------------------
    async def drain(self) -> int:
        """Stop serving sessions in this process, on a log several processes share
        (PostgreSQL): every session finishes its turn in flight, then stops and releases
        its lease, and what is queued for it goes to the other processes through the log;
        new messages go there too. The agent's routines stop here and run in another
        process. Returns how many sessions were running; call it before closing a process
        so that no turn is lost. On a log only this process writes, it does nothing.

        Raises:
            SystemClosed: the System is closed or closing.
            AskTimeout: a session's turn did not end within :attr:`turn_timeout`.
        """
        self._check_open()
        router = self.runtime.services.get("router")
        if router is None:
            return 0
        router.draining = True
        drained = 0
        for handle in self.runtime.running():
            if handle.path.startswith("agent/"):
                drained += await handle.ask(DrainSessions(), self.turn_timeout)
        return drained

    # -- routines -----------------------------------------------------------------------
    @property
    def routines(self) -> Routines:
        """The agents' routines (cron schedules, event and webhook triggers):
        ``await system.routines.define(agent, name, prompt, Trigger.cron("0 8 * * *"))``
        (see :class:`actors.automation.Routines`). An agent's own cron jobs and its
        heartbeat are listed there too."""
        return self._routines

    # -- MCP servers --------------------------------------------------------------------
    @property
    def mcp(self) -> McpServers:
        """The MCP servers of this System: ``await system.mcp.add(McpServerConfig(...))``,
        ``system.mcp.gateway(config)`` (see :class:`actors.mcp.McpServers`). Created on
        first use, the same object ``actors.mcp.mcp_servers(system)`` returns; never raises.
        """
        # Imported here: the MCP package (the mcp SDK) loads only for a System that uses it.
        from .mcp.api import mcp_servers

        return mcp_servers(self)

    # -- custom tools -------------------------------------------------------------------
    async def define_tool(
        self,
        name: str,
        *,
        command: str,
        description: str = "",
        parameters: dict[str, Any] | None = None,
        timeout_s: float = 60.0,
        working_dir: str = "",
        env: dict[str, str] | None = None,
        enabled: bool = True,
        agent: str | None = None,
        by: str = "api",
    ) -> CustomToolEntry:
        """Define (or redefine) a custom tool (seed 001 §13): ``command`` is a shell
        template whose ``{{.key}}`` placeholders name properties of ``parameters`` (a
        JSON Schema); each argument reaches the command as one literal word. Global, or
        only ``agent``'s; recorded on ``tools/custom`` and offered at once (group
        ``custom``), to running agents too. ``env`` values are sealed with
        ``CLAWLOG_SECRET_KEY`` (see :mod:`clawlog.tools.custom`) and never recorded,
        logged or shown. Returns the definition as recorded (env names only).

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: a field of the wrong type or that cannot
                be used (a template placeholder not in the parameters, one inside single
                quotes, a command exec refuses, a bad schema, a built-in's name or one
                another scope's tool has, a bad env name...); ``.parameter`` names it.
            SecretKeyError: ``env`` has values and ``CLAWLOG_SECRET_KEY`` is missing or
                not the base64 of 32 bytes.
            CustomToolError: other processes kept changing the definitions meanwhile.
            EventStoreError: the definition could not be recorded.
        """
        self._check_open()
        if agent is not None:
            check_agent_key(agent)
        check_name(by, "by", self.limits, required=True)
        try:
            return await self._custom_tools().define(
                name=name,
                command=command,
                description=description,
                parameters=parameters,
                timeout_s=timeout_s,
                working_dir=working_dir,
                env=env,
                enabled=enabled,
                agent=agent or "",
                by=by,
            )
        except CustomToolTypeError as exc:
            raise ArgumentTypeError(exc.parameter, exc.problem) from exc
        except InvalidCustomTool as exc:
            raise InvalidArgument(exc.parameter, exc.problem) from exc

    async def remove_tool(self, name: str, *, agent: str | None = None, by: str = "api") -> bool:
        """Remove a custom tool (the global one, or ``agent``'s own) from every agent;
        recorded on ``tools/custom``. False if there was no such tool.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: ``name``, ``agent`` or ``by`` is invalid.
            CustomToolError: other processes kept changing the definitions meanwhile.
            EventStoreError: the removal could not be recorded.
        """
        self._check_open()
        if not isinstance(name, str):
            raise ArgumentTypeError("name", f"must be a str, not {type(name).__name__}")
        if agent is not None:
            check_agent_key(agent)
        check_name(by, "by", self.limits, required=True)
        return await self._custom_tools().remove(name, agent=agent or "", by=by)

    def custom_tools(self, agent: str | None = None) -> list[CustomToolEntry]:
        """The custom tools in force (env names only, never values): all of them, or the
        ones ``agent`` gets (the global ones and its own).

        Raises:
            ArgumentTypeError, InvalidArgument: ``agent`` is not a valid agent key.
        """
        if agent is not None:
            check_agent_key(agent)
        return self._custom_tools().entries(agent)

    def _custom_tools(self) -> CustomToolCatalog:
        catalog: CustomToolCatalog = self.runtime.services["custom_tools"]
        return catalog

    # -- the outbox ---------------------------------------------------------------------
    def outbox(
        self,
        since: int = 0,
        *,
        agent: str | None = None,
        channel: str | None = None,
        chat_id: str | None = None,
        kinds: Collection[str] | None = None,
        follow: bool = True,
    ) -> Outbox:
        """Every message meant for a person after position ``since``, in log order:
        ``async for message in system.outbox(since=saved): ...`` (see
        :mod:`clawlog.actors.outbox`). Filters: ``agent``, ``channel``, ``chat_id``,
        ``kinds``. Follows new messages live unless ``follow=False``.

        Raises:
            SystemClosed: the System is closed or closing.
            ValueError: ``since`` is not an int >= 0, or ``kinds`` is one string.
            EventStoreError: while iterating, the log could not be read; iteration ends
                quietly when the System closes.
        """
        self._check_open()
        return Outbox(
            self.store,
            since,
            agent=agent,
            channel=channel,
            chat_id=chat_id,
            kinds=kinds,
            follow=follow,
        )

    # -- lifecycle ----------------------------------------------------------------------
    async def close(self) -> None:
        """Stop every actor (draining mailboxes), flush and close the store, stop the hub.
        Safe to call twice, and concurrently.

        Raises:
            EventStoreError: flushing or closing the store failed; the System is closed
                (and its hub stopped) all the same.
        """
        if self._closing is not None:
            await asyncio.shield(self._closing)
            return
        self._closing = asyncio.get_running_loop().create_future()
        try:
            self.runtime.closing = True
            router, remote = (
                self.runtime.services.get("router"),
                self.runtime.services.get("remote"),
            )
            if router is not None:
                await self.runtime.hub.run_async(router.stop())
            await run_in_thread(self.guardian.stop, name="clawlog-close")
            if remote is not None:
                await self.runtime.hub.run_async(remote.close())
            await self.runtime.hub.run_async(self.runtime.timers.stop())
            await self.runtime.hub.run_async(self.runtime.ownership.stop())
            self.runtime.closing_store = True
            await self.runtime.hub.run_async(self.runtime.store.close())
        finally:
            self.runtime.hub.stop()
            self._closed = True
            self._closing.set_result(None)
            _log.info("system closed")

    async def __aenter__(self) -> System:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def approvals(self) -> ApprovalConfig:
        """The System-wide approval configuration (``System.open(approvals=...)``)."""
        approvals: ApprovalConfig = self.runtime.services["approval_config"]
        return approvals

    @property
    def limits(self) -> Limits:
        """The sizes the public calls accept (``System.open(limits=...)``)."""
        limits: Limits = self.runtime.services["limits"]
        return limits

    def _check_open(self) -> None:
        if self._closed or self.runtime.closing:
            raise SystemClosed("the System is closed")

    def _check_session(self, agent: str, session_key: str) -> None:
        """The prologue of every per-session call: open, a valid agent and session key."""
        self._check_open()
        check_agent_key(agent)
        check_session_key(session_key)


class _ScaleOut(msgspec.Struct, frozen=True):
    """``System.open``'s settings for a log several processes share."""

    placement: Placement | None
    lease_ttl_s: float


class _Opener:
    """Awaitable and async context manager around ``System._start``."""

    def __init__(self, starting: Any) -> None:
        self._starting = starting
        self._system: System | None = None

    def __await__(self) -> Generator[Any, None, System]:
        return self._starting.__await__()  # type: ignore[no-any-return]

    async def __aenter__(self) -> System:
        self._system = await self._starting
        return self._system

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._system is not None:
            await self._system.close()
