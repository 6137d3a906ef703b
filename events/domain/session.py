"""Conversation value types and the events of a Session (one agent loop per session key).

Every model request and reply is recorded, so a session can be audited and re-run
without the model. Texts and tool arguments are scrubbed before they are recorded.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..base import Event

__all__ = [
    "EVENTS",
    "BudgetExceeded",
    "ChatMessage",
    "CompactionFailed",
    "ContentPart",
    "DocumentPart",
    "ImagePart",
    "ModelFailed",
    "ModelReplied",
    "ModelRequested",
    "PrunedResult",
    "SessionCleared",
    "SessionCompacted",
    "SessionEvent",
    "SessionStarted",
    "TextPart",
    "ToolCall",
    "TurnCancelled",
    "TurnCompleted",
    "TurnFailed",
    "TurnFailureReason",
    "TurnStarted",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]
#: Why a turn ended without a reply: too many model iterations, a model error, a restart
#: that interrupted a delegated turn, a crash, the event store refusing, not reaching or
#: failing an append, or a budget its next model request would have passed.
TurnFailureReason = Literal[
    "iteration_limit",
    "budget_exceeded",
    "model_error",
    "interrupted",
    "crashed",
    "append_refused",
    "store_unavailable",
    "store_error",
]


class ToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call as the model produced it. ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str = "{}"


_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _one_source(kind: str, data: str, url: str, media_type: str, allowed: tuple[str, ...]) -> None:
    """A part holds its bytes (base64) or a URL, never both; base64 needs a known media type."""
    if bool(data) == bool(url):
        raise ValueError(
            f"{kind} part needs exactly one of data= (base64) or url=, "
            f"not {'both' if data else 'neither'}"
        )
    if data and media_type not in allowed:
        raise ValueError(
            f"{kind} part's media_type must be one of {', '.join(allowed)} "
            f"when data= is given, not {media_type!r}"
        )


class TextPart(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="text"):
    """A piece of text among a message's parts."""

    text: str


class ImagePart(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="image"):
    """An image: base64 ``data`` with its ``media_type``, or a ``url`` the provider fetches."""

    media_type: str = ""
    data: str = ""
    url: str = ""
    #: OpenAI's resolution hint ("low", "high", "auto"); "" sends none. Anthropic ignores it.
    detail: str = ""

    def __post_init__(self) -> None:
        _one_source("an image", self.data, self.url, self.media_type, _IMAGE_TYPES)


class DocumentPart(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="document"):
    """A PDF document: base64 ``data``, or a ``url`` (Anthropic only)."""

    media_type: str = "application/pdf"
    data: str = ""
    url: str = ""
    #: The name the model sees (OpenAI requires one; "document.pdf" when empty).
    filename: str = ""

    def __post_init__(self) -> None:
        _one_source("a document", self.data, self.url, self.media_type, ("application/pdf",))


#: A part of a message's content: text, an image, a document.
ContentPart = TextPart | ImagePart | DocumentPart


class ChatMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One message of a conversation, provider-neutral."""

    role: Role
    #: The message's text. With ``parts``, it stays the text that readers, scrubbers and size
    #: estimates see (the joined text parts, or the caption of an image).
    content: str = ""
    #: Content blocks in order, for messages that carry more than text (images, documents).
    #: Empty: the message is ``content``. Holding no TextPart: ``content`` is sent first, as
    #: the text, then these parts. Holding TextParts: these are sent as they are, in order.
    parts: list[ContentPart] = msgspec.field(default_factory=list)
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    #: For ``role="tool"``: the call this message answers, and the tool's name.
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens of one model call, as the provider reported them.

    ``input_tokens`` counts the whole prompt, cached part included; ``cached_input_tokens``
    is the part read from the provider's prompt cache and ``cache_write_tokens`` the part
    written to it (Anthropic's cache creation). ``reasoning_tokens`` is the part of
    ``output_tokens`` spent reasoning. ``estimated`` is True when the provider reported no
    usage and clawlog estimated the counts locally (actors.providers.estimate).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False


class SessionStarted(Event, frozen=True, tag="session.started"):
    agent: str
    session_key: str
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    #: Set for subagent sessions: the spawning session's stream and this one's depth.
    parent: str | None = None
    depth: int = 0


class TurnStarted(Event, frozen=True, tag="session.turn_started"):
    """A user (or teammate, or parent) message starts a turn."""

    turn_id: str
    text: str
    sender: str = "user"
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    #: Delegations made in this turn run no quality gates (seed 001 §11 recursion guard).
    skip_quality_gates: bool = msgspec.field(default=False, name="skip_hooks")
    #: The outbox kind of this turn's reply (events.domain.outbox): "" when the reply goes
    #: only to whoever asked (a delegating agent, a parent); None for turns recorded before
    #: the outbox existed (a user's turn is then taken as "reply").
    outbox_kind: str | None = None
    #: What came with ``text`` (``System.send(..., parts=[...])``): images, documents and
    #: more text, sent to the model after ``text`` in this order. Their text is scrubbed
    #: like ``text``; images and documents are data, recorded as given.
    parts: list[ContentPart] = msgspec.field(default_factory=list)
    #: The version of the ``inbox.message_sent`` on ``inbox/{agent}/{session_key}`` this
    #: turn answers (a message another process sent; 0: none). A session reads its inbox
    #: after the highest one it started.
    inbox_version: int = 0


class ModelRequested(Event, frozen=True, tag="session.model_requested"):
    turn_id: str
    iteration: int
    model: str
    provider: str = ""
    #: Number of messages sent, and the tool names offered (the prompt itself is rebuilt
    #: from the stream on replay, so it is not duplicated here).
    message_count: int = 0
    tools: list[str] = msgspec.field(default_factory=list)
    system_prompt_digest: str = ""
    #: The request's local size measure (actors.agents.context_size: characters of the
    #: system prompt, the tools' JSON and the messages) and the tokens estimated from it
    #: with the session's calibrated ratio; 0 when recorded before they were measured.
    prompt_chars: int = 0
    estimated_tokens: int = 0
    #: The request's ``tool_choice`` (``AgentConfig.tool_choice``); None: the provider's
    #: default (also for requests recorded before it was sent).
    tool_choice: str | None = None


class ModelReplied(Event, frozen=True, tag="session.model_replied"):
    turn_id: str
    iteration: int
    text: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)
    stop_reason: str = ""
    duration_ms: float = 0.0
    #: The model as the provider named it in its reply ("" when it named none).
    model: str = ""
    #: Estimated cost in US dollars from the model catalog's price table
    #: (actors.providers.catalog); None when the model has no price there.
    cost_usd: float | None = None


class ModelFailed(Event, frozen=True, tag="session.model_failed"):
    turn_id: str
    iteration: int
    #: The ``ModelError``'s kind (rate_limited, server_error, timeout, auth, bad_request,
    #: malformed_reply, stream_cut, unavailable, script_exhausted, not_recorded, error), or
    #: the class name of another exception a ``Model`` raised: an open set, so ``str``.
    kind: str
    message: str
    attempts: int = 1


#: Whose spending a budget limits: the session (its lifetime), the agent or the user (each
#: per UTC day, across sessions).
BudgetScope = Literal["session", "agent", "user"]
#: What a budget limits: tokens (input + output) or the estimated cost in US dollars.
BudgetMetric = Literal["tokens", "cost_usd"]


class BudgetExceeded(Event, frozen=True, tag="session.budget_exceeded"):
    """The model request about to be sent would have passed a budget: it was not sent,
    and the turn ends (``session.turn_failed``, reason ``budget_exceeded``)."""

    turn_id: str
    #: The iteration whose request was not sent.
    iteration: int
    scope: BudgetScope
    metric: BudgetMetric
    #: The limit, what the scope had spent before this request, and the request's
    #: estimated most (its input estimate plus its max output tokens), all in ``metric``.
    limit: float
    spent: float
    request_estimate: float
    #: The agent or user the budget belongs to ("" for a session budget); the UTC day
    #: ("YYYY-MM-DD") of a daily budget.
    subject: str = ""
    day: str = ""
    #: What the user is told.
    message: str = ""


class TurnCompleted(Event, frozen=True, tag="session.turn_completed"):
    turn_id: str
    reply: str
    iterations: int


class TurnFailed(Event, frozen=True, tag="session.turn_failed"):
    """The turn ended without a reply, for ``reason``."""

    turn_id: str
    reason: TurnFailureReason
    message: str = ""


class TurnCancelled(Event, frozen=True, tag="session.turn_cancelled"):
    turn_id: str
    by: str = "user"


class PrunedResult(msgspec.Struct, frozen=True, kw_only=True):
    """An old tool result cut down in the conversation sent to the model (its tool event
    keeps the full result: only the context shrinks)."""

    call_id: str
    #: "trimmed": its first ``head_chars`` and last ``tail_chars`` kept around a notice;
    #: "cleared": replaced by a notice.
    mode: Literal["trimmed", "cleared"]
    #: Its length before, in characters.
    chars: int = 0
    head_chars: int = 0
    tail_chars: int = 0
    #: The log position of the tool event whose result this is (0: not known: recorded
    #: before positions were, or in the same append as the compaction).
    position: int = 0


class SessionCompacted(Event, frozen=True, tag="session.compacted"):
    """The conversation sent to the model was made smaller; the log keeps everything.

    ``pruned`` old tool results were cut down first; then, if ``summarized_turns`` is not
    empty, every message before the first message of ``kept_from_turn`` ("": all of
    them) was replaced by one message holding ``summary``. The conversation is rebuilt
    from the log with this applied (actors.agents.session_state), so replay and re-run
    see the compacted form.
    """

    #: The turn it happened in (before its model request ``iteration``); "" between turns.
    turn_id: str = ""
    iteration: int = 0
    #: "threshold": the next request's estimate passed the threshold; "manual":
    #: ``System.compact``.
    trigger: str = "threshold"
    pruned: list[PrunedResult] = msgspec.field(default_factory=list)
    summary: str = ""
    summarized_turns: list[str] = msgspec.field(default_factory=list)
    kept_from_turn: str = ""
    #: Messages the summary replaced (for the record).
    replaced_messages: int = 0
    #: The log positions of the first and the last of the session's events whose messages
    #: the summary replaced: the session's events from one to the other (both included)
    #: are what it summarizes. An earlier summary it replaced stands for the events that
    #: one replaced (a summary of a summary covers both). 0 when nothing was summarized
    #: (and in compactions recorded before these were). The pruned results' positions
    #: are in ``pruned``.
    replaced_from_position: int = 0
    replaced_to_position: int = 0
    #: The window it was measured against, and the estimated prompt before and after.
    context_window: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    #: The summarizer's model call ("" / zero when nothing was summarized).
    model: str = ""
    usage: Usage = msgspec.field(default_factory=Usage)
    cost_usd: float | None = None
    duration_ms: float = 0.0


class CompactionFailed(Event, frozen=True, tag="session.compaction_failed"):
    """The summarizer failed: nothing was summarized. A turn goes on with the conversation
    as it was (pruned, if its ``session.compacted`` just before pruned anything)."""

    #: The summarizer's ``ModelError`` kind ("malformed_reply" for an empty summary), or
    #: the class name of another exception it raised.
    kind: str
    message: str
    turn_id: str = ""
    iteration: int = 0
    trigger: str = "threshold"
    model: str = ""
    #: Results pruned by the same compaction (its ``session.compacted`` comes just before).
    pruned: int = 0


class SessionCleared(Event, frozen=True, tag="session.cleared"):
    """A fresh context: the conversation sent to the model starts empty from here. The
    earlier turns stay in the log."""

    by: str = "user"
    #: Messages the conversation held before (for the record).
    messages: int = 0


SessionEvent = (
    SessionStarted
    | TurnStarted
    | ModelRequested
    | ModelReplied
    | ModelFailed
    | TurnCompleted
    | TurnFailed
    | TurnCancelled
    | BudgetExceeded
    | SessionCompacted
    | CompactionFailed
    | SessionCleared
)
EVENTS = (
    SessionStarted,
    TurnStarted,
    ModelRequested,
    ModelReplied,
    ModelFailed,
    TurnCompleted,
    TurnFailed,
    TurnCancelled,
    BudgetExceeded,
    SessionCompacted,
    CompactionFailed,
    SessionCleared,
)
