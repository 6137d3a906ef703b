"""What the workspace stores share: the recorder port and the scrubber."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from clawlog.events import Event

__all__ = ["Recorder", "Scrub", "no_scrub"]

#: Appends events to a stream through the actor that owns it, and returns once they are
#: durable. Tools run on the I/O hub and never append themselves (one writer per stream):
#: the system gives the stores a recorder that asks the owning actor to append.
Recorder = Callable[[str, Sequence[Event]], Awaitable[object]]
#: Removes secrets from text before it is recorded (the pipeline's scrubber).
Scrub = Callable[[str], str]


def no_scrub(text: str) -> str:
    return text
