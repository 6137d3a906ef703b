"""Where a routine's run got to, as its session's stream says (read on the hub at start)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clawlog.events.domain.session import TurnCompleted, TurnFailed, TurnStarted
from clawlog.events.folds.routines import OpenRun
from clawlog.events.streams import session_stream

__all__ = ["RunState", "run_states"]

#: ``absent`` (the session never had it), ``started`` (its turn is unfinished: the
#: session resumes it), ``completed`` or ``failed``; with the reply or the failure.
RunState = tuple[str, str]


async def run_states(store: Any, agent: str, runs: Sequence[OpenRun]) -> dict[str, RunState]:
    """The state of each run's turn in its session (run it on the hub, with its store)."""
    found: dict[str, RunState] = {run.turn_id: ("absent", "") for run in runs}
    for session_key in sorted({run.session_key for run in runs}):
        wanted = {run.turn_id for run in runs if run.session_key == session_key}
        async for recorded in store.iter_stream(session_stream(agent, session_key)):
            event = recorded.event
            turn_id = getattr(event, "turn_id", None)
            if turn_id not in wanted:
                continue
            if isinstance(event, TurnStarted):
                found[turn_id] = ("started", "")
            elif isinstance(event, TurnCompleted):
                found[turn_id] = ("completed", event.reply)
            elif isinstance(event, TurnFailed):
                found[turn_id] = ("failed", f"{event.reason}: {event.message}")
    return found
