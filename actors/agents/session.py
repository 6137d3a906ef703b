"""The Session actor: one agent loop per (agent, session key), as a state machine.

user message → build the prompt → model call (on the hub) → tool calls (gateway: decide
here, execute on the hub) → results → next iteration, up to the iteration limit. Every
step is an event on ``session/{agent}/{key}``; the actor stays responsive throughout
(cancel, approvals and status are handled while a model or tool call is in flight).

Outside a normal turn, the same class handles cancel, stop (the ``SESSION_END_HOOKS``
registered in ``runtime.services`` release what tools keep per session), a crash and
restart (the turn in flight ends as ``crashed``), and the resume of a turn found
unfinished in the stream after a process restart. A turn a store failure ended is
settled (its end recorded) once the store answers again, with backoff.

Each turn is traced (:mod:`.turn_trace`): an ``invoke_agent`` span under the context its
message brought, current while the turn's steps run, a ``chat`` span per model request,
and the turn, model-latency and token metrics, each recorded when the event it stands
for is durable, with that event's log position.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import time
import uuid
from collections import deque
from collections.abc import Sequence
from typing import Any

import msgspec

from clawlog.events import (
    CorruptEvent,
    Event,
    EventStoreError,
    Fenced,
    InvalidAppend,
    RecordedEvent,
    StoreDamaged,
    StoreUnavailable,
    VersionConflict,
)
from clawlog.events.domain.session import (
    BudgetExceeded,
    ModelFailed,
    ModelReplied,
    ModelRequested,
    SessionCleared,
    SessionStarted,
    ToolCall,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnFailureReason,
    TurnStarted,
)
from clawlog.events.domain.timer import TimerCancelled, TimerFired, TimerSet, TimerSkipped
from clawlog.events.domain.tool import ApprovalOutcome
from clawlog.events.folds.timers import PendingTimer, TimerBook
from clawlog.events.telemetry import METRIC_AGENT, instruments, metrics_enabled

from ..actor import DEFERRED, EventSourcedActor
from ..errors import (
    ActorDead,
    ActorUnavailable,
    CompactionFailedError,
    InvalidArgument,
    Rejected,
    StreamOwnedElsewhere,
    TurnCancelledError,
    TurnFailedError,
)
from ..messages import Message, Piped
from ..providers.base import Model, ModelReply, ModelRequest
from .call_ids import unique_call_ids
from .compaction import Compaction, compactor_for
from .config import AgentConfig
from .context_size import ConversationMeasure, estimate_tokens, fixed_chars
from .delta_sink import DeltaSink, stream_reply
from .gateway import CallerContext, CallStep, ToolGateway
from .inbox import read_inbox, sent_message
from .messages import (
    AnswerApproval,
    ApprovalTimedOut,
    CancelTurn,
    ClearSession,
    CompactSession,
    Drain,
    GetSessionStatus,
    HoldEnded,
    PostMessage,
    ReadInbox,
    ResumeTurn,
    SendMessage,
    SessionStatus,
    SettleTurn,
)
from .metering import UsageMeter
from .posting import message_posted
from .prompt import PromptBuilder
from .resume_calls import INTERRUPTED_REASON, decide_resumed_calls, interrupt_delegated_calls
from .resume_delegations import delegation_reasons
from .routine_config import quiet_reply
from .session_state import (
    CompactionInfo,
    SessionState,
    TurnState,
    apply_session_event,
)
from .staged_append import Hold, StagedAppend, scratch_state, staged_reader
from .summary_budget import refused_for_budget, summary_over_budget
from .summary_trace import SummaryTrace
from .turn_parts import recorded_parts
from .turn_replies import Unanswered, answer_ended, fan_out
from .turn_trace import TurnTrace
from .usage_ledger import Spent, unrecorded_spend

__all__ = ["SESSION_END_HOOKS", "Session"]

#: ``runtime.services`` key: callables ``(agent, session_key)`` a stopping Session calls.
SESSION_END_HOOKS = "session_end_hooks"


class _Active:
    """What only the running process knows about the turn in flight."""

    def __init__(self, turn_id: str, reply: Any) -> None:
        self.turn_id = turn_id
        self.reply = reply
        self.futures: dict[str, concurrent.futures.Future[Any]] = {}
        self.tickets: dict[str, Any] = {}
        #: Resumed from the log after a restart: its reply goes to the outbox only.
        self.resumed = False
        #: ``System.stream``'s sink: each model step's text goes there as it arrives.
        self.deltas: DeltaSink | None = None


class _Summary:
    """A compaction whose summary is being written on the hub (in a turn, or asked for
    by ``System.compact``: then ``reply`` waits for it)."""

    def __init__(
        self, key: str, compaction: Compaction, future: concurrent.futures.Future[Any]
    ) -> None:
        self.key = key
        self.compaction = compaction
        self.future = future
        #: ``System.compact`` asked for it (``reply`` answers it, if it was an ask).
        self.manual = False
        self.reply: Any = None
        #: The summarizer call's span (actors.agents.summary_trace).
        self.trace = SummaryTrace(None)


class Session(EventSourcedActor[SessionState]):
    #: Why the end of a failed turn is not recorded yet (the store is unreachable).
    _settle_error: StoreUnavailable | None
    #: The turn id of a told message put back at the head of the queue: the store could
    #: not take its start (which may still have been written: the stream is read again).
    _unstarted: str | None
    #: A SettleTurn is scheduled (its backoff timer is running).
    _settle_due: bool
    kind = "session"
    snapshot_every = 200

    def __init__(
        self,
        *args: Any,
        config: AgentConfig,
        model: Model,
        gateway: ToolGateway,
        prompt: PromptBuilder,
        session_key: str,
        parent_session: str | None = None,
        depth: int = 0,
        **kwargs: Any,
    ) -> None:
        self._gateway = gateway
        super().__init__(*args, **kwargs)
        self.config = config
        self.model = model
        self.prompt = prompt
        self.session_key = session_key
        self.parent_session = parent_session
        self.depth = depth
        self.max_iterations = config.max_iterations
        self._queue: deque[tuple[SendMessage, Any]] = deque()
        #: Askers of the unfinished turn found at start, before it resumes (by turn id).
        self._early: dict[str, Any] = {}
        #: The inbox's highest version queued here (beyond the state's: not started yet),
        #: and whether a read is on the hub (another wake-up reads again after it).
        self._inbox_read = 0
        self._inbox_reading = False
        self._inbox_again = False
        #: ``System.drain``: no new turn starts here; it stops once its turn ends.
        self._draining = False
        self._active: _Active | None = None
        #: (turn_id, reason, message) of a turn a store failure ended before the log did.
        self._unsettled: tuple[str, TurnFailureReason, str] | None = None
        self._settle_tries = 0
        self._settle_error = None
        self._unstarted = None
        self._settle_due = False
        self.idle_timeout_s = config.idle_timeout_s
        #: The telemetry of the turn in flight (its span while tracing), until its end is
        #: recorded.
        self._trace: TurnTrace | None = None
        #: Counted in ``clawlog.sessions.active`` (from its start to its stop).
        self._counted_active = False
        #: Budgets before each model request; usage and cost of each reply.
        self._meter = UsageMeter.for_session(config, self.runtime.services)
        #: Plans compactions before model requests (actors.agents.compaction).
        self._compactor = compactor_for(self.runtime.services, config, model)
        #: The conversation's measure, kept as it grows (a step measures its new messages).
        self._measure = ConversationMeasure()
        self._summary: _Summary | None = None
        #: Events decided for the step's next append, not appended yet (.staged_append).
        self._staged: StagedAppend | None = None
        #: Read-only steps held while they run and the model answers (.staged_append).
        self._hold = Hold(config.read_hold_s)

    # -- fold ---------------------------------------------------------------------------
    def initial_state(self) -> SessionState:
        return SessionState()

    def apply(self, state: SessionState, event: Event) -> SessionState:
        return apply_session_event(state, event, self._gateway.read_event)

    def apply_at(self, state: SessionState, event: Event, position: int) -> SessionState:
        # The gateway ends a tool call's span with the position of the event ending it.
        read = self._gateway.read_event
        return apply_session_event(
            state, event, lambda tool_event: read(tool_event, position), position
        )

    # -- messages -----------------------------------------------------------------------
    def handle(self, message: Message) -> Any:
        trace = self._trace
        if trace is None or trace.span is None:  # nothing traced: the hot path
            return self._handle_message(message)
        # The turn's steps run in its span: the tool calls they begin are its children.
        with trace.current():
            return self._handle_message(message)

    def _handle_message(self, message: Message) -> Any:
        try:
            return self._on_message(message)
        except (Rejected, VersionConflict, Fenced):
            raise
        except Exception as exc:  # a step of the turn failed: its caller hears it now
            error = self._abort_turn(exc)
            if self._reply is not None:  # the ask that drove the step (cancel, approve)
                self._answer(error=error)
            return DEFERRED

    def _on_message(self, message: Message) -> Any:
        match message:
            case SendMessage():
                reply = self.defer_reply()
                if not (message.turn_id and self._known_turn(message.turn_id, reply)):
                    self._queue.append((message, reply))
                    self._next_turn()
                return DEFERRED
            case Piped(label="model"):
                self._on_model(message)
            case Piped(label="tool"):
                self._on_tool(message)
            case Piped(label="summary"):
                self._on_summary(message)
            case CompactSession():
                return self._compact_now(message.trace_context)
            case ClearSession():
                return self._clear(message.by)
            case ReadInbox():
                if not self._draining:  # draining: the next owner reads it
                    self._inbox_arrived(message)
            case Drain():
                self._draining = True
                if self.runtime.ownership.enabled:  # what waits in the inbox goes on too
                    self._read_inbox()
                else:
                    self._next_turn()
            case Piped(label="inbox"):
                self._on_inbox(message)
            case AnswerApproval():
                return self._on_approval(message.call_id, message.decision, message.by)
            case ApprovalTimedOut():
                if self._is_current(message.turn_id) and self._active is None:
                    self._resume_turn()  # due at start, before the resume got to the call
                if self._is_current(message.turn_id) and self._awaits(message.call_id):
                    self._on_approval(message.call_id, "timeout", "timeout", message.fired)
                else:  # answered, cancelled or ended meanwhile: the firing only
                    self.emit([message.fired], correlation_id=message.turn_id)
            case CancelTurn():
                return self._cancel(message.by)
            case ResumeTurn():
                self._resume_turn()
            case GetSessionStatus():
                return self._status()
            case PostMessage():
                return self._post(message)
            case SettleTurn():
                self._on_settle()
            case HoldEnded():
                if message.hold == self._hold.number and self._holding():
                    self._append_staged()  # calls still run: their starts are durable now
            case _:
                return super().handle(message)
        return None

    # -- turns --------------------------------------------------------------------------
    def _next_turn(self) -> None:
        if self._draining and self._inbox_reading:
            return  # its inbox is read first: what waits there is handed on too
        if self._draining and self._active is None and self.state.turn is None:
            # Drained: what is queued goes back to the supervisor, which sends it to the
            # process that serves this session next; the lease is released at stop.
            self._leftovers.extend(self._queue)
            self._queue.clear()
            self.passivate()
            return
        if self._queue and self._unsettled is not None and not self._settle():
            self._refuse_queued()
            return
        if self._active is not None or self.state.turn is not None or not self._queue:
            return
        if self._summary is not None and self._summary.manual:
            return  # a compaction asked for is being written: the turn follows it
        message, reply = self._queue.popleft()
        try:
            parts = recorded_parts(message.parts, self.model, self._gateway.scrub)
        except InvalidArgument as exc:  # nothing recorded: the sender hears why
            if reply is not None:
                reply.set_error(exc)
            self._next_turn()
            return
        turn_id = message.turn_id or uuid.uuid4().hex[:16]
        events: list[Event] = []
        if self.version == 0 or not self.state.agent:
            events.append(
                SessionStarted(
                    agent=self.config.key,
                    session_key=self.session_key,
                    channel=message.channel,
                    chat_id=message.chat_id,
                    user=message.user,
                    parent=self.parent_session,
                    depth=self.depth,
                )
            )
        events.append(
            TurnStarted(
                turn_id=turn_id,
                text=self._gateway.scrub(message.text),
                sender=message.sender,
                channel=message.channel,
                chat_id=message.chat_id,
                user=message.user,
                skip_quality_gates=message.skip_quality_gates,
                outbox_kind=message.outbox_kind,
                parts=parts,
                inbox_version=message.inbox_version,
            )
        )
        self._active = _Active(turn_id, reply)
        self._active.deltas = message.deltas
        trace = self._trace
        if trace is None or trace.turn_id != turn_id:  # the same one: a told retry
            trace = self._trace = TurnTrace(
                agent=self.config.key,
                session_key=self.session_key,
                stream=self.path,
                turn_id=turn_id,
                channel=message.channel or self.state.channel,
                carrier=message.trace_context,
            )
        # The start shares the first request's append: one commit before it goes out.
        opening = StagedAppend(
            events, correlation_id=turn_id, causation_id=message.correlation_id, opens_turn=True
        )
        try:
            with trace.current():
                self._request_model(opening)
        except StoreUnavailable:
            if reply is None and not opening.written:
                # Nobody can be told it failed: it starts when the store is back.
                self._queue.appendleft((msgspec.structs.replace(message, turn_id=turn_id), None))
                self._unstarted = turn_id
            raise
        except Fenced:
            if not opening.written:
                # Another process took the session over before this turn's start was
                # written: it has no such turn to resume. The message goes back to the
                # queue, which the step-back hands to the new owner, asker and all.
                self._active = None
                self._queue.appendleft((msgspec.structs.replace(message, turn_id=turn_id), reply))
            raise

    def _request_model(self, opening: StagedAppend | None = None) -> None:
        """Plan and send the turn's next model request. What is decided on the way (the
        turn's start, ``opening``; a compaction; a budget refusal) shares the append that
        records the request, or the turn's end (:mod:`.staged_append`)."""
        if opening is not None:
            self._stage(opening)
        try:
            self._send_request()
        except BaseException:
            self._unstage()
            raise
        if not self._holding():  # held with the request while the model answers
            self._append_staged()  # none left but by a defect: never lost, on its own then

    def _send_request(self) -> None:
        turn = self.state.turn
        assert turn is not None and self._active is not None
        iteration = turn.iteration + 1
        if iteration > self.max_iterations:
            self._fail_turn(
                "iteration_limit",
                f"stopped after {self.max_iterations} model iterations without a final answer",
            )
            return
        ctx = self.caller()
        tools = self._gateway.specs(ctx)
        system = self.prompt.system_prompt(self.config, ctx)
        fixed = fixed_chars(system, tools)
        if self._compact_in_turn(fixed, turn.turn_id, iteration):
            return  # a summary is being written: the request follows it (_on_summary)
        # After a tool call of the turn, by default the provider's: see AgentConfig.
        reset = self.config.reset_tool_choice and iteration > 1
        request = ModelRequest(
            model=self.model.name,
            system=system,
            messages=list(self.state.messages),
            tools=tools,
            max_tokens=self.config.max_tokens,
            tool_choice=None if reset else self.config.tool_choice,
        )
        chars = fixed + self._measure.chars(self.state)  # request.messages, measured
        exceeded = self._meter.check(
            request,
            self.state,
            turn_id=turn.turn_id,
            iteration=iteration,
            now=time.time(),
            request_chars=chars,
            unrecorded=self._unrecorded(),
        )
        if exceeded is not None:
            self._stop_for_budget(exceeded)
            return
        requested = ModelRequested(
            turn_id=turn.turn_id,
            iteration=iteration,
            model=self.model.name,
            provider=self.model.provider,
            message_count=len(request.messages),
            tools=[t.name for t in tools],
            system_prompt_digest=hashlib.sha256(system.encode()).hexdigest()[:16],
            prompt_chars=chars,
            estimated_tokens=estimate_tokens(chars, self.state.chars_per_token),
            tool_choice=request.tool_choice,
        )
        held = self._may_hold_request()
        if held:  # the held step waits for this reply too (.staged_append)
            self._stage(StagedAppend([requested], correlation_id=turn.turn_id))
        else:
            self.emit([requested], correlation_id=turn.turn_id)
        key = f"{turn.turn_id}:{iteration}"
        trace = self._turn_trace()
        trace.model_requested(self.model.name, self.model.provider, iteration)
        calling = self._model_call(request, iteration)
        if held:
            calling = self._hold.run(calling, self._hold_ended)
        with trace.model_current():  # the provider's own I/O spans (httpx...) nest in it
            self._active.futures[key] = self.pipe(
                _timed(calling), "model", key=key, correlation_id=turn.turn_id
            )

    def _model_call(self, request: ModelRequest, iteration: int) -> Any:
        """The model call of ``iteration``: streamed to the turn's reader if it has one
        (the reply, and so the log, is the same either way)."""
        deltas = self._active.deltas if self._active is not None else None
        if deltas is None:
            return self.model.complete(request)
        return stream_reply(self._turn_trace().streamed(self.model), request, deltas, iteration)

    def _on_model(self, message: Piped) -> None:
        turn, active = self.state.turn, self._active
        if turn is None or active is None or message.key != f"{turn.turn_id}:{turn.iteration}":
            return  # a late answer for a cancelled turn or an old iteration
        active.futures.pop(message.key, None)
        if message.error is not None:
            error = message.error
            kind = getattr(error, "kind", type(error).__name__)
            recorded = self.emit(
                [
                    ModelFailed(
                        turn_id=turn.turn_id,
                        iteration=turn.iteration,
                        kind=kind,
                        message=self._gateway.scrub(str(error))[:2000],
                        attempts=getattr(error, "attempts", 1),
                    )
                ],
                correlation_id=turn.turn_id,
            )
            self._turn_trace().model_failed(
                model=self.model.name,
                provider=self.model.provider,
                error=error,
                kind=str(kind),
                position=recorded[0].position,
                scrub=self._gateway.scrub,
            )
            scrubbed = self._gateway.scrub(str(error))
            self._fail_turn("model_error", f"{getattr(error, 'kind', 'error')}: {scrubbed}")
            return
        reply, duration_ms = message.value
        assert isinstance(reply, ModelReply)
        ids = unique_call_ids([c.id for c in reply.tool_calls])  # one id, one call
        calls = [
            ToolCall(id=call_id, name=c.name, arguments=self._gateway.scrub(c.arguments))
            for call_id, c in zip(ids, reply.tool_calls, strict=True)
        ]
        usage, model, cost_usd = self._meter.replied(self.model.name, reply)
        replied = ModelReplied(
            turn_id=turn.turn_id,
            iteration=turn.iteration,
            text=self._gateway.scrub(reply.text),
            tool_calls=calls,
            usage=usage,
            stop_reason=reply.stop_reason,
            duration_ms=duration_ms,
            model=model,
            cost_usd=cost_usd,
        )
        trace = self._turn_trace()
        answered = trace.model_answered()  # its span ends now, its attributes once recorded

        def durable(records: Sequence[RecordedEvent]) -> None:  # its usage, span and metrics
            self._meter.recorded(records[0], self.state.user)
            trace.model_replied(
                answered,
                model=self.model.name,
                provider=self.model.provider,
                stop_reason=reply.stop_reason,
                usage=usage,
                duration_ms=duration_ms,
                position=records[0].position,
                response_model=model,
                cost_usd=cost_usd,
            )

        # The reply shares the commit of what it leads to: the turn's end, or the starts
        # of its calls, durable before any of them runs (.staged_append).
        kept = self._staged  # the steps held before this reply, if any
        count = len(kept.events) if kept is not None else 0
        self._stage(StagedAppend([replied], correlation_id=turn.turn_id, on_written=durable))
        try:
            if not calls:
                self._complete_turn(reply.text)
                return
            steps = self._begin_calls(calls)
        except BaseException as exc:
            self._unstage_keeping(kept, count, exc)
            raise
        for call_id, step in steps:
            self._apply_step(call_id, step)
        self._continue_if_done()

    def _begin_calls(self, calls: Sequence[ToolCall]) -> list[tuple[str, CallStep]]:
        """Decide each call of the staged reply; the reply and the events of every
        decision are one append, made before any call runs (the steps come back without
        their events)."""
        ctx = self.caller()
        steps: list[tuple[str, CallStep]] = []
        for tool_call in calls:
            step = self._gateway.begin(ctx, tool_call)
            if step.events:
                events = list(step.events)
                if step.outcome == "approval":  # its timeout, durable with the request
                    events.append(self._approval_timer(tool_call.id, step))
                self._stage(StagedAppend(events))
                step = msgspec.structs.replace(step, events=[])
            steps.append((tool_call.id, step))
        if self._may_hold(calls, steps):
            assert self._staged is not None
            self._hold.take(self._staged)
        else:
            self._append_staged()
        return steps

    def _may_hold(self, calls: Sequence[ToolCall], steps: list[tuple[str, CallStep]]) -> bool:
        """Whether the staged reply and starts may wait for the calls' results: every call
        runs now (none waits for a person or was refused) and only reads, so a crash
        before they are appended loses nothing a restart would not redo (it asks the
        model again and runs them again)."""
        if self._hold.seconds <= 0 or self._staged is None:
            return False
        side_effects = getattr(self._gateway, "side_effects", None)
        if side_effects is None:
            return False
        if any(step.outcome != "ready" for _, step in steps):
            return False
        if self._holding() and self._hold.ran_out():
            return False  # the hold ran out: what it held is appended with these starts
        return all(side_effects(call) == "none" for call in calls)

    def _may_hold_request(self) -> bool:
        """Whether the next model request may join the held step instead of being
        appended before the call: only while a hold goes on (its reads came back in
        time). A crash before the append then makes a restart ask the model again from
        the last request in the log, as for the held reads; the turn's start is never
        held (the user's message is durable before the model sees it)."""
        staged = self._staged
        return (
            self._holding()
            and staged is not None
            and not staged.opens_turn
            and not self._hold.ran_out()
        )

    def _holding(self) -> bool:
        return self._hold.holds(self._staged)

    def _hold_ended(self, number: int) -> None:
        """On the hub: the hold ``number`` ran out while a held call or request ran."""
        self._tell_self(HoldEnded(hold=number))

    def _apply_step(self, call_id: str, step: CallStep) -> None:
        turn, active = self.state.turn, self._active
        assert turn is not None and active is not None
        events = list(step.events)
        timer_id = _approval_timer_id(turn.turn_id, call_id)
        if step.outcome == "approval" and timer_id not in self.state.timers.pending:
            events.append(self._approval_timer(call_id, step))  # (none recorded yet)
        if events:
            self.emit(events, correlation_id=turn.turn_id)
        if step.outcome == "ready":
            key = f"{turn.turn_id}:{call_id}"
            running = self._gateway.run(step.ticket)
            if self._holding():
                running = self._hold.run(running, self._hold_ended)
            active.futures[key] = self.pipe(running, "tool", key=key, correlation_id=turn.turn_id)
        elif step.outcome == "approval":  # its timer is armed from the log (actors.timers)
            active.tickets[call_id] = step.ticket

    def _cancel_approval_timers(self, turn_id: str, outcome: str) -> None:
        prefix = _approval_timer_id(turn_id, "")
        cancelled = [
            TimerCancelled(timer_id=timer_id, reason=f"the turn {outcome}")
            for timer_id in self.state.timers.pending
            if timer_id.startswith(prefix)
        ]
        if not cancelled:
            return
        try:
            self.emit(cancelled, correlation_id=turn_id)
        except EventStoreError as exc:  # it fires later and finds no call: recorded then
            self.log.warning("approval timeouts not cancelled", turn_id=turn_id, error=str(exc))

    def _approval_timer(self, call_id: str, step: CallStep) -> TimerSet:
        """The durable timeout of a call that waits for a person's answer."""
        turn = self.state.turn
        assert turn is not None
        return TimerSet(
            timer_id=_approval_timer_id(turn.turn_id, call_id),
            kind="approval",
            due_at=self.clock_now() + step.approval_timeout_s,
            subject=call_id,
        )

    def _awaits(self, call_id: str) -> bool:
        return self._active is not None and call_id in self._active.tickets

    def timer_book(self) -> TimerBook:
        return self.state.timers

    def on_timer(self, timer: PendingTimer, outcome: TimerFired | TimerSkipped) -> None:
        """An approval's timeout passed (late after a restart too: it is never skipped).
        Handled as a message of the turn, so its failures end the turn as any step's do."""
        turn_id = timer.timer_id.split(":", 2)[1] if timer.kind == "approval" else ""
        self.handle(ApprovalTimedOut(turn_id=turn_id, call_id=timer.subject, fired=outcome))

    def _on_tool(self, message: Piped) -> None:
        turn, active = self.state.turn, self._active
        if turn is None or active is None or active.futures.pop(message.key, None) is None:
            return
        call_id = message.key.split(":", 1)[1]
        if message.error is not None:
            name = turn.pending_calls.get(call_id, "?")
            events = self._gateway.interrupted(self.caller(), call_id, name, str(message.error))
        else:
            events = message.value.events
        if not events:
            self._continue_keeping()
            return
        last = not active.futures and not active.tickets and set(turn.pending_calls) <= {call_id}
        if not last:  # never held while other calls run: durable now
            self.emit(events, correlation_id=turn.turn_id)
            self._continue_if_done()
            return
        # The last result shares the next request's commit, made now (.staged_append);
        # so do the reply and starts of its step when they were held while it ran. If
        # planning the request fails, the result (with what was held) goes in on its own
        # (the call may have had an effect).
        self._stage(StagedAppend(list(events), correlation_id=turn.turn_id))
        self._continue_keeping()
        if not self._holding():  # held with the next request while the model answers
            self._append_staged()  # nothing took it (never by design): on its own then

    def _on_approval(
        self, call_id: str, decision: ApprovalOutcome, by: str, fired: Event | None = None
    ) -> bool:
        turn, active = self.state.turn, self._active
        if turn is None or active is None or call_id not in active.tickets:
            raise Rejected(f"no approval is pending for call {call_id!r}")
        ticket = active.tickets.pop(call_id)
        step = self._gateway.decide(self.caller(), ticket, decision, by)
        # The timeout's end shares the decision's append: it fired, or is cancelled now.
        timer_id = _approval_timer_id(turn.turn_id, call_id)
        ended: list[Event] = [fired] if fired is not None else []
        if fired is None and timer_id in self.state.timers.pending:
            ended.append(TimerCancelled(timer_id=timer_id, reason=f"answered: {decision}"))
        self._apply_step(call_id, msgspec.structs.replace(step, events=[*ended, *step.events]))
        self._continue_if_done()
        return True

    def _continue_if_done(self) -> None:
        turn = self.state.turn
        if turn is None or self._active is None:
            return
        if not turn.pending_calls and not self._active.futures and not self._active.tickets:
            self._request_model()

    def _complete_turn(self, text: str) -> None:
        turn, active = self.state.turn, self._active
        assert turn is not None
        recorded = self._gateway.scrub(text)  # the log never holds a secret; send gets text
        events: list[Event] = [
            TurnCompleted(turn_id=turn.turn_id, reply=recorded, iterations=turn.iteration)
        ]
        # The reply is for a person (the outbox, in the same append), unless it is a
        # heartbeat's "nothing needs doing" (recorded here only).
        quiet = turn.outbox_kind == "heartbeat" and quiet_reply(self.config.heartbeat, recorded)
        if turn.outbox_kind and not quiet:
            resumed = active is not None and active.resumed
            events.append(self._posted(recorded, turn.outbox_kind, resumed=resumed))
        ended = self.emit(events, correlation_id=turn.turn_id, causation_id=turn.turn_id)
        self._turn_ended(turn.turn_id, "completed", ended[0].position)
        self._active = None
        if active is not None and active.reply is not None:
            active.reply.set(text)
        self._next_turn()

    def _fail_turn(self, reason: TurnFailureReason, text: str) -> None:
        turn, active = self.state.turn, self._active
        assert turn is not None
        ended = self.emit(
            [TurnFailed(turn_id=turn.turn_id, reason=reason, message=text[:2000])],
            correlation_id=turn.turn_id,
        )
        self._turn_ended(turn.turn_id, "failed", ended[0].position, f"{reason}: {text}")
        self._active = None
        if active is not None and active.reply is not None:
            active.reply.set_error(TurnFailedError(reason, text))
        self._next_turn()

    def _stop_for_budget(self, exceeded: BudgetExceeded) -> None:
        """The next request would pass a budget: it is not sent, the turn fails, and a
        person waiting for the reply gets the budget's message in its place."""
        turn, active = self.state.turn, self._active
        assert turn is not None
        events: list[Event] = [
            exceeded,
            TurnFailed(turn_id=turn.turn_id, reason="budget_exceeded", message=exceeded.message),
        ]
        if turn.outbox_kind:
            resumed = active is not None and active.resumed
            events.append(self._posted(exceeded.message, turn.outbox_kind, resumed=resumed))
        ended = self.emit(events, correlation_id=turn.turn_id, causation_id=turn.turn_id)
        reason = f"budget_exceeded: {exceeded.message}"
        self._turn_ended(turn.turn_id, "failed", ended[1].position, reason)
        self._active = None
        if active is not None and active.reply is not None:
            active.reply.set_error(TurnFailedError("budget_exceeded", exceeded.message))
        self._next_turn()

    def _post(self, message: PostMessage) -> int:
        turn = self.state.turn
        if turn is None or self._active is None:
            raise Rejected("a message can only be posted from a turn in flight")
        event = self._posted(
            self._gateway.scrub(message.text),
            "message",
            channel=message.channel,
            chat_id=message.chat_id,
            call_id=message.call_id,
        )
        causation = message.call_id or turn.turn_id
        recorded = self.emit([event], correlation_id=turn.turn_id, causation_id=causation)
        return recorded[0].position

    # -- compaction (actors.agents.compaction) -----------------------------------------
    def _compact_in_turn(self, fixed: int, turn_id: str, iteration: int) -> bool:
        """Compact before request ``iteration`` when the plan says so. True while its
        summary is being written (the request then follows, from :meth:`_on_summary`)."""
        pending = self._summary
        if pending is not None and pending.key == f"{turn_id}:summary:{iteration}":
            return True  # already being written for this request
        compaction = self._compactor.plan(
            self.state,
            fixed,
            trigger="threshold",
            turn_id=turn_id,
            iteration=iteration,
            conversation_chars=self._measure.chars(self.state),
        )
        if compaction is None:
            return False
        if compaction.summary is None:  # recorded with the request it shrinks
            self._stage(StagedAppend([compaction.event], correlation_id=turn_id))
            return False
        refused = summary_over_budget(
            self._meter, compaction, self.state, time.time(), self._unrecorded()
        )
        if refused is not None:  # the turn goes on uncompacted (actors.agents.summary_budget)
            self._stage(StagedAppend(list(refused), correlation_id=turn_id))
            return False
        assert self._active is not None
        self._append_staged()  # the turn's start is durable before the summarizer's call
        key = f"{turn_id}:summary:{iteration}"
        if pending is not None:  # an older turn's summary: its answer will be ignored
            pending.trace.abandoned()
        traced = SummaryTrace(self._turn_trace().summary_parent())
        with traced.current():  # the summarizer's own I/O spans nest in its span
            future = self.pipe(compaction.summary.run(), "summary", key=key, correlation_id=turn_id)
        self._active.futures[key] = future
        self._summary = _Summary(key, compaction, future)
        self._summary.trace = traced
        return True

    def _on_summary(self, message: Piped) -> None:
        pending = self._summary
        if pending is None or pending.key != message.key:
            return
        self._summary = None
        compaction = pending.compaction
        if not pending.manual:
            active = self._active
            if active is None or active.futures.pop(message.key, None) is None:
                pending.trace.abandoned()
                return  # the turn ended (cancelled) while its summary was being written
            recorded = self.emit(
                compaction.outcome(message.value, message.error, self._gateway.scrub),
                correlation_id=compaction.event.turn_id,
            )
            pending.trace.recorded(recorded)
            for item in recorded:  # the summarizer's usage counts in the day's ledger
                self._meter.recorded(item, self.state.user)
            self._request_model()
            return
        try:
            recorded = self.emit(
                compaction.outcome(message.value, message.error, self._gateway.scrub)
            )
        except Exception as exc:
            pending.trace.abandoned()
            if pending.reply is not None:
                pending.reply.set_error(exc)
            raise
        pending.trace.recorded(recorded)
        for item in recorded:
            self._meter.recorded(item, self.state.user)
        if pending.reply is not None:
            info = self.state.last_compaction
            if info is not None and info.failure:
                pending.reply.set_error(_compaction_failed(self.path, info))
            else:
                pending.reply.set(info)
        self._next_turn()

    def _compact_now(self, carrier: dict[str, str] | None = None) -> Any:
        """``System.compact``: prune and summarize now, whatever the estimate (its summary's
        span under the caller's, ``carrier``)."""
        self._refuse_if_busy("compacted")
        compaction = self._compactor.plan(
            self.state,
            self._fixed_chars(),
            trigger="manual",
            turn_id="",
            iteration=0,
            conversation_chars=self._measure.chars(self.state),
        )
        if compaction is None:
            return None
        if compaction.summary is None:
            self.emit([compaction.event])
            return self.state.last_compaction
        refused = summary_over_budget(
            self._meter, compaction, self.state, time.time(), self._unrecorded()
        )
        if refused is not None:
            self.emit(refused)
            reply = self.defer_reply()
            if reply is not None:
                reply.set_error(refused_for_budget(self.path, refused))
            return DEFERRED
        key = f"manual:{self.version}"
        traced = SummaryTrace.called(carrier)
        with traced.current():
            future = self.pipe(compaction.summary.run(), "summary", key=key)
        self._summary = _Summary(key, compaction, future)
        self._summary.trace = traced
        self._summary.manual = True
        self._summary.reply = self.defer_reply()
        return DEFERRED

    def _clear(self, by: str) -> bool:
        """``System.clear``: a fresh context from here (the log keeps the history)."""
        self._refuse_if_busy("cleared")
        if not self.state.messages:
            return False
        self.emit([SessionCleared(by=by, messages=len(self.state.messages))])
        return True

    def _refuse_if_busy(self, what: str) -> None:
        turn = self.state.turn
        if turn is not None or self._active is not None:
            turn_id = turn.turn_id if turn is not None else "starting"
            raise Rejected(
                f"{self.path} is in turn {turn_id}: it can be {what} once the turn ends "
                "(or after cancelling it)"
            )
        if self._summary is not None and self._summary.manual:
            raise Rejected(f"{self.path} is being compacted: try again once that has ended")

    def _fixed_chars(self) -> int:
        ctx = self.caller()
        return fixed_chars(self.prompt.system_prompt(self.config, ctx), self._gateway.specs(ctx))

    # -- staged events (actors.agents.staged_append) ----------------------------------
    def emit(
        self,
        events: Sequence[Event],
        *,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> list[RecordedEvent]:
        """Append ``events`` after what is staged, in one append; return ``events``' records."""
        staged, self._staged = self._staged, None
        self._hold.release()
        if staged is None:
            return super().emit(
                events,
                correlation_id=correlation_id,
                causation_id=causation_id,
                idempotency_key=idempotency_key,
            )
        assert staged.held is not None
        self.state = staged.held  # the append folds the recorded events into the log's state
        try:
            recorded = super().emit(
                [*staged.events, *events],
                correlation_id=staged.correlation_id or correlation_id,
                causation_id=staged.causation(causation_id),
                idempotency_key=idempotency_key,
            )
        except BaseException:
            self._measure.forget()  # it measured the staged messages, maybe not written
            raise
        staged.appended(recorded[: len(staged.events)])
        if staged.opens_turn:  # the turn's start is durable
            self._settle_tries, self._unstarted = 0, None
        return recorded[len(staged.events) :]

    def _stage(self, staged: StagedAppend) -> None:
        """Hold ``staged``'s events for the step's next append, folded into a scratch
        state meanwhile (the state folded from the log is set aside)."""
        current = self._staged
        if current is None:
            staged.held, self.state = self.state, scratch_state(self.state)
            self._staged = staged
        else:
            current.merge(staged)
        read = staged_reader(self._gateway)
        for event in staged.events:
            self.state = apply_session_event(self.state, event, read)

    def _continue_keeping(self) -> None:
        """:meth:`_continue_if_done`; if it fails, what was staged before it (held steps,
        a result) is kept: :meth:`_unstage_keeping`."""
        kept = self._staged
        count = len(kept.events) if kept is not None else 0
        try:
            self._continue_if_done()
        except BaseException as exc:
            self._unstage_keeping(kept, count, exc)
            raise

    def _unstage_keeping(self, kept: StagedAppend | None, count: int, error: BaseException) -> None:
        """Drop what is staged (a step failed before its append), then append the first
        ``count`` events of ``kept`` on their own, with their callbacks: the steps held
        before the failing one (replies with their usage and spans, results), or a
        result. Not after a store error: the failed append decides, and settling reads
        the log again."""
        self._unstage()
        if kept is None or not count or kept.written or isinstance(error, EventStoreError):
            return
        self._stage(kept.before(count))
        self._append_staged()

    def _unrecorded(self) -> Spent | None:
        """What the replies staged and not appended yet spent (held: .staged_append): a
        daily budget's ledger counts them only once they are appended."""
        staged = self._staged
        return unrecorded_spend(staged.events) if staged is not None else None

    def _append_staged(self) -> None:
        """Append what is staged on its own (it must be durable before what follows)."""
        if self._staged is not None:
            self.emit([])

    def _unstage(self) -> None:
        """Drop what is staged (the step failed before its append): the state is the
        log's again."""
        staged, self._staged = self._staged, None
        self._hold.release()
        if staged is not None and staged.held is not None:
            self.state = staged.held
            self._measure.forget()  # it measured the staged messages

    # -- helpers ------------------------------------------------------------------------
    def _turn_trace(self) -> TurnTrace:
        """The turn in flight's telemetry (a fresh one for a turn this process did not
        start, e.g. after a crash restart)."""
        turn = self.state.turn
        assert turn is not None
        trace = self._trace
        if trace is None or trace.turn_id != turn.turn_id:
            trace = self._trace = TurnTrace(
                agent=self.config.key,
                session_key=self.session_key,
                stream=self.path,
                turn_id=turn.turn_id,
                channel=self.state.channel,
                resumed=True,
            )
        return trace

    def _turn_ended(self, turn_id: str, outcome: str, position: int, reason: str = "") -> None:
        """The end of ``turn_id`` was recorded at ``position``: its span and metrics, and
        the approval timeouts nobody waits for any more are cancelled."""
        self._cancel_approval_timers(turn_id, outcome)
        trace = self._trace
        if trace is not None and trace.turn_id == turn_id:
            self._trace = None
            # A failure's text may quote a key (a provider's error): scrubbed as recorded.
            trace.ended(outcome, position, self._gateway.scrub(reason)[:2000] if reason else "")
        else:
            TurnTrace.ended_untraced(self.config.key, outcome)

    def _posted(self, text: str, kind: str, **where: Any) -> Event:
        return message_posted(self.config.key, self.session_key, self.state, text, kind, **where)

    # -- cancel, stop, crash and restart ------------------------------------------------
    def on_recovered(self, restarted: bool) -> None:
        if not restarted:
            if not self._counted_active and metrics_enabled():
                self._counted_active = True
                meters = instruments()
                meters.add(meters.sessions_active, 1, {METRIC_AGENT: self.config.key})
            if self.state.turn is not None:
                self.actor_ref.tell(ResumeTurn())
            if self.runtime.ownership.enabled:  # other processes may have sent it messages
                self._read_inbox()
            return
        # A crash in this process: do not replay into the same crash. The sender hears it
        # first (even if the store cannot take the turn's end now), and the turn ends.
        turn, active = self.state.turn, self._active
        message = "the session crashed and restarted"
        self._active, self._unsettled = None, None  # the stream was just read again
        if active is not None:
            for future in active.futures.values():
                future.cancel()
            if active.reply is not None:  # the sender is still waiting for this turn
                active.reply.set_error(TurnFailedError("crashed", message))
        if turn is not None:
            self._close_open_calls("the session crashed during this call")
            ended = self.emit(
                [TurnFailed(turn_id=turn.turn_id, reason="crashed", message=message)],
                correlation_id=turn.turn_id,
            )
            self._turn_ended(turn.turn_id, "failed", ended[0].position, f"crashed: {message}")
        self.actor_ref.tell(SettleTurn())  # then the queued messages, each in its own step

    def on_stop(self) -> None:
        active, queued = self._active, list(self._queue)
        self._active = None
        self._queue.clear()
        self._count_stop()
        summary, self._summary = self._summary, None
        if summary is not None:
            summary.trace.abandoned()
        if summary is not None and summary.manual:
            summary.future.cancel()
            if summary.reply is not None:
                summary.reply.set_error(ActorDead(f"{self.path} stopped before compacting"))
        if active is not None:
            for future in active.futures.values():
                future.cancel()
            if active.reply is not None:
                active.reply.set_error(
                    ActorDead(
                        f"{self.path} stopped during the turn; it is in the log and resumes when "
                        "the session starts again"
                    )
                )
        for _, reply in queued:
            if reply is not None:
                reply.set_error(ActorDead(f"{self.path} stopped before this message's turn began"))
        # The session ended: what tools keep per session (background processes, a sandbox
        # container) is released by the hooks registered here (actors.workspace).
        for hook in list(self.runtime.services.get(SESSION_END_HOOKS, ())):
            try:
                hook(self.config.key, self.session_key)
            except Exception as exc:
                self.log.warning("session end hook failed", error=str(exc))
        super().on_stop()

    def _cancel(self, by: str) -> bool:
        turn, active = self.state.turn, self._active
        if turn is None:
            return False
        if active is not None:
            for future in active.futures.values():
                future.cancel()
        self._close_open_calls(f"cancelled by {by}")
        ended = self.emit([TurnCancelled(turn_id=turn.turn_id, by=by)], correlation_id=turn.turn_id)
        self._turn_ended(turn.turn_id, "cancelled", ended[0].position)
        self._active = None
        if active is not None and active.reply is not None:
            active.reply.set_error(TurnCancelledError(f"the turn was cancelled by {by}"))
        self._next_turn()
        return True

    def _count_stop(self) -> None:
        """The session stops: its turn's span ends (the turn resumes at its next start)
        and it leaves ``clawlog.sessions.active`` (and counts as passivated if it is)."""
        trace, self._trace = self._trace, None
        if trace is not None:
            trace.abandoned("the session stopped during the turn; it resumes at its next start")
        if self._counted_active:
            self._counted_active = False
            meters = instruments()
            attributes = {METRIC_AGENT: self.config.key}
            meters.add(meters.sessions_active, -1, attributes)
            if self._passivating:
                meters.add(meters.sessions_passivated, 1, attributes)

    def _close_open_calls(self, reason: str, keep: frozenset[str] = frozenset()) -> None:
        turn = self.state.turn
        if turn is None:
            return
        ctx = self.caller()
        events: list[Event] = []
        for call_id, name in list(turn.pending_calls.items()):
            if call_id not in keep:
                events.extend(self._gateway.interrupted(ctx, call_id, name, reason))
        if events:
            self.emit(events, correlation_id=turn.turn_id)

    # -- the inbox: messages other processes sent (actors.agents.inbox) -----------------
    def _read_inbox(self) -> None:
        if self._inbox_reading:
            self._inbox_again = True
            return
        self._inbox_reading = True
        read = read_inbox(self.runtime.store, self.config.key, self.session_key, self._inbox_taken)
        self.pipe(read, "inbox")

    @property
    def _inbox_taken(self) -> int:
        """The inbox's highest version this session has: its turn started, or queued."""
        return max(self.state.inbox_version, self._inbox_read)

    def _inbox_arrived(self, arrived: ReadInbox) -> None:
        """The next message of the inbox, as the router saw it appended, is taken as is;
        anything else (a gap, a read in flight) reads the inbox."""
        expected = self._inbox_taken + 1
        if arrived.sent is None or self._inbox_reading or arrived.version != expected:
            if arrived.sent is None or arrived.version >= expected:
                self._read_inbox()
            return
        self._take_inbox([(arrived.version, arrived.sent)])
        self._next_turn()

    def _take_inbox(self, found: list[tuple[int, Any]]) -> None:
        for version, event in found:
            if version <= self._inbox_taken:
                continue
            self._inbox_read = version
            message = sent_message(version, event)
            if not self._known_turn(message.turn_id, None):  # each turn id runs once
                self._queue.append((message, None))

    def _on_inbox(self, found: Piped) -> None:
        self._inbox_reading = False
        if found.error is not None:
            self.log.error("could not read the session's inbox", error=str(found.error))
            if self._draining:
                self._next_turn()
        else:
            self._take_inbox(found.value)
            self._next_turn()
        if self._inbox_again:
            self._inbox_again = False
            self._read_inbox()

    def on_step_back(self, error: StreamOwnedElsewhere) -> list[tuple[Any, Any]]:
        """Another process owns this session now: it resumes the turn in flight from the
        log, and whoever waits for it hears the end from the log (actors.agents.remote);
        queued messages go back to the supervisor, which sends them to the new owner."""
        remote = self.runtime.services.get("remote")
        active, self._active = self._active, None
        waiting = [(active.turn_id, active.reply)] if active is not None else []
        if active is not None:
            for future in active.futures.values():
                future.cancel()
        waiting += list(self._early.items())
        self._early.clear()
        for turn_id, reply in waiting:
            if reply is not None and remote is not None:
                remote.wait(self.config.key, self.session_key, turn_id, reply)
            elif reply is not None:
                reply.set_error(error)
        leftovers = list(self._queue)
        self._queue.clear()
        return leftovers

    def _known_turn(self, turn_id: str, reply: Any) -> bool:
        """A message for turn ``turn_id`` that this session already has: answer ``reply``
        from how it ended, or when it ends (in flight, waiting to resume, or queued). True
        if it was one; False for a new turn."""
        ended = self.state.recent_turns.get(turn_id)
        if ended is not None:
            if reply is not None:
                answer_ended(reply, ended)
            return True
        if reply is None:
            reply = Unanswered()
        active, turn = self._active, self.state.turn
        if active is not None and active.turn_id == turn_id:
            active.reply = fan_out(active.reply, reply)
            return True
        if turn is not None and turn.turn_id == turn_id:  # resumes on its own shortly
            self._early[turn_id] = fan_out(self._early.get(turn_id), reply)
            return True
        for index, (queued, waiting) in enumerate(self._queue):
            if queued.turn_id == turn_id:
                self._queue[index] = (queued, fan_out(waiting, reply))
                return True
        return False

    def _resume_turn(self) -> None:
        """Continue a turn found unfinished after a process restart (nobody awaits it).

        Calls that were running are run again with the same idempotency key when their
        tool is side-effect free or idempotent, else recorded as interrupted (they may or
        may not have had their effect); each decision is an event
        (:mod:`.resume_calls`). Calls waiting for an approval wait
        again; a model reply that ended the turn but was not yet recorded as its end
        completes it."""
        turn = self.state.turn
        if turn is None or self._active is not None:
            return
        self._active = _Active(turn.turn_id, self._early.pop(turn.turn_id, None))
        self._active.resumed = True
        with self._turn_trace().current():  # a new span: the one that started it is gone
            self._resume_in_flight(turn)

    def _resume_in_flight(self, turn: TurnState) -> None:
        if turn.sender.startswith("delegate:") and turn.outbox_kind != "delegation":
            # A worker's delegated turn (an announcement in the caller's session is from
            # ``delegate:{id}`` too, with outbox kind "delegation": it resumes). Its link
            # records the delegation as interrupted when it starts again and tells the
            # source so: finishing the turn here would do the work a second time for
            # nobody. It ends as interrupted instead, and so does each call in flight.
            ended = interrupt_delegated_calls(
                self._gateway, self.caller(), turn, self.state.messages
            )
            if ended:
                self.emit(ended, correlation_id=turn.turn_id)
            self._fail_turn(
                "interrupted", "a restart interrupted this delegated turn; its link records it"
            )
            return
        self.log.info("resuming an interrupted turn", turn_id=turn.turn_id)
        if turn.awaiting == "done":
            last = next(m for m in reversed(self.state.messages) if m.role == "assistant")
            self._complete_turn(last.content)
            return
        waiting = frozenset(turn.awaiting_approval)
        explain = delegation_reasons(self.runtime, self.config.key)  # a sync delegate call
        resumed = decide_resumed_calls(
            self._gateway, self.caller(), turn, self.state.messages, explain
        )
        if resumed.events:  # each decision before anything is done with its call
            self.emit(resumed.events, correlation_id=turn.turn_id)
        self._close_open_calls(INTERRUPTED_REASON, keep=waiting | resumed.rerun_ids)
        for tool_call in resumed.rerun:  # same call id and turn: the same idempotency key
            self._apply_step(tool_call.id, self._gateway.begin(self.caller(), tool_call))
        if waiting:
            calls = next(m for m in reversed(self.state.messages) if m.role == "assistant")
            ctx = self.caller()
            for tool_call in calls.tool_calls:
                if tool_call.id in waiting:
                    step = self._gateway.begin(ctx, tool_call)
                    if step.outcome == "approval":  # already recorded: only wait again
                        step = msgspec.structs.replace(step, events=[])
                    self._apply_step(tool_call.id, step)
        self._continue_if_done()

    # -- failures inside a turn ---------------------------------------------------------
    def _abort_turn(self, exc: Exception) -> TurnFailedError:
        """A step of the turn raised. Its caller hears it now (and gets the error back).

        A store error (an append refused or lost, the store unreachable) ends the turn in
        the log, now or once the store answers again, and the session serves its next
        message. Anything else is a defect: it is raised again, so supervision records it
        and restarts the session from its stream (which ends the turn as ``crashed``)."""
        active, turn = self._active, self.state.turn
        if (active is None and turn is None) or self._unsettled is not None:
            raise exc  # nothing in flight, or recording a failed turn's end failed otherwise
        turn_id = active.turn_id if active is not None else turn.turn_id  # type: ignore[union-attr]
        reason = _failure_reason(exc)
        text = self._gateway.scrub(f"{type(exc).__name__}: {exc}")[:2000]
        error = TurnFailedError(reason, text)
        error.__cause__ = exc
        self._active = None
        if active is not None:
            for future in active.futures.values():
                future.cancel()
            if active.reply is not None:
                active.reply.set_error(error)
        self.log.error("turn failed", turn_id=turn_id, reason=reason, error=text)
        if not isinstance(exc, EventStoreError) or isinstance(exc, CorruptEvent | StoreDamaged):
            raise exc  # a corrupt or damaged stream escalates at once: a restart reads it again
        self._unsettled = (turn_id, reason, text)
        if turn_id != self._unstarted or not isinstance(exc, StoreUnavailable):
            self._tell_self(SettleTurn())
            return error
        # A told message went back to the queue: retry it with backoff (not at once: the
        # store may still read but not write), and the asks behind it hear why now.
        self._settle_error = exc
        self._refuse_queued()
        self._settle_later()
        return error

    def _settle(self) -> bool:
        """End in the log the turn a store failure ended here; False while the store is
        unreachable (tried again with backoff, and at each new message)."""
        if self._unsettled is None:
            return True
        turn_id, reason, text = self._unsettled
        try:
            if reason != "append_refused":  # the failed append may have been written
                self._recover()
            turn = self.state.turn
            if turn_id == self._unstarted:
                self._settle_told(turn_id)  # its backoff goes on until it starts
            elif turn is None and self.state.last_ended_turn == turn_id:
                # Its end was written before the failure (e.g. an acknowledgement lost).
                self._settle_tries = 0
            else:
                if turn is not None:
                    self._close_open_calls(f"the turn failed: {text}")
                    turn_id = turn.turn_id
                # With no turn open, its start was not recorded: its end still is.
                ended = self.emit(
                    [TurnFailed(turn_id=turn_id, reason=reason, message=text)],
                    correlation_id=turn_id,
                )
                self._turn_ended(turn_id, "failed", ended[0].position, f"{reason}: {text}")
                self._settle_tries = 0
        except StoreUnavailable as exc:
            self._settle_error = exc
            self.log.warning("turn end not recorded yet", turn_id=turn_id, error=str(exc))
            return False
        self._unsettled, self._settle_error = None, None
        return True

    def _settle_told(self, turn_id: str) -> None:
        """The told message of ``turn_id`` is back at the head of the queue. If its start
        was written after all, the turn is open in the log: it resumes instead of starting
        twice. Otherwise nothing ended, and it starts again from the queue."""
        self._unstarted = None
        turn = self.state.turn
        if turn is not None and turn.turn_id == turn_id:
            if self._queue and self._queue[0][0].turn_id == turn_id:
                self._queue.popleft()
            self._tell_self(ResumeTurn())

    def _on_settle(self) -> None:
        """One try to settle (its only retry chain: backoff until the store answers)."""
        self._settle_due = False
        if self._settle():
            self._next_turn()
            return
        self._refuse_queued()
        self._settle_later()

    def _settle_later(self) -> None:
        if self._settle_due:  # one retry chain, however many messages fail meanwhile
            return
        self._settle_due = True
        self._settle_tries += 1
        loop = self.runtime.hub.loop
        delay = self.policy.backoff(self._settle_tries)
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, SettleTurn())

    def _refuse_queued(self) -> None:
        """The store is unreachable: the queued asks cannot start a turn; say so now. Told
        messages stay queued (nobody could be told): they run when the store is back."""
        assert self._settle_error is not None
        told = [(message, reply) for message, reply in self._queue if reply is None]
        for _, reply in self._queue:
            if reply is not None:
                reply.set_error(ActorUnavailable(self.path, self._settle_error))
        self._queue.clear()
        self._queue.extend(told)

    def caller(self) -> CallerContext:
        turn = self.state.turn
        return CallerContext(
            agent=self.config.key,
            session_key=self.session_key,
            channel=self.state.channel,
            chat_id=self.state.chat_id,
            user=self.state.user,
            depth=self.depth,
            correlation_id=turn.turn_id if turn else "",
            workspace=self.config.workspace,
            provider=self.model.provider,
            session_stream=self.path,
            skip_quality_gates=bool(turn and turn.skip_quality_gates),
        )

    def _is_current(self, turn_id: str) -> bool:
        return self.state.turn is not None and self.state.turn.turn_id == turn_id

    def is_idle(self) -> bool:
        return (
            self._active is None
            and self.state.turn is None
            and not self._queue
            and self._unsettled is None
            and self._summary is None
        )

    def _status(self) -> SessionStatus:
        turn = self.state.turn
        return SessionStatus(
            agent=self.config.key,
            session_key=self.session_key,
            version=self.version,
            busy=turn is not None,
            turn_id=turn.turn_id if turn else None,
            iteration=turn.iteration if turn else 0,
            queued=len(self._queue),
            turns_completed=self.state.turns_completed,
            turns_failed=self.state.turns_failed,
            awaiting_approval=list(turn.awaiting_approval) if turn else [],
            messages=len(self.state.messages),
            context_tokens=estimate_tokens(
                self._fixed_chars() + self._measure.chars(self.state),
                self.state.chars_per_token,
            ),
            context_window=self._compactor.context_window,
            compact_at_tokens=self._compactor.compact_at,
            last_input_tokens=self.state.last_input_tokens,
            tokens_used=self.state.spent_tokens,
            chars_per_token=self.state.chars_per_token,
            compactions=self.state.compactions,
            last_compaction=self.state.last_compaction,
        )


async def _timed(coro: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    value = await coro
    return value, (time.perf_counter() - started) * 1000


def _compaction_failed(path: str, info: CompactionInfo) -> CompactionFailedError:
    pruned = f"{info.pruned} old tool results were pruned; " if info.pruned else ""
    return CompactionFailedError(
        f"the summary of {path} could not be written by {info.model!r} ({info.failure}); "
        f"{pruned}nothing was summarized. Try again, or give the agent another summarizer "
        "(System.register_agent(..., summarizer=...))",
        kind=info.failure.split(":", 1)[0],
    )


def _failure_reason(exc: Exception) -> TurnFailureReason:
    """``TurnFailed.reason`` for an error raised by a step of the turn."""
    if isinstance(exc, InvalidAppend):
        return "append_refused"  # nothing was written (too large, not encodable)
    if isinstance(exc, StoreUnavailable):
        return "store_unavailable"
    if isinstance(exc, EventStoreError):
        return "store_error"
    return "crashed"


def _approval_timer_id(turn_id: str, call_id: str) -> str:
    """The id of the durable timeout of ``call_id``'s approval in turn ``turn_id``."""
    return f"approval:{turn_id}:{call_id}"
