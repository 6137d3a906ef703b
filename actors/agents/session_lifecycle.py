"""The parts of a Session's life outside a normal turn: cancel, stop, crash and restart."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from clawlog.events import (
    CorruptEvent,
    Event,
    EventStoreError,
    InvalidAppend,
    StoreUnavailable,
)
from clawlog.events.domain.session import TurnCancelled, TurnFailed

from ..errors import ActorDead, ActorUnavailable, TurnCancelledError, TurnFailedError
from ..messages import Message
from .messages import ResumeTurn

if TYPE_CHECKING:
    from .session import Session

__all__ = ["SESSION_END_HOOKS", "SettleTurn", "TurnLifecycle"]

#: ``runtime.services`` key: callables ``(agent, session_key)`` a stopping Session calls.
SESSION_END_HOOKS = "session_end_hooks"


class TurnLifecycle:
    """Mixed into :class:`actors.agents.session.Session`."""

    #: Why the end of a failed turn is not recorded yet (the store is unreachable).
    _settle_error: StoreUnavailable | None
    #: The turn id of a told message put back at the head of the queue: the store could
    #: not take its start (which may still have been written: the stream is read again).
    _unstarted: str | None
    #: A SettleTurn is scheduled (its backoff timer is running).
    _settle_due: bool

    def on_recovered(self: Session, restarted: bool) -> None:
        if not restarted:
            if self.state.turn is not None:
                self.actor_ref.tell(ResumeTurn())
            return
        # A crash in this process: do not replay into the same crash. The sender hears it
        # first (even if the store cannot take the turn's end now), and the turn ends.
        turn, active = self.state.turn, self._active
        message = "the session crashed and restarted"
        self._active, self._unsettled = None, None  # the stream was just read again
        if active is not None:
            for future in active.futures.values():
                future.cancel()
            if active.reply is not None:  # the sender is still waiting for this turn
                active.reply.set_error(TurnFailedError("crashed", message))
        if turn is not None:
            self._close_open_calls("the session crashed during this call")
            self.emit(
                [TurnFailed(turn_id=turn.turn_id, reason="crashed", message=message)],
                correlation_id=turn.turn_id,
            )
        self.actor_ref.tell(SettleTurn())  # then the queued messages, each in its own step

    # -- failures inside a turn ---------------------------------------------------------
    def _abort_turn(self: Session, exc: Exception) -> TurnFailedError:
        """A step of the turn raised. Its caller hears it now (and gets the error back).

        A store error (an append refused or lost, the store unreachable) ends the turn in
        the log, now or once the store answers again, and the session serves its next
        message. Anything else is a defect: it is raised again, so supervision records it
        and restarts the session from its stream (which ends the turn as ``crashed``)."""
        active, turn = self._active, self.state.turn
        if (active is None and turn is None) or self._unsettled is not None:
            raise exc  # nothing in flight, or recording a failed turn's end failed otherwise
        turn_id = active.turn_id if active is not None else turn.turn_id  # type: ignore[union-attr]
        reason = _failure_reason(exc)
        text = self._gateway.scrub(f"{type(exc).__name__}: {exc}")[:2000]
        error = TurnFailedError(reason, text)
        error.__cause__ = exc
        self._active = None
        if active is not None:
            for future in active.futures.values():
                future.cancel()
            if active.reply is not None:
                active.reply.set_error(error)
        self.log.error("turn failed", turn_id=turn_id, reason=reason, error=text)
        if not isinstance(exc, EventStoreError) or isinstance(exc, CorruptEvent):
            raise exc  # a corrupt stream escalates at once: a restart reads it again
        self._unsettled = (turn_id, reason, text)
        if turn_id != self._unstarted or not isinstance(exc, StoreUnavailable):
            self._tell_self(SettleTurn())
            return error
        # A told message went back to the queue: retry it with backoff (not at once: the
        # store may still read but not write), and the asks behind it hear why now.
        self._settle_error = exc
        self._refuse_queued()
        self._settle_later()
        return error

    def _settle(self: Session) -> bool:
        """End in the log the turn a store failure ended here; False while the store is
        unreachable (tried again with backoff, and at each new message)."""
        if self._unsettled is None:
            return True
        turn_id, reason, text = self._unsettled
        try:
            if reason != "append_refused":  # the failed append may have been written
                self._recover()
            turn = self.state.turn
            if turn_id == self._unstarted:
                self._settle_told(turn_id)  # its backoff goes on until it starts
            elif turn is None and self.state.last_ended_turn == turn_id:
                # Its end was written before the failure (e.g. an acknowledgement lost).
                self._settle_tries = 0
            else:
                if turn is not None:
                    self._close_open_calls(f"the turn failed: {text}")
                    turn_id = turn.turn_id
                # With no turn open, its start was not recorded: its end still is.
                self.emit(
                    [TurnFailed(turn_id=turn_id, reason=reason, message=text)],
                    correlation_id=turn_id,
                )
                self._settle_tries = 0
        except StoreUnavailable as exc:
            self._settle_error = exc
            self.log.warning("turn end not recorded yet", turn_id=turn_id, error=str(exc))
            return False
        self._unsettled, self._settle_error = None, None
        return True

    def _settle_told(self: Session, turn_id: str) -> None:
        """The told message of ``turn_id`` is back at the head of the queue. If its start
        was written after all, the turn is open in the log: it resumes instead of starting
        twice. Otherwise nothing ended, and it starts again from the queue."""
        self._unstarted = None
        turn = self.state.turn
        if turn is not None and turn.turn_id == turn_id:
            if self._queue and self._queue[0][0].turn_id == turn_id:
                self._queue.popleft()
            self._tell_self(ResumeTurn())

    def _on_settle(self: Session) -> None:
        """One try to settle (its only retry chain: backoff until the store answers)."""
        self._settle_due = False
        if self._settle():
            self._next_turn()
            return
        self._refuse_queued()
        self._settle_later()

    def _settle_later(self: Session) -> None:
        if self._settle_due:  # one retry chain, however many messages fail meanwhile
            return
        self._settle_due = True
        self._settle_tries += 1
        loop = self.runtime.hub.loop
        delay = self.policy.backoff(self._settle_tries)
        loop.call_soon_threadsafe(loop.call_later, delay, self._tell_self, SettleTurn())

    def _refuse_queued(self: Session) -> None:
        """The store is unreachable: the queued asks cannot start a turn; say so now. Told
        messages stay queued (nobody could be told): they run when the store is back."""
        assert self._settle_error is not None
        told = [(message, reply) for message, reply in self._queue if reply is None]
        for _, reply in self._queue:
            if reply is not None:
                reply.set_error(ActorUnavailable(self.path, self._settle_error))
        self._queue.clear()
        self._queue.extend(told)

    def on_stop(self: Session) -> None:
        active, queued = self._active, list(self._queue)
        self._active = None
        self._queue.clear()
        if active is not None:
            for future in active.futures.values():
                future.cancel()
            if active.reply is not None:
                active.reply.set_error(
                    ActorDead(
                        f"{self.path} stopped during the turn; it is in the log and resumes when "
                        "the session starts again"
                    )
                )
        for _, reply in queued:
            if reply is not None:
                reply.set_error(ActorDead(f"{self.path} stopped before this message's turn began"))
        # The session ended: what tools keep per session (background processes, a sandbox
        # container) is released by the hooks registered here (actors.workspace).
        for hook in list(self.runtime.services.get(SESSION_END_HOOKS, ())):
            try:
                hook(self.config.key, self.session_key)
            except Exception as exc:
                self.log.warning("session end hook failed", error=str(exc))
        super().on_stop()  # type: ignore[misc]

    def _cancel(self: Session, by: str) -> bool:
        turn, active = self.state.turn, self._active
        if turn is None:
            return False
        if active is not None:
            for future in active.futures.values():
                future.cancel()
        self._close_open_calls(f"cancelled by {by}")
        self.emit([TurnCancelled(turn_id=turn.turn_id, by=by)], correlation_id=turn.turn_id)
        self._active = None
        if active is not None and active.reply is not None:
            active.reply.set_error(TurnCancelledError(f"the turn was cancelled by {by}"))
        self._next_turn()
        return True

    def _close_open_calls(self: Session, reason: str, keep: frozenset[str] = frozenset()) -> None:
        turn = self.state.turn
        if turn is None:
            return
        ctx = self.caller()
        events: list[Event] = []
        for call_id, name in list(turn.pending_calls.items()):
            if call_id not in keep:
                events.extend(self._gateway.interrupted(ctx, call_id, name, reason))
        if events:
            self.emit(events, correlation_id=turn.turn_id)

    def _resume_turn(self: Session) -> None:
        """Continue a turn found unfinished after a process restart (nobody awaits it).

        Calls that were running are recorded as interrupted (they may or may not have
        had their effect, and are not run twice); calls waiting for an approval wait
        again; a model reply that ended the turn but was not yet recorded as its end
        completes it."""
        turn = self.state.turn
        if turn is None or self._active is not None:
            return
        from .session import _Active

        self._active = _Active(turn.turn_id, None)
        self._active.resumed = True
        if turn.sender.startswith("delegate:"):
            # Its link records the delegation as interrupted when it starts again and tells
            # the source so: finishing the turn here would do the work a second time for
            # nobody. It ends as interrupted instead.
            self._close_open_calls("interrupted by a restart; the call may not have finished")
            self._fail_turn(
                "interrupted", "a restart interrupted this delegated turn; its link records it"
            )
            return
        self.log.info("resuming an interrupted turn", turn_id=turn.turn_id)
        if turn.awaiting == "done":
            last = next(m for m in reversed(self.state.messages) if m.role == "assistant")
            self._complete_turn(last.content)
            return
        waiting = frozenset(turn.awaiting_approval)
        self._close_open_calls(
            "interrupted by a restart; the call may not have finished", keep=waiting
        )
        if waiting:
            calls = next(m for m in reversed(self.state.messages) if m.role == "assistant")
            ctx = self.caller()
            for tool_call in calls.tool_calls:
                if tool_call.id in waiting:
                    step = self._gateway.begin(ctx, tool_call)
                    if step.outcome == "approval":  # already recorded: only wait again
                        step = msgspec.structs.replace(step, events=[])
                    self._apply_gate(tool_call.id, step)
        self._continue_if_done()


class SettleTurn(Message, frozen=True, kw_only=True):
    """Record the end of a turn a store failure ended, then serve the queued messages."""


def _failure_reason(exc: Exception) -> str:
    """``TurnFailed.reason`` for an error raised by a step of the turn."""
    if isinstance(exc, InvalidAppend):
        return "append_refused"  # nothing was written (too large, not encodable)
    if isinstance(exc, StoreUnavailable):
        return "store_unavailable"
    if isinstance(exc, EventStoreError):
        return "store_error"
    return "crashed"
