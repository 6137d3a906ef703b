"""The tool system: Tool protocol, registry, policy, approvals, scrubbing, rate limits,
loop detection and the pipeline that runs every call and describes it as events.

    registry = ToolRegistry(builtin_tools())
    pipeline = ToolPipeline(registry)
    decision = pipeline.begin(ctx, call_id, "echo", {"message": "hi"})  # append its events
    outcome = await pipeline.execute(decision.plan)                     # append these too

``tools`` imports ``events`` and never ``actors``; it never writes to the event store.
"""

from .approvals import (
    DECISIONS,
    AllowlistEntry,
    ApprovalConfig,
    ApprovalState,
    ApprovalVerdict,
    PendingApproval,
    evaluate_approval,
)
from .base import BaseTool, FunctionTool, Tool, ToolDomain
from .builtins import EchoTool, JsonTool, TimeTool, builtin_tools
from .context import ToolContext
from .decisions import (
    ApprovalRequest,
    Decision,
    NeedsApproval,
    Outcome,
    Ready,
    Refused,
    ToolPlan,
)
from .deny import match_deny_pattern
from .driver import (
    Approver,
    EventSink,
    RecordingSink,
    StoreSink,
    result_from_event,
    run_tool_call,
)
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
    ProtectedName,
    RateLimited,
    RegistryError,
    SandboxError,
    ToolCallError,
    ToolError,
    ToolTimeout,
    UnknownTool,
)
from .groups import LEAF_DENY, OWNER_ONLY_TOOLS, PROFILES, SUBAGENT_DENY, TOOL_GROUPS, groups_of
from .loops import LoopDetectionConfig, LoopDetector, LoopVerdict
from .pipeline import ToolPipeline
from .policy import STEPS as POLICY_STEPS
from .policy import PolicyEngine, PolicyExplanation, PolicyStepTrace
from .policy_config import PolicyConfig, ProviderToolPolicy, ToolPolicy
from .ratelimit import (
    DEFAULT_USER_TOOL_WINDOWS,
    RateLimitConfig,
    RateLimiter,
    RateLimitVerdict,
    Window,
)
from .registry import PROTECTED_NAMES, ToolDefinition, ToolRegistry
from .result import ErrorKind, ToolResult
from .schemas import compile_validator, normalize_schema
from .scrub import REDACTED, STATIC_PATTERNS, Scrubber, ScrubPattern

__all__ = [
    "DECISIONS",
    "DEFAULT_USER_TOOL_WINDOWS",
    "LEAF_DENY",
    "OWNER_ONLY_TOOLS",
    "POLICY_STEPS",
    "PROFILES",
    "PROTECTED_NAMES",
    "REDACTED",
    "STATIC_PATTERNS",
    "SUBAGENT_DENY",
    "TOOL_GROUPS",
    "AllowlistEntry",
    "ApprovalConfig",
    "ApprovalError",
    "ApprovalRequest",
    "ApprovalState",
    "ApprovalVerdict",
    "Approver",
    "ArgumentError",
    "BaseTool",
    "Decision",
    "DuplicateTool",
    "EchoTool",
    "ErrorKind",
    "EventSink",
    "ExecutionFailed",
    "ExternalServiceError",
    "FunctionTool",
    "InvalidParameters",
    "InvalidSchema",
    "JsonTool",
    "LoopDetectionConfig",
    "LoopDetector",
    "LoopVerdict",
    "NeedsApproval",
    "NotAuthorized",
    "Outcome",
    "PendingApproval",
    "PolicyConfig",
    "PolicyEngine",
    "PolicyError",
    "PolicyExplanation",
    "PolicyStepTrace",
    "ProtectedName",
    "ProviderToolPolicy",
    "RateLimitConfig",
    "RateLimitVerdict",
    "RateLimited",
    "RateLimiter",
    "Ready",
    "RecordingSink",
    "Refused",
    "RegistryError",
    "SandboxError",
    "ScrubPattern",
    "Scrubber",
    "StoreSink",
    "TimeTool",
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
    "Window",
    "builtin_tools",
    "compile_validator",
    "evaluate_approval",
    "groups_of",
    "match_deny_pattern",
    "normalize_schema",
    "result_from_event",
    "run_tool_call",
]
