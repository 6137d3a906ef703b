"""Durable timers: set, fired, skipped, cancelled and moved as events on their owner's
stream (:mod:`clawlog.events.domain.timer`), armed on one :class:`TimerService` per
System, read on its :class:`Clock` (real time, or a :class:`ManualClock` for tests).

An actor keeps timers by folding them into a ``TimerBook`` in its state and returning it
from ``timer_book()``; the actor base arms them and calls ``on_timer`` when one is due
(:class:`actors.actor.EventSourcedActor`).
"""

from __future__ import annotations

from .clock import Clock, ManualClock, SystemClock
from .service import TimerService

__all__ = ["Clock", "ManualClock", "SystemClock", "TimerService"]
