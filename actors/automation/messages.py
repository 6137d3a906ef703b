"""What the AgentRoutines actor understands, and what it answers."""

from __future__ import annotations

from typing import Any

import msgspec

from clawlog.events.domain.routine import (
    RoutineDefined,
    RoutineOrigin,
    TriggerKind,
)
from clawlog.events.domain.timer import MisfirePolicy

from ..messages import Message, Request

__all__ = [
    "DefineRoutine",
    "EnableRoutine",
    "EventMatched",
    "ListRoutines",
    "RemoveRoutine",
    "RoutineInfo",
    "RoutineRuns",
    "RunReturned",
    "RunRoutine",
    "SetHeartbeat",
]


class DefineRoutine(Request["RoutineInfo"], frozen=True, kw_only=True):
    """Define a routine, or redefine the one with this name and origin: ``routine`` is the
    definition to record (its ``after_position`` and an ``every`` schedule's anchor are
    set by the routines actor)."""

    routine: RoutineDefined
    #: False: refused if a routine of this name exists (the cron tool's ``add``).
    replace: bool = True
    #: For ``origin="cron"``: refused past this many cron jobs, or with runs closer together.
    max_jobs: int = 0
    min_interval_s: float = 0.0


class RemoveRoutine(Request[bool], frozen=True, kw_only=True):
    """Remove a routine; False if there was none. ``origin`` set: only one of that origin
    (the cron tool removes the agent's own jobs, never the application's routines)."""

    name: str
    origin: RoutineOrigin | None = None
    reason: str = ""


class EnableRoutine(Request["RoutineInfo"], frozen=True, kw_only=True):
    """Turn a routine on or off (its definition recorded again with ``enabled``)."""

    name: str
    enabled: bool


class ListRoutines(Request[list["RoutineInfo"]], frozen=True, kw_only=True):
    origin: RoutineOrigin | None = None


class RunRoutine(Request[str], frozen=True, kw_only=True):
    """Run a routine now (``manual``) or because a webhook came (``webhook``: only a
    routine with a webhook trigger); answered with the run's turn id once it is recorded
    (or the reason it was skipped, as a Rejected error)."""

    name: str
    trigger: TriggerKind = "manual"
    payload: str = ""
    origin: RoutineOrigin | None = None


class RoutineRuns(Request[list[Any]], frozen=True, kw_only=True):
    """A routine's last runs (``events.folds.routines.RunRecord``), newest last."""

    name: str
    origin: RoutineOrigin | None = None


class SetHeartbeat(Message, frozen=True, kw_only=True):
    """From the AgentSupervisor when the agent's config is recorded: its heartbeat
    (``actors.agents.HeartbeatConfig`` or None), the reader of its HEARTBEAT.md (a
    function of immutable objects: the config and prompt builder of that moment) and its
    scrubber."""

    heartbeat: Any
    read_heartbeat: Any
    scrub: Any = None


class EventMatched(Message, frozen=True, kw_only=True):
    """From a routine's subscription on the hub: an event in the log matched it."""

    name: str
    position: int
    stream: str
    type: str
    #: The event as JSON (cut to the routine's payload limit).
    payload: str


class RunReturned(Message, frozen=True, kw_only=True):
    """A run's session answered: the turn completed (``text``: its reply), ended
    otherwise (``ended``: failed or cancelled, ``text`` says why), or neither is known
    (the session stopped or could not be reached: the log is asked)."""

    turn_id: str
    completed: bool
    text: str
    ended: bool = False


class RoutineInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A routine as listings show it."""

    name: str
    origin: RoutineOrigin
    trigger: str
    prompt: str
    session_key: str
    enabled: bool
    misfire: MisfirePolicy
    cooldown_s: float
    #: When its schedule runs next (None: no schedule, disabled, or a one-time schedule
    #: that ran).
    next_due: float | None
    runs: int
    last_started_at: float
    running: bool
    #: The whole definition, as recorded.
    definition: RoutineDefined
