"""Waiting on outcomes: follow the log until what a test waits for is in it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from clawlog.actors import System
from clawlog.events import RecordedEvent

__all__ = ["count", "types", "wait_for_events"]


async def wait_for_events(
    system: System,
    stream: str,
    done: Callable[[list[RecordedEvent]], bool],
    timeout: float = 20.0,
) -> list[RecordedEvent]:
    """Follow ``stream`` from its start until ``done(events so far)``; fail after ``timeout``."""
    seen: list[RecordedEvent] = []
    try:
        async with asyncio.timeout(timeout):
            async with system.store.subscribe(1, stream_prefix=stream) as live:
                async for recorded in live:
                    if recorded.stream != stream:
                        continue
                    seen.append(recorded)
                    if done(seen):
                        return seen
    except TimeoutError:
        pass
    raise AssertionError(f"timed out on {stream}; saw {types(seen)}")


def types(events: Sequence[RecordedEvent]) -> list[str]:
    return [e.type for e in events]


def count(kind: str, at_least: int = 1) -> Callable[[list[RecordedEvent]], bool]:
    return lambda events: sum(1 for e in events if e.type == kind) >= at_least
