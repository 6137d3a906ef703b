"""Step-by-step comparison of a re-run turn with its recording: the first divergence.

Steps, in order: each model reply (which tools, with which arguments, or which final
text), then each call's outcome (ran, failed, refused at a step), then the turn's end.
"""

from __future__ import annotations

import functools
import json
from typing import Literal

import msgspec

from clawlog.events.domain.session import ModelReplied, TurnCancelled, TurnCompleted, TurnFailed
from clawlog.events.domain.tool import ToolCallCompleted, ToolCallFailed, ToolCallRefused

from .recording import RecordedCall, RecordedIteration, RecordedTurn

__all__ = ["Divergence", "DivergenceKind", "compare_turn"]

DivergenceKind = Literal[
    "tool_call", "arguments", "reply", "refusal", "outcome", "extra_step", "missing_step"
]


class Divergence(msgspec.Struct, frozen=True, kw_only=True):
    """Where the re-run first did something else than the recording."""

    #: tool_call: other tools (or tools instead of an answer) | arguments: same tools,
    #: other arguments | reply: another text (or a failure instead of a reply) |
    #: refusal: refused now, not then | outcome: ran now, refused then, refused at
    #: another step, or another end of the call or turn |
    #: extra_step: a step the recording does not have | missing_step: the reverse.
    kind: DivergenceKind
    #: 1-based turn of the session, and its id.
    turn: int
    turn_id: str
    #: The model iteration in the turn (0 for the turn's end).
    iteration: int = 0
    call_id: str = ""
    tool: str = ""
    #: Position in the source log of the recorded step that differs (or that the extra
    #: step follows).
    position: int
    recorded: str
    now: str


def compare_turn(number: int, recorded: RecordedTurn, now: RecordedTurn) -> Divergence | None:
    """The first divergence of ``now`` from ``recorded`` (turn ``number``), or None."""

    at = functools.partial(Divergence, turn=number, turn_id=recorded.turn_id)
    for index, then in enumerate(recorded.iterations):
        if then.reply is None and then.failure is None:
            return None  # the recording stops here (a crash or a cancel mid-call)
        if index >= len(now.iterations):
            return at(
                kind="missing_step",
                position=then.position,
                recorded=f"model request {index + 1}",
                now=f"the turn ended: {_end(now)}",
                iteration=index + 1,
            )
        found = _compare_reply(then, now.iterations[index])
        if found is not None:
            kind, before, after = found
            return at(
                kind=kind,
                position=then.reply_position,
                recorded=before,
                now=after,
                iteration=index + 1,
            )
        for call, current in zip(then.calls, now.iterations[index].calls, strict=True):
            if (call.outcome, call.asked) != (current.outcome, current.asked):
                return at(
                    kind="refusal" if current.refusal and not call.refusal else "outcome",
                    position=_outcome_position(call),
                    recorded=_describe(call),
                    now=_describe(current),
                    iteration=index + 1,
                    call_id=call.call_id,
                    tool=call.name,
                )
    if len(now.iterations) > len(recorded.iterations):
        if recorded.end is None or isinstance(recorded.end, TurnCancelled):
            return None  # the recording stopped before the turn finished
        extra = now.iterations[len(recorded.iterations)]
        return at(
            kind="extra_step",
            position=recorded.last_position,
            recorded=f"the turn ended: {_end(recorded)}",
            now=f"model request {extra.request.iteration}" + _failure(extra),
            iteration=extra.request.iteration,
        )
    if recorded.end is not None and _end(recorded) != _end(now):
        return at(
            kind="outcome", position=recorded.end_position, recorded=_end(recorded), now=_end(now)
        )
    return None


def _compare_reply(
    then: RecordedIteration, now: RecordedIteration
) -> tuple[DivergenceKind, str, str] | None:
    if then.failure is not None or now.failure is not None:
        if then.failure is not None and now.failure is not None:
            same = then.failure.kind == now.failure.kind
            return None if same else ("reply", _said(then), _said(now))
        kind: DivergenceKind = "reply" if not (now.reply and now.reply.tool_calls) else "tool_call"
        return kind, _said(then), _said(now)
    assert then.reply is not None and now.reply is not None
    if [c.name for c in then.calls] != [c.name for c in now.calls]:
        return "tool_call", _said(then), _said(now)
    for call, current in zip(then.calls, now.calls, strict=True):
        if _arguments(call.arguments) != _arguments(current.arguments):
            return "arguments", _call(call), _call(current)
    if then.reply.text != now.reply.text:
        return "reply", _said(then), _said(now)
    return None


def _arguments(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _said(iteration: RecordedIteration) -> str:
    if iteration.failure is not None:
        return f"model failed ({iteration.failure.kind}): {iteration.failure.message[:200]}"
    reply = iteration.reply
    assert isinstance(reply, ModelReplied)
    if iteration.calls:
        calls = ", ".join(_call(c) for c in iteration.calls)
        return (f"{_clip(reply.text)} " if reply.text else "") + calls
    return _clip(reply.text) or "(an empty reply)"


def _call(call: RecordedCall) -> str:
    return f"{call.name}({_clip(call.arguments, 200)})"


def _describe(call: RecordedCall) -> str:
    refused = call.refusal
    if refused is not None:
        text = f"{call.name} refused at {refused.step}: {refused.reason}"
    else:
        text = f"{call.name} {call.outcome}"
    if call.asked:
        return f"{text} (approval asked, answered {call.approval or 'never'})"
    return text


def _outcome_position(call: RecordedCall) -> int:
    for position, event in call.events:
        if isinstance(event, ToolCallRefused | ToolCallCompleted | ToolCallFailed):
            return position
    return call.position


def _end(turn: RecordedTurn) -> str:
    end = turn.end
    if isinstance(end, TurnCompleted):
        return "completed"
    if isinstance(end, TurnFailed):
        return f"failed ({end.reason})"
    return "cancelled" if end is not None else "unfinished"


def _failure(iteration: RecordedIteration) -> str:
    if iteration.failure is not None and iteration.failure.kind == "not_recorded":
        return ", which asked for a reply that was never recorded"
    return f": {_said(iteration)}" if iteration.reply or iteration.failure else ""


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
