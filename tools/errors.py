"""Errors of the tool system.

ToolError
 ├── ToolCallError            raised by a tool's execute(); carries an ErrorKind
 │    ├── InvalidParameters
 │    ├── ExecutionFailed
 │    ├── ToolTimeout
 │    ├── NotAuthorized
 │    ├── RateLimited
 │    ├── ExternalServiceError
 │    └── SandboxError
 ├── RegistryError            registering or removing a tool
 │    ├── ProtectedName       runtime registration tried to shadow a protected name
 │    ├── DuplicateTool
 │    └── UnknownTool
 ├── InvalidSchema            a tool's parameters schema is not a valid JSON Schema
 ├── PolicyError              a policy configuration that cannot be applied
 └── ApprovalError            an approval answer that cannot be applied
"""

from __future__ import annotations

from .result import ErrorKind

__all__ = [
    "ApprovalError",
    "DuplicateTool",
    "ExecutionFailed",
    "ExternalServiceError",
    "InvalidParameters",
    "InvalidSchema",
    "NotAuthorized",
    "PolicyError",
    "ProtectedName",
    "RateLimited",
    "RegistryError",
    "SandboxError",
    "ToolCallError",
    "ToolError",
    "ToolTimeout",
    "UnknownTool",
]


class ToolError(Exception):
    """Root of every error raised by :mod:`tools`."""


class ToolCallError(ToolError):
    """Raised inside ``Tool.execute``; the pipeline turns it into an error result.

    The message is shown to the model (after scrubbing): say what to do differently.
    """

    kind: ErrorKind = ErrorKind.EXECUTION_FAILED


class InvalidParameters(ToolCallError):
    kind = ErrorKind.INVALID_PARAMETERS


class ExecutionFailed(ToolCallError):
    kind = ErrorKind.EXECUTION_FAILED


class ToolTimeout(ToolCallError):
    kind = ErrorKind.TIMEOUT


class NotAuthorized(ToolCallError):
    kind = ErrorKind.NOT_AUTHORIZED


class RateLimited(ToolCallError):
    kind = ErrorKind.RATE_LIMITED


class ExternalServiceError(ToolCallError):
    kind = ErrorKind.EXTERNAL_SERVICE


class SandboxError(ToolCallError):
    kind = ErrorKind.SANDBOX


class RegistryError(ToolError):
    pass


class ProtectedName(RegistryError):
    pass


class DuplicateTool(RegistryError):
    pass


class UnknownTool(RegistryError):
    pass


class InvalidSchema(ToolError):
    pass


class PolicyError(ToolError):
    pass


class ApprovalError(ToolError):
    pass
