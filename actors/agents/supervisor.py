"""AgentSupervisor: one per agent. Holds its config, model and tools; supervises sessions.

Session actors are started on demand and passivate when idle; a message that reaches a
passivating session comes back here and goes to a fresh instance recovered from its
stream, so nothing is lost and threads follow active sessions only.
"""

from __future__ import annotations

from typing import Any

import msgspec

from clawlog.events import Event
from clawlog.events.domain.agent import AgentRegistered

from .._bridge import AskEnvelope
from ..actor import DEFERRED, EventSourcedActor
from ..errors import Rejected
from ..messages import Message, Request
from ..models.base import Model
from ..runtime import ActorHandle
from .config import AgentConfig
from .gateway import ToolGateway
from .messages import AnswerApproval, CancelTurn, GetSessionStatus, SendMessage
from .prompt import PromptBuilder
from .session import Session, session_stream
from .subagent_supervision import SubagentSupervision
from .subagents import TaskBook, apply_task_event

__all__ = ["AgentState", "AgentSupervisor", "Reconfigure", "agent_stream", "apply_agent_event"]

_ROUTED = (SendMessage, CancelTurn, AnswerApproval, GetSessionStatus)


def agent_stream(key: str) -> str:
    return f"agent/{key}"


class AgentState(msgspec.Struct, kw_only=True):
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    registrations: int = 0
    tasks: TaskBook = msgspec.field(default_factory=TaskBook)


class Reconfigure(Request[bool], frozen=True, kw_only=True):
    """Replace the agent's config, model and tools; records ``agent.registered`` on change."""

    config: Any
    model: Any
    gateway: Any
    prompt: Any = None


def apply_agent_event(state: AgentState, event: Event) -> AgentState:
    """The fold of an ``agent/{key}`` stream (also used by replay)."""
    if isinstance(event, AgentRegistered):
        state.config = dict(event.config)
        state.registrations += 1
    else:
        apply_task_event(state.tasks, event)
    return state


class AgentSupervisor(SubagentSupervision, EventSourcedActor[AgentState]):
    kind = "agent"
    snapshot_every = 500

    def __init__(
        self,
        *args: Any,
        config: AgentConfig,
        model: Model,
        gateway: ToolGateway,
        prompt: PromptBuilder | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.config = config
        self.model = model
        self.gateway = gateway
        self.prompt = prompt or PromptBuilder()
        self._init_subagents()

    def initial_state(self) -> AgentState:
        return AgentState()

    def apply(self, state: AgentState, event: Event) -> AgentState:
        return apply_agent_event(state, event)

    def on_recovered(self, restarted: bool) -> None:
        self._record_config()
        if not restarted:
            self._fail_interrupted_subagents()

    def handle(self, message: Message) -> Any:
        if isinstance(message, _ROUTED):
            self._route(message, self.defer_reply())
            return DEFERRED
        if isinstance(message, Reconfigure):
            if message.config.key != self.config.key:
                raise Rejected("an agent's key cannot change")
            self.config, self.model, self.gateway = message.config, message.model, message.gateway
            if message.prompt is not None:
                self.prompt = message.prompt
            return self._record_config()
        handled = self.handle_subagent(message)
        if handled is not NotImplemented:
            return handled
        return super().handle(message)

    def on_child_stopped(self, child_path: str, leftovers: list[tuple[Any, Any]]) -> None:
        for message, reply in leftovers:
            if isinstance(message, _ROUTED):
                self._route(message, reply)
            elif reply is not None:
                reply.set_error(Rejected(f"{child_path} stopped; {type(message).__name__} dropped"))

    # -- helpers ------------------------------------------------------------------------
    def session(self, session_key: str) -> ActorHandle[Any]:
        """The running session actor for ``session_key``, started (recovered) if needed."""
        path = session_stream(self.config.key, session_key)
        running = self.children.get(path)
        if running is not None and running.is_alive():
            return running
        return self.spawn(
            Session,
            path,
            config=self.config,
            model=self.model,
            gateway=self.gateway,
            prompt=self.prompt,
            session_key=session_key,
        )

    def _route(self, message: Any, reply: Any) -> None:
        handle = self.session(message.session_key)
        envelope = AskEnvelope(message, reply) if reply is not None else message
        handle.ref.tell(envelope)

    def _record_config(self) -> bool:
        snapshot = msgspec.to_builtins(self.config)
        if snapshot == self.state.config:
            return False
        self.emit([AgentRegistered(key=self.config.key, config=snapshot)])
        return True
