"""``clawlog tail``: the log's last events, then (``-f``) every new one as it lands.

It reads the log itself, not a read model, so it needs only :mod:`clawlog.events`: a
quick start for ``clawlog tail -n 1`` in a script. The replay timeline prints its
events the same way (:func:`print_event`).
"""

from __future__ import annotations

import datetime as dt
import sys
from collections import deque
from typing import Any

import msgspec

from clawlog.events import EventStore, RecordedEvent, UnknownEvent

from .render import emit_json, event_line

__all__ = ["event_document", "print_event", "summarize", "tail"]

_PAGE = 1000


async def tail(
    store: EventStore,
    *,
    follow: bool,
    last: int,
    stream_prefix: str | None,
    types: list[str] | None,
    as_json: bool,
) -> None:
    """The last ``last`` events (0: all) that match the filters, up to the head as it is
    now; with ``follow``, then every new match as it is appended."""
    head = await store.head_position()
    # With a filter the last N matches can lie anywhere: scan (filtered in SQL) from 1.
    filtered = stream_prefix is not None or bool(types)
    start = max(head - last + 1, 1) if last and not filtered else 1
    window: deque[RecordedEvent] = deque(maxlen=last or None)
    while start <= head:
        page = await store.read_all(start, _PAGE, stream_prefix=stream_prefix, types=types)
        window.extend(r for r in page if r.position <= head)
        if len(page) < _PAGE:
            break
        start = page[-1].position + 1
    for recorded in window:
        print_event(recorded, as_json=as_json)
    if not follow:
        return
    sys.stdout.flush()
    async with store.subscribe(head + 1, stream_prefix=stream_prefix, types=types) as live:
        async for recorded in live:
            print_event(recorded, as_json=as_json)
            sys.stdout.flush()  # a follower reads each event as it lands, even through a pipe


def print_event(recorded: RecordedEvent, *, as_json: bool) -> None:
    """One line: a JSON object with ``as_json`` (JSON Lines), else for people."""
    if as_json:
        emit_json(event_document(recorded))
        return
    when = dt.datetime.fromtimestamp(recorded.recorded_at, dt.UTC).strftime("%H:%M:%S.%f")
    event_line(recorded.position, when[:-3], recorded.stream, recorded.type, summarize(recorded))


def event_document(recorded: RecordedEvent) -> Any:
    """An event and its envelope as JSON: ``position``, ``stream``, ``type``, ``event``
    (the event's fields) and the envelope's fields. An event of a type this version
    does not know shows its payload decoded, like a known one."""
    if not isinstance(recorded.event, UnknownEvent):
        return recorded
    document = msgspec.to_builtins(recorded)
    document["event"] = {"type": recorded.type, **recorded.event.as_dict()}
    return document


def summarize(recorded: RecordedEvent) -> str:
    """A one-line description of an event's fields."""
    event = recorded.event
    fields = event.as_dict() if isinstance(event, UnknownEvent) else msgspec.to_builtins(event)
    fields.pop("type", None)
    parts = []
    for key, value in fields.items():
        if value in (None, "", [], {}, 0) and key not in ("version",):
            continue
        text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
        parts.append(f"{key}={_one_line(text[:120])}")
    return " ".join(parts)


def _one_line(text: str) -> str:
    # A field's own newlines would split the event over lines (and break `| grep`).
    return text.replace("\r", "\\r").replace("\n", "\\n")
