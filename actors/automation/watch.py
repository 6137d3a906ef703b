"""An event-triggered routine's subscription: the log's matching events, told to its actor.

Runs on the hub for as long as the routine is defined and enabled. It starts after the
routine's cursor (the last position it ran or skipped for), so after a restart it looks at
every event since, and the actor ignores what it has already acted on: each matching event
fires the routine once. Events on the routine's own session and on the routines stream
itself never match (a routine does not trigger itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Any

import msgspec

from clawlog.events import RecordedEvent, StoreClosed
from clawlog.events.domain.routine import EventMatch
from clawlog.events.logging import get_logger

from .messages import EventMatched

__all__ = ["fields_match", "watch_events"]

_log = get_logger(__name__)
#: Seconds between tries while the store cannot be read (it is waited for, not given up).
_RETRY_S = (0.1, 0.5, 1.0, 2.0, 5.0)


async def watch_events(
    store: Any,
    name: str,
    match: EventMatch,
    after: int,
    exclude: Collection[str],
    tell: Callable[[EventMatched], None],
) -> None:
    types = store.registry.expand(match.types)
    position, failures = after, 0
    while True:
        try:
            async with store.subscribe(
                position + 1,
                stream_prefix=match.stream_prefix or None,
                types=types,
                skip_corrupt=True,
            ) as live:
                async for recorded in live:
                    position, failures = recorded.position, 0
                    if recorded.stream in exclude or not fields_match(recorded, match.fields):
                        continue
                    tell(_matched(name, recorded))
            return
        except StoreClosed:
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a store error, or a defect: said, then tried again
            delay = _RETRY_S[min(failures, len(_RETRY_S) - 1)]
            failures += 1
            _log.warning("routine subscription failed; retrying", routine=name, error=str(exc))
            await asyncio.sleep(delay)


def fields_match(recorded: RecordedEvent, fields: dict[str, str]) -> bool:
    """True when the event's payload has each field equal (as text) to its value."""
    for field, expected in fields.items():
        value = getattr(recorded.event, field, None)
        if value is None or _text(value) != expected:
            return False
    return True


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return msgspec.json.encode(value).decode()


def _matched(name: str, recorded: RecordedEvent) -> EventMatched:
    # Whole: the run's message cuts it (routines.PAYLOAD_CHARS), with a notice.
    payload = msgspec.json.encode(recorded.event).decode()
    return EventMatched(
        name=name,
        position=recorded.position,
        stream=recorded.stream,
        type=recorded.type,
        payload=payload,
    )
