"""Where a routine's run got to, as its session's stream says (read on the hub at start)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clawlog.events import event_tag
from clawlog.events.domain.session import TurnCancelled, TurnCompleted, TurnFailed, TurnStarted
from clawlog.events.folds.routines import OpenRun
from clawlog.events.streams import session_stream

__all__ = ["RunState", "run_states"]

#: ``absent`` (the session never had it), ``started`` (its turn is unfinished: the
#: session resumes it), ``completed`` or ``failed`` (a cancelled turn too, as when its
#: session answers the run live); with the reply or the failure.
RunState = tuple[str, str]

#: Only a turn's boundaries are read (and decoded), not the session's whole stream.
_BOUNDARIES = [event_tag(c) for c in (TurnStarted, TurnCompleted, TurnFailed, TurnCancelled)]
_PAGE = 1000


async def run_states(store: Any, agent: str, runs: Sequence[OpenRun]) -> dict[str, RunState]:
    """The state of each run's turn in its session (run it on the hub, with its store)."""
    found: dict[str, RunState] = {run.turn_id: ("absent", "") for run in runs}
    for session_key in sorted({run.session_key for run in runs}):
        wanted = {run.turn_id for run in runs if run.session_key == session_key}
        stream = session_stream(agent, session_key)
        position = 1
        while True:
            page = await store.read_all(position, _PAGE, stream_prefix=stream, types=_BOUNDARIES)
            for recorded in page:
                event = recorded.event
                # The prefix also matches longer keys ("chat-1" and "chat-10").
                if recorded.stream != stream or event.turn_id not in wanted:
                    continue
                found[event.turn_id] = _state(event)
            if len(page) < _PAGE:
                break
            position = page[-1].position + 1
    return found


def _state(event: Any) -> RunState:
    if isinstance(event, TurnCompleted):
        return ("completed", event.reply)
    if isinstance(event, TurnFailed):
        return ("failed", f"{event.reason}: {event.message}")
    if isinstance(event, TurnCancelled):
        return ("failed", f"cancelled: its turn was cancelled by {event.by}")
    return ("started", "")
