"""How a session keeps its conversation inside the model's context window.

Before each model request the session estimates the request's size
(:mod:`.context_size`). When it passes ``threshold`` of the room the prompt has (the
context window less the reply's ``max_tokens``, and at least half the window: at most
half is reserved for the reply), the session compacts (:mod:`.compaction`) down toward
``target`` of that room: old tool results are pruned first (trimmed to their head and
tail, then cleared), then, if that is not enough, the turns before the last
``keep_recent_turns`` are summarized by a model (only when they are longer than the
longest summary could be: ``summary_max_tokens``). The pruning
defaults are OpenClaw's context-pruning defaults (results over 4,000 characters keep
their first and last 1,500; the results after the last 3 assistant messages are never
touched).
"""

from __future__ import annotations

import msgspec

from ..errors import ArgumentTypeError, InvalidArgument

__all__ = ["CompactionConfig"]


class CompactionConfig(msgspec.Struct, frozen=True, kw_only=True):
    """When and how a session compacts its conversation (``AgentConfig.compaction``)."""

    #: False: never compact before a request (``System.compact`` still works).
    enabled: bool = True
    #: Compact when the estimated prompt passes this fraction of its room (the context
    #: window less ``AgentConfig.max_tokens``, and at least half the window).
    threshold: float = 0.8
    #: Compact down to this fraction of the room: prune until under it, then summarize.
    target: float = 0.5
    #: Tool results after the last this-many assistant messages are never pruned.
    keep_recent_assistant_messages: int = 3
    #: Older tool results longer than this are trimmed to their first ``trim_head_chars``
    #: and last ``trim_tail_chars`` characters; still too big, they are cleared.
    trim_over_chars: int = 4000
    trim_head_chars: int = 1500
    trim_tail_chars: int = 1500
    #: The most recent completed turns kept word for word when older ones are summarized
    #: (the turn in flight is always kept).
    keep_recent_turns: int = 2
    #: The summary's ``max_tokens``. Turns shorter than a summary this long are not
    #: summarized (the summary could make the conversation longer).
    summary_max_tokens: int = 1024

    def __post_init__(self) -> None:
        # msgspec does not check the types of a Struct built in code: check them here, so
        # a wrong config fails when it is written, not in a session's first request.
        if not isinstance(self.enabled, bool):
            raise ArgumentTypeError(
                "CompactionConfig.enabled", f"must be True or False, got {self.enabled!r}"
            )
        for name in ("threshold", "target"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ArgumentTypeError(
                    f"CompactionConfig.{name}",
                    f"must be a fraction (a float between 0 and 1), got {value!r}",
                )
        if not 0 < self.target < self.threshold <= 1:
            raise InvalidArgument(
                "CompactionConfig",
                "needs 0 < target < threshold <= 1 (fractions of the prompt's room in the "
                f"context window), got target={self.target} and threshold={self.threshold}",
            )
        for name, least in _LEAST.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgumentTypeError(
                    f"CompactionConfig.{name}", f"must be a whole number (int), got {value!r}"
                )
            if value < least:
                raise InvalidArgument(
                    f"CompactionConfig.{name}", f"must be at least {least}, got {value}"
                )
        if self.trim_over_chars <= self.trim_head_chars + self.trim_tail_chars:
            raise InvalidArgument(
                "CompactionConfig.trim_over_chars",
                f"is {self.trim_over_chars}; it must be more than trim_head_chars + "
                f"trim_tail_chars ({self.trim_head_chars + self.trim_tail_chars}): a "
                "trimmed result must come out shorter",
            )


#: The least value of each whole-number setting.
_LEAST = {
    "keep_recent_assistant_messages": 0,
    "keep_recent_turns": 0,
    "trim_over_chars": 1,
    "trim_head_chars": 1,
    "trim_tail_chars": 1,
    "summary_max_tokens": 1,
}
