"""Durable timers: a point in time an actor waits for, kept in the actor's own stream.

A timer belongs to the actor whose stream records it (its *owner*: a Session for an
approval's timeout, a DelegationLink for a delegation's deadline, an agent's AgentRoutines
actor for its cron jobs, heartbeat and routines). Its life is four events on that stream::

    timer.set ──┬── timer.fired        (it went off: late_s says how late)
                ├── timer.skipped      (it was due while nobody ran it, and its misfire
                │                       policy says not to run late)
                ├── timer.cancelled    (what it waited for ended first)
                └── timer.moved ──┐    (a new due time; then one of these again)
                                  └── ...

Because the owner appends ``timer.fired`` under its lease, with ``expected_version``, a
timer fires once, in one process, however many processes share the log; and because its
``timer.set`` is in the log, a timer due while the process was down is found when the
owner starts again (``actors.timers``). What a firing *does* is recorded beside it, in
the same append (an approval timed out, a delegation failed, a cron job's run started).
"""

from __future__ import annotations

from typing import Literal

from ..base import Event

__all__ = [
    "EVENTS",
    "MISFIRE_POLICIES",
    "MisfirePolicy",
    "TimerCancelled",
    "TimerEvent",
    "TimerFired",
    "TimerMoved",
    "TimerSet",
    "TimerSkipped",
]

#: What a timer found overdue by more than its grace does: ``fire`` once, late (however
#: many occurrences of a schedule were missed, they are one firing), or ``skip`` it
#: (recorded as ``timer.skipped``; a schedule goes on with its next occurrence).
MisfirePolicy = Literal["fire", "skip"]
MISFIRE_POLICIES: tuple[MisfirePolicy, ...] = ("fire", "skip")


class TimerSet(Event, frozen=True, tag="timer.set"):
    """A timer was set (or set again with the same id after it fired: a schedule's next
    occurrence)."""

    #: Unique within the owner's stream.
    timer_id: str
    #: What it is for: ``approval``, ``delegation_deadline``, ``cron``, ``heartbeat``,
    #: ``routine``; an application's own actors may use others.
    kind: str
    #: When it is due: seconds since the epoch, on the System's clock.
    due_at: float
    #: What it waits on: the tool call, the delegation, the job or routine it belongs to.
    subject: str = ""
    misfire: MisfirePolicy = "fire"
    #: How late a firing may be and still count as on time (not a misfire).
    grace_s: float = 60.0


class TimerFired(Event, frozen=True, tag="timer.fired"):
    """A timer went off; what it caused is in the same append."""

    timer_id: str
    due_at: float
    fired_at: float
    #: ``fired_at - due_at``: more than the timer's grace when the owner was not running
    #: at ``due_at`` (then ``misfired`` is true and its policy was ``fire``).
    late_s: float = 0.0
    misfired: bool = False


class TimerSkipped(Event, frozen=True, tag="timer.skipped"):
    """A timer found overdue past its grace, whose misfire policy is ``skip``: it did
    nothing (a schedule's next occurrence is set in the same append)."""

    timer_id: str
    due_at: float
    skipped_at: float
    late_s: float = 0.0


class TimerCancelled(Event, frozen=True, tag="timer.cancelled"):
    """A pending timer will not fire: what it waited for ended, or its job was removed."""

    timer_id: str
    #: Why, in words ("approved", "delegation completed", "job removed", ...).
    reason: str = ""


class TimerMoved(Event, frozen=True, tag="timer.moved"):
    """A pending timer has a new due time (its job's schedule changed)."""

    timer_id: str
    due_at: float
    previous_due_at: float = 0.0


TimerEvent = TimerSet | TimerFired | TimerSkipped | TimerCancelled | TimerMoved
EVENTS = (TimerSet, TimerFired, TimerSkipped, TimerCancelled, TimerMoved)
