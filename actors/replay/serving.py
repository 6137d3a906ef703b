"""What a re-run is served from the log: the recorded model replies and tool results.

:class:`ReplayModel` answers each model request of a turn with the reply recorded for the
same iteration, and notes where the request it got differs from the recorded one (the
conversation, the tools offered, the system prompt). :class:`ReplayGateway` keeps the
real deciding steps of the tool pipeline (policy, validation, rate limits, loop
detection, approvals) but never executes a tool: a call that gets through is answered
with the result recorded for it, and a pending approval with the recorded decision.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from clawlog.events import Event
from clawlog.events.domain.session import ChatMessage, ModelFailed, ToolCall
from clawlog.events.domain.tool import ApprovalOutcome, ToolCallFailed
from clawlog.tools.side_effects import SideEffects

from .. import errors as model_errors
from ..agents.gateway import CallerContext, CallResult, CallStep, ToolGateway
from ..errors import ReplyNotRecorded
from ..providers.base import ContentPart, ModelReply, ModelRequest, ToolSpec
from .recording import RecordedCall, RecordedIteration, RecordedTurn

__all__ = [
    "REPLAY_APPROVER",
    "ContextNote",
    "ContextPart",
    "RecordedTool",
    "ReplayGateway",
    "ReplayModel",
]

#: The part of a model request a :class:`ContextNote` is about.
ContextPart = Literal["messages", "tools", "system_prompt"]

#: Who answers approvals in a re-run (shows in ``tool.approval_decided.by``).
REPLAY_APPROVER = "clawlog-replay"

_FAILURES: dict[str, type[model_errors.ModelError]] = {
    cls.kind: cls
    for cls in (
        model_errors.ModelRateLimited,
        model_errors.ModelServerError,
        model_errors.ModelTimeout,
        model_errors.ModelUnavailable,
        model_errors.ModelAuthError,
        model_errors.ModelBadRequest,
        model_errors.MalformedReply,
        model_errors.ScriptExhausted,
        model_errors.ModelStreamCut,
    )
}


class ContextNote(msgspec.Struct, frozen=True, kw_only=True):
    """A model request of the re-run that differs from the recorded one. The served reply
    cannot show what a model would have answered to it: a note, not a divergence."""

    turn_id: str
    iteration: int
    #: Position of the recorded ``session.model_requested``.
    position: int
    #: messages: the conversation sent (``recorded`` / ``now``: the first message that
    #: differs); tools: the tools offered (``recorded``: the list, ``now``: ``-gone
    #: +added``); system_prompt: the digests.
    what: ContextPart
    recorded: str
    now: str


class ReplayModel:
    """Serves the recorded replies of the turn started with :meth:`start_turn`, in order."""

    def __init__(self, turns: Sequence[RecordedTurn], *, name: str, provider: str) -> None:
        self._name, self._provider = name, provider
        self._turns = {turn.turn_id: turn for turn in turns}
        self._lock = threading.Lock()
        self._turn: RecordedTurn | None = None
        self._served = 0
        #: The messages of the last request compared, the recorded ones, and how many of
        #: their first messages were equal: see :meth:`_messages_difference`.
        self._compared: tuple[Sequence[ChatMessage], Sequence[ChatMessage], int] = ((), (), 0)
        #: Where requests differed from the recording (the first of each kind).
        self.notes: list[ContextNote] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def provider(self) -> str:
        return self._provider

    def check_part(self, part: ContentPart) -> None:
        """A recorded turn's parts were taken when it was recorded: every kind goes."""

    def start_turn(self, turn_id: str) -> None:
        with self._lock:
            self._turn, self._served = self._turns.get(turn_id), 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        with self._lock:
            turn, index = self._turn, self._served
            self._served += 1
        if turn is None or index >= len(turn.iterations):
            raise ReplyNotRecorded(
                f"replay: model request {index + 1} of this turn was never recorded "
                f"(the recording has {len(turn.iterations) if turn else 0})"
            )
        iteration = turn.iterations[index]
        self._compare(turn.turn_id, iteration, request)
        if iteration.failure is not None:
            raise _model_error(iteration.failure)
        if iteration.reply is None:
            raise ReplyNotRecorded("replay: the recorded request got no reply (turn cut short)")
        recorded = iteration.reply
        return ModelReply(
            text=recorded.text,
            tool_calls=list(recorded.tool_calls),
            usage=recorded.usage,
            stop_reason=recorded.stop_reason,
            model=self._name,
        )

    def _compare(self, turn_id: str, iteration: RecordedIteration, request: ModelRequest) -> None:
        recorded = iteration.request
        found: list[tuple[ContextPart, str, str]] = []
        difference = self._messages_difference(iteration.messages, request.messages)
        if difference is not None:
            found.append(("messages", *difference))
        offered = [spec.name for spec in request.tools]
        if offered != recorded.tools:
            found.append(("tools", ", ".join(recorded.tools), _names_diff(recorded.tools, offered)))
        digest = hashlib.sha256(request.system.encode()).hexdigest()[:16]
        if recorded.system_prompt_digest and digest != recorded.system_prompt_digest:
            found.append(("system_prompt", recorded.system_prompt_digest, digest))
        with self._lock:
            seen = {n.what for n in self.notes}
            for what, then, now in found:
                if what not in seen:
                    self.notes.append(
                        ContextNote(
                            turn_id=turn_id,
                            iteration=recorded.iteration,
                            position=iteration.position,
                            what=what,
                            recorded=then,
                            now=now,
                        )
                    )

    def _messages_difference(
        self, recorded: Sequence[ChatMessage], now: Sequence[ChatMessage]
    ) -> tuple[str, str] | None:
        """The first message where the request differs from the recorded one. A request
        repeats the conversation so far, so comparing each in full made a long re-run
        quadratic (a fifth of its time at 500 turns): when both lists still begin with
        the messages the last comparison found equal (a list comparison in C, mostly
        identity checks), only the messages after those are compared one by one."""
        recorded_before, now_before, equal = self._compared
        start = 0
        if (
            equal
            and len(recorded) >= equal
            and len(now) >= equal
            and recorded[:equal] == recorded_before[:equal]
            and now[:equal] == now_before[:equal]
        ):
            start = equal
        difference, equal = _first_difference(recorded, now, start)
        self._compared = (recorded, now, equal)
        return difference


class RecordedTool:
    """A stand-in for a tool the recording offered but the re-run was not given: its
    name is all that is known, so it takes any JSON object and is never executed. It
    asks for approval when the recorded calls of it did."""

    description = "A tool of the recorded session (re-run stand-in; never executed)."
    parameters: dict[str, Any] = {"type": "object"}
    group = ""
    timeout = 60.0
    domain = "orchestrator"
    owner_only = False
    requires_sanitization = False
    requires_approval = False

    def __init__(self, name: str, *, requires_approval: bool = False) -> None:
        self.name = name
        self.requires_approval = requires_approval

    def requires_approval_for(self, args: Any) -> bool:
        return False

    async def execute(self, ctx: Any, args: dict[str, Any]) -> Any:
        raise ReplyNotRecorded(f"replay: the stand-in for {self.name!r} never executes")


class ReplayGateway:
    """A :class:`ToolGateway` deciding like ``inner`` and running nothing."""

    def __init__(self, inner: ToolGateway, turns: Sequence[RecordedTurn]) -> None:
        self.inner = inner
        self._calls: dict[tuple[str, str], RecordedCall] = {
            (turn.turn_id, call.call_id): call
            for turn in turns
            for iteration in turn.iterations
            for call in iteration.calls
        }

    def recorded(self, turn_id: str, call_id: str, name: str) -> RecordedCall | None:
        found = self._calls.get((turn_id, call_id))
        return found if found is not None and found.name == name else None

    def specs(self, ctx: CallerContext) -> list[ToolSpec]:
        return self.inner.specs(ctx)

    def side_effects(self, call: ToolCall) -> SideEffects:
        """As the recording's tools declare (nothing runs here, but the session holds the
        steps of calls that only read as it did when recording: fewer appends)."""
        side_effects = getattr(self.inner, "side_effects", None)
        return "external" if side_effects is None else side_effects(call)

    def begin(self, ctx: CallerContext, call: ToolCall) -> CallStep:
        step = self.inner.begin(ctx, call)
        if step.outcome != "approval":
            return step
        recorded = self.recorded(ctx.correlation_id, call.id, call.name)
        decision = (recorded.approval if recorded is not None else None) or "deny"
        decided = self.inner.decide(ctx, step.ticket, decision, REPLAY_APPROVER)
        return CallStep(
            events=[*step.events, *decided.events], outcome=decided.outcome, ticket=decided.ticket
        )

    async def run(self, ticket: Any) -> CallResult:
        plan = ticket
        ctx = plan.ctx
        recorded = self.recorded(ctx.correlation_id, plan.call_id, plan.name)
        result = recorded.result if recorded is not None else None
        if result is None:
            result = ToolCallFailed(
                call_id=plan.call_id,
                tool=plan.name,
                error_kind="not_recorded",
                message=f"replay: no result is recorded for this {plan.name} call; it was not run",
                agent=ctx.agent,
                session_key=ctx.session_key,
            )
        pipeline = getattr(self.inner, "pipeline", None)
        if pipeline is not None:  # what ToolPipeline.execute does after a real run
            text = getattr(result, "for_llm", "") or getattr(result, "message", "")
            pipeline.loop_detector.record_result(ctx.session_id, plan.call_id, text)
        return CallResult(events=[result])

    def decide(
        self, ctx: CallerContext, ticket: Any, decision: ApprovalOutcome, by: str
    ) -> CallStep:
        return self.inner.decide(ctx, ticket, decision, by)

    def interrupted(self, ctx: CallerContext, call_id: str, name: str, reason: str) -> list[Event]:
        return self.inner.interrupted(ctx, call_id, name, reason)

    def read_event(
        self, event: Event, position: int | None = None
    ) -> tuple[str, ChatMessage | None, str] | None:
        return self.inner.read_event(event, position)

    def scrub(self, text: str) -> str:
        return self.inner.scrub(text)


def _model_error(failure: ModelFailed) -> model_errors.ModelError:
    cls = _FAILURES.get(failure.kind, model_errors.ModelError)
    return cls(failure.message)


def _first_difference(
    recorded: Sequence[ChatMessage], now: Sequence[ChatMessage], start: int = 0
) -> tuple[tuple[str, str] | None, int]:
    """The first difference from message ``start`` on (the ones before are known equal),
    and how many leading messages are equal."""
    for index in range(start, min(len(recorded), len(now))):
        then, current = recorded[index], now[index]
        if then != current:
            return (f"#{index + 1} {_brief(then)}", f"#{index + 1} {_brief(current)}"), index
    equal = min(len(recorded), len(now))
    if len(recorded) != len(now):
        return (f"{len(recorded)} messages", f"{len(now)} messages"), equal
    return None, equal


def _brief(message: ChatMessage) -> str:
    calls = ", ".join(c.name for c in message.tool_calls)
    text = message.content[:160] + ("…" if len(message.content) > 160 else "")
    return f"{message.role}: {text}" + (f" [{calls}]" if calls else "")


def _names_diff(recorded: list[str], now: list[str]) -> str:
    gone = [n for n in recorded if n not in now]
    added = [n for n in now if n not in recorded]
    parts = [f"-{n}" for n in gone] + [f"+{n}" for n in added]
    return " ".join(parts) or "same tools, other order"
