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
from ..errors import (
    ActorDead,
    ActorError,
    ActorUnavailable,
    Rejected,
    SystemClosed,
    TurnFailedError,
)
from ..messages import Message, Piped, Request
from ..providers.base import Model
from ..runtime import ActorHandle
from .config import AgentConfig
from .gateway import ToolGateway
from .messages import AnswerApproval, CancelTurn, GetSessionStatus, SendMessage
from .prompt import PromptBuilder
from .resume import unfinished_sessions
from .session import Session, session_stream
from .subagent_supervision import SubagentSupervision
from .subagents import SubagentDone, TaskBook, apply_task_event

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
        # Sessions with an unfinished turn resume it without a new message (read on the hub).
        self.pipe(unfinished_sessions(self.runtime.store, self.config.key), "resume")

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
        if isinstance(message, Piped) and message.label == "resume":
            self._resume_sessions(message)
            return None
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

    def _resume_sessions(self, found: Piped) -> None:
        if found.error is not None:
            self.log.error("could not look for interrupted turns", error=str(found.error))
            return
        for session_key in found.value:
            if self.runtime.closing:
                return
            try:  # a started Session resumes its unfinished turn itself
                self.session(session_key)
            except Exception as exc:  # e.g. its stream is owned by another process
                self.log.warning("session not resumed", session_key=session_key, error=str(exc))

    def _route(self, message: Any, reply: Any) -> None:
        """Hand a message to its session. A session that cannot start (its stream is
        unreadable, the store unreachable) fails this message only: its caller hears why
        at once, and the agent and its other sessions go on."""
        try:
            handle = self.session(message.session_key)
            handle.ref.tell(AskEnvelope(message, reply) if reply is not None else message)
        except Exception as exc:
            path = session_stream(self.config.key, message.session_key)
            self.log.warning("session cannot start", session=path, error=str(exc))
            if reply is None:
                self.runtime.dead_letter(path, message, f"session cannot start: {exc}")
            else:
                reply.set_error(_start_failure(path, message, exc))

    def on_child_escalated(self, child_path: str, reason: str) -> None:
        """A session or subagent gave up: its callers were answered and its escalation is
        recorded; it is started afresh by its next message. It is not the agent failing."""
        self.log.error("a session escalated; the agent goes on", child=child_path, reason=reason)
        if child_path.startswith("subagent/"):
            task_id = child_path.removeprefix("subagent/")
            self._subagent_done(
                SubagentDone(task_id=task_id, status="failed", error=f"escalated: {reason}")
            )

    def _record_config(self) -> bool:
        snapshot = msgspec.to_builtins(self.config)
        if snapshot == self.state.config:
            return False
        self.emit([AgentRegistered(key=self.config.key, config=snapshot)])
        return True


def _start_failure(path: str, message: Any, exc: Exception) -> Exception:
    """What the sender of ``message`` gets when its session cannot start."""
    if isinstance(exc, ActorUnavailable):
        return exc  # the store is unreachable: say just that
    if isinstance(exc, SystemClosed):  # as for every message caught by the shutdown
        error: Exception = ActorDead(f"{path} not started: the System is closing")
    elif isinstance(message, SendMessage):
        error = TurnFailedError("session_unavailable", f"{path} cannot start: {exc}")
    elif isinstance(exc, ActorError):
        return exc
    else:
        error = ActorDead(f"{path} cannot start: {exc}")
    error.__cause__ = exc
    return error
