"""A small event-sourced actor used by the runtime tests."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from clawlog.actors import DEFERRED, EventSourcedActor, Message, Piped, Rejected, Request
from clawlog.events import Event


class Added(Event, tag="test.counter_added"):
    amount: int


class CounterState(msgspec.Struct):
    total: int = 0
    adds: int = 0


class Add(Request[int], frozen=True, kw_only=True):
    amount: int


class Get(Request[int], frozen=True, kw_only=True):
    pass


class Crash(Request[None], frozen=True, kw_only=True):
    """Fails the handler after appending ``amount`` (if any)."""

    amount: int = 0


class CrashTold(Message, frozen=True, kw_only=True):
    pass


class SlowIo(Request[str], frozen=True, kw_only=True):
    """Starts piped I/O that completes when ``release`` is set; replies when it does."""

    release: Any


class Cancel(Request[str], frozen=True, kw_only=True):
    pass


class Counter(EventSourcedActor[CounterState]):
    kind = "counter"
    snapshot_every = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancelled = False
        self.pending: Any = None

    def initial_state(self) -> CounterState:
        return CounterState()

    def apply(self, state: CounterState, event: Event) -> CounterState:
        match event:
            case Added(amount=amount):
                return CounterState(total=state.total + amount, adds=state.adds + 1)
        return state

    def handle(self, message: Message) -> Any:
        match message:
            case Add(amount=amount):
                if amount < 0:
                    raise Rejected("amount must be positive")
                self.emit([Added(amount=amount)], correlation_id=message.correlation_id)
                return self.state.total
            case Get():
                return self.state.total
            case Crash(amount=amount):
                if amount:
                    self.emit([Added(amount=amount)])
                raise RuntimeError("boom")
            case CrashTold():
                raise RuntimeError("told boom")
            case SlowIo(release=release):
                self.pending = self.defer_reply()
                self.pipe(_wait(release), "slow")
                return DEFERRED
            case Cancel():
                self.cancelled = True
                return "cancel handled while I/O pending"
            case Piped(label="slow", value=value):
                assert self.pending is not None
                self.pending.set(f"{value} (cancelled={self.cancelled})")
                return None
        return super().handle(message)


class SnapshottingCounter(Counter):
    kind = "snap-counter"
    snapshot_every = 5


async def _wait(release: Any) -> str:
    await asyncio.get_running_loop().run_in_executor(None, release.wait)
    return "io done"
