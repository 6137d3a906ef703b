"""Writing a compaction's summary with a model (the agent's summarizer, or its own model).

The part of the conversation being replaced is sent as one transcript in one user
message (tool calls and results as lines, each entry clipped to :data:`ENTRY_CHARS`; an
image or a document a message carried, as a line naming it), under instructions to keep
what the agent needs to go on: goals, decisions, facts, open tasks. An earlier summary
is part of the transcript, so summaries roll up (it is the conversation's first message
when ``SessionState.summary_first`` says so: never taken from a message's text, which a
user could have typed). A transcript too
big for the summarizer's own window keeps its first entry (an earlier summary, or the
first request) and as many of the latest entries as fit.

The call's usage (estimated locally, ``Usage.estimated``, when the summarizer reported
none) and estimated cost are recorded on the ``session.compacted`` it ends in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from clawlog.events.domain.session import (
    ChatMessage,
    CompactionFailed,
    DocumentPart,
    ImagePart,
    SessionCompacted,
    Usage,
)

from ..errors import MalformedReply
from ..providers.base import Model, ModelRequest
from ..providers.catalog import ModelCatalog
from .context_size import estimate_tokens, messages_chars, prompt_chars
from .pruning import SUMMARY_HEADER, summary_message

__all__ = [
    "ENTRY_CHARS",
    "SUMMARIZER_INSTRUCTIONS",
    "ModelSummary",
    "SummaryCut",
    "SummaryOutcome",
    "transcript",
]

#: One transcript entry (a message, a tool call, a result) is clipped to this many chars.
ENTRY_CHARS = 4000

SUMMARIZER_INSTRUCTIONS = (
    "You condense the earlier part of a conversation between a user and an AI assistant "
    "that uses tools, so that the assistant can carry on without it. Keep what it needs: "
    "the user's goals and requests, decisions and their reasons, facts and figures "
    "learned (names, paths, ids, values, results of tool calls that still matter), what "
    "was done, and what is promised or still to do. Drop greetings and details that "
    "were superseded. Write short paragraphs or bullet points in the conversation's "
    "language, in at most {words} words. Add nothing that is not in the conversation."
)


class SummaryOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What a summarizer wrote, and its call's usage."""

    text: str
    model: str = ""
    usage: Usage = msgspec.field(default_factory=Usage)
    cost_usd: float | None = None
    duration_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class SummaryCut:
    """The part of the (pruned) conversation a summary replaces."""

    #: Messages before this index are replaced.
    end: int
    #: The first turn kept word for word ("": none), and the turns replaced.
    kept_from_turn: str
    summarized_turns: list[str]


class ModelSummary:
    """The live summary job of one compaction (a ``compaction.SummaryJob``)."""

    def __init__(
        self,
        *,
        event: SessionCompacted,
        messages: list[ChatMessage],
        cut: SummaryCut,
        fixed_chars: int,
        chars_per_token: float,
        summarizer: Model,
        catalog: ModelCatalog,
        max_tokens: int,
        summarizer_window: int,
        summary_first: bool = False,
    ) -> None:
        self._event = event
        self._messages = messages
        self._cut = cut
        self._fixed_chars = fixed_chars
        self._ratio = chars_per_token
        self._summarizer = summarizer
        self._catalog = catalog
        self._max_tokens = max_tokens
        self._window = summarizer_window
        #: ``messages[0]`` is an earlier summary (``SessionState.summary_first``).
        self._summary_first = summary_first

    @property
    def summarizer_name(self) -> str:
        return self._summarizer.name

    def request(self) -> ModelRequest:
        """The summarizer's request (its transcript fits the summarizer's window: the
        window less the summary's ``max_tokens``, and at least half the window)."""
        name, window = self._summarizer.name, self._window
        budget = int(max(window - self._max_tokens, window // 2) * 0.8 * self._ratio)
        words = max(50, int(self._max_tokens * 0.6))
        return ModelRequest(
            model=name,
            system=SUMMARIZER_INSTRUCTIONS.format(words=words),
            messages=[
                ChatMessage(
                    role="user",
                    content="The conversation so far:\n\n"
                    + transcript(
                        self._messages[: self._cut.end],
                        budget,
                        summary_first=self._summary_first,
                    ),
                )
            ],
            max_tokens=self._max_tokens,
        )

    async def run(self) -> SummaryOutcome:
        request = self.request()
        started = time.perf_counter()
        reply = await self._summarizer.complete(request)
        text = reply.text.strip()
        if not text:
            raise MalformedReply(
                f"the summarizer {self._summarizer.name!r} returned an empty summary"
            )
        model = reply.model or self._summarizer.name
        usage = reply.usage
        if usage.input_tokens == 0 and usage.output_tokens == 0:
            # Like a model reply without usage (actors.agents.metering): estimated, so the
            # summary still counts in the budgets, the ledger and ``clawlog usage``.
            chars = prompt_chars(request.system, request.tools, request.messages)
            usage = Usage(
                input_tokens=estimate_tokens(chars, self._ratio),
                output_tokens=estimate_tokens(len(reply.text), self._ratio),
                estimated=True,
            )
        return SummaryOutcome(
            text=text,
            model=model,
            usage=usage,
            cost_usd=self._catalog.cost_usd(model, usage),
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    def done(self, outcome: SummaryOutcome, scrub: Callable[[str], str]) -> SessionCompacted:
        summary = scrub(outcome.text)
        kept = self._messages[self._cut.end :]
        chars = self._fixed_chars + messages_chars([summary_message(summary), *kept])
        return msgspec.structs.replace(
            self._event,
            summary=summary,
            summarized_turns=list(self._cut.summarized_turns),
            kept_from_turn=self._cut.kept_from_turn,
            replaced_messages=self._cut.end,
            tokens_after=estimate_tokens(chars, self._ratio),
            model=outcome.model,
            usage=outcome.usage,
            cost_usd=outcome.cost_usd,
            duration_ms=outcome.duration_ms,
        )

    def failed(self, error: BaseException, scrub: Callable[[str], str]) -> CompactionFailed:
        return CompactionFailed(
            kind=str(getattr(error, "kind", type(error).__name__)),
            message=scrub(str(error))[:2000] or type(error).__name__,
            turn_id=self._event.turn_id,
            iteration=self._event.iteration,
            trigger=self._event.trigger,
            model=self._summarizer.name,
            pruned=len(self._event.pruned),
        )


def transcript(
    messages: list[ChatMessage], budget_chars: int, *, summary_first: bool = False
) -> str:
    """``messages`` as transcript lines, within ``budget_chars`` (first entry and the
    latest ones kept; a line says how many were left out between). ``summary_first``:
    ``messages[0]`` is an earlier summary (as the session's fold recorded it)."""
    entries = [
        entry
        for index, message in enumerate(messages)
        for entry in _entries(message, summary=summary_first and index == 0)
    ]
    total = sum(len(e) + 2 for e in entries)
    if total <= budget_chars or len(entries) < 3:
        return "\n\n".join(entries)
    first, rest = entries[0], entries[1:]
    room = budget_chars - len(first) - 80
    kept: list[str] = []
    for entry in reversed(rest):
        if room - len(entry) - 2 < 0:
            break
        room -= len(entry) + 2
        kept.append(entry)
    kept.reverse()
    omitted = len(rest) - len(kept)
    return "\n\n".join([first, f"[… {omitted} entries left out to fit …]", *kept])


def _entries(message: ChatMessage, *, summary: bool) -> list[str]:
    if summary:
        return ["Summary of what came before:\n" + _clip(message.content[len(SUMMARY_HEADER) :])]
    if message.role == "tool":
        what = "Error from" if message.is_error else "Result of"
        return [f"{what} {message.name or 'a tool'}: {_clip(message.content)}"]
    speaker = "User" if message.role == "user" else "Assistant"
    entries = [f"{speaker}: {_clip(message.content)}"] if message.content else []
    entries += [  # what the summarizer cannot see is named, not dropped unsaid
        f"{speaker} attached {_attachment(part)}"
        for part in message.parts
        if isinstance(part, ImagePart | DocumentPart)
    ]
    entries += [
        f"Assistant called {call.name}({_clip(call.arguments, 1000)})"
        for call in message.tool_calls
    ]
    return entries


def _attachment(part: ImagePart | DocumentPart) -> str:
    """``an image (image/png)``, ``a document (report.pdf)``, ``an image (https://...)``."""
    what = "an image" if isinstance(part, ImagePart) else "a document"
    name = part.filename if isinstance(part, DocumentPart) else ""
    return f"{what} ({_clip(name or part.url or part.media_type, 200)})"


def _clip(text: str, limit: int = ENTRY_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
