"""``clawlog tail``: the log's last events, then (``-f``) every new one as it lands.

It reads the log itself, not a read model, so it needs only :mod:`clawlog.events`: a
quick start for ``clawlog tail -n 1`` in a script. The replay timeline prints its
events the same way (:func:`print_event`).

Memory is bounded whatever the log's size: ``-n 0`` prints each page as it is read, and
``-n N`` keeps a window of the last N matches. Unfiltered, ``-n N`` starts reading at
``head - N + 1``; ``--since TIME`` jumps to the time's position by binary search
(:func:`~clawlog.cli.points.first_position_at`), then filters on the exact time.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections import deque
from typing import Any

import msgspec

from clawlog.events import EventStore, LogPages, RecordedEvent, UnknownEvent

from .points import LogPoint, first_position_at
from .render import emit_json, event_line, report_skipped

__all__ = ["event_document", "print_event", "summarize", "tail"]

_PAGE = 1000
_DEFAULT_LAST = 50


async def tail(
    store: EventStore,
    *,
    follow: bool,
    last: int | None,
    stream_prefix: str | None,
    types: list[str] | None,
    as_json: bool,
    since: LogPoint | None = None,
    limit: int = 0,
    skip_corrupt: bool = False,
) -> None:
    """The last ``last`` events (0: all; None: 50, or all with ``since``/``limit``) that
    match the filters, from ``since`` on and up to the head as it is now, at most
    ``limit`` of them (0: no limit); with ``follow``, then every new match as it is
    appended (until ``limit`` events were printed)."""
    if last is None:
        last = 0 if since is not None or limit else _DEFAULT_LAST
    head = await store.head_position()
    start, after_time = 1, None
    if since is not None and since.position is not None:
        start = since.position
    elif since is not None and since.time is not None:
        start = await first_position_at(store, since.time, skip_corrupt=skip_corrupt)
        after_time = since.time
    # With a stream or type filter the last N matches can lie anywhere: scan (filtered in
    # SQL) from the start. A time filter is not in the way: the log is in time order.
    if last and stream_prefix is None and not types:
        start = max(head - last + 1, start)
    printer = _Printer(as_json=as_json, limit=limit, after_time=after_time)
    pages = LogPages(
        store,
        start,
        stop=head,
        stream_prefix=stream_prefix,
        types=types,
        page_size=min(_PAGE, limit) if limit and not last else _PAGE,  # no read past it
        skip_corrupt=skip_corrupt,
    )
    skipped: list[int] = []
    try:
        if last:
            await _print_last(pages, last, printer)
        else:
            async for page in pages:
                if not printer.print_page(page):
                    return
        if follow and not printer.done:
            sys.stdout.flush()
            await _follow(store, head + 1, stream_prefix, types, printer, skip_corrupt, skipped)
    finally:
        report_skipped([*pages.skipped, *skipped], pages.damaged)


async def _print_last(pages: LogPages, last: int, printer: _Printer) -> None:
    window: deque[RecordedEvent] = deque(maxlen=last)
    async for page in pages:
        window.extend(r for r in page if printer.wanted(r))
    printer.print_page(list(window))


async def _follow(
    store: EventStore,
    start: int,
    stream_prefix: str | None,
    types: list[str] | None,
    printer: _Printer,
    skip_corrupt: bool,
    skipped: list[int],
) -> None:
    live = store.subscribe(
        start, stream_prefix=stream_prefix, types=types, skip_corrupt=skip_corrupt
    )
    try:
        async with live:
            async for recorded in live:
                if not printer.print_page([recorded]):
                    return
                sys.stdout.flush()  # a follower reads each event as it lands, even piped
    finally:
        skipped.extend(live.skipped)


class _Printer:
    """Prints events, after ``after_time`` only, until ``limit`` were printed."""

    def __init__(self, *, as_json: bool, limit: int, after_time: float | None) -> None:
        self.as_json = as_json
        self.limit = limit
        self.after_time = after_time
        self.printed = 0

    @property
    def done(self) -> bool:
        return bool(self.limit) and self.printed >= self.limit

    def wanted(self, recorded: RecordedEvent) -> bool:
        return self.after_time is None or recorded.recorded_at >= self.after_time

    def print_page(self, page: list[RecordedEvent]) -> bool:
        """Print the wanted events of ``page``; False once ``limit`` is reached."""
        for recorded in page:
            if self.done:
                return False
            if self.wanted(recorded):
                print_event(recorded, as_json=self.as_json)
                self.printed += 1
        return not self.done


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
