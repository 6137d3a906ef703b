"""The seam between a Session and the tool system.

A Session never runs a tool itself: it asks its gateway to *begin* a call (the cheap
deciding steps, in the actor's thread), appends the events the gateway returns, and runs
only the execution on the I/O hub. The gateway is built over :mod:`tools` by
:mod:`actors.agents.pipeline_gateway`; tests may use any object with this shape.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

from clawlog.events import Event
from clawlog.events.domain.session import ChatMessage, ToolCall
from clawlog.events.domain.tool import ApprovalOutcome

from ..providers.base import ToolSpec

__all__ = ["CallResult", "CallStep", "CallerContext", "ToolGateway"]


class CallerContext(msgspec.Struct, frozen=True, kw_only=True):
    """Who is calling: the per-call values every tool sees (seed 000 §1)."""

    agent: str
    session_key: str
    channel: str = ""
    chat_id: str = ""
    peer_kind: str = "direct"
    user: str = ""
    depth: int = 0
    correlation_id: str = ""
    workspace: str | None = None
    provider: str = ""
    #: The stream of the session making the call.
    session_stream: str = ""
    #: Set for turns run by a quality gate or an evaluate loop: no gates on delegations.
    skip_quality_gates: bool = False
    #: The tool call being made, as the tools that drive actors see it ("" elsewhere).
    call_id: str = ""


class CallStep(msgspec.Struct, frozen=True, kw_only=True):
    """What begin/decide concluded: events to append, then refused | approval | ready."""

    events: list[Event]
    outcome: Literal["refused", "approval", "ready"]
    #: Opaque handle for ``run`` (ready) or ``decide`` (approval).
    ticket: Any = None
    #: Seconds to wait for an approval before it counts as denied.
    approval_timeout_s: float = 120.0


class CallResult(msgspec.Struct, frozen=True, kw_only=True):
    """What run concluded: the events of the executed call."""

    events: list[Event]


class ToolGateway(Protocol):
    def specs(self, ctx: CallerContext) -> list[ToolSpec]:
        """The tools this caller may use, as its model provider wants them."""
        ...

    def begin(self, ctx: CallerContext, call: ToolCall) -> CallStep: ...

    async def run(self, ticket: Any) -> CallResult:
        """Execute a ready call on the hub. Never raises: failures become events."""
        ...

    def decide(
        self, ctx: CallerContext, ticket: Any, decision: ApprovalOutcome, by: str
    ) -> CallStep:
        """Apply an approval decision: allow-once | allow-always | deny | timeout."""
        ...

    def interrupted(self, ctx: CallerContext, call_id: str, name: str, reason: str) -> list[Event]:
        """Events closing a call that will never finish (cancelled turn, restart)."""
        ...

    def read_event(
        self, event: Event, position: int | None = None
    ) -> tuple[str, ChatMessage | None, str] | None:
        """For a tool event: (call_id, the tool message it ends with or None, approval
        change "requested" | "decided" | ""). None for other events. ``position`` is the
        event's log position when the caller knows it (the span of the call it ends
        carries it)."""
        ...

    def scrub(self, text: str) -> str:
        """Remove secrets from text before it is recorded."""
        ...
