"""DelegationLink: one actor per directed link source → target (seed 001 §7).

Every delegation has a deadline. If the target fails, crashes, is cancelled or times out,
the link records it and the caller gets an error result that says so: a sync caller in
its reply, an async caller as a ``delegate:{id}`` message in its session. A delegation
found running when the link starts after a restart is recorded as interrupted and its
caller told, so no delegated result is ever silently lost.

Lineage: the request's causation is the delegate tool call that asked (its correlation the
caller's turn); the target's turn's causation is the delegation id; an outcome's causation
is the target turn that produced it (or the delegation id when the link decided it). An
async outcome reaches the caller as a turn from ``delegate:{id}`` in the source session;
``delegation.announced`` is recorded once that turn is in the log (it names the turn).
When the link starts, an async outcome that the log shows undelivered (the process
stopped between the outcome and its announcement) is announced again, once: one whose
turn is in the log is only recorded as announced (:mod:`~actors.delegation.delivery`).

A result the source agent's quality gates must pass first is piped through
:func:`~actors.delegation.gates.evaluate_gates`; the link records the verdicts and applies
what :func:`~actors.delegation.gates.gate_decision` makes of them (deliver, retry, fail).

Each delegation is a ``delegate {target}`` span from its request to its recorded end, a
child of the delegate tool call that asked (its context came in ``Delegate``); the
target's turns (every attempt) are its children.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode

from clawlog.events import Event
from clawlog.events.domain.delegation import (
    DelegationAnnounced,
    DelegationCancelled,
    DelegationCompleted,
    DelegationFailed,
    DelegationFailure,
    DelegationRefused,
    DelegationRequested,
    DelegationRetried,
    GateEvaluated,
    LinkConfigured,
)
from clawlog.events.domain.timer import TimerCancelled, TimerFired, TimerSet, TimerSkipped
from clawlog.events.folds.timers import PendingTimer, TimerBook
from clawlog.events.streams import agent_stream
from clawlog.events.telemetry import (
    CORRELATION,
    DELEGATION,
    DELEGATION_MODE,
    DELEGATION_OUTCOME,
    DELEGATION_SOURCE,
    DELEGATION_TARGET,
    OUTCOME_INTERRUPTED,
    POSITION,
    STREAM,
    tracer,
    tracing_enabled,
)

from .._bridge import AskEnvelope
from ..actor import DEFERRED, EventSourcedActor
from ..agents.messages import CancelTurn, SendMessage
from ..agents.trace_causes import continue_later, pass_on
from ..agents.turn_trace import span_carrier, span_current
from ..errors import ActorDead, DelegationError, Rejected
from ..messages import Message, Piped
from .delivery import delivered_turns
from .gates import evaluate_gates, gate_decision, gate_name, gates_for, revision_prompt
from .messages import (
    AnnouncementEnded,
    CancelDelegation,
    Delegate,
    DelegationInfo,
    DelegationOutcome,
    LinkState,
    ListDelegations,
)
from .state import apply_link_event

__all__ = ["DelegationLink"]


class _TurnReply:
    """The reply object of the target's turn: reports back to the link."""

    def __init__(self, link: Any, delegation_id: str, attempt: int) -> None:
        self._link, self._id, self._attempt = link, delegation_id, attempt

    def set(self, value: Any) -> None:
        self._link.tell(
            DelegationOutcome(
                delegation_id=self._id, attempt=self._attempt, ok=True, text=str(value)
            )
        )

    def set_error(self, error: BaseException) -> None:
        crashed = type(error).__name__ in ("ActorCrashed", "ActorDead")
        self._link.tell(
            DelegationOutcome(
                delegation_id=self._id,
                attempt=self._attempt,
                ok=False,
                text=str(error),
                crashed=crashed,
            )
        )


def _deadline(delegation_id: str) -> str:
    """The id of a delegation's deadline timer."""
    return f"deadline:{delegation_id}"


class _AnnouncementReply:
    """The reply object of the source session's announcement turn: when it ends (or
    never starts), the link looks in the log whether it was delivered."""

    def __init__(self, link: Any, delegation_id: str) -> None:
        self._link, self._id = link, delegation_id

    def set(self, value: Any) -> None:
        self._link.tell(AnnouncementEnded(delegation_id=self._id))

    def set_error(self, error: BaseException) -> None:
        self._link.tell(AnnouncementEnded(delegation_id=self._id))


class DelegationLink(EventSourcedActor[LinkState]):
    kind = "link"
    snapshot_every = 500

    def __init__(self, *args: Any, configured: LinkConfigured, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._configured = configured
        self._waiters: dict[str, Any] = {}
        #: The ``delegate {target}`` span of each running delegation (while tracing).
        self._spans: dict[str, Span] = {}
        #: The target's turn of each running delegation's current attempt.
        self._turns: dict[str, str] = {}

    def initial_state(self) -> LinkState:
        return LinkState()

    def apply(self, state: LinkState, event: Event) -> LinkState:
        return apply_link_event(state, event)

    def apply_at(self, state: LinkState, event: Event, position: int) -> LinkState:
        state = self.apply(state, event)
        if isinstance(event, DelegationCompleted | DelegationFailed | DelegationCancelled):
            info = state.delegations.get(event.delegation_id)
            if info is not None:  # the announcement's causation (_announce)
                info.outcome_position = position
        return state

    def on_recovered(self, restarted: bool) -> None:
        current = self._configured
        state = self.state
        if (
            state.source,
            state.target,
            state.max_concurrent,
            state.user_allow,
            state.user_deny,
            state.enabled,
        ) != (
            current.source,
            current.target,
            current.max_concurrent,
            current.user_allow,
            current.user_deny,
            current.enabled,
        ):
            self.emit([current])
        if not restarted:
            self._check_deliveries()
            for info in self.state.running():
                self._finish(
                    info,
                    DelegationFailed(
                        delegation_id=info.delegation_id,
                        reason="interrupted",
                        message="interrupted by a restart before the target answered",
                        at=time.time(),
                    ),
                )

    def reconfigure(self, configured: LinkConfigured) -> None:
        self._configured = configured

    def handle(self, message: Message) -> Any:
        match message:
            case Delegate():
                return self._delegate(message)
            case DelegationOutcome():
                self._on_outcome(message)
            case Piped(label="gate"):
                self._on_gate(message)
            case CancelDelegation():
                return self._cancel(message.delegation_id, message.by)
            case AnnouncementEnded(delegation_id=delegation_id):
                self._check_deliveries([delegation_id])
            case Piped(label="delivery"):
                self._on_deliveries(message)
            case ListDelegations():
                return [
                    d
                    for d in self.state.delegations.values()
                    if (message.include_finished or d.status == "running")
                    and message.source_session in (None, d.source_session)
                ]
            case _:
                return super().handle(message)
        return None

    # -- starting -----------------------------------------------------------------------
    def _delegate(self, request: Delegate) -> Any:
        state = self.state
        reason = self._refusal(request)
        if reason is not None:
            self.emit(
                [
                    DelegationRefused(
                        source=state.source, target=state.target, reason=reason, user=request.user
                    )
                ]
            )
            raise Rejected(reason)
        configs = self.runtime.services.get("agent_configs", {})
        target_config = configs.get(state.target)
        limit = target_config.max_delegation_load if target_config else 5
        if self.runtime.take_slot(f"delegation-load:{state.target}", limit) is None:
            reason = (
                f"Agent at capacity ({limit}/{limit}). Try a different agent or handle it yourself."
            )
            self.emit(
                [
                    DelegationRefused(
                        source=state.source, target=state.target, reason=reason, user=request.user
                    )
                ]
            )
            raise Rejected(reason)
        deadline = request.deadline_s or (
            target_config.delegation_deadline_s if target_config else 300.0
        )
        delegation_id = f"dg-{uuid.uuid4().hex[:12]}"
        self.emit(
            [
                DelegationRequested(
                    delegation_id=delegation_id,
                    source=state.source,
                    target=state.target,
                    task=request.task,
                    mode=request.mode,
                    user=request.user,
                    source_session=request.source_session,
                    source_key=request.source_key,
                    target_session=f"delegate-{delegation_id}",
                    deadline_s=deadline,
                    at=time.time(),
                    skip_quality_gates=request.skip_quality_gates,
                    call_id=request.call_id,
                ),
                TimerSet(
                    timer_id=_deadline(delegation_id),
                    kind="delegation_deadline",
                    due_at=self.clock_now() + deadline,
                    subject=delegation_id,
                ),
            ],
            correlation_id=request.correlation_id,
            causation_id=request.call_id or None,
        )
        info = self.state.delegations[delegation_id]
        self._start_span(info, request.correlation_id)
        self._run_target(info, request.task, attempt=1)
        if request.mode == "sync":
            self._waiters[delegation_id] = self.defer_reply()
            return DEFERRED
        return info

    def _refusal(self, request: Delegate) -> str | None:
        state = self.state
        if not state.enabled:
            return f"the link {state.source} -> {state.target} is disabled"
        if request.user and request.user in state.user_deny:
            return f"user {request.user!r} may not delegate to {state.target}"
        if state.user_allow and request.user not in state.user_allow:
            return f"user {request.user!r} is not allowed to delegate to {state.target}"
        running = len(state.running())
        if running >= state.max_concurrent:
            return (
                f"Agent at capacity ({running}/{state.max_concurrent}). Try a different "
                "agent or handle it yourself."
            )
        return None

    def _run_target(self, info: DelegationInfo, text: str, attempt: int) -> None:
        target = self.runtime.lookup(agent_stream(info.target))
        reply = _TurnReply(self.handle_ref, info.delegation_id, attempt)
        if target is None or not target.is_alive():
            reply.set_error(Rejected(f"agent {info.target!r} is not running"))
            return
        turn_id = self._turns[info.delegation_id] = uuid.uuid4().hex[:16]
        message = SendMessage(
            session_key=info.target_session,
            text=text,
            sender=f"delegate:{info.source}",
            user=info.user,
            skip_quality_gates=info.skip_quality_gates,
            turn_id=turn_id,
            correlation_id=info.delegation_id,  # the target turn's causation
            # The target's turn is the delegation span's child (each attempt's turn).
            trace_context=span_carrier(self._spans.get(info.delegation_id)),
        )
        target.ref.tell(AskEnvelope(message, reply))

    # -- outcomes -----------------------------------------------------------------------
    def _on_outcome(self, outcome: DelegationOutcome) -> None:
        info = self.state.delegations.get(outcome.delegation_id)
        if info is None or info.status != "running" or outcome.attempt != info.attempts:
            return
        if not outcome.ok and outcome.crashed and self.runtime.closing:
            # The target stopped because the System is closing, not on its own: the
            # delegation stays running in the log and the link records it as interrupted
            # when it starts again (recording "crashed" here would race the link's own stop).
            # A caller waiting on it hears it when the link stops (on_stop).
            return
        if not outcome.ok:
            reason: DelegationFailure = "crashed" if outcome.crashed else "target_failed"
            self._finish(
                info,
                DelegationFailed(
                    delegation_id=info.delegation_id,
                    reason=reason,
                    message=outcome.text,
                    at=time.time(),
                ),
            )
            return
        gates = gates_for(info, self.runtime.services.get("agent_configs", {}))
        if not gates:
            self._finish(
                info,
                DelegationCompleted(
                    delegation_id=info.delegation_id, result=outcome.text, at=time.time()
                ),
            )
            return
        info.result = outcome.text
        # In the delegation's span: an agent gate's reviewer turn is its child.
        with span_current(self._spans.get(info.delegation_id)):
            self.pipe(
                evaluate_gates(gates, info, outcome.text, self.runtime),
                "gate",
                key=info.delegation_id,
            )

    def _on_gate(self, message: Piped) -> None:
        """The gates' verdicts on a result: recorded, then applied."""
        info = self.state.delegations.get(message.key)
        if info is None or info.status != "running":
            return
        if message.error is not None:
            self._finish(
                info,
                DelegationFailed(
                    delegation_id=info.delegation_id,
                    reason="gate_rejected",
                    message=str(message.error),
                    at=time.time(),
                ),
            )
            return
        attempt, verdicts = message.value
        if attempt != info.attempts:
            return
        self.emit(
            [
                GateEvaluated(
                    delegation_id=info.delegation_id,
                    gate=gate_name(g),
                    passed=p,
                    feedback=f,
                    attempt=attempt,
                )
                for g, p, f in verdicts
            ]
        )
        decision = gate_decision(info, verdicts, time.time())
        if not isinstance(decision, DelegationRetried):
            self._finish(info, decision)
            return
        self.emit([decision])
        revision = revision_prompt(info.task, decision.feedback)
        self._run_target(self.state.delegations[info.delegation_id], revision, info.attempts)

    def _cancel(self, delegation_id: str, by: str) -> DelegationInfo:
        info = self.state.delegations.get(delegation_id)
        if info is None:
            raise Rejected(f"unknown delegation {delegation_id!r}")
        if info.status != "running":
            raise Rejected(f"delegation {delegation_id} is already {info.status}")
        self._cancel_target(info)
        self._finish(info, DelegationCancelled(delegation_id=delegation_id, by=by, at=time.time()))
        return info

    def _cancel_target(self, info: DelegationInfo) -> None:
        target = self.runtime.lookup(agent_stream(info.target))
        if target is not None and target.is_alive():
            target.tell(CancelTurn(session_key=info.target_session, by=f"link:{info.source}"))

    def on_stop(self) -> None:
        """A sync caller still waiting hears now that its delegation did not finish here;
        the log keeps it running, and the next start records it as interrupted."""
        waiters, self._waiters = self._waiters, {}
        for delegation_id, waiter in waiters.items():
            if waiter is None:
                continue
            waiter.set_error(
                ActorDead(
                    f"{self.path} stopped during delegation {delegation_id}; it is recorded "
                    "as interrupted when the link starts again"
                )
            )
        spans, self._spans = self._spans, {}
        for span in spans.values():  # recorded as interrupted when the link starts again
            span.set_attribute(DELEGATION_OUTCOME, OUTCOME_INTERRUPTED)
            span.set_status(Status(StatusCode.ERROR, "the link stopped during the delegation"))
            span.end()
        super().on_stop()

    def timer_book(self) -> TimerBook:
        return self.state.timers

    def on_timer(self, timer: PendingTimer, outcome: TimerFired | TimerSkipped) -> None:
        """A delegation's deadline passed (a late one too: a deadline is never skipped)."""
        info = self.state.delegations.get(timer.subject)
        if timer.kind != "delegation_deadline" or info is None or info.status != "running":
            self.emit([outcome])
            return
        self._cancel_target(info)
        failed = DelegationFailed(
            delegation_id=info.delegation_id,
            reason="timeout",
            message=f"{info.target} did not finish within the deadline",
            at=time.time(),
        )
        self._finish(info, failed, fired=outcome)

    def _finish(
        self, info: DelegationInfo, event: Event, fired: TimerFired | TimerSkipped | None = None
    ) -> None:
        """Record the outcome (with its deadline's end: fired, or cancelled now), free the
        capacity and deliver it to the caller."""
        # Caused by the target turn that answered, else by the link's own decision.
        causation = self._turns.pop(info.delegation_id, None) or info.delegation_id
        timer_id = _deadline(info.delegation_id)
        ended: list[Event] = [fired] if fired is not None else []
        if fired is None and timer_id in self.state.timers.pending:
            ended.append(
                TimerCancelled(timer_id=timer_id, reason=f"delegation {info.delegation_id} ended")
            )
        recorded = self.emit([*ended, event], causation_id=causation)[len(ended) :]
        self.runtime.give_slot(f"delegation-load:{info.target}")
        info = self.state.delegations[info.delegation_id]
        self._end_span(info, recorded[0].position)
        waiter = self._waiters.pop(info.delegation_id, None)
        if waiter is not None:
            if info.status == "completed":
                waiter.set(info)
            else:
                waiter.set_error(DelegationError(_describe(info)))
            return
        if info.mode == "async":
            self._announce(info)

    def _announce(self, info: DelegationInfo) -> None:
        """Start a turn from ``delegate:{id}`` in the source session; when it ends, the
        log says whether it was delivered (``delegation.announced`` names the turn)."""
        source_key = info.source_key or _key_of(info.source_session)
        source = self.runtime.lookup(agent_stream(info.source))
        if not source_key:
            return
        if source is None or not source.is_alive():
            self.log.warning(
                "could not announce a delegation result: the source agent is not running; "
                "it is announced when the link starts again",
                delegation_id=info.delegation_id,
            )
            return
        text = (
            f"[delegate:{info.delegation_id}] {info.target} finished: {info.result}"
            if info.status == "completed"
            else f"[delegate:{info.delegation_id}] {_describe(info)}"
        )
        turn_id = uuid.uuid4().hex[:16]
        pass_on([info.delegation_id], turn_id)  # its span links to the delegation's
        # The announcement turn is caused by the outcome event (its position); by the
        # delegation id only for an outcome folded without one (a state from before).
        cause = str(info.outcome_position) if info.outcome_position else info.delegation_id
        message = SendMessage(
            session_key=source_key,
            text=text,
            sender=f"delegate:{info.delegation_id}",
            outbox_kind="delegation",
            correlation_id=cause,  # the announcement turn's causation
            turn_id=turn_id,
        )
        source.ref.tell(
            AskEnvelope(message, _AnnouncementReply(self.handle_ref, info.delegation_id))
        )

    def _check_deliveries(self, ids: list[str] | None = None) -> None:
        """Look in the log whether async outcomes reached their source sessions (all the
        unannounced ones when ``ids`` is None): see :meth:`_on_deliveries`."""
        infos = [
            d
            for d in self.state.delegations.values()
            if (d.delegation_id in ids if ids is not None else True)
            and d.mode == "async"
            and d.status != "running"
            and not d.announced
            and d.source_session
        ]
        if not infos:
            return
        self.pipe(
            _deliveries(self.runtime.store, infos), "delivery", key="start" if ids is None else ""
        )

    def _on_deliveries(self, message: Piped) -> None:
        """Record the delivered ones as announced; after a start, announce the others."""
        if message.error is not None:
            self.log.error(
                "could not look for delivered delegation results", error=str(message.error)
            )
            return
        found: dict[str, tuple[str, int] | None] = message.value
        for delegation_id, delivered in found.items():
            info = self.state.delegations[delegation_id]
            if info.announced:
                continue
            if delivered is not None:
                self.emit(
                    [DelegationAnnounced(delegation_id=delegation_id, turn_id=delivered[0])],
                    causation_id=delivered[0],
                )
            elif message.key == "start":  # lost before it became a turn: announce it again
                self.log.info("announcing a result lost by a restart", delegation_id=delegation_id)
                self._announce(info)
            else:
                self.log.warning(
                    "a delegation result did not reach its source session; it is announced "
                    "when the link starts again",
                    delegation_id=delegation_id,
                )

    def _tell_later(self, delay: float, message: Any) -> None:
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, message)

    # -- telemetry ----------------------------------------------------------------------
    def _start_span(self, info: DelegationInfo, correlation_id: str | None) -> None:
        """The delegation's span, a child of the current context (the delegate tool call's,
        which the ``Delegate`` message brought)."""
        if not tracing_enabled():
            return
        attributes: dict[str, Any] = {
            DELEGATION: info.delegation_id,
            DELEGATION_SOURCE: info.source,
            DELEGATION_TARGET: info.target,
            DELEGATION_MODE: info.mode,
            STREAM: self.path,
        }
        if correlation_id:
            attributes[CORRELATION] = correlation_id
        span = tracer().start_span(f"delegate {info.target}", attributes=attributes)
        self._spans[info.delegation_id] = span

    def _end_span(self, info: DelegationInfo, position: int) -> None:
        """The delegation's end was recorded at ``position``."""
        span = self._spans.pop(info.delegation_id, None)
        if span is None:
            return
        if info.mode == "async":  # the turn announcing the outcome continues the trace
            continue_later(info.delegation_id, span)
        span.set_attribute(DELEGATION_OUTCOME, info.status)
        span.set_attribute(POSITION, position)
        if info.status == "failed":
            span.set_status(Status(StatusCode.ERROR, f"{info.reason}: {info.result}"[:500]))
        span.end()


async def _deliveries(store: Any, infos: list[DelegationInfo]) -> dict[str, tuple[str, int] | None]:
    """Each delegation's delivering turn (turn id, position) in its source session, or None."""
    found: dict[str, tuple[str, int] | None] = {d.delegation_id: None for d in infos}
    by_session: dict[str, list[str]] = {}
    for info in infos:
        by_session.setdefault(info.source_session, []).append(f"delegate:{info.delegation_id}")
    for session, senders in by_session.items():
        for sender, turn_id, position in await delivered_turns(store, session, senders=senders):
            delegation_id = sender.removeprefix("delegate:")
            if found.get(delegation_id) is None:
                found[delegation_id] = (turn_id, position)
    return found


def _describe(info: DelegationInfo) -> str:
    if info.status == "cancelled":
        return f"delegation {info.delegation_id} to {info.target} was cancelled"
    return (
        f"delegation {info.delegation_id} to {info.target} failed ({info.reason}): "
        f"{info.result or 'no result'}"
    )


def _key_of(session_stream: str) -> str:
    parts = session_stream.split("/", 2)
    return parts[2] if len(parts) == 3 and parts[0] == "session" else ""
