"""Tool calls, as the pipeline decides and runs them (DESIGN "The tool pipeline").

Every event names its ``call_id`` (the model's tool-call id) and ``tool`` and, where a
session made the call, its ``agent`` and ``session_key``. Arguments and results are
**already scrubbed** when an event is built (:mod:`tools.scrub`): no secret reaches the
log. The owner of the calling session's stream appends them; the pipeline only builds
them. One call leaves, in order::

    tool.call_requested
    ├── tool.call_refused                                   (stopped before it ran)
    └── [tool.loop_warning] [tool.approval_requested → tool.approval_decided]
        ├── tool.call_refused                               (denied, timed out)
        └── tool.call_started → tool.call_completed | tool.call_failed

``tool.allowlist_changed`` records allow-always answers and operator edits: folding it
(``tools.approvals.ApprovalState``) rebuilds an agent's approvals allowlist after a restart.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ..base import Event

__all__ = [
    "EVENTS",
    "TOOL_EVENTS",
    "AllowlistMatch",
    "ApprovalDecision",
    "ApprovalOutcome",
    "LoopPattern",
    "LoopWarningLevel",
    "RefusalStep",
    "ToolAllowlistChanged",
    "ToolApprovalDecided",
    "ToolApprovalRequested",
    "ToolCallCompleted",
    "ToolCallFailed",
    "ToolCallRefused",
    "ToolCallRequested",
    "ToolCallStarted",
    "ToolDomain",
    "ToolEvent",
    "ToolLoopWarning",
]

#: The pipeline step that refused a call.
RefusalStep = Literal["resolve", "policy", "validation", "rate_limit", "loop_detection", "approval"]
#: A person's answer to an approval request.
ApprovalDecision = Literal["allow-once", "allow-always", "deny"]
#: How an approval request ended: an answer, or ``timeout`` (which counts as deny).
ApprovalOutcome = Literal[ApprovalDecision, "timeout"]
#: orchestrator: runs in the clawlog process; container: meant for the Docker sandbox.
ToolDomain = Literal["orchestrator", "container"]
#: A repetition the loop detector recognises.
LoopPattern = Literal["generic_repeat", "poll_no_progress", "ping_pong"]
#: The level a loop warning is recorded at: only warnings are (a loop past the critical
#: threshold refuses the call, as ``tool.call_refused``), always with the default.
LoopWarningLevel = Literal["warn"]
#: How an allowlist pattern matches a call's subject. exact: equal to the pattern (what
#: allow-always adds); glob: fnmatch (operator entries such as ``git status*``).
AllowlistMatch = Literal["exact", "glob"]


class ToolCallRequested(Event, frozen=True, tag="tool.call_requested"):
    call_id: str
    tool: str
    #: The arguments the model sent, scrubbed.
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    #: The raw argument text when it was not a JSON object (bad JSON from the model).
    raw_arguments: str = ""
    agent: str = ""
    session_key: str = ""
    user: str = ""
    depth: int = 0


class ToolCallRefused(Event, frozen=True, tag="tool.call_refused"):
    """The pipeline stopped the call at ``step``; ``for_llm`` is what the model was told."""

    call_id: str
    tool: str
    step: RefusalStep
    #: Why, in a few words (for audits); ``rule`` names the configuration that decided.
    reason: str
    #: A ``tools.ErrorKind`` value: invalid_parameters, not_authorized, rate_limited,
    #: loop_detected. ``str``, as in ``tool.call_failed``: the kinds are open.
    error_kind: str = "not_authorized"
    #: Seconds after which the same call may pass (rate limits).
    retry_after: float | None = None
    for_llm: str = ""
    agent: str = ""
    session_key: str = ""
    rule: str = ""


class ToolApprovalRequested(Event, frozen=True, tag="tool.approval_requested"):
    """The call waits for a person. Enough is kept to resume the wait after a restart."""

    call_id: str
    tool: str
    reason: str = ""
    #: One line for the person deciding (scrubbed): the tool and its arguments.
    summary: str = ""
    timeout_s: float = 120.0
    agent: str = ""
    session_key: str = ""
    user: str = ""
    #: The validated arguments, scrubbed.
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    #: True when scrubbing changed the arguments: they cannot be rebuilt from the log.
    arguments_redacted: bool = False
    #: What an allow-always answer adds to the allowlist (scrubbed).
    pattern: str = ""
    #: False when allow-always is not offered (never-auto-approve arguments).
    allow_always: bool = True
    #: Wall-clock seconds since the epoch after which the request counts as denied.
    expires_at: float = 0.0


class ToolApprovalDecided(Event, frozen=True, tag="tool.approval_decided"):
    call_id: str
    tool: str
    decision: ApprovalOutcome
    by: str = ""
    agent: str = ""
    session_key: str = ""


class ToolAllowlistChanged(Event, frozen=True, tag="tool.allowlist_changed"):
    """``pattern`` was added to (or removed from) ``agent``'s approvals allowlist for
    ``tool``: by an allow-always answer (``call_id`` set) or by an operator."""

    tool: str
    pattern: str
    added: bool = True
    by: str = ""
    agent: str = ""
    match: AllowlistMatch = "exact"
    call_id: str = ""


class ToolCallStarted(Event, frozen=True, tag="tool.call_started"):
    call_id: str
    tool: str
    domain: ToolDomain = "orchestrator"
    agent: str = ""
    session_key: str = ""
    timeout_s: float = 0.0


class ToolCallCompleted(Event, frozen=True, tag="tool.call_completed"):
    """The call ran. ``for_llm`` is what the model read (scrubbed, truncated)."""

    call_id: str
    tool: str
    for_llm: str = ""
    for_user: str = ""
    is_error: bool = False
    truncated: bool = False
    duration_ms: float = 0.0
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    agent: str = ""
    session_key: str = ""


class ToolCallFailed(Event, frozen=True, tag="tool.call_failed"):
    """The call ran and failed, or never finished. The model read ``for_llm`` if set,
    else ``message`` (the pipeline writes ``message`` only)."""

    call_id: str
    tool: str
    #: A ``tools.ErrorKind`` value (execution_failed, timeout, external_service, sandbox,
    #: interrupted...) or a tool's own kind: an open set.
    error_kind: str
    message: str
    duration_ms: float = 0.0
    truncated: bool = False
    for_llm: str = ""
    agent: str = ""
    session_key: str = ""
    details: dict[str, Any] = msgspec.field(default_factory=dict)


class ToolLoopWarning(Event, frozen=True, tag="tool.loop_warning"):
    """A loop pattern crossed the warning threshold; the call still ran, with ``message``
    put before its result."""

    call_id: str
    tool: str
    pattern: LoopPattern
    count: int
    level: LoopWarningLevel = "warn"
    message: str = ""
    agent: str = ""
    session_key: str = ""


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
TOOL_EVENTS: tuple[type[Event], ...] = (
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
#: The name :func:`events.domain.all_event_classes` reads.
EVENTS = TOOL_EVENTS
