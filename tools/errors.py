"""Errors of the tool system: the pipeline, the registry, and the exec, sandbox and
workspace tools. A tool's ``execute()`` raises a ``ToolCallError``, whose ``ErrorKind`` is
what the model reads; the exec, sandbox and workspace errors are ToolCallErrors worded as
seed 003 lists them.

ToolError
 ├── ToolCallError            raised by a tool's execute(); carries an ErrorKind
 │    ├── InvalidParameters
 │    ├── ExecutionFailed
 │    ├── ToolTimeout
 │    ├── NotAuthorized
 │    ├── RateLimited
 │    ├── ExternalServiceError
 │    ├── SandboxError
 │    │    └── SandboxFailure           the Docker sandbox (docker and requests errors
 │    │         │                       translated at the boundary, ``from exc``)
 │    │         ├── SandboxUnavailable  the engine, the image or the container cannot be
 │    │         │                       used; the command did not run (exec may fall back)
 │    │         └── SandboxClosed       the manager was closed
 │    ├── ExecError                     the exec and process tools
 │    │    ├── CommandDenied            not_authorized: a deny / dangerous / injection pattern
 │    │    ├── CommandTimedOut          timeout: "command timed out …" (seed 003)
 │    │    ├── UnknownProcess           invalid_parameters: no such process in this session
 │    │    ├── ProcessLimit             execution_failed: too many background processes
 │    │    ├── ProcessFinished          invalid_parameters: input or a signal for a process
 │    │    │                            that ended
 │    │    └── SandboxRefused           sandbox: the sandbox is configured but cannot run it,
 │    │                                 and falling back to the host is not allowed
 │    └── WorkspaceError                the workspace tools
 │         ├── PathRefused              not_authorized
 │         │    ├── PathTraversal       "path traversal detected: …"
 │         │    └── PathDenied          "permission denied: …" (deny prefix, protected file,
 │         │                            read-only workspace)
 │         ├── FileNotFound             "file not found: …"
 │         ├── NotAFile                 a directory where a file was expected, or the reverse
 │         ├── FileTooLarge             over a size cap
 │         ├── EditRejected             invalid_parameters
 │         │    ├── OldStringNotFound   "old_string not found in …"
 │         │    └── OldStringNotUnique  "old_string is not unique …"
 │         ├── PatchRejected            invalid_parameters: the patch does not apply
 │         ├── SearchTimedOut           invalid_parameters: a search pattern ran past its
 │         │                            deadline
 │         └── VirtualStoreUnavailable  a virtual file (context, memory) whose store is not
 │                                      configured
 ├── ArgumentError            a call's arguments do not match the schema (also a ValueError)
 ├── CommandParseError        a shell command that cannot be parsed (also a ValueError)
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
    "ArgumentError",
    "CommandDenied",
    "CommandParseError",
    "CommandTimedOut",
    "DuplicateTool",
    "EditRejected",
    "ExecError",
    "ExecutionFailed",
    "ExternalServiceError",
    "FileNotFound",
    "FileTooLarge",
    "InvalidParameters",
    "InvalidSchema",
    "NotAFile",
    "NotAuthorized",
    "OldStringNotFound",
    "OldStringNotUnique",
    "PatchRejected",
    "PathDenied",
    "PathRefused",
    "PathTraversal",
    "PolicyError",
    "ProcessFinished",
    "ProcessLimit",
    "ProtectedName",
    "RateLimited",
    "RegistryError",
    "SandboxClosed",
    "SandboxError",
    "SandboxFailure",
    "SandboxRefused",
    "SandboxUnavailable",
    "SearchTimedOut",
    "ToolCallError",
    "ToolError",
    "ToolTimeout",
    "UnknownProcess",
    "UnknownTool",
    "VirtualStoreUnavailable",
    "WorkspaceError",
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


class ArgumentError(ToolError, ValueError):
    """A tool call's arguments do not match the tool's schema; the message names the field.
    Also a :class:`ValueError`, what it was before it joined this hierarchy."""


class CommandParseError(ToolError, ValueError):
    """A shell command that cannot be read the way a shell would (an unterminated quote).
    Also a :class:`ValueError`."""


class InvalidSchema(ToolError):
    pass


class PolicyError(ToolError):
    pass


class ApprovalError(ToolError):
    pass


# --- exec and process tools (tools.exec) ---


class ExecError(ToolCallError):
    """Root of the exec and process tools' errors; the message is what the model reads."""


class CommandDenied(ExecError, NotAuthorized):
    pass


class CommandTimedOut(ExecError, ToolTimeout):
    pass


class UnknownProcess(ExecError, InvalidParameters):
    pass


class ProcessLimit(ExecError, ExecutionFailed):
    pass


class ProcessFinished(ExecError, InvalidParameters):
    pass


class SandboxRefused(ExecError, SandboxError):
    pass


# --- the Docker sandbox (tools.sandbox) ---


class SandboxFailure(SandboxError):
    """Root of the sandbox's errors."""


class SandboxUnavailable(SandboxFailure):
    pass


class SandboxClosed(SandboxFailure):
    pass


# --- workspace tools (tools.workspace) ---


class WorkspaceError(ToolCallError):
    """Root of the workspace tools' errors; the message is what the model reads."""


class PathRefused(WorkspaceError, NotAuthorized):
    pass


class PathTraversal(PathRefused):
    pass


class PathDenied(PathRefused):
    pass


class FileNotFound(WorkspaceError, ExecutionFailed):
    pass


class NotAFile(WorkspaceError, InvalidParameters):
    pass


class FileTooLarge(WorkspaceError, InvalidParameters):
    pass


class EditRejected(WorkspaceError, InvalidParameters):
    pass


class OldStringNotFound(EditRejected):
    pass


class OldStringNotUnique(EditRejected):
    pass


class PatchRejected(WorkspaceError, InvalidParameters):
    pass


class SearchTimedOut(WorkspaceError, InvalidParameters):
    pass


class VirtualStoreUnavailable(WorkspaceError, ExecutionFailed):
    pass
