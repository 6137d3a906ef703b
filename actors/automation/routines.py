"""AgentRoutines: one actor per agent that has routines (cron jobs, heartbeat, routines).

Its stream ``routines/{agent}`` holds every routine's definition, the durable timer of each
schedule's next occurrence, and every run. A run is decided here and recorded before its
message leaves (``routine.run_started`` with the message), then sent to the agent's
session as a turn with the run's turn id, through the AgentSupervisor (its parent); the
turn's end comes back as :class:`RunReturned` and is recorded as ``routine.run_ended``.

Exactly once, across restarts:

- a schedule's occurrence is a timer on this stream, so it fires once (its misfire policy
  decides what a late one does), and the next occurrence is set in the same append;
- an event trigger's cursor (the last position it ran or skipped for) is in the log, so
  after a restart its subscription starts after it and each matching event is acted on
  once;
- a run started but not ended when the process stopped is looked up in its session at the
  next start: not there, it is sent again (same turn id); there, the session finishes it
  on its own (the reply goes to the outbox) and the run is recorded as ended.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import re
import uuid
from collections.abc import Callable
from typing import Any

import msgspec

from clawlog.events import Event
from clawlog.events.domain.routine import (
    RoutineDefined,
    RoutineRemoved,
    RoutineTrigger,
    RunEnded,
    RunSkipped,
    RunStarted,
    Schedule,
    TriggerKind,
)
from clawlog.events.domain.timer import (
    TimerCancelled,
    TimerFired,
    TimerMoved,
    TimerSet,
    TimerSkipped,
)
from clawlog.events.folds.routines import (
    OpenRun,
    RoutineBook,
    RoutineEntry,
    apply_routine_event,
    in_cooldown,
)
from clawlog.events.folds.timers import PendingTimer, TimerBook, apply_timer_event
from clawlog.events.streams import session_stream

from .._bridge import AskEnvelope
from ..actor import EventSourcedActor
from ..agents.messages import SendMessage
from ..agents.routine_config import HeartbeatConfig, quiet_reply
from ..errors import InvalidSchedule, Rejected, TurnCancelledError, TurnFailedError
from ..messages import Message, Piped
from .messages import (
    DefineRoutine,
    EnableRoutine,
    EventMatched,
    ListRoutines,
    RemoveRoutine,
    RoutineInfo,
    RoutineRuns,
    RunReturned,
    RunRoutine,
    SetHeartbeat,
)
from .runs import run_states
from .schedule import check_schedule, describe_schedule, next_due
from .watch import watch_events

__all__ = ["HEARTBEAT", "AgentRoutines", "RoutinesState", "apply_routines_event"]

#: The name of the routine an agent's heartbeat is.
HEARTBEAT = "heartbeat"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
#: An event's or webhook's payload in a run's message is cut to this many characters.
PAYLOAD_CHARS = 8000
#: How many times an open run is handed to its session before it ends as failed.
SEND_TRIES = 3
_SENDER = {"cron": "cron:{}", "heartbeat": "heartbeat", "api": "routine:{}"}
_OUTBOX = {"cron": "cron", "heartbeat": "heartbeat", "api": "routine"}


class RoutinesState(msgspec.Struct, kw_only=True):
    routines: RoutineBook = msgspec.field(default_factory=RoutineBook)
    timers: TimerBook = msgspec.field(default_factory=TimerBook)


def apply_routines_event(state: RoutinesState, event: Event) -> RoutinesState:
    """The fold of a ``routines/{agent}`` stream (also replay's, ``replay --as-of``)."""
    if not apply_routine_event(state.routines, event):
        apply_timer_event(state.timers, event)
    return state


class _RunReply:
    """Where a run's turn answers: back to this actor as a message."""

    def __init__(self, owner: Any, turn_id: str) -> None:
        self._owner, self._turn_id = owner, turn_id

    def set(self, value: Any) -> None:
        text = value if isinstance(value, str) else ""
        self._owner.tell(RunReturned(turn_id=self._turn_id, completed=True, text=text))

    def set_error(self, error: BaseException) -> None:
        # A turn that failed or was cancelled has ended; anything else (a session stopping
        # or unreachable) says nothing of the turn: the log is asked what became of it.
        ended = isinstance(error, TurnFailedError | TurnCancelledError)
        self._owner.tell(
            RunReturned(
                turn_id=self._turn_id,
                completed=False,
                text=str(error) if ended else f"{type(error).__name__}: {error}",
                ended=ended,
            )
        )


class AgentRoutines(EventSourcedActor[RoutinesState]):
    kind = "routines"
    snapshot_every = 200

    def __init__(
        self,
        *args: Any,
        agent: str,
        heartbeat: HeartbeatConfig | None = None,
        read_heartbeat: Callable[[], str | None] | None = None,
        scrub: Callable[[str], str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.agent = agent
        self._heartbeat = heartbeat
        self._read_heartbeat = read_heartbeat or (lambda: None)
        #: The agent's scrubber: a run's message (an event's or webhook's payload in it)
        #: is recorded here, so no secret in it may reach the log.
        self._scrub = scrub or (lambda text: text)
        #: How often each open run was handed to its session without an answer that
        #: says how its turn ended (at most :data:`SEND_TRIES`).
        self._sends: dict[str, int] = {}
        #: The subscription of each event-triggered routine, on the hub.
        self._watchers: dict[str, concurrent.futures.Future[Any]] = {}

    def initial_state(self) -> RoutinesState:
        return RoutinesState()

    def state_type(self) -> type[Any]:
        return RoutinesState

    def apply(self, state: RoutinesState, event: Event) -> RoutinesState:
        return apply_routines_event(state, event)

    def timer_book(self) -> TimerBook:
        return self.state.timers

    # -- lifecycle ----------------------------------------------------------------------
    def on_recovered(self, restarted: bool) -> None:
        self._stop_watchers()
        self._reconcile_heartbeat()
        for entry in self.state.routines.routines.values():
            self._watch(entry)
        # Runs recorded as started but not ended: the log says what became of each (after
        # a crash in this process too: the session answers a repeated turn id once).
        self._check_runs(list(self.state.routines.open_runs.values()))

    def on_stop(self) -> None:
        self._stop_watchers()
        super().on_stop()

    def handle(self, message: Message) -> Any:
        match message:
            case DefineRoutine():
                return self._define(message)
            case RemoveRoutine():
                return self._remove(message)
            case EnableRoutine():
                return self._enable(message)
            case ListRoutines(origin=origin):
                entries = self.state.routines.routines.values()
                return [self._info(e) for e in entries if origin in (None, e.definition.origin)]
            case RoutineRuns():
                entry = self._entry(message.name, message.origin)
                return [msgspec.structs.replace(r) for r in entry.recent]
            case RunRoutine():
                return self._run_now(message)
            case SetHeartbeat():
                self._heartbeat, self._read_heartbeat = message.heartbeat, message.read_heartbeat
                if message.scrub is not None:
                    self._scrub = message.scrub
                self._reconcile_heartbeat()
                return None
            case EventMatched():
                self._on_match(message)
                return None
            case RunReturned():
                self._on_returned(message)
                return None
            case Piped(label="open_runs"):
                self._on_open_runs(message)
                return None
        return super().handle(message)

    # -- definitions --------------------------------------------------------------------
    def _define(self, request: DefineRoutine) -> RoutineInfo:
        self._check(request)
        routine = request.routine
        schedule = routine.trigger.schedule
        if schedule is not None and schedule.kind == "every" and not schedule.anchor:
            # On a grid from now: a late run does not shift the ones after it.
            anchored = msgspec.structs.replace(schedule, anchor=self.clock_now() + schedule.every_s)
            trigger = msgspec.structs.replace(routine.trigger, schedule=anchored)
            routine = msgspec.structs.replace(routine, trigger=trigger)
        existing = self.state.routines.routines.get(routine.name)
        after = existing.matched_position if existing is not None else 0
        if routine.trigger.kind == "event" and not (
            existing is not None
            and existing.definition.trigger.kind == "event"
            and existing.definition.enabled
        ):  # events fire it from now on: none from before, none from while it was off
            after = self.runtime.run(self.runtime.store.head_position())
        definition = msgspec.structs.replace(routine, after_position=after)
        self.emit([definition, *self._timer_events(definition)])
        entry = self.state.routines.routines[definition.name]
        self._watch(entry)
        return self._info(entry)

    def _check(self, request: DefineRoutine) -> None:
        routine = request.routine
        if _NAME.fullmatch(routine.name) is None:
            raise Rejected(
                f"routine name {routine.name!r}: 1-64 characters of A-Z a-z 0-9 _ . : - "
                "(starting with a letter or digit)"
            )
        existing = self.state.routines.routines.get(routine.name)
        if existing is not None and existing.definition.origin != routine.origin:
            raise Rejected(
                f"a {existing.definition.origin} routine named {routine.name!r} exists; "
                "choose another name"
            )
        if existing is not None and not request.replace:
            raise Rejected(f"{routine.name!r} exists; update it, or choose another name")
        if routine.origin == "cron" and existing is None and request.max_jobs:
            self._check_job_count(request.max_jobs)
        trigger = routine.trigger
        if trigger.kind == "schedule":
            self._check_schedule(trigger, request.min_interval_s)
        elif trigger.kind == "event":
            self._check_event_types(trigger)
        if not routine.prompt.strip() and routine.origin != "heartbeat":
            raise Rejected("a routine needs a prompt: what the agent is told when it runs")

    def _check_job_count(self, max_jobs: int) -> None:
        """A cron job counts while it can still run (a one-time job that ran does not)."""
        pending = self.state.timers.pending
        jobs = [
            e
            for e in self.state.routines.routines.values()
            if e.definition.origin == "cron"
            and (_recurring(e.definition) or f"routine:{e.definition.name}" in pending)
        ]
        if len(jobs) >= max_jobs:
            raise Rejected(
                f"this agent has {len(jobs)} cron jobs, the most it may have; remove one "
                "first (action=remove)"
            )

    def _check_schedule(self, trigger: RoutineTrigger, min_interval_s: float) -> None:
        if trigger.schedule is None:
            raise Rejected("a schedule trigger needs a schedule")
        try:
            check_schedule(trigger.schedule, min_interval_s=min_interval_s)
        except InvalidSchedule as exc:
            raise Rejected(exc.problem) from exc
        if trigger.schedule.kind == "at" and next_due(trigger.schedule, self.clock_now()) is None:
            when = describe_schedule(trigger.schedule)
            raise Rejected(f"a one-time schedule must be in the future; {when} has passed")

    def _check_event_types(self, trigger: RoutineTrigger) -> None:
        if trigger.event is None or not trigger.event.types:
            raise Rejected("an event trigger needs at least one event type (e.g. 'tool.*')")
        registry = self.runtime.store.registry
        known = registry.tags()
        for tag in trigger.event.types:
            if not (registry.expand([tag]) if tag.endswith(".*") else tag in known):
                raise Rejected(
                    f"no event type is {tag!r} (a tag such as 'tool.call_refused', or a "
                    "domain's glob such as 'tool.*'; register an application's own types "
                    "with System.open(event_types=...))"
                )

    def _timer_events(self, definition: RoutineDefined) -> list[Event]:
        """The timer changes that make the pending timer match ``definition``."""
        timer_id = f"routine:{definition.name}"
        pending = self.state.timers.pending.get(timer_id)
        schedule = definition.trigger.schedule
        due = None
        if definition.enabled and definition.trigger.kind == "schedule" and schedule is not None:
            due = next_due(schedule, self.clock_now())
        if due is None:
            return [TimerCancelled(timer_id=timer_id, reason="not scheduled")] if pending else []
        if pending is not None and (pending.misfire, pending.grace_s) == (
            definition.misfire,
            definition.grace_s,
        ):
            if pending.due_at == due:
                return []
            return [TimerMoved(timer_id=timer_id, due_at=due, previous_due_at=pending.due_at)]
        replaced: list[Event] = [TimerCancelled(timer_id=timer_id, reason="redefined")]
        return [*(replaced if pending else []), self._timer(definition, due)]

    def _timer(self, definition: RoutineDefined, due: float) -> TimerSet:
        return TimerSet(
            timer_id=f"routine:{definition.name}",
            kind=definition.origin if definition.origin != "api" else "routine",
            due_at=due,
            subject=definition.name,
            misfire=definition.misfire,
            grace_s=definition.grace_s,
        )

    def _enable(self, request: EnableRoutine) -> RoutineInfo:
        entry = self._entry(request.name, None)
        definition = entry.definition
        if definition.enabled == request.enabled:
            return self._info(entry)
        changed = msgspec.structs.replace(definition, enabled=request.enabled)
        if changed.trigger.kind == "event" and request.enabled:  # from now on
            after = self.runtime.run(self.runtime.store.head_position())
            changed = msgspec.structs.replace(changed, after_position=after)
        self.emit([changed, *self._timer_events(changed)])
        entry = self.state.routines.routines[request.name]
        self._watch(entry)
        return self._info(entry)

    def _remove(self, request: RemoveRoutine) -> bool:
        entry = self.state.routines.routines.get(request.name)
        if entry is None or request.origin not in (None, entry.definition.origin):
            return False
        events: list[Event] = []
        timer_id = f"routine:{request.name}"
        if timer_id in self.state.timers.pending:
            events.append(TimerCancelled(timer_id=timer_id, reason="routine removed"))
        self.emit([*events, RoutineRemoved(name=request.name, reason=request.reason)])
        self._unwatch(request.name)
        return True

    def _reconcile_heartbeat(self) -> None:
        """Make the ``heartbeat`` routine what the agent's config says."""
        config = self._heartbeat
        entry = self.state.routines.routines.get(HEARTBEAT)
        if entry is not None and entry.definition.origin != "heartbeat":
            self.log.warning("a routine named 'heartbeat' is not the heartbeat; not replaced")
            return
        if config is None:
            if entry is not None:
                self._remove(RemoveRoutine(name=HEARTBEAT, reason="heartbeat not configured"))
            return
        if entry is not None and heartbeat_matches(config, entry.definition):
            return
        self._define(heartbeat_routine(config))

    # -- runs -----------------------------------------------------------------------------
    def on_timer(self, timer: PendingTimer, outcome: TimerFired | TimerSkipped) -> None:
        entry = self.state.routines.routines.get(timer.subject)
        if entry is None or not timer.timer_id.startswith("routine:"):
            self.emit([outcome])
            return
        definition = entry.definition
        following = self._following(definition, max(self.clock_now(), timer.due_at))
        if isinstance(outcome, TimerSkipped):
            skipped = RunSkipped(
                name=definition.name, trigger="schedule", reason="misfire", due_at=timer.due_at
            )
            self.emit([outcome, skipped, *following])
            return
        started = self._decide_run(entry, "schedule", timer_id=timer.timer_id, due_at=timer.due_at)
        self.emit([outcome, started, *following])
        self._send_if_started(started)

    def _following(self, definition: RoutineDefined, after: float) -> list[Event]:
        schedule = definition.trigger.schedule
        due = next_due(schedule, after) if schedule is not None else None
        return [self._timer(definition, due)] if due is not None else []

    def _decide_run(
        self, entry: RoutineEntry, trigger: TriggerKind, payload: str = "", **detail: Any
    ) -> RunStarted | RunSkipped:
        """A run's start, or why there is none (recorded either way)."""
        definition = entry.definition
        now = self.clock_now()
        reason = None
        if not definition.enabled:
            reason = "disabled"
        elif trigger == "schedule" and any(
            r.name == definition.name for r in self.state.routines.open_runs.values()
        ):  # a schedule does not pile runs up; each event or webhook gets its own run
            reason = "busy"
        elif in_cooldown(entry, now):
            reason = "cooldown"
        message = self._scrub(self._message(definition, payload)) if reason is None else ""
        if reason is None and not message:
            reason = "empty"
        if reason is not None:
            return RunSkipped(
                name=definition.name,
                trigger=trigger,
                reason=reason,
                matched_position=detail.get("matched_position", 0),
                due_at=detail.get("due_at", 0.0),
            )
        return RunStarted(
            turn_id=uuid.uuid4().hex[:16],
            name=definition.name,
            origin=definition.origin,
            trigger=trigger,
            session_key=definition.session_key,
            message=message,
            channel=definition.channel,
            chat_id=definition.chat_id,
            user=definition.user,
            started_at=now,
            **detail,
        )

    def _message(self, definition: RoutineDefined, payload: str) -> str:
        if definition.origin == "heartbeat":
            body = (self._read_heartbeat() or "").strip()
            if not body:
                return ""
            config = self._heartbeat
            token = config.ok_token if config is not None else "HEARTBEAT_OK"
            return (
                f"{body}\n\n(Heartbeat: follow HEARTBEAT.md above. If nothing needs attention, "
                f"reply {token}.)"
            )
        if not payload:
            return definition.prompt
        if len(payload) > PAYLOAD_CHARS:
            payload = f"{payload[:PAYLOAD_CHARS]} …(cut: {len(payload)} characters in all)"
        return f"{definition.prompt}\n\n{payload}"

    def _send_if_started(self, decided: RunStarted | RunSkipped) -> None:
        if isinstance(decided, RunStarted):
            self._send(self.state.routines.open_runs[decided.turn_id])

    def _send(self, run: OpenRun) -> None:
        """Send the run's message to its session, through the agent's supervisor."""
        assert self.parent is not None
        message = SendMessage(
            session_key=run.session_key,
            text=run.message,
            sender=_SENDER[run.origin].format(run.name),
            channel=run.channel,
            chat_id=run.chat_id,
            user=run.user,
            turn_id=run.turn_id,
            outbox_kind=_OUTBOX[run.origin],
            correlation_id=run.turn_id,
        )
        self._sends[run.turn_id] = self._sends.get(run.turn_id, 0) + 1
        self.parent.tell(AskEnvelope(message, _RunReply(self.handle_ref, run.turn_id)))

    def _on_returned(self, returned: RunReturned) -> None:
        run = self.state.routines.open_runs.get(returned.turn_id)
        if run is None:
            return
        if returned.completed or returned.ended:
            self._end_run(run, "completed" if returned.completed else "failed", returned.text)
        elif not self.runtime.closing:  # the next start asks the log when closing
            self._check_runs([run])

    def _end_run(self, run: OpenRun, outcome: str, text: str) -> None:
        self._sends.pop(run.turn_id, None)
        quiet = (
            outcome == "completed"
            and run.origin == "heartbeat"
            and quiet_reply(self._heartbeat, text)
        )
        self.emit(
            [
                RunEnded(
                    turn_id=run.turn_id,
                    name=run.name,
                    outcome=outcome,
                    # A reply is in the session's stream (scrubbed); a failure's reason
                    # is kept here, scrubbed too.
                    message="" if outcome == "completed" else self._scrub(text)[:500],
                    quiet=quiet,
                )
            ],
            correlation_id=run.turn_id,
        )

    def _check_runs(self, runs: list[OpenRun]) -> None:
        if runs:
            self.pipe(run_states(self.runtime.store, self.agent, runs), "open_runs")

    def _on_open_runs(self, found: Piped) -> None:
        """End the runs whose turn ended in their session; hand the others to it (again):
        a turn it never had starts, one it has (resumed or running) answers when it ends,
        and one it ended answers at once. A run no session answers after
        :data:`SEND_TRIES` hand-overs ends as failed."""
        if found.error is not None:
            self.log.error("could not look for open routine runs", error=str(found.error))
            return
        for turn_id, (state, text) in found.value.items():
            run = self.state.routines.open_runs.get(turn_id)
            if run is None:
                continue
            if state in ("completed", "failed"):
                self._end_run(run, state, text)
                continue
            tries = self._sends.get(turn_id, 0)
            if tries >= SEND_TRIES:
                self._end_run(run, "failed", f"its session did not answer after {tries} tries")
                continue
            self.log.info("handing an open routine run to its session", turn_id=turn_id)
            self._send(run)

    def _run_now(self, request: RunRoutine) -> str:
        entry = self._entry(request.name, request.origin)
        trigger_kind = entry.definition.trigger.kind
        if request.trigger == "webhook" and trigger_kind != "webhook":
            raise Rejected(f"routine {request.name!r} is not triggered by a webhook")
        detail: dict[str, Any] = {}
        if request.trigger == "webhook":
            detail["webhook_digest"] = hashlib.sha256(request.payload.encode()).hexdigest()
        decided = self._decide_run(entry, request.trigger, request.payload, **detail)
        self.emit([decided])
        if isinstance(decided, RunSkipped):
            raise Rejected(f"routine {request.name!r} did not run: {_SKIP_WORDS[decided.reason]}")
        self._send_if_started(decided)
        return decided.turn_id

    def _on_match(self, matched: EventMatched) -> None:
        entry = self.state.routines.routines.get(matched.name)
        if entry is None or entry.definition.trigger.kind != "event":
            return
        if matched.position <= entry.matched_position:
            return  # acted on before (a subscription restarted behind the cursor)
        where = f"at position {matched.position} on {matched.stream}"
        payload = f"Event {matched.type} {where}:\n{matched.payload}"
        decided = self._decide_run(entry, "event", payload, matched_position=matched.position)
        if isinstance(decided, RunSkipped) and decided.reason == "cooldown":
            return  # not recorded: a busy event type would fill the log with skips
        self.emit([decided], causation_id=str(matched.position))
        self._send_if_started(decided)

    # -- event subscriptions ------------------------------------------------------------
    def _watch(self, entry: RoutineEntry) -> None:
        definition = entry.definition
        self._unwatch(definition.name)
        match = definition.trigger.event
        if definition.trigger.kind != "event" or match is None or not definition.enabled:
            return
        handle = self.handle_ref
        exclude = {self.path, session_stream(self.agent, definition.session_key)}
        self._watchers[definition.name] = self.runtime.hub.submit(
            watch_events(
                self.runtime.store,
                definition.name,
                match,
                entry.matched_position,
                exclude,
                handle.tell,
            )
        )

    def _unwatch(self, name: str) -> None:
        watcher = self._watchers.pop(name, None)
        if watcher is not None:
            watcher.cancel()

    def _stop_watchers(self) -> None:
        for name in list(self._watchers):
            self._unwatch(name)

    # -- answers --------------------------------------------------------------------------
    def _entry(self, name: str, origin: str | None) -> RoutineEntry:
        entry = self.state.routines.routines.get(name)
        if entry is None or origin not in (None, entry.definition.origin):
            known = sorted(
                n
                for n, e in self.state.routines.routines.items()
                if origin in (None, e.definition.origin)
            )
            raise Rejected(f"no routine named {name!r}; there are: {', '.join(known) or 'none'}")
        return entry

    def _info(self, entry: RoutineEntry) -> RoutineInfo:
        definition = entry.definition
        timer = self.state.timers.pending.get(f"routine:{definition.name}")
        return RoutineInfo(
            name=definition.name,
            origin=definition.origin,
            trigger=describe_trigger(definition.trigger),
            prompt=definition.prompt,
            session_key=definition.session_key,
            enabled=definition.enabled,
            misfire=definition.misfire,
            cooldown_s=definition.cooldown_s,
            next_due=timer.due_at if timer is not None else None,
            runs=entry.runs,
            last_started_at=entry.last_started_at,
            running=any(r.name == definition.name for r in self.state.routines.open_runs.values()),
            definition=definition,
        )


_SKIP_WORDS = {
    "disabled": "it is disabled",
    "busy": "its previous run has not ended",
    "cooldown": "it ran less than its cooldown ago",
    "empty": "its prompt is empty (an empty HEARTBEAT.md)",
    "misfire": "it was missed and its misfire policy skips it",
}


def heartbeat_routine(config: HeartbeatConfig) -> DefineRoutine:
    """The ``heartbeat`` routine ``config`` is (its periods counted from when it is
    defined, as every ``every`` schedule's): its message is the agent's HEARTBEAT.md, read
    when it runs."""
    return DefineRoutine(
        routine=RoutineDefined(
            name=HEARTBEAT,
            origin="heartbeat",
            trigger=RoutineTrigger(
                kind="schedule",
                schedule=Schedule(kind="every", every_s=config.every_s),
            ),
            prompt="",
            session_key=config.session_key,
            channel=config.channel,
            chat_id=config.chat_id,
            user=config.user,
            misfire=config.misfire,
            defined_by="config",
        )
    )


def heartbeat_matches(config: HeartbeatConfig, definition: RoutineDefined) -> bool:
    """True when ``definition`` already is ``config``'s routine (its anchor aside)."""
    schedule = definition.trigger.schedule
    return (
        schedule is not None
        and schedule.kind == "every"
        and schedule.every_s == config.every_s
        and (definition.session_key, definition.channel, definition.chat_id, definition.user)
        == (config.session_key, config.channel, config.chat_id, config.user)
        and definition.misfire == config.misfire
        and definition.enabled
    )


def _recurring(definition: RoutineDefined) -> bool:
    schedule = definition.trigger.schedule
    return schedule is None or schedule.kind != "at"


def describe_trigger(trigger: RoutineTrigger) -> str:
    """A trigger in a few words, for listings."""
    if trigger.kind == "schedule" and trigger.schedule is not None:
        return describe_schedule(trigger.schedule)
    if trigger.kind == "event" and trigger.event is not None:
        where = f" on {trigger.event.stream_prefix}*" if trigger.event.stream_prefix else ""
        return f"on {', '.join(trigger.event.types)}{where}"
    return trigger.kind
