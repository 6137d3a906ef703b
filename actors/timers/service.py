"""The timer service: wakes each durable timer's owner when the timer is due.

One per System, on the I/O hub. It holds no state of its own that matters: an owner
actor folds its pending timers from its stream (``events.folds.timers``) and the actor
base arms them here after each append and after every recovery
(:class:`actors.actor.EventSourcedActor`), so a restart loses nothing and a timer due while
the process was down is delivered as soon as its owner is running again. Delivery is a
:class:`~actors.internal.TimerDue` message; the owner decides (fire, skip as a misfire,
or ignore a stale one) and records the outcome on its own stream, so a timer fires once.

Time comes from the System's :class:`~actors.timers.clock.Clock`: real time, or a
:class:`~actors.timers.clock.ManualClock` that tests move by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from clawlog.events.logging import get_logger

from ..internal import TimerDue
from .clock import Clock, SystemClock

if TYPE_CHECKING:
    from .._bridge import Hub

__all__ = ["TimerOwner", "TimerService"]

_log = get_logger(__name__)


class TimerOwner(Protocol):
    """What the service needs of a timer's owner (an ``ActorHandle``)."""

    @property
    def path(self) -> str: ...

    def is_alive(self) -> bool: ...

    def tell(self, message: object) -> None: ...


class TimerService:
    """Armed timers by owner, in due order; tells each owner when one is due."""

    #: The longest sleep on real time: a jump of the wall clock (a suspended machine, an
    #: NTP step) is noticed within this many seconds.
    max_sleep_s: float = 30.0

    def __init__(self, hub: Hub, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SystemClock()
        self._hub = hub
        self._heap: list[tuple[float, int, str, str]] = []
        #: owner path → timer id → (due, owner): what is armed now (heap entries that
        #: disagree are stale and skipped). By owner, so a stopping owner's are dropped
        #: without a scan of everyone's.
        self._armed: dict[str, dict[str, tuple[float, TimerOwner]]] = {}
        self._order = itertools.count()
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._manual = False

    # -- any thread ---------------------------------------------------------------------
    def arm(self, owner: TimerOwner, timer_id: str, due_at: float) -> None:
        """Deliver ``TimerDue`` to ``owner`` at ``due_at`` (replacing an earlier arming of
        the same timer). Safe from any thread."""
        self._on_hub(self._arm, owner, timer_id, due_at)

    def disarm(self, owner_path: str, timer_id: str | None = None) -> None:
        """Forget one timer of ``owner_path``, or (``timer_id=None``) all of them."""
        self._on_hub(self._disarm, owner_path, timer_id)

    def rearm(self, owner: TimerOwner, timers: list[tuple[str, float]]) -> None:
        """Replace every timer armed for ``owner`` by ``timers`` ((id, due) pairs)."""
        self._on_hub(self._rearm, owner, timers)

    def armed(self) -> int:
        """How many timers are armed (a snapshot; for status and tests)."""
        return sum(len(timers) for timers in list(self._armed.values()))

    # -- lifecycle (on the hub) ---------------------------------------------------------
    async def start(self) -> None:
        if self._task is not None:
            return
        self._wake = asyncio.Event()
        loop = asyncio.get_running_loop()
        wake = self._wake

        def changed() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nothing to wake
                loop.call_soon_threadsafe(wake.set)

        self._unsubscribe = self.clock.subscribe(changed)
        self._manual = self._unsubscribe is not None
        self._task = asyncio.create_task(self._run(), name="clawlog-timers")

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._armed.clear()
        self._heap.clear()

    # -- on the hub ---------------------------------------------------------------------
    def _on_hub(self, function: Callable[..., None], *args: Any) -> None:
        if self._hub.in_hub_thread():
            function(*args)
            return
        with contextlib.suppress(RuntimeError):  # the hub stopped: nothing fires any more
            self._hub.loop.call_soon_threadsafe(function, *args)

    def _arm(self, owner: TimerOwner, timer_id: str, due_at: float) -> None:
        self._armed.setdefault(owner.path, {})[timer_id] = (due_at, owner)
        heapq.heappush(self._heap, (due_at, next(self._order), owner.path, timer_id))
        if self._wake is not None and self._heap[0][3] == timer_id:
            self._wake.set()  # it may be due before what the loop sleeps for

    def _disarm(self, owner_path: str, timer_id: str | None) -> None:
        if timer_id is None:
            self._armed.pop(owner_path, None)
            return
        timers = self._armed.get(owner_path)
        if timers is not None:
            timers.pop(timer_id, None)
            if not timers:
                del self._armed[owner_path]

    def _rearm(self, owner: TimerOwner, timers: list[tuple[str, float]]) -> None:
        self._disarm(owner.path, None)
        for timer_id, due_at in timers:
            self._arm(owner, timer_id, due_at)

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            self._wake.clear()
            delay = self._deliver_due()
            try:
                if delay is None or self._manual:
                    await self._wake.wait()  # a manual clock wakes it when it moves
                else:  # asyncio.timeout, not wait_for: a stop's cancel must not be lost
                    async with asyncio.timeout(min(delay, self.max_sleep_s)):
                        await self._wake.wait()
            except TimeoutError:
                pass

    def _deliver_due(self) -> float | None:
        """Tell the owners of every timer due now; seconds until the next one (or None)."""
        now = self.clock.now()
        while self._heap:
            due_at, _, path, timer_id = self._heap[0]
            armed = self._armed.get(path, {}).get(timer_id)
            if armed is None or armed[0] != due_at:  # disarmed or re-armed: stale
                heapq.heappop(self._heap)
                continue
            if due_at > now:
                return due_at - now
            heapq.heappop(self._heap)
            self._disarm(path, timer_id)
            owner = armed[1]
            if owner.is_alive():
                owner.tell(TimerDue(timer_id=timer_id, due_at=due_at))
            else:  # its owner arms it again when it runs again (from its stream)
                _log.debug("timer due for a stopped owner", owner=path, timer_id=timer_id)
        return None
