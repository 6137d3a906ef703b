"""Errors of the actors package: the runtime, agents, model providers, re-runs and MCP.

ActorError
 ├── AskTimeout        an ask got no reply within its timeout
 ├── ActorDead         the actor is stopped (or escalated); nothing will handle the message
 │    └── UnknownAgent  no agent is registered under that key (the hint names those that are)
 ├── ActorUnavailable  the event store cannot be reached; the actor recovers once it can
 ├── ActorCrashed      the handler of an ask raised; the actor is being restarted
 ├── Escalated         a child failed too often and its supervisor gave up on it
 ├── Rejected          a handler refused a command (bad input); state is unchanged
 │    └── DelegationError  a delegation ended without a usable result; says why
 ├── HubError          the I/O hub is not running, or was used from the wrong thread
 ├── SystemClosed      the System was closed; every public call raises it
 ├── InvalidArgument   a public call's argument is wrong (also a ValueError); names it
 │    ├── ArgumentTypeError  of the wrong type (also a TypeError): a model that is no Model
 │    ├── MessageTooLarge    a message's text is over Limits.max_message_bytes
 │    └── InvalidSchedule    a routine's schedule cannot run (cron syntax, time zone,
 │                           interval below the minimum)
 ├── StreamOwnedElsewhere  another process holds this stream's lease (PostgreSQL)
 ├── SubagentLimitError  spawning a subagent would pass a depth or concurrency limit
 ├── TurnCancelledError  an agent's turn was cancelled before it replied
 ├── CompactionFailedError  System.compact's summarizer failed (what was pruned stays so)
 ├── TurnFailedError   an agent's turn ended without a reply (limit, model error, crash)
 ├── ModelError        a model provider's call failed; ``kind`` is recorded in
 │    │                session.model_failed, ``retryable`` ones are retried with backoff
 │    ├── ModelRateLimited     429 (carries retry_after)         kind "rate_limited"
 │    ├── ModelServerError     5xx                               kind "server_error"
 │    ├── ModelTimeout         no answer in time                 kind "timeout"
 │    ├── ModelUnavailable     connection refused / reset        kind "unavailable"
 │    ├── ModelAuthError       401 / 403                         kind "auth"
 │    ├── ModelBadRequest      other 4xx (the request is wrong)  kind "bad_request"
 │    ├── MalformedReply       the reply is not what the wire format promises
 │    │                                                          kind "malformed_reply"
 │    ├── ModelStreamCut       a streamed reply ended before its end (dropped connection,
 │    │                        stall, malformed chunk, error event)  kind "stream_cut"
 │    ├── ScriptExhausted      the scripted model has no more replies
 │    └── ReplyNotRecorded     (also a ReplayError) a re-run asked for a reply never recorded
 ├── ReplayError       a re-run of a recorded session cannot be done
 │    ├── NothingRecorded      the log holds no turn (or no config) to re-run for that session
 │    └── ReplyNotRecorded     (also a ModelError, so the Session records a model failure)
 └── McpError          an MCP server's configuration, connection or call failed; ``kind``
      │                names it in events and health rows
      ├── McpConfigError       a server configuration or mcp-servers.json that cannot be used
      ├── McpConnectError      the server could not be reached or started (nothing listening,
      │                        missing command, failed handshake)
      ├── McpUnavailable       the server is down, reconnecting, failed or disabled: the call
      │                        was not sent
      ├── McpConnectionLost    the connection broke while the call was in flight
      ├── McpCallTimeout       the call ran into its deadline (a hung or stopped server)
      ├── McpProtocolError     the server answered with a JSON-RPC error
      └── McpAccessError       a grant or access request that cannot be applied

The MCP SDK's errors are translated at the boundary by
:func:`clawlog.actors.mcp.sdk_errors.translate`; HTTP errors of the providers by
:mod:`clawlog.actors.providers.http`.
"""

from __future__ import annotations

__all__ = [
    "ActorCrashed",
    "ActorDead",
    "ActorError",
    "ActorUnavailable",
    "ArgumentTypeError",
    "AskTimeout",
    "CompactionFailedError",
    "DelegationError",
    "Escalated",
    "HubError",
    "InvalidArgument",
    "InvalidSchedule",
    "MalformedReply",
    "McpAccessError",
    "McpCallTimeout",
    "McpConfigError",
    "McpConnectError",
    "McpConnectionLost",
    "McpError",
    "McpProtocolError",
    "McpUnavailable",
    "MessageTooLarge",
    "ModelAuthError",
    "ModelBadRequest",
    "ModelError",
    "ModelRateLimited",
    "ModelServerError",
    "ModelStreamCut",
    "ModelTimeout",
    "ModelUnavailable",
    "NothingRecorded",
    "Rejected",
    "ReplayError",
    "ReplyNotRecorded",
    "ScriptExhausted",
    "StreamOwnedElsewhere",
    "SubagentLimitError",
    "SystemClosed",
    "TurnCancelledError",
    "TurnFailedError",
    "UnknownAgent",
]


class ActorError(Exception):
    """Root of every error raised by :mod:`actors`."""


class AskTimeout(ActorError, TimeoutError):
    """No reply arrived within the ask's timeout."""


class ActorDead(ActorError):
    """The addressed actor is not running; the message became a dead letter."""


class UnknownAgent(ActorDead):
    """No agent is registered under the key (or it has stopped). A subclass of
    :class:`ActorDead`, which it was before it had a name of its own."""

    def __init__(self, agent: str, registered: list[str], parameter: str = "agent") -> None:
        hint = (
            f"registered agents: {', '.join(sorted(registered))}"
            if registered
            else "no agent is registered"
        )
        where = "" if parameter == "agent" else f"{parameter}: "
        super().__init__(
            f"{where}unknown agent {agent!r} ({hint}); register it with system.register_agent()"
        )
        self.agent = agent
        self.registered = sorted(registered)
        self.parameter = parameter


class ActorUnavailable(ActorError):
    """The actor cannot take the message now: the event store cannot be reached. Nothing
    was recorded for it; the actor recovers by itself once the store answers. Retry later."""

    def __init__(self, path: str, cause: BaseException) -> None:
        super().__init__(f"{path} is waiting for the event store: {cause}")
        self.path = path
        self.__cause__ = cause


class ActorCrashed(ActorError):
    """The actor's handler raised while handling this ask; the actor restarts from its stream."""

    def __init__(self, path: str, error: BaseException) -> None:
        super().__init__(f"{path} crashed handling the request: {type(error).__name__}: {error}")
        self.path = path
        self.error = error


class Escalated(ActorError):
    """A child failed more often than its supervision policy allows."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path} escalated: {reason}")
        self.path = path
        self.reason = reason


class Rejected(ActorError):
    """Raised by a handler to refuse a command: the asker gets it, the actor does not restart."""


class HubError(ActorError):
    """The I/O hub cannot run this (stopped, or called from its own loop where it would block)."""


class SystemClosed(ActorError):
    """The System is closed."""


class InvalidArgument(ActorError, ValueError):
    """A public call was given a wrong argument; nothing was sent or appended.

    ``parameter`` names it. Also a :class:`ValueError`, what these calls raised before.
    """

    def __init__(self, parameter: str, problem: str) -> None:
        super().__init__(f"{parameter}: {problem}")
        self.parameter = parameter
        self.problem = problem


class InvalidSchedule(InvalidArgument):
    """A routine's schedule cannot run; the message says what to change."""

    def __init__(self, problem: str) -> None:
        super().__init__("schedule", problem)


class ArgumentTypeError(InvalidArgument, TypeError):
    """The argument is of the wrong type (also a :class:`TypeError`)."""


class MessageTooLarge(InvalidArgument):
    """A message's text (with its parts: ``parameter`` names which pushed it over) is over
    the System's ``Limits.max_message_bytes``; refused before anything was sent. Send
    large content as a file or a reference instead."""

    def __init__(self, size: int, limit: int, parameter: str = "text") -> None:
        what = "the message" if parameter == "text" else "the message with its parts"
        super().__init__(
            parameter,
            f"{what} is {size} bytes (UTF-8); the limit is {limit} "
            "(System.open(limits=Limits(max_message_bytes=...)))",
        )
        self.size = size
        self.limit = limit


class DelegationError(Rejected):
    """A delegation ended without a usable result; the message says why."""


class StreamOwnedElsewhere(ActorError):
    """Another process holds the lease of this stream."""

    def __init__(self, stream: str, holder: str) -> None:
        super().__init__(
            f"stream {stream!r} is owned by another process ({holder}); a session's "
            "messages reach it there through the log, other actors' wait for its lease "
            "to expire"
        )
        self.stream = stream
        self.holder = holder


class SubagentLimitError(ActorError):
    """A subagent spawn refused by a limit (depth, children, concurrency); the message is
    what the model reads."""


class TurnFailedError(ActorError):
    """A turn ended without a reply (iteration limit, model error, interruption)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class TurnCancelledError(ActorError):
    """The turn was cancelled before it produced a reply."""


class CompactionFailedError(ActorError):
    """``System.compact`` could not write its summary: the summarizer failed (``kind`` is
    its error's kind). Old tool results it pruned stay pruned; nothing was summarized."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


# --- model providers (actors.providers) ---


class ModelError(ActorError):
    """Root of model providers' errors (:mod:`clawlog.actors.providers`); ``retryable``
    ones are retried with backoff."""

    kind = "error"
    retryable = False


class ModelRateLimited(ModelError):
    kind = "rate_limited"
    retryable = True

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ModelServerError(ModelError):
    kind = "server_error"
    retryable = True


class ModelTimeout(ModelError):
    kind = "timeout"
    retryable = True


class ModelUnavailable(ModelError):
    kind = "unavailable"
    retryable = True


class ModelAuthError(ModelError):
    kind = "auth"


class ModelBadRequest(ModelError):
    kind = "bad_request"


class MalformedReply(ModelError):
    kind = "malformed_reply"


class ModelStreamCut(ModelError):
    """A streamed reply stopped before its end: the connection dropped or stalled, a chunk
    was malformed, or the provider sent an error event mid-stream. No half reply is given.

    ``partial_text`` is the text already delivered as deltas. A cut before the first delta
    is retried like a failed request; after it, it is not (the deltas are out), so
    ``retryable`` is False then.
    """

    kind = "stream_cut"

    def __init__(self, message: str, *, partial_text: str = "") -> None:
        super().__init__(message)
        self.partial_text = partial_text
        self.retryable = not partial_text


class ScriptExhausted(ModelError):
    kind = "script_exhausted"


# --- the re-run engine (actors.replay) ---


class ReplayError(ActorError):
    """Root of every error raised by :mod:`clawlog.actors.replay`."""


class NothingRecorded(ReplayError):
    """The session, the turn range or the agent's config is not in the log."""


class ReplyNotRecorded(ReplayError, ModelError):
    """The re-run asked the model for a reply the recording does not have (recorded as
    ``session.model_failed`` with kind ``not_recorded``)."""

    kind = "not_recorded"


# --- MCP connections (actors.mcp) ---


class McpError(ActorError):
    """Root of every error raised by :mod:`clawlog.actors.mcp`."""

    #: A short, stable name for events and health rows.
    kind = "mcp_error"


class McpConfigError(McpError):
    kind = "config_error"


class McpConnectError(McpError):
    kind = "connect_error"


class McpUnavailable(McpError):
    kind = "unavailable"


class McpConnectionLost(McpError):
    kind = "connection_lost"


class McpCallTimeout(McpError):
    kind = "timeout"


class McpProtocolError(McpError):
    kind = "protocol_error"

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class McpAccessError(McpError):
    kind = "access_error"
