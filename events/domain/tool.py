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

Every decided call records its verdict: ``tool.call_refused`` the step, the rule and the
``policy_digest`` (``tools.policy_digest``) of the effective policy; ``tool.call_started``
the same for the step that let it run (and ``approved_by`` for a person's answer);
``tool.call_requested`` the ``facts`` the steps read, so the call can be decided again
under another policy (``clawlog audit --what-if``).

``tool.allowlist_changed`` records allow-always answers and operator edits: folding it
(``tools.approvals.ApprovalState``) rebuilds an agent's approvals allowlist after a restart.

``tool.call_resume_decided`` records what a restart did with a call in flight: run it
again with the same idempotency key (``tool.call_requested`` … ``tool.call_started``
follow again for the same ``call_id``) or record it as interrupted (``tool.call_failed``).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ..base import Event

__all__ = [
    "EVENTS",
    "TOOL_EVENTS",
    "AllowedStep",
    "AllowlistMatch",
    "ApprovalDecision",
    "ApprovalOutcome",
    "CallFacts",
    "LoopPattern",
    "LoopWarningLevel",
    "RefusalStep",
    "ResumeDecision",
    "SideEffects",
    "ToolAllowlistChanged",
    "ToolApprovalDecided",
    "ToolApprovalRequested",
    "ToolCallCompleted",
    "ToolCallFailed",
    "ToolCallRefused",
    "ToolCallRequested",
    "ToolCallResumeDecided",
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
#: The step whose verdict let a call run: ``policy`` (nothing later had a say: no
#: approval was needed), or ``approval`` (an allowlist entry, a safe bin, ask=off, or a
#: person's answer). ``""`` in calls recorded before verdicts were.
AllowedStep = Literal["", "policy", "approval"]
#: What running a tool again does (``tools.side_effects``). none: nothing (it only reads);
#: idempotent: nothing more than the first run, given the same idempotency key;
#: external: it may act again (the default: the safe choice).
SideEffects = Literal["none", "idempotent", "external"]
#: What a restart did with a call in flight: run it again (same key), or record it as
#: interrupted.
ResumeDecision = Literal["rerun", "interrupted"]


class CallFacts(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the deciding steps read besides the configuration and the arguments, as the
    pipeline saw it: with the scrubbed arguments, enough to decide the call again under
    another policy (``clawlog audit --what-if``, ``tools.what_if``). Only the values that
    differ from the defaults are stored."""

    #: The session's model provider (``byProvider`` sections).
    provider: str = ""
    #: The sender was the owner (owner-only tools).
    is_owner: bool = False
    #: The deepest a subagent may be (at it, the leaf deny list applies).
    max_depth: int = 1
    #: The chat, for the chat-group allow lists (``group`` chats only).
    peer_kind: Literal["direct", "group"] = "direct"
    channel: str = ""
    chat_id: str = ""
    #: The per-request allow list; None: no restriction.
    request_allow: list[str] | None = None
    #: The tool's policy group and its own owner-only flag.
    group: str = ""
    owner_only: bool = False
    #: The tool always waits for a person (unless allowlisted); these arguments always do
    #: (``requires_approval_for``: never auto-approved).
    requires_approval: bool = False
    dangerous: bool = False
    #: The shell command a tool builds from its arguments (a custom tool's rendered
    #: command), scrubbed; None for every other tool.
    rendered_command: str | None = None
    #: Scrubbing changed the arguments: a step that reads them cannot be decided again.
    arguments_redacted: bool = False
    #: The arguments passed validation.
    valid: bool = True


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
    #: What the deciding steps read (None: an unknown tool, or a call recorded before
    #: facts were).
    facts: CallFacts | None = None


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
    #: The effective policy that decided (``tools.policy_digest``); "" before verdicts.
    policy_digest: str = ""


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
    #: The verdict that let it run: the deciding step, its rule, who approved it (a
    #: person's answer) and the digest of the effective policy (``tools.policy_digest``).
    step: AllowedStep = ""
    rule: str = ""
    approved_by: str = ""
    policy_digest: str = ""
    #: The key the tool runs with (``ToolContext.idempotency_key``): a re-run after a
    #: restart records the same one.
    idempotency_key: str = ""


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


class ToolCallResumeDecided(Event, frozen=True, tag="tool.call_resume_decided"):
    """A restart found the call in flight (started, or not yet recorded as started).

    ``rerun``: its tool is side-effect free or idempotent, so it runs again with the same
    ``idempotency_key`` (its deciding steps and ``tool.call_started`` follow).
    ``interrupted``: it may have had its effect; ``tool.call_failed`` (interrupted) follows
    and the model is told. Appended before either."""

    call_id: str
    tool: str
    decision: ResumeDecision
    #: What the tool declared for these arguments ("external" when it is gone).
    side_effects: SideEffects = "external"
    #: The key the call ran with, and runs again with (``ToolContext.idempotency_key``).
    idempotency_key: str = ""
    #: Why, in a few words (for audits).
    reason: str = ""
    #: The how-many-th re-run this is (1 for the first); 0 for ``interrupted``.
    attempt: int = 0
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
    | ToolCallResumeDecided
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
    ToolCallResumeDecided,
)
#: The name :func:`events.domain.all_event_classes` reads.
EVENTS = TOOL_EVENTS
