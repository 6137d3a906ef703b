"""The event-sourced actor base: state is a fold of the actor's own stream.

A command is handled as decide → ``emit`` (append with ``expected_version`` = the
current version, wait until durable) → apply → reply. On start the actor loads its
latest snapshot and folds the rest of its stream. A handler that raises is a failure:
the actor records ``actor.failed``, stashes new messages, waits its backoff and restarts
*in place* from its stream (same thread, same mailbox, nothing lost); past its failure
budget it records ``actor.escalated``, stops and tells its parent. A
:class:`VersionConflict` means another writer owns the stream: the actor stops loudly.
An unreachable store is not a failure of the actor: it recovers with backoff until the
store answers (asks meanwhile get :class:`ActorUnavailable`), however long that takes; a
:class:`CorruptEvent` in its stream escalates at once, since a restart reads it again.
A message with a ``trace_context`` is handled inside that OpenTelemetry context, so the
spans its handler starts continue the sender's trace (nothing is attached without one).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import queue
import sys
import time
from collections import deque
from collections.abc import Coroutine, Sequence
from typing import Any, ClassVar, Generic, TypeVar, cast

import pykka
import structlog

from clawlog.events import (
    CorruptEvent,
    Event,
    EventMetadata,
    Fenced,
    RecordedEvent,
    StoreDamaged,
    StoreUnavailable,
    VersionConflict,
    validate_stream,
)
from clawlog.events.domain.actor import (
    ActorEscalated,
    ActorEvent,
    ActorFailed,
    ActorRestarted,
    ActorStarted,
    ActorStopped,
)
from clawlog.events.domain.timer import (
    TimerCancelled,
    TimerFired,
    TimerMoved,
    TimerSet,
    TimerSkipped,
)
from clawlog.events.folds.timers import PendingTimer, TimerBook, misfired
from clawlog.events.logging import get_logger
from clawlog.events.telemetry import attached

from ._bridge import AskEnvelope, LoopReply, ThreadReply
from .errors import (
    ActorCrashed,
    ActorDead,
    ActorUnavailable,
    Escalated,
    Rejected,
    StreamOwnedElsewhere,
)
from .internal import (
    AwaitRecovery,
    ChildEscalated,
    ChildStopped,
    IdleCheck,
    LeaseLost,
    RecordLater,
    RestartDue,
    TimerDue,
)
from .messages import Message, Piped
from .runtime import ActorHandle, Runtime
from .supervision import FailureWindow, SupervisionPolicy, traceback_digest

__all__ = ["DEFERRED", "EventSourcedActor", "launch", "start_actor"]

S = TypeVar("S")
A = TypeVar("A", bound="EventSourcedActor[Any]")
Reply = LoopReply | ThreadReply
#: Returned by a handler that will answer later through the reply from ``defer_reply()``.
DEFERRED: Any = object()
_INTERNAL = frozenset({RestartDue, ChildEscalated, ChildStopped, AwaitRecovery, IdleCheck})
_READ_PAGE = 1000
#: How many times an append to a shared stream is tried before its conflict is raised.
_SHARED_TRIES = 5
_TIMER_EVENTS = frozenset({TimerSet, TimerFired, TimerSkipped, TimerCancelled, TimerMoved})


class EventSourcedActor(pykka.ThreadingActor, Generic[S]):
    """Base of every clawlog actor. Subclasses set ``kind`` and override the hooks."""

    kind: ClassVar[str] = "actor"
    #: Save a snapshot every N events (the state must be a msgspec Struct); None = never.
    snapshot_every: ClassVar[int | None] = None
    #: False for actors whose state is not a fold (they only need their version on start).
    recover_state: ClassVar[bool] = True
    #: Passivate (stop; recovered from the stream on the next message) after this many
    #: idle seconds; None = never. ``is_idle()`` decides what idle means.
    idle_timeout_s: float | None = None
    #: True for a stream several processes write (an agent's supervisor on a shared
    #: PostgreSQL log): no lease is taken, and an append that finds the stream moved on
    #: reads what the others wrote, folds it and appends again (its events must stay true
    #: after theirs). False: one owner, leased, fenced.
    shared_stream: ClassVar[bool] = False
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
        self.log = get_logger(__name__).bind(actor=path, stream=path)
        self._failures = FailureWindow(self.policy)
        self._restarting = False
        self._stash: deque[tuple[object, Reply | None]] = deque()
        self._reply: Reply | None = None
        self._since_snapshot = 0
        self._handle: ActorHandle[Any] | None = None
        self._correlation: str | None = None
        self._given_up = False
        self._start_error: Exception | None = None
        self._passivating = False
        #: When it last handled a message (monotonic), and whether an IdleCheck is on its
        #: way: one at a time, so a busy actor does not wake the hub after every message.
        self._active_at = 0.0
        self._idle_check_due = False
        #: Whether the timer service may hold timers of this actor (to disarm at stop).
        self._timers_armed = False
        self._leftovers: list[tuple[Any, Any]] = []
        #: While the store cannot be reached: why, and how many recoveries were tried.
        self._store_down: StoreUnavailable | None = None
        self._store_waits = 0
        #: The stream's lease could not be taken at start (the store was unreachable).
        self._unclaimed = False
        #: What asks get once this actor gave up (escalated).
        self._give_up_error: BaseException | None = None
        #: Lifecycle events of children the store did not take, recorded here when it does.
        self._kept: list[Event] | None = None
        self._kept_tries = 0
        #: True while the stream is folded at (re)start: timers are armed once at its end.
        self._recovering = False
        #: Another process took this stream over: this actor stops, writing nothing.
        self._stepped_back = False

    # -- hooks for subclasses -----------------------------------------------------------
    def initial_state(self) -> S:
        return None  # type: ignore[return-value]

    def apply(self, state: S, event: Event) -> S:
        """Fold one domain event into the state. Pure: no I/O, no messages."""
        return state

    def apply_at(self, state: S, event: Event, position: int) -> S:
        """``apply`` for an event at log ``position`` (just appended, or read back while
        recovering). Override when the fold hands the position on (a Session ends its
        tool calls' spans with it); by default the position is not needed."""
        return self.apply(state, event)

    def handle(self, message: Message) -> Any:
        """Handle a command or query; return the reply (or ``DEFERRED``)."""
        raise Rejected(f"{self.kind} does not understand {type(message).__name__}")

    def on_recovered(self, restarted: bool) -> None:
        """Called after the stream was folded: at start (``restarted=False``) or after a
        crash restart. Work found pending in the state can be resumed or failed here."""

    def is_idle(self) -> bool:
        """True when stopping now would interrupt nothing (checked before passivating)."""
        return True

    def on_child_stopped(self, child_path: str, leftovers: list[tuple[Any, Any]]) -> None:
        """A child stopped. ``leftovers`` are the messages it took in while passivating,
        with their replies (None for tells): route them again to a fresh instance."""
        for message, reply in leftovers:
            if reply is not None:
                reply.set_error(ActorDead(f"{child_path} stopped before handling the request"))
            self.runtime.dead_letter(child_path, message, "child stopped")

    def on_child_escalated(self, child_path: str, reason: str) -> None:
        """A child gave up. By default the failure climbs: this actor fails too."""
        raise Escalated(child_path, reason)

    def timer_book(self) -> TimerBook | None:
        """This actor's pending durable timers, or None if it keeps none.

        An actor with timers folds its ``timer.*`` events into a :class:`TimerBook` held in
        its state (``events.folds.timers.apply_timer_event``, so snapshots keep it) and
        returns it here; the base arms them with the System's timer service after each
        append and each recovery, and an actor with pending timers never passivates."""
        return None

    def on_timer(self, timer: PendingTimer, outcome: TimerFired | TimerSkipped) -> None:
        """A pending timer of this actor is due. Record ``outcome`` in the same append as
        what it causes (by default it causes nothing else)."""
        self.emit([outcome])

    def on_step_back(self, error: StreamOwnedElsewhere) -> list[tuple[Any, Any]]:
        """Another process owns this stream now (a renewal found the lease gone, or an
        append was fenced): this actor stops at once and writes nothing. Answer or hand
        over what is in flight; return (message, reply) pairs to go back to the parent
        (like a passivating actor's). By default: none."""
        return []

    def clock_now(self) -> float:
        """The time on the System's clock, the one durable timers are set and fire by."""
        return self.runtime.timers.clock.now()

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
        if self.shared_stream:
            recorded = self._append_shared(list(events), meta)
        else:
            recorded = self.runtime.run(self._append(list(events), self.version, meta))
        for item in recorded:
            self._apply_recorded(item)
        self._maybe_snapshot(len(recorded))
        return recorded

    def _append(
        self, events: list[Event], expected: int, meta: EventMetadata
    ) -> Coroutine[Any, Any, list[RecordedEvent]]:
        """The append of this actor's own stream, fenced by its lease when it has one (a
        store shared by processes: an older epoch than the stream's is refused)."""
        lease = self.runtime.ownership.token(self.path)
        if lease is None:
            return self.runtime.store.append(self.path, events, expected, meta)
        return self.runtime.store.append(self.path, events, expected, meta, lease=lease)

    def _append_shared(self, events: list[Event], meta: EventMetadata) -> list[RecordedEvent]:
        """Append to a stream other processes write too: on a conflict, fold what they
        wrote and append again (a few times; then the conflict is raised)."""
        store = self.runtime.store
        for _ in range(_SHARED_TRIES - 1):
            try:
                return self.runtime.run(store.append(self.path, events, self.version, meta))
            except VersionConflict:
                self._catch_up()
        return self.runtime.run(store.append(self.path, events, self.version, meta))

    def _catch_up(self) -> None:
        """Fold the events appended to this stream since ``self.version``."""
        while True:
            page = self.runtime.run(
                self.runtime.store.read_stream(self.path, self.version + 1, _READ_PAGE)
            )
            for item in page:
                self._apply_recorded(item)
            if len(page) < _READ_PAGE:
                return

    def pipe(
        self,
        coro: Coroutine[Any, Any, Any],
        label: str,
        key: str = "",
        correlation_id: str | None = None,
    ) -> concurrent.futures.Future[Any]:
        """Run slow I/O on the hub; its outcome arrives later as a ``Piped`` message.

        Returns the hub future, so the operation can be cancelled (its ``Piped`` then
        carries a ``CancelledError``)."""
        ref = self.actor_ref

        def deliver(value: Any, error: BaseException | None) -> None:
            message = Piped(
                label=label, key=key, value=value, error=error, correlation_id=correlation_id
            )
            try:
                ref.tell(message)
            except pykka.ActorDeadError:
                self.runtime.dead_letter(self.path, message, "piped result for a stopped actor")

        return self.runtime.hub.pipe(coro, deliver)

    def passivate(self) -> None:
        """Stop because idle. Messages that arrive from now on are not handled here: they go
        back to the parent with ``ChildStopped.leftovers`` so it can start a fresh instance."""
        self._passivating = True
        self.stop()

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
        handle = start_actor(self.runtime, cls, path, self.handle_ref, policy, *args, **kwargs)
        self.children[path] = handle
        return handle

    # -- pykka hooks --------------------------------------------------------------------
    def on_start(self) -> None:
        structlog.contextvars.bind_contextvars(actor=self.path, stream=self.path)
        try:
            if not self.shared_stream:
                self.runtime.ownership.claim(self.path)
        except StreamOwnedElsewhere as exc:
            # Not a failure: on a shared log the stream is served where it is leased.
            self.log.info("stream owned by another process: not starting", holder=exc.holder)
            self._start_error = exc
            self._given_up = True
            self.stop()
            return
        except StoreUnavailable:  # the lease is taken when the store answers again
            self._unclaimed = True
            self._fail(*sys.exc_info())  # type: ignore[arg-type]
            return
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
            self.on_recovered(False)
        except Exception:
            self._fail(*sys.exc_info())  # type: ignore[arg-type]

    def on_receive(self, message: Any) -> Any:
        kind = type(message)
        if kind is AskEnvelope:
            self._dispatch(message.message, message.reply)
        elif kind not in _INTERNAL:
            self._dispatch(message, None)
        elif kind is RestartDue:
            self._restart(message)
        elif kind is ChildEscalated:
            self.children.pop(message.path, None)
            self._dispatch(message, None)
        elif kind is ChildStopped:
            self.children.pop(message.path, None)
            if (
                message.leftovers
                or type(self).on_child_stopped is not EventSourcedActor.on_child_stopped
            ):
                self.on_child_stopped(message.path, list(message.leftovers))
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
        if self._start_error is None and not self._stepped_back:  # else not its stream
            try:
                self._record(ActorStopped(path=self.path))
            except Exception as exc:  # the store may already be gone at shutdown
                self.log.warning("could not record actor.stopped", error=str(exc))
            self.runtime.ownership.release(self.path)
        if self._timers_armed:  # armed again by its next start
            self.runtime.timers.disarm(self.path)
        self.runtime.unregister(self.path, self.actor_ref)
        if self.parent is not None:  # a parent that is itself stopping needs no notice
            with contextlib.suppress(pykka.ActorDeadError):
                self.parent.ref.tell(ChildStopped(path=self.path, leftovers=self._leftovers))

    # -- dispatch -----------------------------------------------------------------------
    def _dispatch(self, message: object, reply: Reply | None) -> None:
        if self._passivating:
            self._leftovers.append((message, reply))
            return
        if self._given_up:
            if reply is not None:
                reply.set_error(
                    self._start_error
                    or self._give_up_error
                    or ActorDead(f"{self.path} gave up (escalated) and is stopping")
                )
                if isinstance(self._start_error, StreamOwnedElsewhere):
                    return  # its asker was told where the stream is: nothing was lost
            self.runtime.dead_letter(self.path, message, "actor escalated")
            return
        if self._restarting:
            if self._store_down is not None and reply is not None:
                # Waiting for the store may take minutes: the asker hears it now.
                reply.set_error(ActorUnavailable(self.path, self._store_down))
                return
            self._stash.append((message, reply))
            return
        if isinstance(message, AwaitRecovery):
            if reply is not None:
                reply.set(self.version)
            return
        if type(message) is IdleCheck:
            self._idle_check_due = False
            if self.is_idle() and not self._has_timers():
                left = self._active_at + cast(float, self.idle_timeout_s) - time.monotonic()
                if left <= 0:
                    self.passivate()
                else:  # it was busy since the check was set: check again when it may be idle
                    self._check_idle_in(left)
            return
        if type(message) is RecordLater:
            self._record_kept()
            return
        if self.idle_timeout_s is not None:
            self._active_at = time.monotonic()
        self._reply = reply
        correlation = getattr(message, "correlation_id", None)
        if correlation != self._correlation:
            # Each actor has its own thread, so its own contextvars: rebind only on change.
            self._correlation = correlation
            structlog.contextvars.bind_contextvars(correlation_id=correlation)
        try:
            carrier = getattr(message, "trace_context", None)
            if carrier is None:  # the hot path: nothing traced, nothing to attach
                result = self._handle_one(message)
            else:  # the sender's trace goes on here (spans started now are its children)
                with attached(carrier):
                    result = self._handle_one(message)
        except Rejected as exc:
            self._answer(error=exc)
        except VersionConflict as exc:
            self._second_writer(exc)
            self._answer(error=exc)
        except Fenced as exc:
            self._step_back(exc.holder, fenced=True)
            self._answer(error=StreamOwnedElsewhere(self.path, exc.holder))
        except Exception as exc:
            # Record the failure before answering, so the asker can read it in the log.
            self._fail(*sys.exc_info())  # type: ignore[arg-type]
            if isinstance(exc, StoreUnavailable):
                self._answer(error=ActorUnavailable(self.path, exc))
            else:
                self._answer(error=ActorCrashed(self.path, exc))
        else:
            if result is not DEFERRED:
                self._answer(value=result)
        finally:
            self._reply = None
        if (
            self.idle_timeout_s is not None
            and not self._idle_check_due
            and self.is_idle()
            and not self._has_timers()
        ):
            self._check_idle_in(self.idle_timeout_s)

    def _check_idle_in(self, delay: float) -> None:
        """Tell this actor an IdleCheck in ``delay`` seconds (on the hub's loop)."""
        self._idle_check_due = True
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, IdleCheck())

    def _handle_one(self, message: object) -> Any:
        if type(message) is TimerDue:
            self._timer_due(message)
            return None
        if type(message) is LeaseLost:
            self._step_back("another process")
            return None
        if type(message) is ChildEscalated:
            if message.unrecorded is not None:
                self._keep_record(message.unrecorded)
            self.on_child_escalated(message.path, message.reason)
            return None
        return self.handle(message)  # type: ignore[arg-type]

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

    # -- recovery and recording ---------------------------------------------------------
    def _recover(self) -> int | None:
        """Rebuild state from the latest snapshot and the rest of the stream."""
        store = self.runtime.store
        self.state, self.version = self.initial_state(), 0
        if not self.recover_state:
            self.version = self.runtime.run(store.stream_version(self.path))
            return None
        self._recovering = True
        try:
            snapshot_version = self._fold_stream()
        finally:
            self._recovering = False
        self._arm_timers()
        return snapshot_version

    def _fold_stream(self) -> int | None:
        store = self.runtime.store
        snapshot_version = None
        state_type = self.state_type()
        if self.snapshot_every and state_type is not None:
            snapshot = self.runtime.run(store.load_snapshot(self.path, state_type))
            if snapshot is not None:
                self.state, self.version = snapshot.state, snapshot.version
                snapshot_version = snapshot.version
        self._catch_up()
        return snapshot_version

    def _apply_recorded(self, item: RecordedEvent) -> None:
        self.version = item.version
        event = item.event
        if isinstance(event, Event) and not isinstance(event, ActorEvent):
            self.state = self.apply_at(self.state, event, item.position)
            if type(event) in _TIMER_EVENTS and not self._recovering:
                self._timer_changed(event)

    # -- durable timers -----------------------------------------------------------------
    def _arm_timers(self) -> None:
        """Arm every pending timer of the book (after a recovery: the book may differ)."""
        book = self.timer_book()
        if book is None:
            return
        timers = [(t.timer_id, t.due_at) for t in book.pending.values()]
        if timers or self._timers_armed:  # (most actors never have one: no hub hop)
            self.runtime.timers.rearm(self.handle_ref, timers)
            self._timers_armed = bool(timers)

    def _timer_changed(self, event: Event) -> None:
        service = self.runtime.timers
        if isinstance(event, TimerSet | TimerMoved):
            service.arm(self.handle_ref, event.timer_id, event.due_at)
            self._timers_armed = True
        elif isinstance(event, TimerFired | TimerSkipped | TimerCancelled):
            service.disarm(self.path, event.timer_id)

    def _has_timers(self) -> bool:
        book = self.timer_book()
        return book is not None and bool(book.pending)

    def _timer_due(self, message: TimerDue) -> None:
        book = self.timer_book()
        timer = None if book is None else book.pending.get(message.timer_id)
        if timer is None or timer.due_at != message.due_at:
            return  # fired, cancelled or moved since it was armed
        now = self.clock_now()
        if now < timer.due_at:  # never early: wait for it again
            self.runtime.timers.arm(self.handle_ref, timer.timer_id, timer.due_at)
            return
        late = now - timer.due_at
        outcome: TimerFired | TimerSkipped
        if misfired(timer, now) and timer.misfire == "skip":
            outcome = TimerSkipped(
                timer_id=timer.timer_id, due_at=timer.due_at, skipped_at=now, late_s=late
            )
        else:
            outcome = TimerFired(
                timer_id=timer.timer_id,
                due_at=timer.due_at,
                fired_at=now,
                late_s=late,
                misfired=misfired(timer, now),
            )
        self.on_timer(timer, outcome)

    def _record(self, event: Event) -> None:
        """Append one of our own lifecycle events at our version."""
        self.emit([event])

    def _maybe_snapshot(self, count: int) -> None:
        if not self.snapshot_every:
            return
        self._since_snapshot += count
        if self._since_snapshot >= self.snapshot_every:
            self._since_snapshot = 0
            state: Any = self.state  # snapshot states are msgspec Structs (see state_type)
            try:
                self.runtime.run(self.runtime.store.save_snapshot(self.path, self.version, state))
            except Exception as exc:  # only an optimisation: the events are recorded
                self.log.warning("snapshot not saved", version=self.version, error=str(exc))

    # -- failure, restart and escalation ------------------------------------------------
    def _fail(self, exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        if isinstance(exc, StoreUnavailable):
            self._wait_for_store(exc)
            return
        if isinstance(exc, Fenced):  # not a failure: the stream is another process's now
            self._step_back(exc.holder, fenced=True)
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
        if isinstance(exc, CorruptEvent | StoreDamaged):  # a restart reads it again: give up
            self._escalate(f"its stream cannot be read: {exc}", exc)
            return
        if self._failures.exceeded():
            self._escalate(f"{failures} failures within {self.policy.window_s} s", exc)
            return
        self._restarting = True
        delay = self.policy.backoff(failures)
        restart = RestartDue(attempt=failures, delay_s=delay)
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, restart)

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
        restart = RestartDue(attempt=self._store_waits, delay_s=delay)
        loop = self.runtime.hub.loop
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, restart)

    def _tell_self(self, message: object) -> None:
        with contextlib.suppress(pykka.ActorDeadError):
            self.actor_ref.tell(message)

    def _restart(self, message: RestartDue) -> None:
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
            failures=self._failures.count,
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

    def _step_back(self, holder: str, *, fenced: bool = False) -> None:
        """Stop at once, writing nothing: the stream is another process's now (``fenced``:
        the store refused an append of this actor's for it). What was in flight is handed
        on (:meth:`on_step_back`); messages still queued go back to the parent, which
        routes them to the new owner."""
        if self._stepped_back:
            return
        self._stepped_back = True
        why = "an append was fenced" if fenced else "its lease was lost"
        self.log.warning(
            f"{why}: another process took this stream over: stepping back", holder=holder
        )
        self.runtime.ownership.forget(self.path)
        error = StreamOwnedElsewhere(self.path, holder)
        self._give_up_error = error
        try:
            self._leftovers.extend(self.on_step_back(error))
        finally:
            self._passivating = True  # from now on messages go back to the parent
            self.stop()

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
            meta = EventMetadata(actor=self.path, correlation_id=self._correlation)
            if self.shared_stream:  # others' events since are folded, not jumped over
                self._catch_up()
                self.version = self._append_shared([event], meta)[-1].version
                return True
            self.version = self.runtime.run(store.stream_version(self.path))
            self.runtime.run(self._append([event], self.version, meta))
            self.version += 1
        except Exception as exc:
            self.log.error(
                "could not record lifecycle event", event_type=type(event).__name__, error=str(exc)
            )
            return False
        return True

    def _drain_mailbox(self, reason: str) -> None:
        """Fail pending asks at once and turn pending tells into dead letters."""
        inbox = cast("queue.Queue[Any]", self.actor_inbox)  # a ThreadingActor's inbox
        if self._kept:  # a last try; the System's ``escalations`` keeps top-level ones
            self._record_kept()
            if self._kept:
                self.log.error("stopping with unrecorded events of children", events=self._kept)
        if self._passivating:  # everything still queued goes back to the parent
            self._leftovers.extend(self._stash)
            self._stash.clear()
            while not inbox.empty():
                envelope = inbox.get_nowait()
                if envelope.reply_to is not None:
                    envelope.reply_to.set(None)
                item = envelope.message
                if isinstance(item, AskEnvelope):
                    self._leftovers.append((item.message, item.reply))
                elif not isinstance(item, ChildStopped | RestartDue | AwaitRecovery | RecordLater):
                    self._leftovers.append((item, None))
            return
        pending: list[object] = [m for m, _ in self._stash]
        for _, reply in self._stash:
            if reply is not None:
                reply.set_error(self._unhandled_error())
        self._stash.clear()
        while not inbox.empty():
            envelope = inbox.get_nowait()
            message = envelope.message
            if isinstance(message, AskEnvelope):
                message.reply.set_error(self._unhandled_error())
                message = message.message
            if envelope.reply_to is not None:
                envelope.reply_to.set(None)
            if isinstance(message, ChildStopped | RestartDue | AwaitRecovery | RecordLater):
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


# -- starting actors --------------------------------------------------------------------
def launch(
    runtime: Runtime,
    cls: type[EventSourcedActor[Any]],
    path: str,
    parent: ActorHandle[Any] | None,
    policy: SupervisionPolicy | None,
    *args: Any,
    **kwargs: Any,
) -> ActorHandle[Any]:
    """Start the actor's thread without waiting for it to recover its stream."""
    validate_stream(path)
    with runtime.reserve(path):
        ref = cls.start(runtime, path, parent, policy, *args, **kwargs)
        handle: ActorHandle[Any] = ActorHandle(runtime, path, cls.kind, ref)
        runtime.register(handle)
    return handle


def start_actor(
    runtime: Runtime,
    cls: type[EventSourcedActor[Any]],
    path: str,
    parent: ActorHandle[Any] | None,
    policy: SupervisionPolicy | None,
    *args: Any,
    **kwargs: Any,
) -> ActorHandle[Any]:
    """Start the actor and block until it has folded its stream (from an actor thread).

    If it cannot (its stream is unreadable, the store unreachable), the error is raised and
    the actor is stopped: a child its parent never got a handle for must not live on."""
    handle = launch(runtime, cls, path, parent, policy, *args, **kwargs)
    try:
        handle.ask_blocking(AwaitRecovery())
    except BaseException:
        handle.stop()
        raise
    return handle
