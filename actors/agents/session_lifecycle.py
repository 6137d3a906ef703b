"""The parts of a Session's life outside a normal turn: cancel, stop, crash and restart."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from clawlog.events import (
    Event,
)
from clawlog.events.domain.session import TurnCancelled, TurnFailed

from ..errors import ActorDead, TurnCancelledError, TurnFailedError
from ..messages import Message
from .messages import ResumeTurn

if TYPE_CHECKING:
    from .session import Session

__all__ = ["SESSION_END_HOOKS", "SettleTurn", "TurnLifecycle"]

#: ``runtime.services`` key: callables ``(agent, session_key)`` a stopping Session calls.
SESSION_END_HOOKS = "session_end_hooks"


class TurnLifecycle:
    """Mixed into :class:`actors.agents.session.Session`."""

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
