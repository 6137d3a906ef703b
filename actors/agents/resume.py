"""Resume on start: the sessions of an agent whose last turn never ended.

When an AgentSupervisor starts (``register_agent`` after ``System.open``, or its restart
under supervision) it starts every such session; the Session finds its unfinished turn in
its stream and finishes it (``Session._resume_turn``: calls that were running run again
with the same idempotency key when their tool allows it, else are recorded as interrupted:
:mod:`.resume_calls`), and the reply goes to the outbox. The store answers the
question by stream prefix and event type: only the turn boundaries of this agent's
sessions are read (not decoded), not the log.
"""

from __future__ import annotations

from typing import Any

from clawlog.events import event_tag
from clawlog.events.domain.session import TurnCancelled, TurnCompleted, TurnFailed, TurnStarted
from clawlog.events.streams import session_stream

__all__ = ["unfinished_sessions"]

_STARTED = event_tag(TurnStarted)
_BOUNDARIES = [_STARTED, *(event_tag(c) for c in (TurnCompleted, TurnFailed, TurnCancelled))]
_PAGE = 1000


async def unfinished_sessions(store: Any, agent: str) -> list[str]:
    """The session keys of ``agent`` whose last turn started and did not end (run it on
    the hub, with the hub's store).

    Only the rows' stream and type are needed, so the payloads are not decoded: a corrupt
    event in one session cannot keep the agent's other sessions from resuming (that
    session's own start reports it)."""
    prefix = session_stream(agent, "")
    open_turn: dict[str, bool] = {}
    position = 1
    while True:
        rows = await store.backend.read_all(position, _PAGE, prefix, _BOUNDARIES)
        for row in rows:
            open_turn[row.stream] = row.type == _STARTED
        if len(rows) < _PAGE:
            break
        position = rows[-1].position + 1
    return [stream.removeprefix(prefix) for stream, unfinished in open_turn.items() if unfinished]
