"""What a restart did to a sync delegation a turn was waiting for, in words for the model.

A ``delegate`` call (mode sync) waits for the target's answer; a restart interrupts it,
and its tool's side effects are external, so it is not run again
(:mod:`.resume_calls`). What the model is told instead of the generic "the call may not
have finished" comes from the link's stream (``link/{agent}->{target}``), where the
request names the call that asked (``call_id``):

- the delegation was still running, or ended as interrupted: the restart interrupted it
  before the target answered, and the link records (or recorded) it so;
- it completed: the target answered, but the answer never reached the call (the
  ``delegate`` tool's history action reads it);
- it ended otherwise (failed, cancelled): how, as the link recorded it.

No request for the call in the link's stream (the process stopped before the link
recorded it, or a log written before requests named their call) keeps the generic words:
the log cannot tell which. Nor does a store that cannot be read now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from clawlog.events import EventStoreError
from clawlog.events.domain.delegation import (
    DelegationCancelled,
    DelegationCompleted,
    DelegationFailed,
    DelegationRequested,
)
from clawlog.events.domain.session import ToolCall
from clawlog.events.streams import link_stream

from ..runtime import Runtime

__all__ = ["delegation_reasons", "interrupted_delegation_reason", "sync_delegation_target"]

_json = msgspec.json.Decoder()


def sync_delegation_target(call: ToolCall) -> str | None:
    """The target agent of a ``delegate`` call that waits for the answer (action
    ``delegate``, mode ``sync``: the defaults), else None."""
    if call.name != "delegate":
        return None
    try:
        args = _json.decode(call.arguments or "{}")
    except msgspec.DecodeError:
        return None
    if not isinstance(args, dict):
        return None
    if args.get("action", "delegate") != "delegate" or args.get("mode", "sync") != "sync":
        return None
    target = args.get("agent")
    return target if isinstance(target, str) and target else None


def interrupted_delegation_reason(link_events: Sequence[object], call_id: str) -> str | None:
    """Why the sync delegate call ``call_id`` did not finish, from its link's events;
    None when they hold no request from that call."""
    request: DelegationRequested | None = None
    end: DelegationCompleted | DelegationFailed | DelegationCancelled | None = None
    for event in link_events:
        if isinstance(event, DelegationRequested) and call_id and event.call_id == call_id:
            request, end = event, None  # the last request of the call counts
        elif (
            request is not None
            and isinstance(event, DelegationCompleted | DelegationFailed | DelegationCancelled)
            and event.delegation_id == request.delegation_id
        ):
            end = event
    if request is None:
        return None
    target, delegation = request.target, request.delegation_id
    if end is None or (isinstance(end, DelegationFailed) and end.reason == "interrupted"):
        return (
            f"interrupted by a restart before {target} answered; its link recorded the "
            f"delegation {delegation} as interrupted. Delegate again if the task is still "
            "needed"
        )
    if isinstance(end, DelegationCompleted):
        return (
            f"interrupted by a restart after {target} answered (delegation {delegation}); "
            "the answer did not reach this call. Read it with the delegate tool's history "
            "action before delegating again"
        )
    if isinstance(end, DelegationCancelled):
        how = f"was cancelled by {end.by or 'someone'}"
    else:
        assert isinstance(end, DelegationFailed)
        how = f"failed ({end.reason}: {end.message})" if end.message else f"failed ({end.reason})"
    return f"interrupted by a restart; the delegation {delegation} to {target} {how}"


def delegation_reasons(runtime: Runtime, agent: str) -> Callable[[ToolCall], str | None]:
    """For the resume of ``agent``'s turn: the reason for an interrupted call that is a
    sync delegation, read from its link's stream on the calling actor's thread (None for
    other calls, or when the log cannot tell)."""

    def reason(call: ToolCall) -> str | None:
        target = sync_delegation_target(call)
        if target is None:
            return None
        try:
            recorded = runtime.run(runtime.store.read_stream(link_stream(agent, target)))
        except EventStoreError:
            return None  # the generic words: nothing false is said
        return interrupted_delegation_reason([r.event for r in recorded], call.id)

    return reason
