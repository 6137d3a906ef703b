"""Whether an outcome reached its caller, as the log says (read on the hub).

An async delegation's or subagent task's outcome reaches its caller as a turn in the
caller's session: the ``session.turn_started`` whose sender is ``delegate:{id}`` (a
delegation) or whose turn id the ``subagent.announced`` event named (subagent results).
That turn being in the log is the proof of delivery; an ``announced`` event without it is
a promise only (the process may have stopped between the two). A DelegationLink and an
AgentSupervisor ask these questions when they start, so an outcome whose announcement was
lost is delivered after a restart, and one that was delivered is not delivered twice.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from clawlog.events.domain.session import TurnStarted

__all__ = ["DeliveredTurn", "delivered_turns"]

#: A turn that delivered an outcome: its sender, turn id and log position.
DeliveredTurn = tuple[str, str, int]


async def delivered_turns(
    store: Any, session: str, *, senders: Collection[str] = (), turn_ids: Collection[str] = ()
) -> list[DeliveredTurn]:
    """The turns of ``session`` started by one of ``senders`` or with one of ``turn_ids``,
    in log order (run it on the hub, with the hub's store)."""
    return [
        (event.sender, event.turn_id, recorded.position)
        async for recorded in store.iter_stream(session)
        if isinstance(event := recorded.event, TurnStarted)
        and (event.sender in senders or event.turn_id in turn_ids)
    ]
