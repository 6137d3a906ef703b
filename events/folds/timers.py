"""The pending timers of one stream, folded from its ``timer.*`` events.

The one fold of a timer's life (:mod:`clawlog.events.domain.timer`) for the owning actors
(``actors.timers``) and replay; :func:`misfired` is the one rule for when a late firing
counts as a misfire. The timers read model (``projections/read_models/timers.py``) keeps
the same facts as rows, each timer's latest state.
"""

from __future__ import annotations

import msgspec

from ..base import Event
from ..domain.timer import (
    MisfirePolicy,
    TimerCancelled,
    TimerFired,
    TimerMoved,
    TimerSet,
    TimerSkipped,
)

__all__ = ["PendingTimer", "TimerBook", "apply_timer_event", "misfired"]


class PendingTimer(msgspec.Struct, kw_only=True):
    """A timer that was set and has not fired, been skipped or cancelled."""

    timer_id: str
    kind: str
    due_at: float
    subject: str = ""
    misfire: MisfirePolicy = "fire"
    grace_s: float = 60.0


class TimerBook(msgspec.Struct, kw_only=True):
    """Pending timers by id."""

    pending: dict[str, PendingTimer] = msgspec.field(default_factory=dict)


def apply_timer_event(book: TimerBook, event: Event) -> bool:
    """Fold ``event`` into ``book`` if it is a timer event; True if it was one."""
    if isinstance(event, TimerSet):
        book.pending[event.timer_id] = PendingTimer(
            timer_id=event.timer_id,
            kind=event.kind,
            due_at=event.due_at,
            subject=event.subject,
            misfire=event.misfire,
            grace_s=event.grace_s,
        )
    elif isinstance(event, TimerFired | TimerSkipped | TimerCancelled):
        book.pending.pop(event.timer_id, None)
    elif isinstance(event, TimerMoved):
        timer = book.pending.get(event.timer_id)
        if timer is not None:
            timer.due_at = event.due_at
    else:
        return False
    return True


def misfired(timer: PendingTimer, now: float) -> bool:
    """True when firing ``timer`` at ``now`` is later than its grace allows."""
    return now - timer.due_at > timer.grace_s
