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
from collections.abc import Collection, Generator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import pykka

from clawlog.events import Event, EventStore, StorageBackend, default_registry, open_store
from clawlog.events.logging import get_logger
from clawlog.events.store import DEFAULT_MAX_PAYLOAD_BYTES
from clawlog.tools.approvals import ApprovalConfig

from ._bridge import Hub, run_in_thread
from .actor import EventSourcedActor
from .agents.api import AgentApi
from .agents.ports import AgentPorts
from .agents.supervisor import agent_stream
from .boundary import Limits
from .delegation.api import DelegationApi
from .delegation.ports import DelegationPorts
from .errors import ArgumentTypeError, SystemClosed
from .guardian import Adopt, Guardian, RecordDeadLetter, guardian_path
from .hub_store import HubStore
from .internal import Ready
from .messages import Message, Request
from .outbox import Outbox
from .runtime import ActorHandle, Runtime
from .spawning import launch
from .supervision import SupervisionPolicy
from .teams.api import TeamApi

__all__ = ["System"]

A = TypeVar("A", bound=EventSourcedActor[Any])
R = TypeVar("R")
_log = get_logger(__name__)


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
        approvals: ApprovalConfig | None = None,
        limits: Limits | None = None,
        **store_options: Any,
    ) -> _Opener:
        """Open a System on an SQLite path, ``memory:``, a ``postgresql://`` URL or an
        unopened backend. Use ``async with System.open(...)`` or ``await System.open(...)``.

        ``event_types`` registers the application's own event classes beside clawlog's.
        ``approvals`` is the System-wide approval configuration of tool calls (security and
        ask modes, the approval timeout, safe bins); an agent whose
        :attr:`AgentConfig.approvals` is set uses its own instead. Default:
        ``ApprovalConfig()`` (security=full, ask=on-miss, 120 s).
        ``limits`` are the sizes the public calls accept (:class:`actors.boundary.Limits`:
        a message's bytes, a name's characters, a tool result's characters); opening fails
        if they do not fit the store's event limit. Default: ``Limits()``, its message
        limit lowered to fit a store opened with a smaller ``max_payload_bytes``.

        Raises:
            ArgumentTypeError: (a TypeError) ``approvals`` or ``limits`` of the wrong type;
                raised by the call itself, before anything opens.
            InvalidArgument: (a ValueError) ``limits`` that do not fit the store's event
                limit; raised by the call itself.
            TypeError: ``location`` is an opened :class:`EventStore`; raised by the call
                itself. Awaiting it also raises TypeError for an unknown store option.
            ValueError: ``location`` is not a store location (``""``, an http URL).
            NotAClawlogDatabase: the file or database is something else.
            StoreLocked: another process holds the write lock of this SQLite file.
            StoreUnavailable: the PostgreSQL server cannot be reached.
            EventStoreError: the store cannot be opened otherwise (a folder, no permission).
            MissingDependency: a ``postgresql://`` URL without the ``postgres`` extra (an
                ``ImportError`` too; the message says what to install).
        """
        if limits is not None and not isinstance(limits, Limits):
            raise ArgumentTypeError(
                "limits", f"must be a clawlog.actors.Limits or None, not {type(limits).__name__}"
            )
        if approvals is not None and not isinstance(approvals, ApprovalConfig):
            kind = type(approvals).__name__
            raise ArgumentTypeError(
                "approvals", f"must be a clawlog.ApprovalConfig or None, not {kind}"
            )
        if event_types:
            registry = store_options.setdefault("registry", default_registry())
            registry.register(*event_types)
        if isinstance(location, EventStore):
            raise TypeError(
                "pass the store's location or an unopened backend: the System opens the "
                "store on its own I/O hub loop"
            )
        limits = (limits or Limits()).fitted(
            store_options.get("max_payload_bytes", DEFAULT_MAX_PAYLOAD_BYTES),
            given=limits is not None,
        )
        starting = cls._start(location, policy, ask_timeout, approvals, limits, store_options)
        return _Opener(starting)

    @classmethod
    async def _start(
        cls,
        location: str | Path | StorageBackend,
        policy: SupervisionPolicy | None,
        ask_timeout: float,
        approvals: ApprovalConfig | None,
        limits: Limits,
        store_options: dict[str, Any],
    ) -> System:
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
        runtime.services["approval_config"] = approvals or ApprovalConfig()
        runtime.services["limits"] = limits
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
        """Start a top-level actor under the guardian; returns once it has recovered.

        Raises:
            SystemClosed: the System is closed or closing.
            InvalidAppend: ``path`` is not a valid stream name.
            ValueError: an actor is already running for ``path``.
            StreamOwnedElsewhere: another process owns the stream ``path``.
            ActorUnavailable: the event store cannot be reached.
            AskTimeout: the actor did not recover within the System's ``ask_timeout``.
            Exception: what ``cls(...)`` raises for the given arguments, unchanged.
        """
        self._check_open()
        handle = launch(self.runtime, cls, path, self.guardian, policy, *args, **kwargs)
        self.guardian.tell(Adopt(handle=handle))
        await handle.ask(Ready())
        return handle

    def registered_agents(self) -> list[str]:
        """The keys of the agents registered and running, sorted. Never raises."""
        configs: dict[str, Any] = self.runtime.services.get("agent_configs", {})
        handles = {key: self.actor(agent_stream(key)) for key in configs}
        return sorted(key for key, h in handles.items() if h is not None and h.is_alive())

    def actor(self, path: str) -> ActorHandle[Any] | None:
        """The running actor for ``path``, if any (never raises)."""
        return self.runtime.lookup(path)

    def tell(self, target: ActorHandle[Any] | str, message: Message) -> None:
        """Send ``message`` without waiting; to a stopped actor it becomes a dead letter.

        Raises:
            SystemClosed: the System is closed or closing.
            ActorDead: no actor is running for the path ``target``.
        """
        self._resolve(target).tell(message)

    async def ask(
        self, target: ActorHandle[Any] | str, request: Request[R], timeout: float | None = None
    ) -> R:
        """Send ``request`` and wait for the actor's answer (``timeout``: the System's
        ``ask_timeout`` when None).

        Raises:
            SystemClosed: the System is closed or closing.
            ActorDead: no actor is running for ``target``, or it stopped.
            AskTimeout: no answer within the timeout (the request may still be handled).
            Rejected: the actor refused the request; its state is unchanged.
            ActorCrashed: the actor's handler raised; the actor restarts from its stream.
            ActorUnavailable: the actor is waiting for the event store.
            Escalated: the actor gave up after failing too often.
        """
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

    # -- the outbox ---------------------------------------------------------------------
    def outbox(
        self,
        since: int = 0,
        *,
        agent: str | None = None,
        channel: str | None = None,
        chat_id: str | None = None,
        kinds: Collection[str] | None = None,
        follow: bool = True,
    ) -> Outbox:
        """Every message meant for a person after position ``since``, in log order:
        ``async for message in system.outbox(since=saved): ...`` (see
        :mod:`clawlog.actors.outbox`). Filters: ``agent``, ``channel``, ``chat_id``,
        ``kinds``. Follows new messages live unless ``follow=False``.

        Raises:
            SystemClosed: the System is closed or closing.
            ValueError: ``since`` is not an int >= 0, or ``kinds`` is one string.
            EventStoreError: while iterating, the log could not be read; iteration ends
                quietly when the System closes.
        """
        self._check_open()
        return Outbox(
            self.store,
            since,
            agent=agent,
            channel=channel,
            chat_id=chat_id,
            kinds=kinds,
            follow=follow,
        )

    # -- lifecycle ----------------------------------------------------------------------
    async def close(self) -> None:
        """Stop every actor (draining mailboxes), flush and close the store, stop the hub.
        Safe to call twice, and concurrently.

        Raises:
            EventStoreError: flushing or closing the store failed; the System is closed
                (and its hub stopped) all the same.
        """
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

    @property
    def approvals(self) -> ApprovalConfig:
        """The System-wide approval configuration (``System.open(approvals=...)``)."""
        approvals: ApprovalConfig = self.runtime.services["approval_config"]
        return approvals

    @property
    def limits(self) -> Limits:
        """The sizes the public calls accept (``System.open(limits=...)``)."""
        limits: Limits = self.runtime.services["limits"]
        return limits

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
