"""Tool calls, as the pipeline decides and runs them (DESIGN "The tool pipeline").

Per call: ``tool.call_requested``, then ``tool.call_refused`` (step and reason), or
``tool.approval_requested`` → ``tool.approval_decided``, then ``tool.call_started`` →
``tool.call_completed`` | ``tool.call_failed``. Arguments and results are scrubbed
before they are recorded: no secret reaches the log.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..base import Event

__all__ = [
    "EVENTS",
    "ToolAllowlistChanged",
    "ToolApprovalDecided",
    "ToolApprovalRequested",
    "ToolCallCompleted",
    "ToolCallFailed",
    "ToolCallRefused",
    "ToolCallRequested",
    "ToolCallStarted",
    "ToolEvent",
    "ToolLoopWarning",
]


class ToolCallRequested(Event, tag="tool.call_requested"):
    call_id: str
    tool: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    #: The raw argument text when it was not a JSON object (bad JSON from the model).
    raw_arguments: str = ""
    agent: str = ""
    session_key: str = ""
    user: str = ""
    depth: int = 0


class ToolCallRefused(Event, tag="tool.call_refused"):
    """The pipeline stopped the call at ``step``; ``for_llm`` is what the model was told."""

    call_id: str
    tool: str
    #: resolve | policy | validation | rate_limit | loop | approval
    step: str
    reason: str
    #: invalid_parameters | not_authorized | rate_limited | execution_failed ...
    error_kind: str = "not_authorized"
    retry_after: float | None = None
    for_llm: str = ""


class ToolApprovalRequested(Event, tag="tool.approval_requested"):
    call_id: str
    tool: str
    reason: str = ""
    summary: str = ""
    timeout_s: float = 120.0


class ToolApprovalDecided(Event, tag="tool.approval_decided"):
    call_id: str
    tool: str
    #: allow-once | allow-always | deny | timeout
    decision: str
    by: str = ""


class ToolAllowlistChanged(Event, tag="tool.allowlist_changed"):
    """An allow-always decision added ``pattern`` to the agent's approval allowlist."""

    tool: str
    pattern: str
    added: bool = True
    by: str = ""


class ToolCallStarted(Event, tag="tool.call_started"):
    call_id: str
    tool: str
    domain: str = "orchestrator"


class ToolCallCompleted(Event, tag="tool.call_completed"):
    call_id: str
    tool: str
    for_llm: str = ""
    for_user: str = ""
    is_error: bool = False
    truncated: bool = False
    duration_ms: float = 0.0
    details: dict[str, Any] = msgspec.field(default_factory=dict)


class ToolCallFailed(Event, tag="tool.call_failed"):
    call_id: str
    tool: str
    #: execution_failed | timeout | external_service | sandbox | interrupted ...
    error_kind: str
    message: str
    duration_ms: float = 0.0
    truncated: bool = False
    for_llm: str = ""


class ToolLoopWarning(Event, tag="tool.loop_warning"):
    call_id: str
    tool: str
    #: generic_repeat | known_poll_no_progress | ping_pong
    pattern: str
    count: int
    level: str = "warn"


ToolEvent = (
    ToolCallRequested
    | ToolCallRefused
    | ToolApprovalRequested
    | ToolApprovalDecided
    | ToolAllowlistChanged
    | ToolCallStarted
    | ToolCallCompleted
    | ToolCallFailed
    | ToolLoopWarning
)
EVENTS = (
    ToolCallRequested,
    ToolCallRefused,
    ToolApprovalRequested,
    ToolApprovalDecided,
    ToolAllowlistChanged,
    ToolCallStarted,
    ToolCallCompleted,
    ToolCallFailed,
    ToolLoopWarning,
)
