"""The tool system: Tool protocol, registry, policy, approvals, scrubbing, rate limits,
loop detection and the pipeline that runs every call and describes it as events.

    registry = ToolRegistry(builtin_tools())
    pipeline = ToolPipeline(registry)
    decision = pipeline.begin(ctx, call_id, "echo", {"message": "hi"})  # append its events
    outcome = await pipeline.execute(decision.plan)                     # append these too

``tools`` imports ``events`` and never ``actors``; it never writes to the event store.
"""

from .approvals import AllowlistEntry, ApprovalConfig
from .base import BaseTool, FunctionTool, Tool, ToolDomain
from .builtins import builtin_tools
from .context import ToolContext
from .deny import match_deny_pattern
from .errors import (
    ApprovalError,
    ArgumentError,
    CommandDenied,
    CommandParseError,
    CommandTimedOut,
    DuplicateTool,
    EditRejected,
    ExecError,
    ExecutionFailed,
    ExternalServiceError,
    FileNotFound,
    FileTooLarge,
    InvalidParameters,
    InvalidSchema,
    NotAFile,
    NotAuthorized,
    OldStringNotFound,
    OldStringNotUnique,
    PatchRejected,
    PathDenied,
    PathRefused,
    PathTraversal,
    PolicyError,
    ProcessFinished,
    ProcessLimit,
    ProtectedName,
    RateLimited,
    RegistryError,
    SandboxClosed,
    SandboxError,
    SandboxFailure,
    SandboxRefused,
    SandboxUnavailable,
    SearchTimedOut,
    ToolCallError,
    ToolError,
    ToolTimeout,
    UnknownProcess,
    UnknownTool,
    VirtualStoreUnavailable,
    WorkspaceError,
)
from .groups import PROFILES, TOOL_GROUPS
from .loops import LoopDetectionConfig
from .pipeline import ToolPipeline
from .policy import STEPS as POLICY_STEPS
from .policy_config import PolicyConfig, ProviderToolPolicy, ToolPolicy
from .ratelimit import RateLimitConfig
from .registry import PROTECTED_NAMES, ToolDefinition, ToolRegistry
from .result import ErrorKind, ToolResult
from .scrub import Scrubber, ScrubPattern

__all__ = [
    "POLICY_STEPS",
    "PROFILES",
    "PROTECTED_NAMES",
    "TOOL_GROUPS",
    "AllowlistEntry",
    "ApprovalConfig",
    "ApprovalError",
    "ArgumentError",
    "BaseTool",
    "CommandDenied",
    "CommandParseError",
    "CommandTimedOut",
    "DuplicateTool",
    "EditRejected",
    "ErrorKind",
    "ExecError",
    "ExecutionFailed",
    "ExternalServiceError",
    "FileNotFound",
    "FileTooLarge",
    "FunctionTool",
    "InvalidParameters",
    "InvalidSchema",
    "LoopDetectionConfig",
    "NotAFile",
    "NotAuthorized",
    "OldStringNotFound",
    "OldStringNotUnique",
    "PatchRejected",
    "PathDenied",
    "PathRefused",
    "PathTraversal",
    "PolicyConfig",
    "PolicyError",
    "ProcessFinished",
    "ProcessLimit",
    "ProtectedName",
    "ProviderToolPolicy",
    "RateLimitConfig",
    "RateLimited",
    "RegistryError",
    "SandboxClosed",
    "SandboxError",
    "SandboxFailure",
    "SandboxRefused",
    "SandboxUnavailable",
    "ScrubPattern",
    "Scrubber",
    "SearchTimedOut",
    "Tool",
    "ToolCallError",
    "ToolContext",
    "ToolDefinition",
    "ToolDomain",
    "ToolError",
    "ToolPipeline",
    "ToolPolicy",
    "ToolRegistry",
    "ToolResult",
    "ToolTimeout",
    "UnknownProcess",
    "UnknownTool",
    "VirtualStoreUnavailable",
    "WorkspaceError",
    "builtin_tools",
    "match_deny_pattern",
]
