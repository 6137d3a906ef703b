"""What every actor of one System shares: the hub, the store, the registry of actors.

Knows actors only by their pykka refs (an :class:`ActorHandle` wraps one), so the actor
base class in ``actor.py`` builds on this module and never the other way round.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Generic, TypeVar

import pykka

from clawlog.events import EventStore
from clawlog.events.logging import get_logger

from ._bridge import Hub, ask_async, ask_blocking
from .errors import ActorDead, SystemClosed
from .messages import Request
from .ownership import StreamOwnership
from .supervision import SupervisionPolicy
from .timers.clock import Clock
from .timers.service import TimerService

__all__ = ["ActorHandle", "Runtime"]

R = TypeVar("R")
_log = get_logger(__name__)


class Runtime:
    """Shared services of one System. Thread-safe."""

    def __init__(
        self,
        hub: Hub,
        store: EventStore,
        *,
        ask_timeout: float = 30.0,
        default_policy: SupervisionPolicy | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.hub = hub
        self.store = store
        self.ask_timeout = ask_timeout
        self.default_policy = default_policy or SupervisionPolicy()
        self._lock = threading.Lock()
        self._actors: dict[str, ActorHandle[Any]] = {}
        self._reserved: set[str] = set()
        self.dead_letter_sink: Callable[[str, object, str], None] | None = None
        self.closing = False
        #: Set just before the store closes: nothing may use it any more.
        self.closing_store = False
        #: Leases on actor streams when several processes share the store.
        self.ownership = StreamOwnership(self)
        self._slots: dict[str, int] = {}
        #: Shared services of this System by name (ports for tools, directories, ...).
        self.services: dict[str, Any] = {}
        #: Wakes the owners of durable timers (approval timeouts, delegation deadlines,
        #: cron jobs, heartbeats, routines) on ``clock``.
        self.timers = TimerService(hub, clock)

    def take_slot(self, name: str, limit: int) -> int | None:
        """Take one of ``limit`` process-wide slots named ``name``; None if all are taken."""
        with self._lock:
            used = self._slots.get(name, 0)
            if used >= limit:
                return None
            self._slots[name] = used + 1
            return used + 1

    def give_slot(self, name: str) -> None:
        with self._lock:
            self._slots[name] = max(self._slots.get(name, 0) - 1, 0)

    def slots_used(self, name: str) -> int:
        with self._lock:
            return self._slots.get(name, 0)

    def run(self, coro: Coroutine[Any, Any, R], timeout: float | None = None) -> R:
        """Run store or other I/O on the hub from an actor thread (blocks that thread)."""
        return self.hub.run(coro, timeout)

    # -- registry of running actors -----------------------------------------------------
    @contextlib.contextmanager
    def reserve(self, path: str) -> Iterator[None]:
        """Hold ``path`` while its actor starts: one running actor per stream."""
        with self._lock:
            if self.closing:
                raise SystemClosed("the System is closing; no new actors")
            running = self._actors.get(path)
            if path in self._reserved or (running is not None and running.is_alive()):
                raise ValueError(f"an actor is already running for {path!r}")
            self._reserved.add(path)
        try:
            yield
        finally:
            with self._lock:
                self._reserved.discard(path)

    def register(self, handle: ActorHandle[Any]) -> None:
        with self._lock:
            self._actors[handle.path] = handle

    def unregister(self, path: str, ref: pykka.ActorRef[Any]) -> None:
        with self._lock:
            current = self._actors.get(path)
            if current is not None and current.ref.actor_urn == ref.actor_urn:
                del self._actors[path]

    def lookup(self, path: str) -> ActorHandle[Any] | None:
        with self._lock:
            return self._actors.get(path)

    def running(self) -> list[ActorHandle[Any]]:
        with self._lock:
            return [h for h in self._actors.values() if h.is_alive()]

    def dead_letter(self, path: str, message: object, reason: str) -> None:
        _log.warning("dead letter", actor=path, message_type=type(message).__name__, reason=reason)
        if self.dead_letter_sink is not None:
            self.dead_letter_sink(path, message, reason)


class ActorHandle(Generic[R]):
    """A typed address of one running actor: tell, ask (async or blocking), stop."""

    __slots__ = ("_runtime", "kind", "path", "ref")

    def __init__(self, runtime: Runtime, path: str, kind: str, ref: pykka.ActorRef[Any]) -> None:
        self._runtime = runtime
        self.path = path
        self.kind = kind
        self.ref = ref

    def __repr__(self) -> str:
        return f"<ActorHandle {self.kind} {self.path}{'' if self.is_alive() else ' (dead)'}>"

    @property
    def stream(self) -> str:
        return self.path

    def is_alive(self) -> bool:
        return self.ref.is_alive()

    def tell(self, message: object) -> None:
        """Send without waiting. A message to a dead actor becomes a recorded dead letter."""
        try:
            self.ref.tell(message)
        except pykka.ActorDeadError:
            self._runtime.dead_letter(self.path, message, "actor not running")

    async def ask(self, request: Request[Any], timeout: float | None = None) -> Any:
        """Ask from asyncio code (any loop); never blocks the loop. Fails fast if dead."""
        self._check_alive(request)
        wait = self._runtime.ask_timeout if timeout is None else timeout
        return await ask_async(self.ref, request, wait, self.path)

    def ask_blocking(self, request: Request[Any], timeout: float | None = None) -> Any:
        """Ask from a plain thread (for example another actor's handler)."""
        self._check_alive(request)
        wait = self._runtime.ask_timeout if timeout is None else timeout
        return ask_blocking(self.ref, request, wait, self.path)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the messages already queued (blocking the calling thread)."""
        with contextlib.suppress(pykka.ActorDeadError):
            self.ref.stop(block=True, timeout=timeout)

    def _check_alive(self, request: object) -> None:
        if not self.ref.is_alive():
            self._runtime.dead_letter(self.path, request, "ask to an actor that is not running")
            raise ActorDead(f"{self.path} is not running; {type(request).__name__} not delivered")
