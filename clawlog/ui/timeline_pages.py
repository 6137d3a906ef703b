"""The timeline's routes: the page, its windows, its events, and its live updates.

- ``GET /timeline?correlation=&agent=&session=&type=&since=&until=``: the page, with the
  first window of items in it (the last matching events, or those from ``since`` on);
- ``GET /timeline/window?before=P`` (or ``after=P``) and the same filters: one more
  window as JSON, when the page is scrolled or zoomed to an edge;
- ``GET /timeline/events?positions=1,2``: the events of a clicked item (position,
  causation, correlation and the payload), as JSON;
- ``GET /timeline/live?after=P`` and the filters: server-sent ``window`` events, one per
  batch of new matching events, from the store's subscription (catch-up then live, so
  nothing between the page's last window and the stream is skipped or repeated).

The page draws itself from the windows' JSON (``static/timeline.js``); every text goes
into the page with ``textContent``, so a payload holding ``<script>`` stays text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from clawlog.events import EventStore

from .console import Console
from .errors import BadFilter
from .templating import render
from .timeline import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    TimelineFilter,
    Window,
    build_window,
    event_documents,
    expand_types,
    filter_params,
    first_window,
    parse_filter,
    window_after,
    window_before,
)

__all__ = ["natural", "page_data", "routes"]

#: Events one click may ask for.
_MAX_EVENTS = 200
#: Matching events per live message at most (a burst arrives in several).
_LIVE_BATCH = 500
#: The largest log position (a 64-bit integer); a larger number is no position.
_MAX_POSITION = 2**63 - 1


def page_data(window: Window) -> str:
    """A window as JSON fit to sit in a ``<script type="application/json">`` element:
    ``<``, ``>`` and ``&`` escaped (inside JSON strings, the only place they occur), so
    no payload can close the element."""
    encoded = msgspec.json.encode(window).decode()
    return encoded.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def natural(text: str) -> int | None:
    """``text`` as a number from 0 to the largest log position, else None (ASCII digits
    only: ``int`` would take ``"١٢"`` and fail on 5,000 digits)."""
    if not text.isascii() or not text.isdigit() or len(text) > len(str(_MAX_POSITION)):
        return None
    value = int(text)
    return value if value <= _MAX_POSITION else None


def _store(request: Request) -> EventStore:
    console: Console = request.app.state.console
    return console.store


def _filter(request: Request) -> TimelineFilter:
    return parse_filter(request.query_params)


def _limit(request: Request) -> int:
    text = request.query_params.get("limit", "")
    if not text:
        return DEFAULT_LIMIT
    value = natural(text)
    if value is None or not 1 <= value <= MAX_LIMIT:
        raise BadFilter(f"limit: {text!r} is not a number of events from 1 to {MAX_LIMIT}")
    return value


def _position(request: Request, name: str) -> int | None:
    text = request.query_params.get(name)
    if text is None:
        return None
    value = natural(text)
    if value is None:
        raise BadFilter(f"{name}: {text!r} is not a log position (0 to {_MAX_POSITION})")
    return value


def _bad(exc: BadFilter) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=400)


async def timeline_page(request: Request) -> Response:
    try:
        found, limit = _filter(request), _limit(request)
    except BadFilter as exc:
        return render(
            request,
            "timeline.html",
            status_code=400,
            title="Timeline",
            page="timeline",
            error=str(exc),
            data=None,
            params=dict(request.query_params),
            export=False,
        )
    window = await first_window(_store(request), found, limit=limit)
    params = filter_params(
        found,
        since=request.query_params.get("since", "").strip(),
        until=request.query_params.get("until", "").strip(),
    )
    if "limit" in request.query_params:  # the page's later windows are as large
        params["limit"] = str(limit)
    return render(
        request,
        "timeline.html",
        title="Timeline",
        page="timeline",
        error=None,
        data=page_data(window),
        params=params,
        export=False,
    )


async def timeline_window(request: Request) -> Response:
    try:
        found, limit = _filter(request), _limit(request)
        before, after = _position(request, "before"), _position(request, "after")
    except BadFilter as exc:
        return _bad(exc)
    store = _store(request)
    if after is not None:
        window = await window_after(store, found, after=after, limit=limit)
    else:
        window = await window_before(store, found, before=before, limit=limit)
    return Response(msgspec.json.encode(window), media_type="application/json")


async def timeline_events(request: Request) -> Response:
    text = request.query_params.get("positions", "")
    wanted = [natural(p) for p in text.split(",") if p]
    if not wanted or None in wanted or len(wanted) > _MAX_EVENTS:
        return _bad(
            BadFilter(
                f"positions: {text!r} is not a comma-separated list of 1 to {_MAX_EVENTS} "
                "log positions"
            )
        )
    store = _store(request)
    found = []
    for position in sorted({p for p in wanted if p is not None}):
        page = await store.read_all(position, 1)
        if page and page[0].position == position:
            found.append(page[0])
    return Response(msgspec.json.encode(event_documents(found)), media_type="application/json")


async def timeline_live(request: Request) -> Response:
    try:
        found = _filter(request)
        after = _position(request, "after")
    except BadFilter as exc:
        return _bad(exc)
    store = _store(request)
    start = (after if after is not None else await store.head_position()) + 1
    return EventSourceResponse(_follow(store, found, start), ping=10)


async def _follow(
    store: EventStore, found: TimelineFilter, start: int
) -> AsyncIterator[dict[str, Any]]:
    """One ``window`` message per batch of new matching events; the subscription reads
    by position, so the switch from the page's windows to live skips and repeats
    nothing. Ends when the client goes (the response cancels it) or the log closes."""
    query = found.query()
    live = store.subscribe(
        start,
        stream_prefix=query.stream_prefix,
        types=expand_types(store, found.types),
        skip_corrupt=True,
    )
    async with live:
        while True:
            try:
                batch = await live.next_batch()
            except StopAsyncIteration:  # the log closed: the app is stopping
                return
            matching = [e for e in batch if query.matches(e) and found.matches(e)]
            for begin in range(0, len(matching), _LIVE_BATCH):
                chunk = matching[begin : begin + _LIVE_BATCH]
                window = build_window(
                    chunk,
                    start=chunk[0].position,
                    end=batch[-1].position,
                    head=live.head_seen,
                    more_before=True,
                    more_after=False,
                )
                yield {"event": "window", "data": msgspec.json.encode(window).decode()}
            if not matching:  # the page's cursor moves on over events it does not show
                yield {"event": "head", "data": str(batch[-1].position)}


routes: list[BaseRoute] = [
    Route("/timeline", timeline_page, methods=["GET"]),
    Route("/timeline/window", timeline_window, methods=["GET"]),
    Route("/timeline/events", timeline_events, methods=["GET"]),
    Route("/timeline/live", timeline_live, methods=["GET"]),
]
