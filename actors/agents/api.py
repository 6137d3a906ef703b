"""The agent part of the System API: register agents, send messages, cancel, approve."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clawlog.events.domain.agent import HandoffCleared, HandoffRouted

from ..errors import ActorDead
from ..models.base import Model
from ..runtime import ActorHandle
from .config import AgentConfig, validate_agent_key
from .gateway import ToolGateway
from .handoff import RouteState, route_stream
from .messages import AnswerApproval, CancelTurn, GetSessionStatus, SendMessage, SessionStatus
from .prompt import PromptBuilder
from .supervisor import AgentSupervisor, Reconfigure, agent_stream

if TYPE_CHECKING:
    from ..system import System

__all__ = ["AgentApi"]

_SESSION_KEY_MAX = 200


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
        """
        if not isinstance(config, AgentConfig):
            raise TypeError("config must be an actors.agents.AgentConfig")
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
        """The prompt builder of ``agent`` (shared by its sessions; sections can be added)."""
        builders: dict[str, PromptBuilder] = self.runtime.services.setdefault("prompts", {})
        if agent not in builders:
            builders[agent] = PromptBuilder()
        return builders[agent]

    def default_gateway(
        self: System, config: AgentConfig, extra_tools: Sequence[Any] = ()
    ) -> ToolGateway:
        """The tool pipeline with clawlog's built-in tools and ``extra_tools``, under the
        agent's tool policy (profile, allow, deny, subagent and leaf deny lists)."""
        from clawlog.tools import EchoTool, JsonTool, TimeTool, Tool

        from ..delegation.tools import DELEGATION_TOOLS
        from ..teams.tools import TEAM_TOOLS
        from .actor_tools import ACTOR_TOOLS
        from .pipeline_gateway import ActorToolAdapter, PipelineGateway

        services, store = self.runtime.services, self.runtime.store
        actor_tools = (*ACTOR_TOOLS, *TEAM_TOOLS, *DELEGATION_TOOLS)
        tools: list[Tool] = [ActorToolAdapter(cls(services, store)) for cls in actor_tools]
        tools += [EchoTool(), TimeTool(), JsonTool(), *extra_tools]
        return PipelineGateway(
            config,
            tools,
            services=services,
            policy=self.runtime.services.get("tool_policy"),
            approvals=self.runtime.services.get("approval_config"),
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

        Raises :class:`ActorDead` for an unknown agent, :class:`TurnFailedError` when the
        turn ends without a reply, :class:`TurnCancelledError` when it is cancelled.
        """
        _check_session_key(session_key)
        if not isinstance(text, str) or not text.strip():
            raise ValueError("text must be a non-empty string")
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
        )
        return await supervisor.ask(message, timeout or self.turn_timeout)  # type: ignore[no-any-return]

    async def routed_agent(self: System, channel: str, chat_id: str) -> str | None:
        """The agent a handoff routed (channel, chat) to, if any."""
        state = RouteState()
        for recorded in await self.store.read_stream(route_stream(channel, chat_id)):
            event = recorded.event
            if isinstance(event, HandoffRouted):
                state.agent = event.to_agent
            elif isinstance(event, HandoffCleared):
                state.agent = None
        return state.agent

    async def cancel(self: System, agent: str, session_key: str, *, by: str = "user") -> bool:
        """Cancel the running turn of a session; False if it had none."""
        _check_session_key(session_key)
        return await self._agent(agent).ask(CancelTurn(session_key=session_key, by=by))  # type: ignore[no-any-return]

    async def approve(
        self: System, agent: str, session_key: str, call_id: str, decision: str, *, by: str = "user"
    ) -> bool:
        """Answer a pending approval: ``allow-once``, ``allow-always`` or ``deny``."""
        if decision not in ("allow-once", "allow-always", "deny"):
            raise ValueError("decision must be allow-once, allow-always or deny")
        request = AnswerApproval(session_key=session_key, call_id=call_id, decision=decision, by=by)
        return await self._agent(agent).ask(request)  # type: ignore[no-any-return]

    async def session_status(self: System, agent: str, session_key: str) -> SessionStatus:
        _check_session_key(session_key)
        return await self._agent(agent).ask(GetSessionStatus(session_key=session_key))  # type: ignore[no-any-return]

    def _agent(self: System, agent: str) -> ActorHandle[Any]:
        validate_agent_key(agent)
        handle = self.actor(agent_stream(agent))
        if handle is None or not handle.is_alive():
            # Recorded as a dead letter on system/guardian, so the log shows the attempt.
            self.runtime.dead_letter(agent_stream(agent), None, "unknown agent")
            raise ActorDead(f"unknown agent {agent!r}: register it with system.register_agent()")
        return handle


def _check_session_key(session_key: object) -> None:
    if (
        not isinstance(session_key, str)
        or not session_key
        or len(session_key) > _SESSION_KEY_MAX
        or any(c.isspace() or c in "/\\%*?\"'" or ord(c) < 32 for c in session_key)
    ):
        raise ValueError(
            f"invalid session key {session_key!r}: 1-{_SESSION_KEY_MAX} characters, no spaces, "
            "slashes, quotes or wildcards"
        )
