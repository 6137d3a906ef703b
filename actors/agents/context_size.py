"""The size of a model request, estimated locally: no tokenizer, nothing downloaded.

The measure is characters: the system prompt, the tools' JSON, and each message's text,
tool calls and name, plus a small overhead per message (roles and separators cost
tokens too). An image or a document part counts as :data:`ATTACHMENT_CHARS`.

Tokens are characters divided by a ratio. Before a session has heard from its provider
the ratio is :data:`DEFAULT_CHARS_PER_TOKEN` (4, the usual English-text rule of thumb,
and OpenClaw's ``CHARS_PER_TOKEN_ESTIMATE``). Each reply then calibrates it: the request
recorded its ``prompt_chars`` (``session.model_requested``) and the provider reported
the prompt's ``input_tokens`` (``session.model_replied``), so the session's ratio is
``prompt_chars / input_tokens`` of its latest reply (code, JSON and other languages have
ratios far from 4). The ratio is folded from the log (``SessionState.chars_per_token``),
so a replay measures as the live session did. Replies whose usage clawlog estimated
itself (``Usage.estimated``) do not calibrate.

A session measures its conversation before every model request (to decide a compaction,
to check budgets, to record the request): :class:`ConversationMeasure` keeps that figure
as the conversation grows, so a step measures only the messages added since the last one
instead of the whole conversation (which made long sessions slower per turn).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import msgspec

from clawlog.events.domain.session import ChatMessage, TextPart

from ..providers.base import ToolSpec

__all__ = [
    "ATTACHMENT_CHARS",
    "DEFAULT_CHARS_PER_TOKEN",
    "MESSAGE_OVERHEAD_CHARS",
    "Conversation",
    "ConversationMeasure",
    "calibrated_ratio",
    "estimate_tokens",
    "fixed_chars",
    "message_chars",
    "messages_chars",
    "prompt_chars",
]

#: Characters per token before any reply calibrated the session.
DEFAULT_CHARS_PER_TOKEN = 4.0
#: Characters counted for a message's role and framing.
MESSAGE_OVERHEAD_CHARS = 16
#: Characters counted for an image or a document part (about a thousand tokens).
ATTACHMENT_CHARS = 4000
#: A calibrated ratio is kept within these bounds (a reply reporting odd usage must not
#: make the next estimate absurd).
_RATIO_BOUNDS = (0.5, 20.0)


def message_chars(message: ChatMessage) -> int:
    """The measure of one message."""
    size = MESSAGE_OVERHEAD_CHARS + len(message.name or "")
    for call in message.tool_calls:
        size += len(call.id) + len(call.name) + len(call.arguments)
    texts = [part.text for part in message.parts if isinstance(part, TextPart)]
    # Parts with text are sent instead of ``content`` (which then only mirrors them for
    # readers): counting both would double the message.
    size += sum(map(len, texts)) if texts else len(message.content)
    return size + ATTACHMENT_CHARS * (len(message.parts) - len(texts))


def messages_chars(messages: Sequence[ChatMessage]) -> int:
    return sum(message_chars(m) for m in messages)


class ConversationMeasure:
    """``messages_chars(state.messages)`` of one session, kept as its conversation grows.

    The fold (actors.agents.session_state) changes the conversation by appending, or by
    replacing it (a compaction or a clear, which bump ``SessionState.conversation_edits``).
    A measure is reused when the conversation is the one measured plus messages at its
    end: the same edit count, at least as many messages, and the same message (the same
    object, or an equal one: the append of a staged step folds its events again, into
    new objects) where the measured ones ended. Then only the new messages are measured;
    anything else is measured whole again. A copy of the conversation (the scratch state
    of a staged step, actors.agents.staged_append) shares its messages: reused too. A
    session that drops messages it measured without a fold (staged events that were not
    appended) calls :meth:`forget`.
    """

    def __init__(self) -> None:
        self._edits = 0
        self._count = 0
        self._last: ChatMessage | None = None
        self._chars = 0
        #: How many times the whole conversation was measured again (for tests and
        #: profiling: a session that only grows never does).
        self.recounts = 0

    def chars(self, state: Conversation) -> int:
        """The measure of ``state``'s conversation (what :func:`messages_chars` gives)."""
        messages = state.messages
        count = len(messages)
        known = self._count
        if (
            state.conversation_edits == self._edits
            and count >= known
            and (known == 0 or _same(messages[known - 1], self._last))
        ):
            if count > known:
                self._chars += messages_chars(messages[known:])
        else:
            self._chars = messages_chars(messages)
            self._edits = state.conversation_edits
            self.recounts += 1
        self._count = count
        self._last = messages[-1] if messages else None
        return self._chars

    def forget(self) -> None:
        """Measure the whole conversation next time (what was measured may not be in it)."""
        self._edits = -1


class Conversation(Protocol):
    """What :class:`ConversationMeasure` reads of a session's state
    (:class:`~.session_state.SessionState`, which imports this module)."""

    @property
    def messages(self) -> Sequence[ChatMessage]: ...

    @property
    def conversation_edits(self) -> int: ...


def _same(message: ChatMessage, last: ChatMessage | None) -> bool:
    return message is last or message == last


def fixed_chars(system: str, tools: Sequence[ToolSpec]) -> int:
    """The measure of what every request of a turn repeats: the system prompt and tools."""
    return len(system) + (len(msgspec.json.encode(list(tools))) if tools else 0)


def prompt_chars(system: str, tools: Sequence[ToolSpec], messages: Sequence[ChatMessage]) -> int:
    """The measure of a whole request (what ``session.model_requested`` records)."""
    return fixed_chars(system, tools) + messages_chars(messages)


def estimate_tokens(chars: int, chars_per_token: float) -> int:
    """Tokens for ``chars`` at ``chars_per_token`` (0 or less: the default ratio)."""
    ratio = chars_per_token if chars_per_token > 0 else DEFAULT_CHARS_PER_TOKEN
    return math.ceil(chars / ratio)


def calibrated_ratio(prompt_chars: int, input_tokens: int) -> float | None:
    """The ratio a reply teaches: ``prompt_chars / input_tokens``, within sane bounds;
    None when either is unknown."""
    if prompt_chars <= 0 or input_tokens <= 0:
        return None
    low, high = _RATIO_BOUNDS
    return min(high, max(low, prompt_chars / input_tokens))
