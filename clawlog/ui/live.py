"""The pages' live stream: ``GET /live?after=P`` sends a ``head`` message per batch of new
events in the log, from the store's subscription (catch-up then live).

Every page but the timeline (which has its own stream of items, ``/timeline/live``)
loads ``static/live.js``: on a ``head`` message it fetches the page again and swaps its
``data-live`` regions (the server's escaped rendering, never event text as markup), so a
page follows the log without a reload and without losing what the operator typed in its
forms. Each message carries its position as the SSE ``id``: a browser that reconnects
sends it back (``Last-Event-ID``) and resumes after it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from clawlog.events import EventStore

from .console import Console
from .timeline_pages import natural

__all__ = ["routes"]

#: Seconds between keep-alive comments on an idle stream (proxies cut silent ones).
_PING_S = 10
#: Events read per batch: a burst becomes one message per batch, not one per event.
_BATCH = 2000


async def live(request: Request) -> Response:
    console: Console = request.app.state.console
    text = request.headers.get("last-event-id") or request.query_params.get("after", "")
    after = natural(text) if text else await console.store.head_position()
    if after is None:
        return JSONResponse(
            {"error": f"after: {text!r} is not a log position (0 or more)"}, status_code=400
        )
    return EventSourceResponse(_heads(console.store, after + 1), ping=_PING_S)


async def _heads(store: EventStore, start: int) -> AsyncIterator[dict[str, Any]]:
    """One ``head`` message (the batch's last position) per batch of new events. Ends
    when the client goes (the response cancels it) or the log closes."""
    async with store.subscribe(start, batch_size=_BATCH, skip_corrupt=True) as events:
        while True:
            try:
                batch = await events.next_batch()
            except StopAsyncIteration:  # the log closed: the app is stopping
                return
            position = str(batch[-1].position)
            yield {"event": "head", "id": position, "data": position}


routes: list[BaseRoute] = [Route("/live", live, methods=["GET"])]
