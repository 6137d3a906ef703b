"""What a tool call returns: :class:`ToolResult`, and the kinds of failure (seed 004 §2)."""

from __future__ import annotations

import enum
from typing import Any

import msgspec

__all__ = ["ErrorKind", "ToolResult"]


class ErrorKind(enum.StrEnum):
    """Why a call did not succeed. The first seven are seed 004 §2's ``ToolError``."""

    INVALID_PARAMETERS = "invalid_parameters"
    EXECUTION_FAILED = "execution_failed"
    TIMEOUT = "timeout"
    NOT_AUTHORIZED = "not_authorized"
    RATE_LIMITED = "rate_limited"
    EXTERNAL_SERVICE = "external_service"
    SANDBOX = "sandbox"
    #: clawlog additions: the loop detector stopped the call; the call never finished
    #: (cancelled turn, crash, restart). A tool the caller was not given - unknown or
    #: removed by the policy - is ``not_authorized``.
    LOOP_DETECTED = "loop_detected"
    INTERRUPTED = "interrupted"


class ToolResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of one call.

    ``for_llm`` goes back to the model; ``for_user`` (optional) is shown to the person;
    ``details`` is structured data for dashboards and audits (msgspec-encodable values).
    """

    for_llm: str
    for_user: str = ""
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    is_error: bool = False
    #: Set by the pipeline when ``for_llm`` or ``for_user`` was cut to the size limit.
    truncated: bool = False
    #: For errors: an :class:`ErrorKind` value.
    error_kind: str | None = None

    @classmethod
    def text(cls, for_llm: str, *, for_user: str = "", **details: Any) -> ToolResult:
        """A successful result."""
        return cls(for_llm=for_llm, for_user=for_user, details=details)

    @classmethod
    def error(cls, kind: ErrorKind | str, message: str, **details: Any) -> ToolResult:
        """An error result whose message tells the model what to do next."""
        return cls(for_llm=message, details=details, is_error=True, error_kind=str(kind))
