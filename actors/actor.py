"""The event-sourced actor base: state is a fold of the actor's own stream.

A command is handled as decide → ``emit`` (append with ``expected_version`` = the
current version, wait until durable) → apply → reply. On start the actor loads its
latest snapshot and folds the rest of its stream. A handler that raises is a failure:
the actor records ``actor.failed``, stashes new messages, waits its backoff and restarts
*in place* from its stream (same thread, same mailbox, nothing lost); past its failure
budget it records ``actor.escalated``, stops and tells its parent. A
:class:`VersionConflict` means another writer owns the stream: the actor stops loudly.
"""

from __future__ import annotations

import contextlib
import sys
from collections import deque
from collections.abc import Coroutine, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import pykka
import structlog

from events import Event, EventMetadata, RecordedEvent, VersionConflict
from events.domain.actor import (
    ActorEscalated,
    ActorEvent,
    ActorFailed,
    ActorRestarted,
    ActorStarted,
    ActorStopped,
)

from ._bridge import AskEnvelope, LoopReply, ThreadReply
from .errors import ActorCrashed, ActorDead, Escalated, Rejected
from .internal import ChildEscalated, ChildStopped, Ready, Resume
from .messages import Message, Piped
from .runtime import ActorHandle, Runtime
from .supervision import FailureWindow, SupervisionPolicy, traceback_digest

__all__ = ["DEFERRED", "EventSourcedActor"]

S = TypeVar("S")
A = TypeVar("A", bound="EventSourcedActor[Any]")
Reply = LoopReply | ThreadReply
#: Returned by a handler that will answer later through the reply from ``defer_reply()``.
DEFERRED: Any = object()
_INTERNAL = frozenset({Resume, ChildEscalated, ChildStopped, Ready})
_READ_PAGE = 1000


class EventSourcedActor(pykka.ThreadingActor, Generic[S]):
    """Base of every clawlog actor. Subclasses set ``kind`` and override the hooks."""

    kind: ClassVar[str] = "actor"
    #: Save a snapshot every N events (the state must be a msgspec Struct); None = never.
    snapshot_every: ClassVar[int | None] = None
    #: False for actors whose state is not a fold (they only need their version on start).
    recover_state: ClassVar[bool] = True
    use_daemon_thread = True

    def __init__(
        self,
        runtime: Runtime,
        path: str,
        parent: ActorHandle[Any] | None = None,
        policy: SupervisionPolicy | None = None,
    ) -> None:
        super().__init__()
        self.runtime = runtime
        self.path = path
        self.parent = parent
        self.policy = policy or runtime.default_policy
        self.state: S = self.initial_state()
        self.version = 0
        self.children: dict[str, ActorHandle[Any]] = {}
        self.log = structlog.get_logger("clawlog.actor").bind(actor=path, stream=path)
        self._failures = FailureWindow(self.policy)
        self._restarting = False
        self._stash: deque[tuple[object, Reply | None]] = deque()
        self._reply: Reply | None = None
        self._since_snapshot = 0
        self._handle: ActorHandle[Any] | None = None
        self._correlation: str | None = None
        self._given_up = False

    # -- hooks for subclasses -----------------------------------------------------------
    def initial_state(self) -> S:
        return None  # type: ignore[return-value]

    def apply(self, state: S, event: Event) -> S:
        """Fold one domain event into the state. Pure: no I/O, no messages."""
        return state

    def handle(self, message: Message) -> Any:
        """Handle a command or query; return the reply (or ``DEFERRED``)."""
        raise Rejected(f"{self.kind} does not understand {type(message).__name__}")

    def on_child_escalated(self, child_path: str, reason: str) -> None:
        """A child gave up. By default the failure climbs: this actor fails too."""
        raise Escalated(child_path, reason)

    def state_type(self) -> type[Any] | None:
        """The class of ``state`` for snapshot decoding (default: its current class)."""
        return type(self.state) if self.state is not None else None

    # -- services for handlers ----------------------------------------------------------
    @property
    def handle_ref(self) -> ActorHandle[Any]:
        if self._handle is None:
            self._handle = ActorHandle(self.runtime, self.path, self.kind, self.actor_ref)
        return self._handle

    def emit(
        self,
        events: Sequence[Event],
        *,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> list[RecordedEvent]:
        """Append events at the current version, wait until durable, apply them."""
        meta = EventMetadata(
            correlation_id=correlation_id,
            causation_id=causation_id,
            actor=self.path,
            idempotency_key=idempotency_key,
        )
        recorded = self.runtime.run(
            self.runtime.store.append(self.path, list(events), self.version, meta)
        )
        for item in recorded:
            self._apply_recorded(item)
        self._maybe_snapshot(len(recorded))
        return recorded

    def pipe(self, coro: Coroutine[Any, Any, Any], label: str, **fields: Any) -> None:
        """Run slow I/O on the hub; its outcome arrives later as a ``Piped`` message."""
        ref = self.actor_ref
        correlation = fields.get("correlation_id")

        def deliver(value: Any, error: BaseException | None) -> None:
            message = Piped(label=label, value=value, error=error, correlation_id=correlation)
            try:
                ref.tell(message)
            except pykka.ActorDeadError:
                self.runtime.dead_letter(self.path, message, "piped result for a stopped actor")

        self.runtime.hub.pipe(coro, deliver)

    def defer_reply(self) -> Reply | None:
        """Take the current ask's reply object to answer later (then return ``DEFERRED``)."""
        reply, self._reply = self._reply, None
        return reply

    def spawn(
        self,
        cls: type[A],
        path: str,
        *args: Any,
        policy: SupervisionPolicy | None = None,
        **kwargs: Any,
    ) -> ActorHandle[Any]:
        """Start a supervised child and wait until it has recovered its stream."""
        from .spawning import start_actor

        handle = start_actor(self.runtime, cls, path, self.handle_ref, policy, *args, **kwargs)
        self.children[path] = handle
        return handle

    # -- pykka hooks --------------------------------------------------------------------
    def on_start(self) -> None:
        structlog.contextvars.bind_contextvars(actor=self.path, stream=self.path)
        try:
            snapshot_version = self._recover()
            self._record(
                ActorStarted(
                    path=self.path,
                    kind=self.kind,
                    version=self.version,
                    from_snapshot=snapshot_version,
                )
            )
        except Exception:
            self._fail(*sys.exc_info())  # type: ignore[arg-type]

    def on_receive(self, message: Any) -> Any:
        kind = type(message)
        if kind is AskEnvelope:
            self._dispatch(message.message, message.reply)
        elif kind not in _INTERNAL:
            self._dispatch(message, None)
        elif kind is Resume:
            self._resume(message)
        elif kind is ChildEscalated:
            self.children.pop(message.path, None)
            self._dispatch(message, None)
        elif kind is ChildStopped:
            self.children.pop(message.path, None)
        else:
            self._dispatch(message, None)

    def handle_while_stopping(self, message: object) -> bool:
        """Last chance for a told message left in the mailbox at stop; True if handled."""
        return False

    def on_stop(self) -> None:
        for handle in reversed(list(self.children.values())):
            handle.stop()
        self.children.clear()
        self._drain_mailbox("actor stopped")
        try:
            self._record(ActorStopped(path=self.path))
        except Exception as exc:  # the store may already be gone at shutdown
            self.log.warning("could not record actor.stopped", error=str(exc))
        self.runtime.unregister(self.path, self.actor_ref)
        if self.parent is not None:  # a parent that is itself stopping needs no notice
            with contextlib.suppress(pykka.ActorDeadError):
                self.parent.ref.tell(ChildStopped(path=self.path))

    # -- dispatch and failure -----------------------------------------------------------
    def _dispatch(self, message: object, reply: Reply | None) -> None:
        if self._given_up:
            if reply is not None:
                reply.set_error(ActorDead(f"{self.path} gave up (escalated) and is stopping"))
            self.runtime.dead_letter(self.path, message, "actor escalated")
            return
        if self._restarting:
            self._stash.append((message, reply))
            return
        if isinstance(message, Ready):
            if reply is not None:
                reply.set(self.version)
            return
        self._reply = reply
        correlation = getattr(message, "correlation_id", None)
        if correlation != self._correlation:
            # Each actor has its own thread, so its own contextvars: rebind only on change.
            self._correlation = correlation
            structlog.contextvars.bind_contextvars(correlation_id=correlation)
        try:
            if type(message) is ChildEscalated:
                result = self.on_child_escalated(message.path, message.reason)
            else:
                result = self.handle(message)  # type: ignore[arg-type]
        except Rejected as exc:
            self._answer(error=exc)
        except VersionConflict as exc:
            self._second_writer(exc)
            self._answer(error=exc)
        except Exception as exc:
            # Record the failure before answering, so the asker can read it in the log.
            self._fail(*sys.exc_info())  # type: ignore[arg-type]
            self._answer(error=ActorCrashed(self.path, exc))
        else:
            if result is not DEFERRED:
                self._answer(value=result)
        finally:
            self._reply = None

    def _answer(self, value: Any = None, error: BaseException | None = None) -> None:
        reply = self._reply
        if reply is None:
            if error is not None and not isinstance(error, ActorCrashed):
                self.log.warning("told message refused", error=str(error))
            return
        self._reply = None
        if error is not None:
            reply.set_error(error)
        else:
            reply.set(value)

    def _fail(self, exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        failures = self._failures.record()
        self.log.error(
            "actor failed",
            error_type=exc_type.__name__,
            error=str(exc),
            correlation_id=self._correlation,
            exc_info=exc,
        )
        self._record_lifecycle(
            ActorFailed(
                path=self.path,
                error_type=exc_type.__name__,
                message=str(exc)[:2000],
                traceback_digest=traceback_digest(exc_type, exc, tb),
                failures_in_window=failures,
            )
        )
        if self._failures.exceeded():
            self._escalate(f"{failures} failures within {self.policy.window_s} s", exc)
            return
        self._restarting = True
        delay = self.policy.backoff(failures)
        resume = Resume(attempt=failures, delay_s=delay)
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, resume)

    def _tell_self(self, message: object) -> None:
        with contextlib.suppress(pykka.ActorDeadError):
            self.actor_ref.tell(message)

    def _resume(self, message: Resume) -> None:
        try:
            self._recover()
            self._record(
                ActorRestarted(path=self.path, attempt=message.attempt, delay_s=message.delay_s)
            )
        except Exception:
            self._fail(*sys.exc_info())  # type: ignore[arg-type]
            return
        self._restarting = False
        self.log.info("actor restarted", attempt=message.attempt)
        while self._stash and not self._restarting and not self.actor_stopped.is_set():
            stashed, reply = self._stash.popleft()
            self._dispatch(stashed, reply)

    def _escalate(self, reason: str, exc: BaseException | None) -> None:
        self._record_lifecycle(
            ActorEscalated(
                path=self.path,
                failures=len(self._failures._times),
                window_s=self.policy.window_s,
                error_type=type(exc).__name__ if exc else "",
                message=str(exc)[:2000] if exc else "",
            )
        )
        self.log.error("actor escalated", reason=reason)
        self._given_up = True
        if self.parent is not None:
            self.parent.tell(ChildEscalated(path=self.path, reason=reason))
        self.stop()

    def _second_writer(self, exc: VersionConflict) -> None:
        self.log.critical(
            "second writer on this stream: stopping, nothing overwritten", error=str(exc)
        )
        self._given_up = True
        if self.parent is not None:
            self.parent.tell(ChildEscalated(path=self.path, reason=f"second writer: {exc}"))
        self.stop()

    # -- recovery and recording ---------------------------------------------------------
    def _recover(self) -> int | None:
        """Rebuild state from the latest snapshot and the rest of the stream."""
        store = self.runtime.store
        self.state, self.version = self.initial_state(), 0
        if not self.recover_state:
            self.version = self.runtime.run(store.stream_version(self.path))
            return None
        snapshot_version = None
        state_type = self.state_type()
        if self.snapshot_every and state_type is not None:
            snapshot = self.runtime.run(store.load_snapshot(self.path, state_type))
            if snapshot is not None:
                self.state, self.version = snapshot.state, snapshot.version
                snapshot_version = snapshot.version
        while True:
            page = self.runtime.run(store.read_stream(self.path, self.version + 1, _READ_PAGE))
            for item in page:
                self._apply_recorded(item)
            if len(page) < _READ_PAGE:
                return snapshot_version

    def _apply_recorded(self, item: RecordedEvent) -> None:
        self.version = item.version
        event = item.event
        if isinstance(event, Event) and not isinstance(event, ActorEvent):
            self.state = self.apply(self.state, event)

    def _record(self, event: Event) -> None:
        """Append one of our own lifecycle events at our version."""
        self.emit([event])

    def _record_lifecycle(self, event: Event) -> None:
        """Record a lifecycle event after a crash, when ``self.version`` may be stale."""
        try:
            store = self.runtime.store
            self.version = self.runtime.run(store.stream_version(self.path))
            meta = EventMetadata(actor=self.path, correlation_id=self._correlation)
            self.runtime.run(store.append(self.path, [event], self.version, meta))
            self.version += 1
        except Exception as exc:
            self.log.error(
                "could not record lifecycle event", event=type(event).__name__, error=str(exc)
            )

    def _maybe_snapshot(self, count: int) -> None:
        if not self.snapshot_every:
            return
        self._since_snapshot += count
        if self._since_snapshot >= self.snapshot_every:
            self._since_snapshot = 0
            self.runtime.run(self.runtime.store.save_snapshot(self.path, self.version, self.state))

    def _drain_mailbox(self, reason: str) -> None:
        """Fail pending asks at once and turn pending tells into dead letters."""
        pending: list[object] = [m for m, _ in self._stash]
        for _, reply in self._stash:
            if reply is not None:
                reply.set_error(ActorDead(f"{self.path} stopped before handling the request"))
        self._stash.clear()
        while not self.actor_inbox.empty():
            envelope = self.actor_inbox.get_nowait()
            message = envelope.message
            if isinstance(message, AskEnvelope):
                message.reply.set_error(
                    ActorDead(f"{self.path} stopped before handling the request")
                )
                message = message.message
            if envelope.reply_to is not None:
                envelope.reply_to.set(None)
            if isinstance(message, ChildStopped | Resume | Ready):
                continue
            if not self.handle_while_stopping(message):
                pending.append(message)
        for message in pending:
            if not self.runtime.closing or not isinstance(message, Piped):
                self.runtime.dead_letter(self.path, message, reason)
