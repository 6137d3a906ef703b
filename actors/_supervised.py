"""Failure handling for :class:`actors.actor.EventSourcedActor`: record, back off, restart
in place from the stream, or escalate; and the mailbox drain at stop."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

import pykka

from clawlog.events import CorruptEvent, Event, EventMetadata, StoreUnavailable, VersionConflict
from clawlog.events.domain.actor import ActorEscalated, ActorFailed, ActorRestarted

from ._bridge import AskEnvelope, LoopReply, ThreadReply
from .errors import ActorDead, ActorUnavailable
from .internal import ChildEscalated, ChildStopped, Ready, RecordLater, Resume
from .messages import Piped
from .supervision import FailureWindow, SupervisionPolicy, traceback_digest

if TYPE_CHECKING:
    from .runtime import ActorHandle, Runtime

__all__ = ["SupervisedMixin"]

Reply = LoopReply | ThreadReply


class SupervisedMixin:
    """State and steps of supervision; mixed into the actor base class."""

    # Provided by the actor base class.
    path: str
    runtime: Runtime
    parent: ActorHandle[Any] | None
    policy: SupervisionPolicy
    version: int
    log: Any
    actor_ref: pykka.ActorRef[Any]
    actor_inbox: Any
    actor_stopped: threading.Event
    _failures: FailureWindow
    _restarting: bool
    _given_up: bool
    _passivating: bool
    _correlation: str | None
    _stash: deque[tuple[object, Reply | None]]
    _leftovers: list[tuple[Any, Any]]
    #: While the store cannot be reached: why, and how many recoveries were tried.
    _store_down: StoreUnavailable | None = None
    _store_waits: int = 0
    #: The stream's lease could not be taken at start (the store was unreachable).
    _unclaimed: bool = False
    #: What asks get once this actor gave up (escalated).
    _give_up_error: BaseException | None = None
    #: Lifecycle events of children the store did not take, recorded here when it does.
    _kept: list[Event] | None = None
    _kept_tries: int = 0

    if TYPE_CHECKING:  # provided by the actor base class; declared for the type checker

        def stop(self) -> None: ...
        def _recover(self) -> int | None: ...
        def _record(self, event: Event) -> None: ...
        def _dispatch(self, message: object, reply: Reply | None) -> None: ...
        def on_recovered(self, restarted: bool) -> None: ...
        def handle_while_stopping(self, message: object) -> bool: ...

    def _fail(self, exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        if isinstance(exc, StoreUnavailable):
            self._wait_for_store(exc)
            return
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
        if isinstance(exc, CorruptEvent):  # a restart reads the same row again: give up now
            self._escalate(f"its stream cannot be read: {exc}", exc)
            return
        if self._failures.exceeded():
            self._escalate(f"{failures} failures within {self.policy.window_s} s", exc)
            return
        self._restarting = True
        delay = self.policy.backoff(failures)
        resume = Resume(attempt=failures, delay_s=delay)
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, resume)

    def _wait_for_store(self, exc: StoreUnavailable) -> None:
        """The store cannot be reached: not this actor's fault, and no restart helps until
        it answers. Recover from the stream with backoff, as often as it takes, without
        counting it against the failure budget (an outage never escalates). Asks are
        refused meanwhile (:class:`ActorUnavailable`); tells wait for the recovery."""
        self._store_down = exc
        self._store_waits += 1
        told = [(message, reply) for message, reply in self._stash if reply is None]
        for _, reply in self._stash:  # stashed before the store went away: answer them now
            if reply is not None:
                reply.set_error(ActorUnavailable(self.path, exc))
        self._stash.clear()
        self._stash.extend(told)
        self._restarting = True
        delay = self.policy.backoff(self._store_waits)
        self.log.warning(
            "event store unavailable: recovering when it answers",
            error=str(exc),
            attempt=self._store_waits,
            retry_in_s=delay,
        )
        resume = Resume(attempt=self._store_waits, delay_s=delay)
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, resume)

    def _tell_self(self, message: object) -> None:
        with contextlib.suppress(pykka.ActorDeadError):
            self.actor_ref.tell(message)

    def _resume(self, message: Resume) -> None:
        try:
            if self._unclaimed:
                self.runtime.ownership.claim(self.path)
                self._unclaimed = False
            self._recover()
            self._record(
                ActorRestarted(path=self.path, attempt=message.attempt, delay_s=message.delay_s)
            )
            self.on_recovered(True)
        except Exception:
            self._fail(*sys.exc_info())  # type: ignore[arg-type]
            return
        self._restarting = False
        self._store_down, self._store_waits = None, 0
        self.log.info("actor restarted", attempt=message.attempt)
        while self._stash and not self._restarting and not self.actor_stopped.is_set():
            stashed, reply = self._stash.popleft()
            self._dispatch(stashed, reply)

    def _escalate(self, reason: str, exc: BaseException | None) -> None:
        escalated = ActorEscalated(
            path=self.path,
            failures=len(self._failures._times),
            window_s=self.policy.window_s,
            error_type=type(exc).__name__ if exc else "",
            message=str(exc)[:2000] if exc else "",
        )
        # Not recorded (the store is down): the parent keeps it and records it later.
        unrecorded = None if self._record_lifecycle(escalated) else escalated
        self.log.error("actor escalated", reason=reason)
        self._given_up = True
        self._give_up_error = ActorDead(f"{self.path} gave up (escalated): {reason}")
        self._give_up_error.__cause__ = exc
        if self.parent is not None:
            self.parent.tell(ChildEscalated(path=self.path, reason=reason, unrecorded=unrecorded))
        self.stop()

    def _keep_record(self, event: Event) -> None:
        """Record a child's lifecycle event on this actor's stream, now or once the store
        answers again (retried with backoff; an escalation must never go unrecorded)."""
        if self._kept is None:
            self._kept = []
        self._kept.append(event)
        if len(self._kept) == 1:
            self._record_kept()

    def _record_kept(self) -> None:
        while self._kept:
            if not self._record_lifecycle(self._kept[0]):
                self._kept_tries += 1
                loop = self.runtime.hub.loop
                delay = self.policy.backoff(self._kept_tries)
                loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, RecordLater())
                return
            self._kept.pop(0)
        self._kept_tries = 0

    def _second_writer(self, exc: VersionConflict) -> None:
        self.log.critical(
            "second writer on this stream: stopping, nothing overwritten", error=str(exc)
        )
        self._given_up = True
        if self.parent is not None:
            self.parent.tell(ChildEscalated(path=self.path, reason=f"second writer: {exc}"))
        self.stop()

    def _record_lifecycle(self, event: Event) -> bool:
        """Record a lifecycle event after a crash, when ``self.version`` may be stale.
        False if it could not be recorded (logged)."""
        try:
            store = self.runtime.store
            self.version = self.runtime.run(store.stream_version(self.path))
            meta = EventMetadata(actor=self.path, correlation_id=self._correlation)
            self.runtime.run(store.append(self.path, [event], self.version, meta))
            self.version += 1
        except Exception as exc:
            self.log.error(
                "could not record lifecycle event", event_type=type(event).__name__, error=str(exc)
            )
            return False
        return True

    def _drain_mailbox(self, reason: str) -> None:
        """Fail pending asks at once and turn pending tells into dead letters."""
        if self._kept:  # a last try; the System's ``escalations`` keeps top-level ones
            self._record_kept()
            if self._kept:
                self.log.error("stopping with unrecorded events of children", events=self._kept)
        if self._passivating:  # everything still queued goes back to the parent
            self._leftovers.extend(self._stash)
            self._stash.clear()
            while not self.actor_inbox.empty():
                envelope = self.actor_inbox.get_nowait()
                if envelope.reply_to is not None:
                    envelope.reply_to.set(None)
                item = envelope.message
                if isinstance(item, AskEnvelope):
                    self._leftovers.append((item.message, item.reply))
                elif not isinstance(item, ChildStopped | Resume | Ready | RecordLater):
                    self._leftovers.append((item, None))
            return
        pending: list[object] = [m for m, _ in self._stash]
        for _, reply in self._stash:
            if reply is not None:
                reply.set_error(self._unhandled_error())
        self._stash.clear()
        while not self.actor_inbox.empty():
            envelope = self.actor_inbox.get_nowait()
            message = envelope.message
            if isinstance(message, AskEnvelope):
                message.reply.set_error(self._unhandled_error())
                message = message.message
            if envelope.reply_to is not None:
                envelope.reply_to.set(None)
            if isinstance(message, ChildStopped | Resume | Ready | RecordLater):
                continue
            if not self.handle_while_stopping(message):
                pending.append(message)
        for message in pending:
            if not self.runtime.closing or not isinstance(message, Piped):
                self.runtime.dead_letter(self.path, message, reason)

    def _unhandled_error(self) -> BaseException:
        """What an ask left unhandled at stop gets: why this actor gave up, if it did."""
        if self._give_up_error is not None:
            return self._give_up_error
        if self._store_down is not None:
            return ActorUnavailable(self.path, self._store_down)
        return ActorDead(f"{self.path} stopped before handling the request")
