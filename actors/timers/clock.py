"""The clock a System's timers read: the real one, or one a test (or a simulation) moves.

    clock = ManualClock(datetime(2026, 3, 7, 12, tzinfo=UTC))
    async with System.open("app.db", clock=clock) as system:
        ...
        clock.advance(3600)          # every timer due in the next hour fires, in order

Only durable timers (``actors.timers``) read it: approval timeouts, delegation deadlines,
cron jobs, heartbeats and routines. Retry backoffs, idle passivation and the store's own
``recorded_at`` stay on real time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "ManualClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """What the timer service needs of a clock."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def subscribe(self, on_change: Callable[[], None]) -> Callable[[], None] | None:
        """Call ``on_change`` (from any thread) whenever the time jumps; None for a clock
        that moves by itself (the service then also wakes by real time). Returns a
        function that removes the subscription."""
        ...


class SystemClock:
    """Real time (``time.time()``)."""

    def now(self) -> float:
        return time.time()

    def subscribe(self, on_change: Callable[[], None]) -> Callable[[], None] | None:
        return None

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock:
    """A clock that moves only when told: ``advance(seconds)`` or ``set(when)``.

    Thread-safe. Every System reading it re-checks its timers after each move, so the
    timers that became due fire (in due order) without any real waiting.
    """

    def __init__(self, start: float | datetime = 0.0) -> None:
        self._now = _seconds(start)
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        """Move forward by ``seconds`` (≥ 0); returns the new time."""
        if seconds < 0:
            raise ValueError(f"a clock only moves forward; advance({seconds}) is negative")
        with self._lock:
            self._now += seconds
            now, listeners = self._now, list(self._listeners)
        for listener in listeners:
            listener()
        return now

    def set(self, when: float | datetime) -> float:
        """Move to ``when`` (not before the current time); returns it."""
        target = _seconds(when)
        with self._lock:
            if target < self._now:
                raise ValueError(f"a clock only moves forward: {target} is before {self._now}")
            self._now = target
            listeners = list(self._listeners)
        for listener in listeners:
            listener()
        return target

    def subscribe(self, on_change: Callable[[], None]) -> Callable[[], None] | None:
        with self._lock:
            self._listeners.append(on_change)

        def remove() -> None:
            with self._lock:
                if on_change in self._listeners:
                    self._listeners.remove(on_change)

        return remove

    def __repr__(self) -> str:
        return f"ManualClock({self._now!r})"


def _seconds(when: float | datetime) -> float:
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise ValueError("give the clock an aware datetime (with a tzinfo), not a naive one")
        return when.timestamp()
    if isinstance(when, bool) or not isinstance(when, int | float):
        raise TypeError(f"a time is epoch seconds or an aware datetime, not {type(when).__name__}")
    return float(when)
