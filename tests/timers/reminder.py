"""A small actor with durable timers, for the timer service's own tests."""

from __future__ import annotations

from typing import Any

import msgspec

from clawlog.actors import EventSourcedActor, Message, Request
from clawlog.events import Event
from clawlog.events.domain.timer import (
    MisfirePolicy,
    TimerCancelled,
    TimerFired,
    TimerMoved,
    TimerSet,
    TimerSkipped,
)
from clawlog.events.folds.timers import PendingTimer, TimerBook, apply_timer_event


class Reminded(Event, tag="test.reminded"):
    timer_id: str
    misfired: bool = False


class ReminderState(msgspec.Struct, kw_only=True):
    timers: TimerBook = msgspec.field(default_factory=TimerBook)
    reminded: list[str] = msgspec.field(default_factory=list)


class Remind(Request[float], frozen=True, kw_only=True):
    """Set timer ``timer_id`` ``after_s`` from now on the System's clock; replies its due time."""

    timer_id: str
    after_s: float
    misfire: MisfirePolicy = "fire"
    grace_s: float = 60.0


class Forget(Request[None], frozen=True, kw_only=True):
    timer_id: str


class Postpone(Request[None], frozen=True, kw_only=True):
    timer_id: str
    to: float


class Reminders(Request[list[str]], frozen=True, kw_only=True):
    pass


class Noise(Message, frozen=True, kw_only=True):
    """Does nothing (an activity, for the passivation test)."""


class Reminder(EventSourcedActor[ReminderState]):
    kind = "reminder"
    snapshot_every = 3

    def initial_state(self) -> ReminderState:
        return ReminderState()

    def state_type(self) -> type[Any]:
        return ReminderState

    def apply(self, state: ReminderState, event: Event) -> ReminderState:
        if isinstance(event, Reminded):
            state.reminded.append(event.timer_id)
        else:
            apply_timer_event(state.timers, event)
        return state

    def timer_book(self) -> TimerBook:
        return self.state.timers

    def on_timer(self, timer: PendingTimer, outcome: TimerFired | TimerSkipped) -> None:
        if isinstance(outcome, TimerSkipped):
            self.emit([outcome])
            return
        self.emit([outcome, Reminded(timer_id=timer.timer_id, misfired=outcome.misfired)])

    def handle(self, message: Message) -> Any:
        match message:
            case Remind():
                due = self.clock_now() + message.after_s
                self.emit(
                    [
                        TimerSet(
                            timer_id=message.timer_id,
                            kind="reminder",
                            due_at=due,
                            misfire=message.misfire,
                            grace_s=message.grace_s,
                        )
                    ]
                )
                return due
            case Forget(timer_id=timer_id):
                self.emit([TimerCancelled(timer_id=timer_id, reason="forgotten")])
                return None
            case Postpone(timer_id=timer_id, to=to):
                previous = self.state.timers.pending[timer_id].due_at
                self.emit([TimerMoved(timer_id=timer_id, due_at=to, previous_due_at=previous)])
                return None
            case Reminders():
                return list(self.state.reminded)
            case Noise():
                return None
        return super().handle(message)
