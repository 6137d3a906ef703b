"""The System facade: the one object an embedding application holds.

    async with System.open("clawlog.db") as system:
        counter = await system.spawn(Counter, "counter/1")
        total = await counter.ask(Add(amount=2))

``open`` starts the I/O hub, opens the store on it and starts the guardian. ``close``
stops actors top-down (each handles what is already in its mailbox first), flushes and
closes the store, stops the hub, and is idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import pykka
import structlog

from clawlog.events import Event, EventStore, StorageBackend, default_registry, open_store

from ._bridge import Hub, run_in_thread
from .actor import EventSourcedActor
from .agents.api import AgentApi
from .agents.ports import AgentPorts
from .delegation.api import DelegationApi
from .delegation.ports import DelegationPorts
from .errors import SystemClosed
from .guardian import Adopt, Guardian, RecordDeadLetter, guardian_path
from .hub_store import HubStore
from .internal import Ready
from .logging import configure_logging
from .messages import Message, Request
from .runtime import ActorHandle, Runtime
from .spawning import launch
from .supervision import SupervisionPolicy
from .teams.api import TeamApi

__all__ = ["System"]

A = TypeVar("A", bound=EventSourcedActor[Any])
R = TypeVar("R")
_log = structlog.get_logger("clawlog.system")


class System(AgentApi, TeamApi, DelegationApi):
    """A running clawlog: hub, store, guardian and the actors under it."""

    def __init__(self, runtime: Runtime, guardian: ActorHandle[Any]) -> None:
        self.runtime = runtime
        self.guardian = guardian
        self.store = HubStore(runtime.hub, runtime.store)
        self.escalations: list[tuple[str, str]] = []
        self._closed = False
        self._closing: asyncio.Future[None] | None = None

    @classmethod
    def open(
        cls,
        location: str | Path | StorageBackend,
        *,
        policy: SupervisionPolicy | None = None,
        ask_timeout: float = 30.0,
        event_types: Sequence[type[Event]] = (),
        **store_options: Any,
    ) -> _Opener:
        """Open a System on an SQLite path, ``memory:``, a ``postgresql://`` URL or an
        unopened backend. Use ``async with System.open(...)`` or ``await System.open(...)``.

        ``event_types`` registers the application's own event classes beside clawlog's.
        """
        if event_types:
            registry = store_options.setdefault("registry", default_registry())
            registry.register(*event_types)
        if isinstance(location, EventStore):
            raise TypeError(
                "pass the store's location or an unopened backend: the System opens the "
                "store on its own I/O hub loop"
            )
        return _Opener(cls._start(location, policy, ask_timeout, store_options))

    @classmethod
    async def _start(
        cls,
        location: str | Path | StorageBackend,
        policy: SupervisionPolicy | None,
        ask_timeout: float,
        store_options: dict[str, Any],
    ) -> System:
        configure_logging()
        hub = Hub()
        hub.start()
        try:
            store = await hub.run_async(open_store(location, **store_options))
        except BaseException:
            hub.stop()
            raise
        runtime = Runtime(hub, store, ask_timeout=ask_timeout, default_policy=policy)
        await hub.run_async(runtime.ownership.start())
        escalations: list[tuple[str, str]] = []
        guardian = launch(
            runtime,
            Guardian,
            guardian_path(runtime),
            None,
            None,
            on_escalation=lambda path, reason: escalations.append((path, reason)),
        )
        system = cls(runtime, guardian)
        runtime.services["runtime"] = runtime
        runtime.services["agents"] = AgentPorts(runtime, guardian)
        runtime.services["delegation"] = DelegationPorts(runtime, system.delegation_directory())
        system.escalations = escalations
        runtime.dead_letter_sink = system._record_dead_letter
        try:
            await guardian.ask(Ready())
        except BaseException:
            await system.close()
            raise
        _log.info("system open", location=str(location))
        return system

    # -- actors -------------------------------------------------------------------------
    async def spawn(
        self,
        cls: type[A],
        path: str,
        *args: Any,
        policy: SupervisionPolicy | None = None,
        **kwargs: Any,
    ) -> ActorHandle[Any]:
        """Start a top-level actor under the guardian; returns once it has recovered."""
        self._check_open()
        handle = launch(self.runtime, cls, path, self.guardian, policy, *args, **kwargs)
        self.guardian.tell(Adopt(handle=handle))
        await handle.ask(Ready())
        return handle

    def actor(self, path: str) -> ActorHandle[Any] | None:
        """The running actor for ``path``, if any."""
        return self.runtime.lookup(path)

    def tell(self, target: ActorHandle[Any] | str, message: Message) -> None:
        self._resolve(target).tell(message)

    async def ask(
        self, target: ActorHandle[Any] | str, request: Request[R], timeout: float | None = None
    ) -> R:
        return await self._resolve(target).ask(request, timeout)  # type: ignore[no-any-return]

    def _resolve(self, target: ActorHandle[Any] | str) -> ActorHandle[Any]:
        self._check_open()
        if isinstance(target, ActorHandle):
            return target
        handle = self.runtime.lookup(target)
        if handle is None:
            from .errors import ActorDead

            self.runtime.dead_letter(target, None, "no such actor")
            raise ActorDead(f"no actor is running for {target!r}")
        return handle

    def _record_dead_letter(self, path: str, message: object, reason: str) -> None:
        record = RecordDeadLetter(path=path, message_type=type(message).__name__, reason=reason)
        # The guardian itself may be gone (shutdown): the runtime has logged the letter.
        with contextlib.suppress(pykka.ActorDeadError):
            self.guardian.ref.tell(record)

    # -- lifecycle ----------------------------------------------------------------------
    async def close(self) -> None:
        """Stop every actor (draining mailboxes), flush and close the store, stop the hub."""
        if self._closing is not None:
            await asyncio.shield(self._closing)
            return
        self._closing = asyncio.get_running_loop().create_future()
        try:
            self.runtime.closing = True
            await run_in_thread(self.guardian.stop, name="clawlog-close")
            await self.runtime.hub.run_async(self.runtime.ownership.stop())
            self.runtime.closing_store = True
            await self.runtime.hub.run_async(self.runtime.store.close())
        finally:
            self.runtime.hub.stop()
            self._closed = True
            self._closing.set_result(None)
            _log.info("system closed")

    async def __aenter__(self) -> System:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed or self.runtime.closing:
            raise SystemClosed("the System is closed")


class _Opener:
    """Awaitable and async context manager around ``System._start``."""

    def __init__(self, starting: Any) -> None:
        self._starting = starting
        self._system: System | None = None

    def __await__(self) -> Generator[Any, None, System]:
        return self._starting.__await__()  # type: ignore[no-any-return]

    async def __aenter__(self) -> System:
        self._system = await self._starting
        return self._system

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._system is not None:
            await self._system.close()
