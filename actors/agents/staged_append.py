"""Events a Session has decided but not appended yet, to share the next append's commit.

A turn's first model request used to cost two durable commits before the request went
out: ``TurnStarted`` (with ``SessionStarted`` for a new session), then ``ModelRequested``
(with any compaction event decided on the way). Nothing outside the session sees the
first one before the second, and a crash between them leaves nothing that a restart
could not redo, so they share one append: the start of the turn is *staged*, the request
is planned on the state as it will be once that append is in, and the request's append
carries both.

While events are staged the session's ``state`` is a scratch copy with them folded in
(the prompt, the compaction plan and the budget check read it); the state folded from
the log is ``held`` aside untouched. The append puts the held state back and folds the
recorded events into it as usual; anything else that ends the step (an error before the
append, the append refused or lost) puts it back too, so the state never shows an event
the log does not have.

The same staging merges the later boundaries of a turn (issue 24, "Fewer commits per
turn"); the rule is that an event shares a later commit only when nothing happens
outside the session before that commit:

- a model reply shares the commit of what it leads to: the starts of its tool calls
  (durable before any of them runs), or the turn's end and its outbox message;
- the result of a turn's last outstanding tool call shares the next model request's
  commit, made in the same step: it is durable as soon as it would be on its own (a
  request is planned in microseconds; nothing is waited for in between), and if the
  request cannot be planned, the result is appended alone before the step fails. A
  result that arrives while other calls of the step still run is appended at once:
  a crash never loses a result a restart could not get back (a call with an effect is
  not run twice);
- the one wait events are held across: a reply whose calls all run at once and only
  read (``side_effects = "none"``) stays staged with their starts while they run. The
  last result then joins them with the next request, which stays held too while the
  model answers it; its reply joins them, and so on: a *hold* goes on through the turn's
  steps until a step has a call with an effect or one that waits for a person (all that
  is held is appended with its start, before it runs), the turn ends (one append with its
  end), or ``AgentConfig.read_hold_s`` has passed since the hold began (measured from its
  first step, not restarted by each). A crash before the held append loses nothing a
  restart cannot redo: it asks the model again from the last request in the log and runs
  the reads again. When the hold runs out first (a slow read, a model still answering),
  what is held is appended on its own, so a reader of the log sees the calls running or
  the request out; a stop appends it with ``actor.stopped``. A step that fails before
  its append (a defect deciding a call, a request that cannot be planned) drops only its
  own events: the steps held before it are appended on their own first, with their
  callbacks (a reply's usage reaches the daily ledger, its span its attributes).

What must be durable before a side effect starts stays its own commit before it: the
starts of a reply's calls (with the reply) before any of them runs, and the turn's start
(the user's message) before the first model request: it is never held.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import msgspec

from clawlog.events import Event, RecordedEvent

from .gateway import ToolGateway
from .session_state import SessionState, ToolEventReader

__all__ = [
    "Hold",
    "StagedAppend",
    "WrittenCallback",
    "scratch_state",
    "staged_reader",
]

#: Told the records of its own events once a staged append is in the log.
WrittenCallback = Callable[[Sequence[RecordedEvent]], None]


class StagedAppend:
    """The staged events of one step and the envelope they were decided under."""

    __slots__ = (
        "causation_id",
        "correlation_id",
        "events",
        "held",
        "on_written",
        "opens_turn",
        "written",
    )

    def __init__(
        self,
        events: list[Event],
        *,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        opens_turn: bool = False,
        on_written: WrittenCallback | None = None,
    ) -> None:
        #: The events, in the order they go into the log.
        self.events = events
        #: The envelope they would have had in an append of their own. The turn's cause
        #: (a delegation, a subagent task) is its lineage link: it wins over the cause of
        #: the events they are appended with.
        self.correlation_id = correlation_id
        self.causation_id = causation_id
        #: They start a turn (``TurnStarted``): its start is durable once they are written.
        self.opens_turn = opens_turn
        #: The session's state as folded from the log, set aside while they are staged.
        self.held: SessionState | None = None
        #: They are in the log (their append succeeded).
        self.written = False
        #: (offset, count, callback): told the records of ``events[offset:offset+count]``
        #: once they are in the log (the metrics and spans of an event are recorded when
        #: it is durable, with its position).
        self.on_written: list[tuple[int, int, WrittenCallback]] = []
        if on_written is not None:
            self.on_written.append((0, len(events), on_written))

    def merge(self, later: StagedAppend) -> None:
        """Stage ``later``'s events after these (its envelope yields to this one's)."""
        offset = len(self.events)
        self.events.extend(later.events)
        for start, count, callback in later.on_written:
            self.on_written.append((offset + start, count, callback))

    def before(self, count: int) -> StagedAppend:
        """A new staged append of the first ``count`` events, with their envelope and the
        callbacks of those events (what was staged before a step that failed)."""
        part = StagedAppend(
            self.events[:count],
            correlation_id=self.correlation_id,
            causation_id=self.causation_id,
            opens_turn=self.opens_turn,
        )
        part.on_written = [entry for entry in self.on_written if entry[0] + entry[1] <= count]
        return part

    def appended(self, records: Sequence[RecordedEvent]) -> None:
        """The append holding these events succeeded: ``records`` are theirs, in order."""
        self.written = True
        for start, count, callback in self.on_written:
            callback(records[start : start + count])

    def causation(self, causation_id: str | None) -> str | None:
        """The cause of the shared append: the staged one, else that of the later events."""
        return self.causation_id or causation_id


class Hold:
    """A session's hold of read-only steps (the module's docstring): the staged append it
    holds, the hold's number (an end told for an older one is stale) and when it runs out
    (``time.monotonic``), measured from its first step."""

    __slots__ = ("due", "held", "number", "seconds")

    def __init__(self, seconds: float) -> None:
        #: How long a hold may last (``AgentConfig.read_hold_s``; 0: nothing is held).
        self.seconds = seconds
        self.held: StagedAppend | None = None
        self.number = 0
        self.due = 0.0

    def holds(self, staged: StagedAppend | None) -> bool:
        """Whether ``staged`` (the session's staged append) is what is held."""
        return self.held is not None and staged is self.held

    def ran_out(self) -> bool:
        return time.monotonic() >= self.due

    def take(self, staged: StagedAppend) -> None:
        """Hold ``staged`` through one more step: a new hold runs out ``seconds`` from
        now, one going on keeps its due time."""
        if not self.holds(staged):
            self.due = time.monotonic() + self.seconds
        self.held, self.number = staged, self.number + 1

    def release(self) -> None:
        """What was held is appended or dropped."""
        self.held = None

    def run(
        self, running: Coroutine[Any, Any, Any], ended: Callable[[int], None]
    ) -> Coroutine[Any, Any, Any]:
        """``running`` (a held call or model request, run on the hub), calling ``ended``
        with this hold's number if the hold runs out first (the session then appends
        what it holds)."""
        return _run_held(running, ended, self.number, self.due)


async def _run_held(
    running: Coroutine[Any, Any, Any], ended: Callable[[int], None], number: int, due: float
) -> Any:
    loop = asyncio.get_running_loop()
    timer = loop.call_later(max(0.0, due - time.monotonic()), ended, number)
    try:
        return await running
    finally:
        timer.cancel()


def scratch_state(state: SessionState) -> SessionState:
    """A copy of ``state`` that folding staged events into leaves ``state`` as it was.

    The fold mutates lists and dicts in place: those a staged event can change (the
    conversation, the turn starts, the turn in flight) are copied; messages themselves
    are immutable and shared. A shallow copy of the conversation is a few microseconds
    for a long session, far below the commit it saves."""
    turn = state.turn
    if turn is not None:  # the tool events of a reply change these in place
        turn = msgspec.structs.replace(
            turn,
            pending_calls=dict(turn.pending_calls),
            awaiting_approval=list(turn.awaiting_approval),
            reruns=dict(turn.reruns),
        )
    return msgspec.structs.replace(
        state,
        messages=list(state.messages),
        positions=list(state.positions),
        turn_starts=dict(state.turn_starts),
        turn=turn,
    )


def staged_reader(gateway: ToolGateway) -> ToolEventReader:
    """How a staged tool event is read into the scratch state: as the gateway reads it,
    but without folding it into the gateway's own state (its approvals, the call's span
    ended with the event's log position), which the append does once it is in the log.
    A gateway without ``peek_event`` is read as usual."""
    peek: ToolEventReader | None = getattr(gateway, "peek_event", None)
    return peek if peek is not None else gateway.read_event
