"""The compacted form of a conversation: pruned tool results and the summary message.

Pruning (decided by :func:`plan_pruning`, recorded as ``PrunedResult`` entries of a
``session.compacted`` event, applied by :func:`apply_pruning` when the conversation is
folded from the log):

- Only tool results are pruned, and only those before the last
  ``keep_recent_assistant_messages`` assistant messages: what the model is working on
  stays whole. Results with content parts (an image, a document) are never pruned.
- First every such result longer than ``trim_over_chars`` is trimmed: its first
  ``trim_head_chars`` and last ``trim_tail_chars`` characters are kept around a notice
  saying how much was cut (the head and tail of a file, a listing or a command's output
  usually say most).
- If the prompt is still over the target, those results are cleared, oldest first, until
  it is under: the result is replaced by a notice.

The notices tell the model the full result is in the log (it can call the tool again).
Their wording is part of what a re-run compares: it never changes for recorded events.
These are the rules and defaults of OpenClaw's context pruning (``contextPruning``:
``keepLastAssistants`` 3, ``softTrim`` 4000 / 1500 / 1500, ``hardClear``), the pruning
the claw seeds' tool results are written for.

A summary replaces the messages before the turn it keeps first with one user message
starting with :data:`SUMMARY_HEADER` (:func:`summary_message`). That message is known by
its place, never by its text (a user can type the header): the fold of the
``session.compacted`` that wrote it sets ``SessionState.summary_first``, and a
``session.cleared`` unsets it.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from clawlog.events.domain.session import ChatMessage, PrunedResult

from .compaction_config import CompactionConfig

__all__ = [
    "SUMMARY_HEADER",
    "apply_pruning",
    "cleared_text",
    "plan_pruning",
    "prunable",
    "summary_message",
    "trimmed_text",
]

SUMMARY_HEADER = (
    "[Summary of the earlier conversation, written when it was compacted to fit the "
    "context window; the full history is in the log]\n\n"
)
_CLEARED = "[old tool result cleared to save context: {chars} characters; call the tool again"
_CLEARED_END = " if you need it]"


def trimmed_text(content: str, head: int, tail: int) -> str:
    """``content`` trimmed to its first ``head`` and last ``tail`` characters."""
    if len(content) <= head + tail:
        return content
    removed = len(content) - head - tail
    notice = f"\n[… {removed} characters of this old tool result were pruned to save context …]\n"
    return content[:head] + notice + content[len(content) - tail :]


def cleared_text(chars: int) -> str:
    """What a cleared result of ``chars`` characters becomes."""
    return _CLEARED.format(chars=chars) + _CLEARED_END


def _is_cleared(content: str) -> bool:
    return content.startswith("[old tool result cleared to save context: ")


def prunable(messages: Sequence[ChatMessage], keep_recent_assistant_messages: int) -> list[int]:
    """Indices of the tool results that may be pruned (not cleared yet), oldest first."""
    end = len(messages)
    if keep_recent_assistant_messages > 0:
        seen = 0
        for index in range(len(messages) - 1, -1, -1):
            if messages[index].role == "assistant":
                seen += 1
                if seen == keep_recent_assistant_messages:
                    end = index
                    break
        else:
            return []  # fewer assistant messages than kept: nothing is old enough
    return [
        index
        for index in range(end)
        if messages[index].role == "tool"
        and messages[index].tool_call_id
        and not messages[index].parts
        and not _is_cleared(messages[index].content)
    ]


def plan_pruning(
    messages: Sequence[ChatMessage],
    config: CompactionConfig,
    excess_chars: int,
    positions: Sequence[int] = (),
) -> list[PrunedResult]:
    """The results to prune to save ``excess_chars`` characters: every long one trimmed,
    then (while still short of the saving) cleared oldest first. ``positions`` are the
    messages' log positions (``SessionState.positions``): each entry names its result's."""
    candidates = prunable(messages, config.keep_recent_assistant_messages)
    head, tail = config.trim_head_chars, config.trim_tail_chars
    decided: dict[int, PrunedResult] = {}
    sizes: dict[int, int] = {}
    saved = 0
    for index in candidates:
        message = messages[index]
        chars = len(message.content)
        sizes[index] = chars
        if chars > config.trim_over_chars:
            assert message.tool_call_id is not None
            decided[index] = PrunedResult(
                call_id=message.tool_call_id,
                mode="trimmed",
                chars=chars,
                head_chars=head,
                tail_chars=tail,
            )
            sizes[index] = len(trimmed_text(message.content, head, tail))
            saved += chars - sizes[index]
    for index in candidates:
        if saved >= excess_chars:
            break
        message = messages[index]
        chars = len(message.content)
        cleared = len(cleared_text(chars))
        if sizes[index] <= cleared:
            continue
        assert message.tool_call_id is not None
        decided[index] = PrunedResult(call_id=message.tool_call_id, mode="cleared", chars=chars)
        saved += sizes[index] - cleared
        sizes[index] = cleared
    return [
        msgspec.structs.replace(decided[index], position=positions[index])
        if index < len(positions) and positions[index]
        else decided[index]
        for index in sorted(decided)
    ]


def apply_pruning(messages: list[ChatMessage], pruned: Sequence[PrunedResult]) -> list[ChatMessage]:
    """``messages`` with the ``pruned`` results cut down (a new list; the rest shared)."""
    if not pruned:
        return messages
    by_call = {entry.call_id: entry for entry in pruned}
    out: list[ChatMessage] = []
    for message in messages:
        entry = by_call.get(message.tool_call_id or "") if message.role == "tool" else None
        if entry is not None:
            if entry.mode == "trimmed":
                text = trimmed_text(message.content, entry.head_chars, entry.tail_chars)
            else:
                text = cleared_text(entry.chars or len(message.content))
            message = msgspec.structs.replace(message, content=text)
        out.append(message)
    return out


def summary_message(summary: str) -> ChatMessage:
    """The message a summary of the earlier conversation becomes."""
    return ChatMessage(role="user", content=SUMMARY_HEADER + summary)
