"""AgentSupervisor: one per agent. Holds its config, model and tools; supervises sessions.

Session actors are started on demand and passivate when idle; a message that reaches a
passivating session comes back here and goes to a fresh instance recovered from its
stream, so nothing is lost and threads follow active sessions only.

It also supervises the agent's subagents (actors.agents.subagents holds their messages,
the task book folded from ``agent/{key}`` and the Subagent actor): it applies the limits,
spawns each task as a child, records how it ended, answers sync spawns, announces async
results to the parent session (debounced) and archives finished tasks. Each task's run is
an ``invoke_agent subagent`` span (a child of the spawning tool call's), and the
subagent's turn continues that trace.
"""

from __future__ import annotations

import functools
import uuid
from collections import defaultdict
from typing import Any

import msgspec
from opentelemetry.trace import Span, Status, StatusCode

from clawlog.events import Event, StoreUnavailable
from clawlog.events.domain.agent import (
    AgentRegistered,
    SubagentAnnounced,
    SubagentArchived,
    SubagentFinished,
    SubagentOutcome,
    SubagentRefused,
    SubagentSpawned,
    SubagentSteered,
)
from clawlog.events.streams import session_stream, subagent_stream
from clawlog.events.telemetry import (
    CORRELATION,
    GEN_AI_AGENT,
    GEN_AI_OPERATION,
    OPERATION_INVOKE_AGENT,
    OUTCOME_INTERRUPTED,
    POSITION,
    STREAM,
    SUBAGENT_MODE,
    SUBAGENT_OUTCOME,
    SUBAGENT_TASK,
    tracer,
    tracing_enabled,
)

from .._bridge import AskEnvelope
from ..actor import DEFERRED, EventSourcedActor
from ..errors import (
    ActorDead,
    ActorError,
    ActorUnavailable,
    Rejected,
    StreamOwnedElsewhere,
    SystemClosed,
    TurnCancelledError,
    TurnFailedError,
)
from ..messages import Message, Piped, Request
from ..providers.base import Model
from ..runtime import ActorHandle
from .config import AgentConfig
from .gateway import ToolGateway
from .messages import (
    AnswerApproval,
    CancelTurn,
    ClearSession,
    CompactSession,
    Drain,
    DrainSessions,
    GetSessionStatus,
    ReadInbox,
    SendMessage,
    StartRoutines,
    TakeOver,
)
from .prompt import PromptBuilder
from .resume import unfinished_sessions
from .routine_config import RoutinesSetup
from .session import Session
from .subagents import (
    AnnounceDue,
    ArchiveDue,
    CancelSubagents,
    ListSubagents,
    LostAnnouncements,
    SpawnSubagent,
    SteerSubagent,
    Subagent,
    SubagentBook,
    SubagentDone,
    announcement,
    apply_subagent_event,
    lost_announcements,
    new_task_id,
    new_turn_id,
    now,
    outcome_recorded,
)
from .trace_causes import continue_later, pass_on
from .turn_trace import span_carrier

__all__ = ["AgentState", "AgentSupervisor", "Reconfigure", "apply_agent_event"]

_ROUTED = (
    SendMessage,
    CancelTurn,
    AnswerApproval,
    GetSessionStatus,
    CompactSession,
    ClearSession,
)
#: ``runtime`` slot name: subagents running in the whole system.
_SLOTS = "subagents"


class AgentState(msgspec.Struct, kw_only=True):
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    registrations: int = 0
    tasks: SubagentBook = msgspec.field(default_factory=SubagentBook)


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
        apply_subagent_event(state.tasks, event)
    return state


class AgentSupervisor(EventSourcedActor[AgentState]):
    kind = "agent"
    #: Every process serving the agent runs its supervisor on one shared log.
    shared_stream = True
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
        #: Sync spawns waiting for their task's end, and finished async tasks to announce.
        self._waiters: dict[str, Any] = {}
        self._to_announce: dict[str, list[str]] = defaultdict(list)
        #: The ``invoke_agent subagent`` span of each running task (while tracing).
        self._subagent_spans: dict[str, Span] = {}
        #: ``System.drain`` asks waiting for this agent's sessions to stop (with how many).
        self._drained: list[tuple[Any, int]] = []

    def initial_state(self) -> AgentState:
        return AgentState()

    def apply(self, state: AgentState, event: Event) -> AgentState:
        return apply_agent_event(state, event)

    def apply_at(self, state: AgentState, event: Event, position: int) -> AgentState:
        state = self.apply(state, event)
        outcome_recorded(state.tasks, event, position)  # the announcement's causation
        return state

    def on_recovered(self, restarted: bool) -> None:
        self._record_config()
        self._start_routines()
        if not restarted:
            self._fail_interrupted_subagents()
            # Results whose announcement a stop lost are delivered now (read on the hub).
            self.pipe(lost_announcements(self.runtime.store, self.state.tasks), "redeliver")
        # Sessions with an unfinished turn resume it without a new message (read on the hub).
        self.pipe(unfinished_sessions(self.runtime.store, self.config.key), "resume")

    def handle(self, message: Message) -> Any:
        if isinstance(message, _ROUTED):
            self._route(message, self.defer_reply())
            return DEFERRED
        if isinstance(message, TakeOver):
            self._take_over(message.session_key)
            return None
        if isinstance(message, StartRoutines):
            self._start_routines()
            return None
        if isinstance(message, DrainSessions):
            return self._drain(self.defer_reply())
        if isinstance(message, ReadInbox):
            running = self.children.get(session_stream(self.config.key, message.session_key))
            if running is not None and running.is_alive():
                running.tell(message)
            else:  # not running here: the session reads its inbox when it starts
                self._take_over(message.session_key)
            return None
        port = self.runtime.services.get("routines")
        if port is not None and port.accepts(message):
            self._to_routines(message, self.defer_reply())
            return DEFERRED
        if isinstance(message, Reconfigure):
            if message.config.key != self.config.key:
                raise Rejected("an agent's key cannot change")
            self.config, self.model, self.gateway = message.config, message.model, message.gateway
            if message.prompt is not None:
                self.prompt = message.prompt
            changed = self._record_config()
            self._start_routines(reconfigured=True)
            return changed
        if isinstance(message, Piped) and message.label == "resume":
            self._resume_sessions(message)
            return None
        if isinstance(message, Piped) and message.label == "redeliver":
            self._redeliver(message)
            return None
        return self._on_subagent_message(message)

    def _on_subagent_message(self, message: Message) -> Any:
        match message:
            case SpawnSubagent():
                return self._spawn_subagent(message)
            case SubagentDone():
                self._subagent_done(message)
            case AnnounceDue(parent_session=parent):
                self._announce(parent)
            case ListSubagents():
                tasks = [self.state.tasks.tasks[t] for t in self.state.tasks.order]
                return [
                    msgspec.structs.replace(t)
                    for t in tasks
                    if (message.parent_session in (None, t.parent_session))
                    and (message.include_archived or not t.archived)
                ]
            case CancelSubagents():
                return self._cancel_subagents(message.parent_session, message.target)
            case SteerSubagent():
                return self._steer(message)
            case ArchiveDue(task_id=task_id):
                info = self.state.tasks.tasks.get(task_id)
                if info is not None and not info.archived:
                    self.emit([SubagentArchived(task_id=task_id)])
            case _:
                return super().handle(message)
        return None

    def on_child_stopped(self, child_path: str, leftovers: list[tuple[Any, Any]]) -> None:
        if self._drained and not self._sessions():
            for waiting, count in self._drained:
                if waiting is not None:
                    waiting.set(count)
            self._drained.clear()
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
        at once, and the agent and its other sessions go on.

        On a log several processes share, a message for a session another process owns,
        or one this process does not serve (its placement, a drain), goes to that
        session's inbox and its reply comes back from the log (actors.agents.remote)."""
        router = self.runtime.services.get("router")
        path = session_stream(self.config.key, message.session_key)
        remote = router is not None and isinstance(message, SendMessage)
        if remote and not message.turn_id:  # the same turn id wherever it is served, once
            message = msgspec.structs.replace(message, turn_id=uuid.uuid4().hex[:16])
        try:
            running = self.children.get(path)
            local = running is not None and running.is_alive()
            if (
                router is not None
                and remote
                and not local
                and not router.serves_here(self.config.key, message.session_key)
            ):
                self._send_remote(message, reply)  # its owner, or who serves it next
                return
            handle = self.session(message.session_key)
            handle.ref.tell(AskEnvelope(message, reply) if reply is not None else message)
        except StreamOwnedElsewhere as exc:
            if remote:  # another process was quicker: it serves the session
                self._send_remote(message, reply)
            elif reply is not None:
                reply.set_error(exc)
        except Exception as exc:
            if isinstance(exc, StoreUnavailable):  # as every ask while the store is away
                exc = ActorUnavailable(path, exc)
            self.log.warning("session cannot start", session=path, error=str(exc))
            if reply is None:
                self.runtime.dead_letter(path, message, f"session cannot start: {exc}")
            else:
                reply.set_error(_start_failure(path, message, exc))

    def _send_remote(self, message: SendMessage, reply: Any) -> None:
        remote = self.runtime.services["remote"]
        remote.send(self.config.key, message, reply or _Unheard(), self.gateway.scrub)

    def _drain(self, reply: Any) -> Any:
        port = self.runtime.services.get("routines")
        routines = self.children.pop(port.path(self.config.key), None) if port else None
        if routines is not None:  # another process runs them next
            routines.stop()
        sessions = self._sessions()
        if not sessions:
            if reply is not None:
                reply.set(0)
            return DEFERRED
        self._drained.append((reply, len(sessions)))
        for handle in sessions:
            handle.tell(Drain())
        return DEFERRED

    def _sessions(self) -> list[ActorHandle[Any]]:
        return [h for p, h in self.children.items() if p.startswith("session/") and h.is_alive()]

    def _take_over(self, session_key: str) -> None:
        """A session no live process holds, with work waiting: serve it here (it resumes
        its unfinished turn and reads its inbox when it starts)."""
        path = session_stream(self.config.key, session_key)
        running = self.children.get(path)
        if running is not None and running.is_alive():
            running.tell(ReadInbox(session_key=session_key))
            return
        router = self.runtime.services.get("router")
        if router is not None and not router.serves(self.config.key, session_key):
            return  # not here (its placement, a drain): the processes that serve it do
        try:
            self.session(session_key)
        except StreamOwnedElsewhere:
            pass  # another process was quicker: it serves the session
        except Exception as exc:
            self.log.warning("could not take a session over", session=path, error=str(exc))

    def on_child_escalated(self, child_path: str, reason: str) -> None:
        """A session, subagent or the routines actor gave up: its callers were answered and
        its escalation is recorded; it is started afresh by its next message (the routines
        actor: by the next routine request or reconfiguration). It is not the agent failing."""
        self.log.error("a child escalated; the agent goes on", child=child_path, reason=reason)
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

    # -- routines (actors.automation, reached through runtime.services["routines"]) -------
    def _start_routines(self, *, reconfigured: bool = False) -> None:
        """Start the routines actor if the agent has a heartbeat or ever had routines; tell
        a running one a new config's heartbeat."""
        port = self.runtime.services.get("routines")
        if port is None:
            return
        running = self.children.get(port.path(self.config.key))
        if running is not None and running.is_alive():
            if reconfigured:
                port.configure(running, self._routines_setup())
            return
        if self.config.heartbeat is not None or self.runtime.run(
            self.runtime.store.stream_version(port.path(self.config.key))
        ):
            try:
                self._routines()
            except StreamOwnedElsewhere as exc:  # a shared log: another process runs them
                self.log.info("the agent's routines run in another process", holder=exc.holder)

    def _routines(self) -> ActorHandle[Any]:
        port = self.runtime.services["routines"]
        running = self.children.get(port.path(self.config.key))
        if running is not None and running.is_alive():
            return running
        handle: ActorHandle[Any] = port.start(self.spawn, self.config.key, self._routines_setup())
        return handle

    def _routines_setup(self) -> RoutinesSetup:
        """What the routines actor needs of this agent, as immutable objects of now (it
        runs on its own thread): the heartbeat, a reader of HEARTBEAT.md over this config
        and prompt builder (thread-safe), and the scrubber."""
        heartbeat = self.config.heartbeat
        user = heartbeat.user if heartbeat is not None else ""
        read = functools.partial(self.prompt.context_file, self.config, "HEARTBEAT.md", user)
        return RoutinesSetup(heartbeat=heartbeat, read_heartbeat=read, scrub=self.gateway.scrub)

    def _to_routines(self, message: Any, reply: Any) -> None:
        try:
            routines = self._routines()
        except Exception as exc:  # its stream cannot be read, the store is unreachable
            self.log.warning("routines cannot start", error=str(exc))
            if reply is not None:
                reply.set_error(exc)
            return
        message = self.runtime.services["routines"].prepare(message, self.config)
        routines.ref.tell(AskEnvelope(message, reply) if reply is not None else message)

    # -- subagents ----------------------------------------------------------------------
    def _spawn_refusal(self, request: SpawnSubagent) -> str | None:
        """Why ``request`` exceeds a limit, or None (then it holds a system-wide slot)."""
        limits = self.config.subagents
        running = [
            t
            for t in self.state.tasks.tasks.values()
            if t.parent_session == request.parent_session and t.status == "running"
        ]
        if request.depth + 1 > limits.max_spawn_depth:
            return (
                f"spawn depth limit reached: this agent is at depth {request.depth} and "
                f"subagents may nest at most {limits.max_spawn_depth} deep. Do the task "
                "yourself."
            )
        if len(running) >= limits.max_children_per_agent:
            return (
                f"too many subagents for this session ({len(running)}/"
                f"{limits.max_children_per_agent} running). Wait for one to finish or "
                "cancel one."
            )
        if self.runtime.take_slot(_SLOTS, limits.max_concurrent) is None:
            return (
                f"too many subagents running in the system ({limits.max_concurrent}/"
                f"{limits.max_concurrent}). Try again later or do the task yourself."
            )
        return None

    def _spawn_subagent(self, request: SpawnSubagent) -> Any:
        limits = self.config.subagents
        depth = request.depth + 1
        reason = self._spawn_refusal(request)
        if reason is not None:
            self.emit(
                [
                    SubagentRefused(
                        parent_session=request.parent_session,
                        reason=reason,
                        task=request.task[:500],
                    )
                ]
            )
            raise Rejected(reason)
        task_id = new_task_id()
        self.emit(
            [
                SubagentSpawned(
                    task_id=task_id,
                    parent_session=request.parent_session,
                    task=request.task,
                    label=request.label,
                    depth=depth,
                    mode=request.mode,
                    at=now(),
                    parent_key=request.parent_key,
                    call_id=request.call_id,
                )
            ],
            correlation_id=request.correlation_id,
            causation_id=request.call_id or None,
        )
        config = msgspec.structs.replace(self.config, max_iterations=limits.max_iterations)
        child = self.spawn(
            Subagent,
            subagent_stream(task_id),
            config=config,
            model=self.model,
            gateway=self.gateway,
            prompt=self.prompt,
            session_key=task_id,
            parent_session=request.parent_session,
            depth=depth,
        )
        span = self._start_span(task_id, request)
        start = SendMessage(
            session_key=task_id,
            text=request.task,
            sender="parent",
            correlation_id=task_id,  # the subagent turn's causation
            trace_context=span_carrier(span),  # the subagent's turn is the run's child
        )
        child.ref.tell(AskEnvelope(start, _DoneReply(self.handle_ref, task_id)))
        info = self.state.tasks.tasks[task_id]
        if request.mode == "sync":
            self._waiters[task_id] = self.defer_reply()
            return DEFERRED
        return msgspec.structs.replace(info)

    def _subagent_done(self, done: SubagentDone, *, announce: bool = True) -> None:
        info = self.state.tasks.tasks.get(done.task_id)
        if info is None or info.status != "running":
            return
        finished = self.emit(
            [
                SubagentFinished(
                    task_id=done.task_id,
                    status=done.status,
                    result=done.result,
                    error=done.error,
                    at=now(),
                )
            ]
        )
        if info.mode == "async" and announce:  # the announcing turn continues its trace
            continue_later(done.task_id, self._subagent_spans.get(done.task_id))
        self._end_span(done.task_id, done.status, finished[0].position, done.error)
        self.runtime.give_slot(_SLOTS)
        waiter = self._waiters.pop(done.task_id, None)
        if waiter is not None:
            waiter.set(msgspec.structs.replace(self.state.tasks.tasks[done.task_id]))
        elif info.mode == "async" and announce:
            pending = self._to_announce[info.parent_session]
            pending.append(done.task_id)
            if len(pending) == 1:
                self._tell_later(
                    self.config.subagents.announce_debounce_s,
                    AnnounceDue(parent_session=info.parent_session),
                )
        self._tell_later(
            self.config.subagents.archive_after_minutes * 60, ArchiveDue(task_id=done.task_id)
        )

    def _announce(self, parent_session: str) -> None:
        task_ids = self._to_announce.pop(parent_session, [])
        if not task_ids:
            return
        turn_id = new_turn_id()
        self.emit(
            [SubagentAnnounced(parent_session=parent_session, task_ids=task_ids, turn_id=turn_id)]
        )
        self._deliver(parent_session, task_ids, turn_id)

    def _deliver(self, parent_session: str, task_ids: list[str], turn_id: str) -> None:
        tasks = [self.state.tasks.tasks[t] for t in task_ids]
        nested = parent_session.startswith("subagent/")  # its answer goes to its parent
        message = announcement(tasks, turn_id, nested)
        pass_on(task_ids, turn_id)  # its span links to the runs'
        if nested:
            handle = self.children.get(parent_session)
            if handle is not None and handle.is_alive():
                handle.ref.tell(AskEnvelope(message, _Ignore()))
        elif message.session_key:
            self._route(message, _Ignore())

    def _redeliver(self, found: Piped) -> None:
        """Deliver the results a stop lost: announce those never announced; send again,
        as the same turn, those announced as a turn the parent's stream does not hold."""
        if found.error is not None:
            self.log.error(
                "could not look for undelivered subagent results", error=str(found.error)
            )
            return
        lost: LostAnnouncements = found.value
        for turn_id, task_ids in lost.undelivered.items():
            self._deliver(self.state.tasks.tasks[task_ids[0]].parent_session, task_ids, turn_id)
        for parent_session, task_ids in lost.unannounced.items():
            self._to_announce[parent_session].extend(task_ids)
            self._announce(parent_session)

    def _cancel_subagents(self, parent_session: str, target: str) -> list[str]:
        running = [
            t
            for t in (self.state.tasks.tasks[i] for i in self.state.tasks.order)
            if t.parent_session == parent_session and t.status == "running"
        ]
        if target == "all":
            chosen = running
        elif target == "last":
            chosen = running[-1:]
        else:
            chosen = [t for t in running if t.task_id == target]
            if not chosen:
                raise Rejected(f"no running subagent {target!r} in this session")
        for info in chosen:
            handle = self.children.get(subagent_stream(info.task_id))
            if handle is not None and handle.is_alive():
                handle.ask_blocking(CancelTurn(session_key=info.task_id, by="parent"))
            # Record it now (the child's own notice arrives later and is ignored), so the
            # canceller reads its own write.
            self._subagent_done(
                SubagentDone(
                    task_id=info.task_id, status="cancelled", error="cancelled by the parent"
                ),
                announce=False,
            )
        return [t.task_id for t in chosen]

    def _steer(self, request: SteerSubagent) -> Any:
        info = self.state.tasks.tasks.get(request.task_id)
        if info is None or info.parent_session != request.parent_session:
            raise Rejected(f"no subagent {request.task_id!r} in this session")
        if info.status == "running":
            self._cancel_subagents(request.parent_session, request.task_id)
            self._subagent_done(
                SubagentDone(task_id=request.task_id, status="cancelled", error="steered")
            )
        replacement = self._spawn_subagent(
            SpawnSubagent(
                parent_session=request.parent_session,
                parent_key=request.parent_key,
                depth=info.depth - 1,
                task=request.message,
                label=info.label,
                mode="async",
            )
        )
        self.emit(
            [
                SubagentSteered(
                    task_id=request.task_id,
                    new_task_id=replacement.task_id,
                    message=request.message[:500],
                )
            ]
        )
        return replacement

    def _fail_interrupted_subagents(self) -> None:
        for info in list(self.state.tasks.tasks.values()):
            if info.status == "running":
                self.emit(
                    [
                        SubagentFinished(
                            task_id=info.task_id,
                            status="failed",
                            error="interrupted by a restart",
                            at=now(),
                        )
                    ]
                )

    def _tell_later(self, delay: float, message: Any) -> None:
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, message)

    # -- telemetry ----------------------------------------------------------------------
    def _start_span(self, task_id: str, request: SpawnSubagent) -> Span | None:
        """The run's span, a child of the current context (the spawning tool call's)."""
        if not tracing_enabled():
            return None
        attributes: dict[str, Any] = {
            GEN_AI_OPERATION: OPERATION_INVOKE_AGENT,
            GEN_AI_AGENT: self.config.key,
            SUBAGENT_TASK: task_id,
            STREAM: subagent_stream(task_id),
            SUBAGENT_MODE: request.mode,
        }
        if request.correlation_id:
            attributes[CORRELATION] = request.correlation_id
        span = tracer().start_span(f"{OPERATION_INVOKE_AGENT} subagent", attributes=attributes)
        self._subagent_spans[task_id] = span
        return span

    def _end_span(self, task_id: str, outcome: str, position: int, error: str = "") -> None:
        """The run's end was recorded at ``position`` (``subagent.finished``)."""
        span = self._subagent_spans.pop(task_id, None)
        if span is None:
            return
        span.set_attributes({SUBAGENT_OUTCOME: outcome, POSITION: position})
        if outcome == "failed":
            span.set_status(Status(StatusCode.ERROR, error))
        span.end()

    def on_stop(self) -> None:
        spans, self._subagent_spans = self._subagent_spans, {}
        for span in spans.values():  # recorded as interrupted when the agent starts again
            span.set_attribute(SUBAGENT_OUTCOME, OUTCOME_INTERRUPTED)
            span.set_status(Status(StatusCode.ERROR, "the agent stopped during the run"))
            span.end()
        super().on_stop()


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


class _Unheard:
    """The reply of a told message sent to another process's session: nobody waits."""

    def set(self, value: Any) -> None:
        pass

    def set_error(self, error: BaseException) -> None:
        pass


class _DoneReply:
    """Reply object for a subagent's single turn: tells the supervisor how it ended."""

    def __init__(self, supervisor: Any, task_id: str) -> None:
        self._supervisor = supervisor
        self._task_id = task_id

    def set(self, value: Any) -> None:
        self._supervisor.tell(
            SubagentDone(task_id=self._task_id, status="completed", result=str(value))
        )

    def set_error(self, error: BaseException) -> None:
        status: SubagentOutcome = "cancelled" if isinstance(error, TurnCancelledError) else "failed"
        self._supervisor.tell(SubagentDone(task_id=self._task_id, status=status, error=str(error)))


class _Ignore:
    """Reply object for an announcement: nobody waits for its answer."""

    def set(self, value: Any) -> None:
        return None

    def set_error(self, error: BaseException) -> None:
        return None
