"""Routines: messages an agent gives itself when a trigger fires, and each run of them.

A routine (seed 004's routines, seed 001's cron jobs and HEARTBEAT.md wake-up) is a
prompt sent to one of the agent's sessions when its trigger fires: a schedule (a cron
expression in a time zone, an interval, or one time), matching events in the log, a
webhook the application forwards, or a manual run. Three kinds of routine share this one
record, by ``origin``:

- ``cron``: a job the agent scheduled for itself with the ``cron`` tool;
- ``heartbeat``: the agent's periodic wake-up with its HEARTBEAT.md as the prompt
  (``AgentConfig.heartbeat``);
- ``api``: a routine the application defined (``System.routines.define``).

All of it is on the agent's ``routines/{agent}`` stream, written by its AgentRoutines actor
(``actors.automation``): a schedule's next occurrence is a durable timer there
(``timer.set``, ``events.domain.timer``),
and every run is ``routine.run_started`` (with its trigger and the message it sends) → the
session's turn (the same turn id) → ``routine.run_ended``; a trigger that did not start a
run (cooldown, disabled, a missed occurrence skipped by its misfire policy) is
``routine.run_skipped``.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..base import Event
from .timer import MisfirePolicy

__all__ = [
    "EVENTS",
    "EventMatch",
    "RoutineDefined",
    "RoutineEvent",
    "RoutineOrigin",
    "RoutineRemoved",
    "RoutineTrigger",
    "RunEnded",
    "RunOutcome",
    "RunSkipped",
    "RunStarted",
    "Schedule",
    "ScheduleKind",
    "SkipReason",
    "TriggerKind",
]

#: ``cron``: a 5-field cron expression in ``tz``; ``every``: every ``every_s`` seconds
#: from ``anchor``; ``at``: once, at ``at``.
ScheduleKind = Literal["cron", "every", "at"]
#: What fires a routine.
TriggerKind = Literal["schedule", "event", "webhook", "manual"]
#: Who made a routine: ``api`` (the application), ``cron`` (the agent, with the cron
#: tool), ``heartbeat`` (the agent's config). A ``str``, not a Literal: kinds may be added,
#: and a process that does not know one still reads the event.
RoutineOrigin = str
#: Why a trigger started no run (see ``RunSkipped``); an open set, as origins are.
SkipReason = str
#: How a run ended: its turn ``completed`` or ``failed`` (cancelled and budget-stopped
#: turns included, with the reason in ``message``); an open set, as origins are.
RunOutcome = str


class Schedule(msgspec.Struct, frozen=True, kw_only=True):
    """When a schedule-triggered routine runs. Times are epoch seconds."""

    kind: ScheduleKind
    #: ``cron``: minute hour day-of-month month day-of-week (croniter's syntax).
    expr: str = ""
    #: ``cron``: the IANA time zone the expression reads in (DST changes included).
    tz: str = "UTC"
    #: ``every``: the interval in seconds, and the first due time (0: when defined).
    every_s: float = 0.0
    anchor: float = 0.0
    #: ``at``: the one time it runs.
    at: float = 0.0


class EventMatch(msgspec.Struct, frozen=True, kw_only=True):
    """Which events in the log fire an event-triggered routine."""

    #: Event types, exact or as a glob of a domain (``tool.*``); any of them matches.
    types: list[str]
    #: Only events on streams that start with this ("" = any stream).
    stream_prefix: str = ""
    #: Only events whose payload has each of these fields equal to the value (compared as
    #: text: ``{"status": "completed"}``).
    fields: dict[str, str] = msgspec.field(default_factory=dict)


class RoutineTrigger(msgspec.Struct, frozen=True, kw_only=True):
    kind: TriggerKind
    schedule: Schedule | None = None
    event: EventMatch | None = None


class RoutineDefined(Event, frozen=True, tag="routine.defined"):
    """A routine was defined, or redefined with the same name (the whole definition)."""

    name: str
    origin: RoutineOrigin
    trigger: RoutineTrigger
    #: What the agent is told when it runs (an event's or a webhook's payload follows it).
    prompt: str
    #: The session its runs go to, and where its replies are posted (the outbox's channel,
    #: chat and user; "" = the session's own, from its turns).
    session_key: str
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    enabled: bool = True
    misfire: MisfirePolicy = "fire"
    #: How late a scheduled run may start and still count as on time.
    grace_s: float = 60.0
    #: At least this many seconds between two runs (a trigger within it is skipped).
    cooldown_s: float = 0.0
    #: Who defined it: the cron tool call's session, or "api".
    defined_by: str = "api"
    #: Event triggers: the log position matching starts after (events before it never
    #: fire it).
    after_position: int = 0


class RoutineRemoved(Event, frozen=True, tag="routine.removed"):
    name: str
    reason: str = ""


class RunStarted(Event, frozen=True, tag="routine.run_started"):
    """A routine's trigger fired: ``message`` goes to its session as turn ``turn_id``
    (the run's id everywhere: its events' correlation, the turn's, ``routine.run_ended``'s).
    Recorded before it is sent, so a run a restart interrupted is sent again, once."""

    turn_id: str
    name: str
    origin: RoutineOrigin
    trigger: TriggerKind
    session_key: str
    #: What the session is told: the prompt, and an event's or webhook's payload.
    message: str
    #: Where its reply is posted ("" = the session's own channel and chat).
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    #: When it started, on the System's clock (its cooldown counts from here).
    started_at: float = 0.0
    #: The schedule's timer that fired, and its due time (schedule triggers).
    timer_id: str = ""
    due_at: float = 0.0
    #: The log position of the event that matched (event triggers).
    matched_position: int = 0
    #: A webhook's SHA-256 of its payload (its body is in the turn's message).
    webhook_digest: str = ""


class RunEnded(Event, frozen=True, tag="routine.run_ended"):
    turn_id: str
    name: str
    outcome: RunOutcome
    #: Why it failed (scrubbed, cut to 500 characters); "" when it completed: the reply is
    #: the session's ``session.turn_completed``.
    message: str = ""
    #: True when the reply said nothing needs doing (a heartbeat's ``HEARTBEAT_OK``): it
    #: is in the session, not in the outbox.
    quiet: bool = False


class RunSkipped(Event, frozen=True, tag="routine.run_skipped"):
    """A trigger that started no run: ``cooldown``, ``disabled``, ``misfire`` (a missed
    occurrence its policy skips), ``busy`` (a scheduled run whose previous run has not
    ended), ``empty`` (nothing to say: a heartbeat whose HEARTBEAT.md is missing or
    blank)."""

    name: str
    trigger: TriggerKind
    reason: SkipReason
    matched_position: int = 0
    due_at: float = 0.0


RoutineEvent = RoutineDefined | RoutineRemoved | RunStarted | RunEnded | RunSkipped
EVENTS = (RoutineDefined, RoutineRemoved, RunStarted, RunEnded, RunSkipped)
