"""An agent's routines and their runs, folded from the ``routine.*`` events of its stream.

The AgentSupervisor decides with it (``actors.automation``), and replay folds the same
(``clawlog replay --as-of``). :func:`in_cooldown` is the one rule for a trigger that comes
too soon after the last run.
"""

from __future__ import annotations

import msgspec

from ..base import Event
from ..domain.routine import RoutineDefined, RoutineRemoved, RunEnded, RunSkipped, RunStarted

__all__ = [
    "RECENT_RUNS",
    "OpenRun",
    "RoutineBook",
    "RoutineEntry",
    "RunRecord",
    "apply_routine_event",
    "in_cooldown",
]


#: How many of a routine's runs its entry keeps (the log keeps them all).
RECENT_RUNS = 20


class RunRecord(msgspec.Struct, kw_only=True):
    """One run, as ``cron runs`` lists it."""

    turn_id: str
    trigger: str
    started_at: float
    outcome: str = "running"
    message: str = ""


class RoutineEntry(msgspec.Struct, kw_only=True):
    """A defined routine and what its runs so far say."""

    definition: RoutineDefined
    runs: int = 0
    #: When its last run started (on the System's clock), for the cooldown.
    last_started_at: float = 0.0
    #: Event triggers: the last log position it fired or skipped for (a restart looks at
    #: the events after it, so each matching event is acted on once).
    matched_position: int = 0
    #: Its last runs, newest last (at most :data:`RECENT_RUNS`), for ``cron runs``.
    recent: list[RunRecord] = msgspec.field(default_factory=list)


class OpenRun(msgspec.Struct, frozen=True, kw_only=True):
    """A run whose end is not recorded yet: what a restart needs to send it again."""

    turn_id: str
    name: str
    origin: str
    session_key: str
    message: str
    channel: str = ""
    chat_id: str = ""
    user: str = ""


class RoutineBook(msgspec.Struct, kw_only=True):
    routines: dict[str, RoutineEntry] = msgspec.field(default_factory=dict)
    open_runs: dict[str, OpenRun] = msgspec.field(default_factory=dict)


def apply_routine_event(book: RoutineBook, event: Event) -> bool:
    """Fold ``event`` into ``book`` if it is a routine event; True if it was one."""
    if isinstance(event, RoutineDefined):
        entry = book.routines.get(event.name)
        if entry is None:
            book.routines[event.name] = RoutineEntry(
                definition=event, matched_position=event.after_position
            )
        else:  # redefined: its runs and cursor go on
            entry.definition = event
            entry.matched_position = max(entry.matched_position, event.after_position)
    elif isinstance(event, RoutineRemoved):
        book.routines.pop(event.name, None)
    elif isinstance(event, RunStarted):
        book.open_runs[event.turn_id] = OpenRun(
            turn_id=event.turn_id,
            name=event.name,
            origin=event.origin,
            session_key=event.session_key,
            message=event.message,
            channel=event.channel,
            chat_id=event.chat_id,
            user=event.user,
        )
        entry = book.routines.get(event.name)
        if entry is not None:
            entry.runs += 1
            entry.last_started_at = event.started_at
            entry.matched_position = max(entry.matched_position, event.matched_position)
            entry.recent.append(
                RunRecord(turn_id=event.turn_id, trigger=event.trigger, started_at=event.started_at)
            )
            del entry.recent[:-RECENT_RUNS]
    elif isinstance(event, RunEnded):
        book.open_runs.pop(event.turn_id, None)
        entry = book.routines.get(event.name)
        for record in entry.recent if entry is not None else ():
            if record.turn_id == event.turn_id:
                record.outcome, record.message = event.outcome, event.message
    elif isinstance(event, RunSkipped):
        entry = book.routines.get(event.name)
        if entry is not None:
            entry.matched_position = max(entry.matched_position, event.matched_position)
    else:
        return False
    return True


def in_cooldown(entry: RoutineEntry, now: float) -> bool:
    """True when a run now would come sooner than the routine's cooldown allows."""
    cooldown = entry.definition.cooldown_s
    return cooldown > 0 and entry.runs > 0 and now - entry.last_started_at < cooldown
