"""Errors of the exec and process tools.

ExecError                        root; every one is a tools.ToolCallError
 ├── CommandDenied               not_authorized: a deny / dangerous / injection pattern
 ├── CommandTimedOut             timeout: "command timed out …" (seed 003)
 ├── UnknownProcess              invalid_parameters: no such process in this session
 ├── ProcessLimit                execution_failed: too many background processes
 ├── ProcessFinished             invalid_parameters: input or a signal for a process that ended
 └── SandboxRefused              sandbox: the sandbox is configured but cannot run it, and
                                 falling back to the host is not allowed
"""

from __future__ import annotations

from ..errors import (
    ExecutionFailed,
    InvalidParameters,
    NotAuthorized,
    SandboxError,
    ToolCallError,
    ToolTimeout,
)

__all__ = [
    "CommandDenied",
    "CommandTimedOut",
    "ExecError",
    "ProcessFinished",
    "ProcessLimit",
    "SandboxRefused",
    "UnknownProcess",
]


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
