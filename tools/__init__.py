"""The tool system: Tool protocol, registry, policy, approvals, scrubbing, rate limits,
loop detection and the pipeline that runs every call and describes it as events.

    registry = ToolRegistry(builtin_tools())
    pipeline = ToolPipeline(registry)
    ctx = ToolContext(agent="main", session_key="s1")
    decision = pipeline.begin(ctx, "call-1", "echo", {"message": "hi"})  # append its events
    if isinstance(decision, Ready):  # else Refused (read .result) or NeedsApproval
        outcome = await pipeline.execute(decision.plan)                  # append these too

or, deciding, asking and recording in one coroutine (for embedders, tests, benchmarks)::

    sink = RecordingSink()
    result = await run_tool_call(pipeline, ctx, "echo", {"message": "hi"}, sink)

``tools`` imports ``events`` and never ``actors``; it never writes to the event store.
"""

from clawlog.events.domain.tool import ApprovalDecision

from .approvals import AllowlistEntry, ApprovalConfig
from .base import BaseTool, FunctionTool, Tool, ToolDomain
from .builtins import builtin_tools
from .context import ToolContext
from .decisions import ApprovalRequest, Decision, NeedsApproval, Outcome, Ready, Refused, ToolPlan
from .deny import match_deny_pattern
from .driver import EventSink, RecordingSink, StoreSink, run_tool_call
from .errors import (
    ApprovalError,
    ArgumentError,
    DuplicateTool,
    ExecutionFailed,
    ExternalServiceError,
    InvalidParameters,
    InvalidSchema,
    NotAuthorized,
    PolicyError,
    PolicyFileError,
    ProtectedName,
    RateLimited,
    RegistryError,
    SandboxError,
    ToolCallError,
    ToolError,
    ToolTimeout,
    UnknownTool,
)
from .groups import PROFILES, TOOL_GROUPS
from .loops import LoopDetectionConfig
from .pipeline import ToolPipeline
from .policy import POLICY_STEPS, policy_digest
from .policy_config import PolicyConfig, ProviderToolPolicy, ToolPolicy
from .policy_file import PolicyFile, load_policy_file
from .ratelimit import SUGGESTED_USER_TOOL_WINDOWS, RateLimitConfig, Window
from .registry import PROTECTED_NAMES, ToolDefinition, ToolRegistry
from .result import ErrorKind, ToolResult
from .scrub import Scrubber, ScrubPattern
from .side_effects import SIDE_EFFECTS, SideEffects, idempotency_key, side_effects_of
from .what_if import CallChange, PolicyWhatIf, WhatIfReport, WhatIfTotals, what_if

__all__ = [
    "POLICY_STEPS",
    "PROFILES",
    "PROTECTED_NAMES",
    "SIDE_EFFECTS",
    "SUGGESTED_USER_TOOL_WINDOWS",
    "TOOL_GROUPS",
    "AllowlistEntry",
    "ApprovalConfig",
    "ApprovalDecision",
    "ApprovalError",
    "ApprovalRequest",
    "ArgumentError",
    "BaseTool",
    "CallChange",
    "Decision",
    "DuplicateTool",
    "ErrorKind",
    "EventSink",
    "ExecutionFailed",
    "ExternalServiceError",
    "FunctionTool",
    "InvalidParameters",
    "InvalidSchema",
    "LoopDetectionConfig",
    "NeedsApproval",
    "NotAuthorized",
    "Outcome",
    "PolicyConfig",
    "PolicyError",
    "PolicyFile",
    "PolicyFileError",
    "PolicyWhatIf",
    "ProtectedName",
    "ProviderToolPolicy",
    "RateLimitConfig",
    "RateLimited",
    "Ready",
    "RecordingSink",
    "Refused",
    "RegistryError",
    "SandboxError",
    "ScrubPattern",
    "Scrubber",
    "SideEffects",
    "StoreSink",
    "Tool",
    "ToolCallError",
    "ToolContext",
    "ToolDefinition",
    "ToolDomain",
    "ToolError",
    "ToolPipeline",
    "ToolPlan",
    "ToolPolicy",
    "ToolRegistry",
    "ToolResult",
    "ToolTimeout",
    "UnknownTool",
    "WhatIfReport",
    "WhatIfTotals",
    "Window",
    "builtin_tools",
    "idempotency_key",
    "load_policy_file",
    "match_deny_pattern",
    "policy_digest",
    "run_tool_call",
    "side_effects_of",
    "what_if",
]
