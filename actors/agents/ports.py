"""Ports: what tools that drive actors (spawn, handoff, sessions_*) call.

Tools never import actors; they receive these objects through their context. Every
method is async and safe to call on the I/O hub (where tools execute).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clawlog.events.streams import agent_stream, handoff_stream
from clawlog.events.telemetry import (
    CHANNEL,
    CORRELATION,
    HANDOFF_FROM,
    HANDOFF_TO,
    POSITION,
    SESSION_KEY,
    STREAM,
    context_carrier,
    tracer,
)

from ..errors import ActorDead
from .config import validate_agent_key
from .gateway import CallerContext
from .handoff import ClearRoute, HandoffRoute, SetRoute
from .messages import GetSessionStatus, SendMessage, SessionStatus
from .subagents import (
    CancelSubagents,
    ListSubagents,
    SpawnSubagent,
    SteerSubagent,
    SubagentInfo,
)

if TYPE_CHECKING:
    from ..runtime import ActorHandle, Runtime

__all__ = ["AgentPorts"]


class AgentPorts:
    """The actor-side operations tools may perform, bound to one Runtime."""

    def __init__(self, runtime: Runtime, guardian: ActorHandle[Any]) -> None:
        self._runtime = runtime
        self._guardian = guardian

    # -- subagents ----------------------------------------------------------------------
    async def spawn_subagent(
        self,
        ctx: CallerContext,
        task: str,
        label: str = "",
        *,
        wait: bool = False,
        timeout: float | None = None,
    ) -> SubagentInfo:
        request = SpawnSubagent(
            parent_session=ctx.session_stream,
            parent_key=ctx.session_key,
            depth=ctx.depth,
            task=task,
            label=label,
            mode="sync" if wait else "async",
            call_id=ctx.call_id,
            correlation_id=ctx.correlation_id or None,
            trace_context=context_carrier(),  # the run's span is the tool call's child
        )
        supervisor = self._agent(ctx.agent)
        return await supervisor.ask(request, timeout)  # type: ignore[no-any-return]

    async def list_subagents(self, ctx: CallerContext) -> list[SubagentInfo]:
        request = ListSubagents(parent_session=ctx.session_stream)
        return await self._agent(ctx.agent).ask(request)  # type: ignore[no-any-return]

    async def cancel_subagents(self, ctx: CallerContext, target: str) -> list[str]:
        request = CancelSubagents(parent_session=ctx.session_stream, target=target)
        return await self._agent(ctx.agent).ask(request)  # type: ignore[no-any-return]

    async def steer_subagent(self, ctx: CallerContext, task_id: str, message: str) -> SubagentInfo:
        request = SteerSubagent(
            parent_session=ctx.session_stream,
            parent_key=ctx.session_key,
            task_id=task_id,
            message=message,
            trace_context=context_carrier(),
        )
        return await self._agent(ctx.agent).ask(request)  # type: ignore[no-any-return]

    # -- handoff ------------------------------------------------------------------------
    async def handoff(self, ctx: CallerContext, target: str, reason: str) -> bool:
        """Route (channel, chat) to ``target`` and give it the conversation's context.

        Traced as a ``handoff {target}`` span (a child of the handoff tool call's), whose
        child is the target's turn on the introduction."""
        validate_agent_key(target)
        target_handle = self._agent(target)
        if not ctx.channel or not ctx.chat_id:
            raise ValueError("handoff needs a conversation on a channel and chat")
        attributes = {
            HANDOFF_FROM: ctx.agent,
            HANDOFF_TO: target,
            CHANNEL: ctx.channel,
            SESSION_KEY: ctx.session_key,
            STREAM: handoff_stream(ctx.channel, ctx.chat_id),
            CORRELATION: ctx.correlation_id,
        }
        with tracer().start_as_current_span(f"handoff {target}", attributes=attributes) as span:
            route = await self._route(ctx.channel, ctx.chat_id)
            position = await route.ask(
                SetRoute(
                    channel=ctx.channel,
                    chat_id=ctx.chat_id,
                    from_agent=ctx.agent,
                    to_agent=target,
                    reason=reason,
                    session_key=ctx.session_key,
                    correlation_id=ctx.correlation_id or None,
                    call_id=ctx.call_id,
                )
            )
            if position:
                span.set_attribute(POSITION, position)
            self._introduce(ctx, target_handle, reason)
        return bool(position)

    def _introduce(self, ctx: CallerContext, target_handle: ActorHandle[Any], reason: str) -> None:
        """Tell the target about the conversation it now has (its turn continues the trace)."""
        intro = (
            f"[handoff from {ctx.agent}] The conversation on {ctx.channel}/{ctx.chat_id} "
            f"is now yours. Reason: {reason}"
        )
        target_handle.tell(
            SendMessage(
                session_key=ctx.session_key,
                text=intro,
                sender=f"handoff:{ctx.agent}",
                channel=ctx.channel,
                chat_id=ctx.chat_id,
                user=ctx.user,
                outbox_kind="handoff",
                trace_context=context_carrier(),
                correlation_id=ctx.call_id or None,  # the introduction turn's causation
            )
        )

    async def clear_handoff(self, ctx: CallerContext) -> str | None:
        route = await self._route(ctx.channel, ctx.chat_id)
        return await route.ask(
            ClearRoute(
                channel=ctx.channel,
                chat_id=ctx.chat_id,  # type: ignore[no-any-return]
                agent=ctx.agent,
            )
        )

    async def _route(self, channel: str, chat_id: str) -> ActorHandle[Any]:
        from ..actor import launch
        from ..internal import AwaitRecovery

        path = handoff_stream(channel, chat_id)
        handle = self._runtime.lookup(path)
        if handle is not None and handle.is_alive():
            return handle
        try:
            handle = launch(self._runtime, HandoffRoute, path, self._guardian, None)
        except ValueError:  # started concurrently
            found = self._runtime.lookup(path)
            assert found is not None
            return found
        await handle.ask(AwaitRecovery())
        return handle

    # -- sessions -----------------------------------------------------------------------
    async def session_status(self, agent: str, session_key: str) -> SessionStatus:
        return await self._agent(agent).ask(GetSessionStatus(session_key=session_key))  # type: ignore[no-any-return]

    async def send_to_session(self, agent: str, session_key: str, text: str, sender: str) -> None:
        self.tell_agent(agent, session_key, text, sender)

    def tell_agent(
        self, agent: str, session_key: str, text: str, sender: str, *, outbox_kind: str = ""
    ) -> None:
        """Start a turn in an agent's session without waiting (safe from any thread).

        ``outbox_kind`` names the kind of outbox message its reply becomes ("" = none)."""
        message = SendMessage(
            session_key=session_key, text=text, sender=sender, outbox_kind=outbox_kind
        )
        self._agent(agent).tell(message)

    def _agent(self, agent: str) -> ActorHandle[Any]:
        handle = self._runtime.lookup(agent_stream(agent))
        if handle is None or not handle.is_alive():
            raise ActorDead(f"unknown agent {agent!r}")
        return handle
