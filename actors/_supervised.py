"""Failure handling for :class:`actors.actor.EventSourcedActor`: record, back off, restart
in place from the stream, or escalate; and the mailbox drain at stop."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

import pykka

from clawlog.events import Event, EventMetadata, VersionConflict
from clawlog.events.domain.actor import ActorEscalated, ActorFailed, ActorRestarted

from ._bridge import AskEnvelope, LoopReply, ThreadReply
from .errors import ActorDead
from .internal import ChildEscalated, ChildStopped, Ready, Resume
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

    if TYPE_CHECKING:  # provided by the actor base class; declared for the type checker

        def stop(self) -> None: ...
        def _recover(self) -> int | None: ...
        def _record(self, event: Event) -> None: ...
        def _dispatch(self, message: object, reply: Reply | None) -> None: ...
        def on_recovered(self, restarted: bool) -> None: ...
        def handle_while_stopping(self, message: object) -> bool: ...

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
            self.on_recovered(True)
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

    def _drain_mailbox(self, reason: str) -> None:
        """Fail pending asks at once and turn pending tells into dead letters."""
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
                elif not isinstance(item, ChildStopped | Resume | Ready):
                    self._leftovers.append((item, None))
            return
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
