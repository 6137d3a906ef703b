"""What a restart does with the tool calls a turn had in flight (exactly-once where tools
allow it).

When a Session resumes a turn found unfinished in its stream (``Session._resume_turn``),
each call of the model's last reply that has no end in the log and does not wait for an
approval gets a decision, recorded as ``tool.call_resume_decided`` before anything else
is done with it:

- ``rerun`` when its tool declares, for these arguments, no side effects or idempotent
  ones (:mod:`tools.side_effects`): the call goes through the pipeline again under the
  same call id and turn, so it runs with the same idempotency key and the tool dedupes
  on it (the effect happens once, however often the tool sees the key);
- ``interrupted`` otherwise, followed in the same append by ``tool.call_failed``
  (``interrupted``): the call may have had its effect, and the model is told to check
  before repeating it (what a restart did to every call before).

A call is run again at most :data:`MAX_RERUNS` times: a tool that takes the process down
each time it runs (out of memory) would otherwise restart it forever. A call whose
recorded arguments lost a secret to scrubbing cannot be rebuilt and is interrupted. The
gateway says what a call's side effects are (:class:`SideEffectsGateway`); with a gateway
that cannot, nothing is run again. An interrupted sync delegation is told what its link
recorded (:mod:`.resume_delegations`) rather than the generic words.

A worker's delegated turn is not resumed (its link records the delegation as
interrupted): :func:`interrupt_delegated_calls` gives each of its calls in flight an
``interrupted`` decision too, so every call a restart found in flight has one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import msgspec

from clawlog.events import Event
from clawlog.events.domain.session import ChatMessage, ToolCall
from clawlog.events.domain.tool import SideEffects, ToolCallResumeDecided
from clawlog.tools.scrub import REDACTED
from clawlog.tools.side_effects import idempotency_key, may_run_again

from .gateway import CallerContext, ToolGateway
from .session_state import TurnState

__all__ = [
    "DELEGATED_REASON",
    "INTERRUPTED_REASON",
    "MAX_RERUNS",
    "ResumedCalls",
    "SideEffectsGateway",
    "decide_resumed_calls",
    "interrupt_delegated_calls",
]

#: How many times one call may be run again after restarts.
MAX_RERUNS = 2
#: What the model reads about a call a restart interrupted (``tool.call_failed``).
INTERRUPTED_REASON = "interrupted by a restart; the call may not have finished"
#: Why the calls of a worker's delegated turn a restart interrupted are not run again.
DELEGATED_REASON = (
    "interrupted by a restart; the call may not have finished, and the delegated turn "
    "does not resume: its link records the delegation as interrupted"
)


@runtime_checkable
class SideEffectsGateway(Protocol):
    """A :class:`ToolGateway` that can say what running a recorded call again would do."""

    def side_effects(self, call: ToolCall) -> SideEffects:
        """``external`` when unknown (the tool is gone)."""
        ...


class ResumedCalls(msgspec.Struct, frozen=True, kw_only=True):
    """The decisions for the calls a restart found in flight."""

    #: Append first: one decision per call, each ``interrupted`` one followed by the
    #: event that ends its call.
    events: list[Event]
    #: The calls to begin again (in the model's order), after ``events`` are appended.
    rerun: list[ToolCall]

    @property
    def rerun_ids(self) -> frozenset[str]:
        return frozenset(call.id for call in self.rerun)


def decide_resumed_calls(
    gateway: ToolGateway,
    ctx: CallerContext,
    turn: TurnState,
    messages: Sequence[ChatMessage],
    explain: Callable[[ToolCall], str | None] | None = None,
) -> ResumedCalls:
    """Decide for every call still pending in ``turn`` and not waiting for an approval,
    in the order of the model's last reply (in ``messages``, the conversation); ``ctx``
    is the turn's caller. A pending call that reply does not hold (it was compacted away)
    cannot be rebuilt, so it is interrupted. ``explain`` may say better than
    :data:`INTERRUPTED_REASON` why a call whose tool may act again is not run again (a
    sync delegation: :mod:`.resume_delegations`); None keeps those words."""
    events: list[Event] = []
    rerun: list[ToolCall] = []
    asked, lost = _pending(turn, messages)
    rebuilt = {call.id for call in asked}
    waiting = set(turn.awaiting_approval)
    for call in [*asked, *lost]:
        if call.id in waiting:
            continue
        decided = _decide(gateway, ctx, turn, call, rebuilt=call.id in rebuilt)
        if explain is not None and decided.reason == INTERRUPTED_REASON:
            better = explain(call)
            if better:
                decided = msgspec.structs.replace(decided, reason=better)
        events.append(decided)
        if decided.decision == "rerun":
            rerun.append(call)
        else:
            events.extend(gateway.interrupted(ctx, call.id, call.name, decided.reason))
    return ResumedCalls(events=events, rerun=rerun)


def interrupt_delegated_calls(
    gateway: ToolGateway, ctx: CallerContext, turn: TurnState, messages: Sequence[ChatMessage]
) -> list[Event]:
    """The events that end the calls in flight in a worker's delegated turn a restart
    found unfinished: the turn is not resumed (its link records the delegation as
    interrupted and tells the source), so none of its calls runs again. Each call not
    waiting for an approval gets its ``interrupted`` decision, then the event ending it;
    calls waiting for an approval never ran and are only ended."""
    asked, lost = _pending(turn, messages)
    rebuilt = {call.id for call in asked}
    waiting = set(turn.awaiting_approval)
    events: list[Event] = []
    for call in [*asked, *lost]:
        if call.id not in waiting:
            decided = _decide(
                gateway, ctx, turn, call, rebuilt=call.id in rebuilt, forced=DELEGATED_REASON
            )
            events.append(decided)
        events.extend(gateway.interrupted(ctx, call.id, call.name, DELEGATED_REASON))
    return events


def _pending(
    turn: TurnState, messages: Sequence[ChatMessage]
) -> tuple[list[ToolCall], list[ToolCall]]:
    """The calls pending in ``turn``: those the model's last reply holds (in its order),
    and those it no longer holds (compacted away: only their id and tool are known)."""
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    asked = [c for c in (last.tool_calls if last is not None else []) if c.id in turn.pending_calls]
    rebuilt = {call.id for call in asked}
    lost = [
        ToolCall(id=call_id, name=name, arguments="")
        for call_id, name in turn.pending_calls.items()
        if call_id not in rebuilt
    ]
    return asked, lost


def _decide(
    gateway: ToolGateway,
    ctx: CallerContext,
    turn: TurnState,
    call: ToolCall,
    *,
    rebuilt: bool,
    forced: str = "",
) -> ToolCallResumeDecided:
    effects: SideEffects = "external"  # unknown: nobody vouches for a second run
    if rebuilt and isinstance(gateway, SideEffectsGateway):
        effects = gateway.side_effects(call)
    attempt = turn.reruns.get(call.id, 0) + 1
    reason = ""
    if forced:
        reason = forced
    elif not rebuilt:
        reason = (
            "interrupted by a restart; the reply that asked for it is no longer in the "
            "conversation, so it cannot be run again"
        )
    elif not may_run_again(effects):
        reason = INTERRUPTED_REASON
    elif REDACTED in call.arguments:
        reason = (
            "interrupted by a restart; its arguments held a secret, which is never stored, "
            "so it cannot be run again"
        )
    elif attempt > MAX_RERUNS:
        reason = f"interrupted by a restart again; it was already run again {MAX_RERUNS} times"
    return ToolCallResumeDecided(
        call_id=call.id,
        tool=call.name,
        decision="interrupted" if reason else "rerun",
        side_effects=effects,
        idempotency_key=idempotency_key(ctx.agent, ctx.session_key, ctx.correlation_id, call.id),
        reason=reason or f"its tool declares {effects} side effects: run again with the same key",
        attempt=0 if reason else attempt,
        agent=ctx.agent,
        session_key=ctx.session_key,
    )
