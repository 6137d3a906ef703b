"""What the pipeline's steps hand back to the caller.

:meth:`ToolPipeline.begin` and :meth:`ToolPipeline.decide_approval` return a
:data:`Decision`: the events to append (in order, before anything else happens) and one
of :class:`Refused`, :class:`NeedsApproval` or :class:`Ready`.
:meth:`ToolPipeline.execute` returns an :class:`Outcome`. These are in-memory values for
the owning actor (a plan holds the raw arguments and the tool object); only their events
go to the log.
"""

from __future__ import annotations

from typing import Any

import msgspec

from clawlog.events import Event
from clawlog.events.domain.tool import RefusalStep

from .base import Tool
from .context import ToolContext
from .result import ToolResult

__all__ = [
    "ApprovalRequest",
    "Decision",
    "NeedsApproval",
    "Outcome",
    "Ready",
    "Refused",
    "ToolPlan",
]


class ToolPlan(msgspec.Struct, frozen=True, kw_only=True):
    """A call that passed every deciding step and may run."""

    call_id: str
    ctx: ToolContext
    tool: Tool
    #: Validated arguments, defaults filled in, NOT scrubbed: never log them.
    args: dict[str, Any]
    #: A loop warning to put before the result the model reads ("" for none).
    warning: str = ""

    @property
    def name(self) -> str:
        return self.tool.name


class ApprovalRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A call waiting for a person: hand it back to ``decide_approval`` with the answer.

    Rebuilt after a restart by :meth:`ToolPipeline.restore_approval`.
    """

    plan: ToolPlan
    reason: str
    #: What allow-always adds to the allowlist.
    pattern: str
    allow_always: bool = True
    timeout_s: float = 120.0
    #: Wall-clock seconds since the epoch; after it the request counts as denied.
    expires_at: float = 0.0
    #: The arguments in the log were redacted: they cannot be rebuilt after a restart.
    arguments_lost: bool = False

    @property
    def call_id(self) -> str:
        return self.plan.call_id


class Refused(msgspec.Struct, frozen=True, kw_only=True):
    """The call will not run. ``result`` tells the model why, in words it can act on."""

    events: list[Event]
    result: ToolResult
    step: RefusalStep


class NeedsApproval(msgspec.Struct, frozen=True, kw_only=True):
    """Append ``events``, ask a person, then call ``decide_approval(request, ...)``;
    after ``request.timeout_s`` without an answer, decide ``"timeout"``."""

    events: list[Event]
    request: ApprovalRequest


class Ready(msgspec.Struct, frozen=True, kw_only=True):
    """Append ``events`` (they end with ``tool.call_started``), then ``execute(plan)``."""

    events: list[Event]
    plan: ToolPlan


Decision = Refused | NeedsApproval | Ready


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """The executed call: the scrubbed, truncated result and the event that records it
    (``tool.call_completed`` or ``tool.call_failed``)."""

    result: ToolResult
    events: list[Event]
    duration_ms: float
