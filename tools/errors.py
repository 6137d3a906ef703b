"""Errors of the tool system: the pipeline, the registry, and the exec, sandbox and
workspace tools. A tool's ``execute()`` raises a ``ToolCallError``, whose ``ErrorKind`` is
what the model reads; the exec, sandbox and workspace errors are ToolCallErrors worded as
seed 003 lists them.

ToolError
 ├── ToolCallError            raised by a tool's execute(); carries an ErrorKind
 │    ├── InvalidParameters
 │    ├── ExecutionFailed
 │    │    └── CustomToolUnavailable    a custom tool whose env this process cannot decrypt
 │    │                                 (no CLAWLOG_SECRET_KEY, or not the sealing key)
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
 │    ├── WorkspaceError                the workspace tools
 │    │    ├── PathRefused              not_authorized
 │    │    │    ├── PathTraversal       "path traversal detected: …"
 │    │    │    └── PathDenied          "permission denied: …" (deny prefix, protected file,
 │    │    │                            read-only workspace)
 │    │    ├── FileNotFound             "file not found: …"
 │    │    ├── NotAFile                 a directory where a file was expected, or the reverse
 │    │    ├── FileTooLarge             over a size cap
 │    │    ├── EditRejected             invalid_parameters
 │    │    │    ├── OldStringNotFound   "old_string not found in …"
 │    │    │    └── OldStringNotUnique  "old_string is not unique …"
 │    │    ├── PatchRejected            invalid_parameters: the patch does not apply
 │    │    ├── SearchTimedOut           invalid_parameters: a search pattern ran past its
 │    │    │                            deadline
 │    │    └── VirtualStoreUnavailable  a virtual file (context, memory) whose store is not
 │    │                                 configured
 │    ├── WebSearchError                web_search and its providers (tools.web):
 │    │    │                            external_service: a 5xx, a connection failure,
 │    │    │                            another status; the message names the provider
 │    │    ├── WebSearchKeyRejected     external_service: 401/403, the operator's key or
 │    │    │                            instance set-up is wrong; retrying cannot help
 │    │    ├── WebSearchRateLimited     rate_limited: 429, with ``retry_after`` seconds
 │    │    ├── WebSearchTimedOut        timeout: no answer within the provider's limit
 │    │    └── WebSearchBadResponse     external_service: not JSON, or JSON of another
 │    │                                 shape than the provider's wire format
 │    └── WebError                      the web tools' fetcher (tools.web)
 │         ├── WebRequestInvalid        invalid_parameters: a method or header that cannot
 │         │    │                       be sent
 │         │    └── InvalidUrl          a URL that cannot be parsed
 │         ├── WebRequestRefused        not_authorized: the SSRF guard or the host lists
 │         │    │                       refused the URL, a resolved address or a redirect
 │         │    └── SecretInRequest     the http tool's outbound URL, headers or body hold
 │         │                            what looks like a secret (seed 004 LeakDetector)
 │         ├── WebContentUnsupported    execution_failed: a response web_fetch cannot show
 │         │                            as text (binary type, unknown content encoding)
 │         ├── WebRequestFailed         external_service: DNS failure, connection refused,
 │         │                            TLS, a broken response (httpcore errors translated
 │         │                            at the boundary, ``from exc``)
 │         ├── WebRequestTimedOut       timeout: the whole request (redirects included) ran
 │         │                            past the policy's time limit
 │         └── FetcherClosed            execution_failed: the fetcher was closed
 ├── CustomToolError          defining custom tools (tools.custom)
 │    ├── InvalidCustomTool   a definition that cannot be used (also a ValueError);
 │    │    │                  ``parameter`` names the field
 │    │    └── CustomToolTypeError  a field of the wrong type (also a TypeError)
 │    └── SecretKeyError      CLAWLOG_SECRET_KEY is missing, malformed, or not the key the
 │                            env values were sealed with; ``reason`` says which
 ├── ArgumentError            a call's arguments do not match the schema (also a ValueError)
 ├── CommandParseError        a shell command that cannot be parsed (also a ValueError)
 ├── RegistryError            registering or removing a tool
 │    ├── ProtectedName       runtime registration tried to shadow a protected name
 │    ├── DuplicateTool
 │    └── UnknownTool
 ├── InvalidSchema            a tool's parameters schema is not a valid JSON Schema
 ├── PolicyError              a policy configuration that cannot be applied
 │    └── PolicyFileError     a policy file that cannot be read (``tools.policy_file``);
 │                            ``path`` names it (also a ValueError)
 ├── WebSearchConfigError     a search provider that cannot be set up: no API key, a bad
 │                            base URL (also a ValueError)
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
    "CustomToolError",
    "CustomToolTypeError",
    "CustomToolUnavailable",
    "DuplicateTool",
    "EditRejected",
    "ExecError",
    "ExecutionFailed",
    "ExternalServiceError",
    "FetcherClosed",
    "FileNotFound",
    "FileTooLarge",
    "InvalidCustomTool",
    "InvalidParameters",
    "InvalidSchema",
    "InvalidUrl",
    "NotAFile",
    "NotAuthorized",
    "OldStringNotFound",
    "OldStringNotUnique",
    "PatchRejected",
    "PathDenied",
    "PathRefused",
    "PathTraversal",
    "PolicyError",
    "PolicyFileError",
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
    "SecretInRequest",
    "SecretKeyError",
    "ToolCallError",
    "ToolError",
    "ToolTimeout",
    "UnknownProcess",
    "UnknownTool",
    "VirtualStoreUnavailable",
    "WebContentUnsupported",
    "WebError",
    "WebRequestFailed",
    "WebRequestInvalid",
    "WebRequestRefused",
    "WebRequestTimedOut",
    "WebSearchBadResponse",
    "WebSearchConfigError",
    "WebSearchError",
    "WebSearchKeyRejected",
    "WebSearchRateLimited",
    "WebSearchTimedOut",
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

    def __init__(self, message: str, *, rule: str = "") -> None:
        super().__init__(message)
        #: The schema rule that refused them, as a verdict records it
        #: (``schema: type at #/target``); "" when the validator does not say.
        self.rule = rule


class CommandParseError(ToolError, ValueError):
    """A shell command that cannot be read the way a shell would (an unterminated quote).
    Also a :class:`ValueError`."""


class InvalidSchema(ToolError):
    pass


class PolicyError(ToolError):
    pass


class PolicyFileError(PolicyError, ValueError):
    """A policy file that cannot be read: missing, not TOML or JSON, or a value of the
    wrong shape (the message names the key and what to write instead)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"policy file {path}: {problem}")
        self.path = path
        self.problem = problem


class ApprovalError(ToolError):
    pass


# --- custom tools (tools.custom) ---


class CustomToolError(ToolError):
    """Root of the errors of defining custom tools (:mod:`tools.custom`)."""


class InvalidCustomTool(CustomToolError, ValueError):
    """A custom tool definition that cannot be used; nothing was recorded. ``parameter``
    names the field (``command``, ``parameters``, ``env``...), ``problem`` says what is
    wrong and what to do."""

    def __init__(self, parameter: str, problem: str) -> None:
        super().__init__(f"{parameter}: {problem}")
        self.parameter = parameter
        self.problem = problem


class CustomToolTypeError(InvalidCustomTool, TypeError):
    """A field of a custom tool definition of the wrong type (also a TypeError)."""


class SecretKeyError(CustomToolError):
    """The key that seals custom tools' env values: ``reason`` is ``missing`` (the
    environment variable is not set), ``malformed`` (not the base64 of 32 bytes) or
    ``wrong`` (another key sealed the values)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class CustomToolUnavailable(ExecutionFailed):
    """A custom tool whose env cannot be decrypted in this process; it was not run."""


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


# --- web_search and its providers (tools.web) ---


class WebSearchConfigError(ToolError, ValueError):
    """A search provider that cannot be set up (no API key, a bad base URL); raised when
    the application constructs it, never to the model. Also a :class:`ValueError`."""


class WebSearchError(ExternalServiceError):
    """Root of web_search's errors; the message names the provider and what to do."""


class WebSearchKeyRejected(WebSearchError):
    pass


class WebSearchRateLimited(WebSearchError, RateLimited):
    """``retry_after``: seconds the provider asked to wait (None: it did not say)."""

    kind = ErrorKind.RATE_LIMITED

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class WebSearchTimedOut(WebSearchError, ToolTimeout):
    kind = ErrorKind.TIMEOUT


class WebSearchBadResponse(WebSearchError):
    pass


# --- the web fetcher (tools.web) ---


class WebError(ToolCallError):
    """Root of the web fetcher's errors; the message is what the model reads."""


class WebRequestInvalid(WebError, InvalidParameters):
    pass


class InvalidUrl(WebRequestInvalid):
    pass


class WebRequestRefused(WebError, NotAuthorized):
    pass


class SecretInRequest(WebRequestRefused):
    pass


class WebContentUnsupported(WebError, ExecutionFailed):
    pass


class WebRequestFailed(WebError, ExternalServiceError):
    pass


class WebRequestTimedOut(WebError, ToolTimeout):
    pass


class FetcherClosed(WebError, ExecutionFailed):
    pass
