"""The agent part of the System API: register agents, send messages, cancel, approve."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clawlog.events.domain.agent import HandoffCleared, HandoffRouted

from ..boundary import check_agent_key, check_model, check_name, check_text, check_timeout
from ..errors import ArgumentTypeError, InvalidArgument, UnknownAgent
from ..providers.base import Model
from ..runtime import ActorHandle
from .config import AgentConfig
from .gateway import ToolGateway
from .handoff import RouteState, route_stream
from .messages import AnswerApproval, CancelTurn, GetSessionStatus, SendMessage, SessionStatus
from .prompt import PromptBuilder
from .supervisor import AgentSupervisor, Reconfigure, agent_stream

if TYPE_CHECKING:
    from ..system import System

__all__ = ["AgentApi"]

_SESSION_KEY_MAX = 200
#: One segment of a stream name (events.store.validate_stream): the key is one segment.
_SESSION_KEY = re.compile(rf"[A-Za-z0-9_.:@+=#~,>-]{{1,{_SESSION_KEY_MAX}}}")


class AgentApi:
    """Mixed into :class:`actors.system.System`."""

    #: Seconds ``send`` waits for a turn to finish unless told otherwise.
    turn_timeout: float = 600.0

    async def register_agent(
        self: System,
        config: AgentConfig,
        model: Model,
        *,
        tools: Sequence[Any] = (),
        gateway: ToolGateway | None = None,
        prompt: PromptBuilder | None = None,
    ) -> ActorHandle[Any]:
        """Register (or reconfigure) an agent. Its config is recorded on ``agent/{key}``.

        ``tools`` adds ``tools.Tool`` objects (file tools, exec, MCP...) to the built-ins.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError: (a TypeError) ``config`` is no :class:`AgentConfig`,
                ``model`` no :class:`Model`, or ``tools`` no list.
            TypeError, ValueError, DuplicateTool, ProtectedName, InvalidSchema: a tool in
                ``tools`` is no ``tools.Tool``, has an invalid or taken name, or a schema
                that does not compile (see :meth:`default_gateway`).
            StreamOwnedElsewhere: another process runs this agent (owns ``agent/{key}``).
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask` (no answer
                in time; the event store is unreachable; the handler failed).
        """
        self._check_open()
        if not isinstance(config, AgentConfig):
            raise ArgumentTypeError(
                "config", f"must be an actors.agents.AgentConfig, not {type(config).__name__}"
            )
        check_model(model)
        if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
            raise ArgumentTypeError("tools", "must be a list of tools.Tool objects")
        gateway = gateway or self.default_gateway(config, tools)
        prompt = prompt or self.prompt_for(config.key)
        self.runtime.services.setdefault("agent_configs", {})[config.key] = config
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

    def prompt_for(self: System, agent: str) -> PromptBuilder:
        """The prompt builder of ``agent`` (shared by its sessions; sections can be added).
        Never raises."""
        builders: dict[str, PromptBuilder] = self.runtime.services.setdefault("prompts", {})
        if agent not in builders:
            builders[agent] = PromptBuilder()
        return builders[agent]

    def default_gateway(
        self: System, config: AgentConfig, extra_tools: Sequence[Any] = ()
    ) -> ToolGateway:
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
        from clawlog.tools import EchoTool, JsonTool, TimeTool, Tool

        from ..delegation.tools import DELEGATION_TOOLS
        from ..teams.tools import TEAM_TOOLS
        from .actor_tools import ACTOR_TOOLS
        from .message_tool import MessageTool
        from .pipeline_gateway import ActorToolAdapter, PipelineGateway

        services, store = self.runtime.services, self.runtime.store
        actor_tools = (*ACTOR_TOOLS, MessageTool, *TEAM_TOOLS, *DELEGATION_TOOLS)
        tools: list[Tool] = [ActorToolAdapter(cls(services, store)) for cls in actor_tools]
        tools += [EchoTool(), TimeTool(), JsonTool(), *extra_tools]
        return PipelineGateway(
            config,
            tools,
            services=services,
            policy=self.runtime.services.get("tool_policy"),
            approvals=config.approvals or self.runtime.services.get("approval_config"),
            max_result_chars=self.limits.max_tool_result_chars,
        )

    async def send(
        self: System,
        agent: str,
        session_key: str,
        text: str,
        *,
        channel: str = "",
        chat_id: str = "",
        user: str = "",
        sender: str = "user",
        timeout: float | None = None,
    ) -> str:
        """Send ``text`` to ``agent`` in ``session_key``; return the turn's reply.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError: (a TypeError) an argument of the wrong type (names it).
            InvalidArgument: (a ValueError) an invalid agent key, session key, empty
                ``text``, a name with control characters or too long, a timeout <= 0.
            MessageTooLarge: (an InvalidArgument) ``text`` is over
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
        self._check_open()
        limits = self.limits
        check_agent_key(agent)
        _check_session_key(session_key)
        check_text(text, limits)
        for name, value in (("channel", channel), ("chat_id", chat_id), ("user", user)):
            check_name(value, name, limits)
        check_name(sender, "sender", limits, required=True)
        timeout = check_timeout(timeout)
        if channel and chat_id:  # a handoff route beats normal routing (seed 001 §10)
            agent = await self.routed_agent(channel, chat_id) or agent
        supervisor = self._agent(agent)
        message = SendMessage(
            session_key=session_key,
            text=text,
            sender=sender,
            channel=channel,
            chat_id=chat_id,
            user=user,
            outbox_kind="reply",
        )
        return await supervisor.ask(message, timeout or self.turn_timeout)  # type: ignore[no-any-return]

    async def routed_agent(self: System, channel: str, chat_id: str) -> str | None:
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
        for recorded in await self.store.read_stream(route_stream(channel, chat_id)):
            event = recorded.event
            if isinstance(event, HandoffRouted):
                state.agent = event.to_agent
            elif isinstance(event, HandoffCleared):
                state.agent = None
        return state.agent

    async def cancel(self: System, agent: str, session_key: str, *, by: str = "user") -> bool:
        """Cancel the running turn of a session; False if it had none.

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``agent``, ``session_key`` or
                ``by`` (names it).
            UnknownAgent: (an ActorDead) no agent is registered under ``agent``.
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask` (no answer
                in time; the event store is unreachable; the handler failed).
        """
        self._check_open()
        check_agent_key(agent)
        _check_session_key(session_key)
        check_name(by, "by", self.limits, required=True)
        return await self._agent(agent).ask(CancelTurn(session_key=session_key, by=by))  # type: ignore[no-any-return]

    async def approve(
        self: System, agent: str, session_key: str, call_id: str, decision: str, *, by: str = "user"
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
        self._check_open()
        check_agent_key(agent)
        _check_session_key(session_key)
        check_name(call_id, "call_id", self.limits, required=True)
        if decision not in ("allow-once", "allow-always", "deny"):
            raise InvalidArgument(
                "decision", f"must be allow-once, allow-always or deny, not {decision!r}"
            )
        check_name(by, "by", self.limits, required=True)
        request = AnswerApproval(session_key=session_key, call_id=call_id, decision=decision, by=by)
        return await self._agent(agent).ask(request)  # type: ignore[no-any-return]

    async def session_status(self: System, agent: str, session_key: str) -> SessionStatus:
        """What a session is doing (busy, the calls awaiting approval...).

        Raises:
            SystemClosed: the System is closed or closing.
            ArgumentTypeError, InvalidArgument: an invalid ``agent`` or ``session_key``.
            UnknownAgent: (an ActorDead) no agent is registered under ``agent``.
            AskTimeout, ActorUnavailable, ActorCrashed: as :meth:`System.ask` (no answer
                in time; the event store is unreachable; the handler failed).
        """
        self._check_open()
        check_agent_key(agent)
        _check_session_key(session_key)
        return await self._agent(agent).ask(GetSessionStatus(session_key=session_key))  # type: ignore[no-any-return]

    def _agent(self: System, agent: str) -> ActorHandle[Any]:
        check_agent_key(agent)
        handle = self.actor(agent_stream(agent))
        if handle is None or not handle.is_alive():
            self._check_open()  # closing stops every agent: that is not an unknown agent
            # Recorded as a dead letter on system/guardian, so the log shows the attempt.
            self.runtime.dead_letter(agent_stream(agent), None, "unknown agent")
            raise UnknownAgent(agent, self.registered_agents())
        return handle


def _check_session_key(session_key: object) -> None:
    if not isinstance(session_key, str):
        raise ArgumentTypeError(
            "session_key", f"invalid session key: a str, not {type(session_key).__name__}"
        )
    if _SESSION_KEY.fullmatch(session_key) is None:
        raise InvalidArgument(
            "session_key",
            f"invalid session key {session_key!r}: 1-{_SESSION_KEY_MAX} characters of "
            "A-Z a-z 0-9 _ . : @ + = # ~ , > - (no spaces, slashes, quotes or wildcards)",
        )
