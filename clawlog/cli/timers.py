"""``clawlog timers``: durable timers from the ``timers`` read model. By default the
pending ones, due soonest first: owner (the stream whose actor fires it), timer, kind,
what it waits on, when it is due, its misfire policy. ``--all`` adds the fired, skipped and
cancelled ones, in log order of their last event (a schedule's timer shows its latest
occurrence; every firing is in ``clawlog replay --type 'timer.*'``)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import msgspec

from clawlog.events import EventStore
from clawlog.projections import TimerReader
from clawlog.projections.read_models.timers import TimerRow
from clawlog.projections.timeline import Skipped

from .listing import Listing, listing_format
from .points import EVERY_ROW, Window
from .readers import pages
from .render import report_skipped, utc_time
from .views import read_models

__all__ = ["timers"]

_COLUMNS = ["owner", "timer", "kind", "for", "due (UTC)", "misfire", "state", "pos"]


async def timers(
    store: EventStore,
    *,
    every_state: bool = False,
    stream_prefix: str | None = None,
    kind: str | None = None,
    as_json: bool = False,
    window: Window = EVERY_ROW,
) -> None:
    skipped = Skipped() if window.skip_corrupt else None
    async with read_models(store, "timers", skip=skipped) as views:
        reader = TimerReader(views)
        title = "timers" if every_state else "pending timers"
        empty = "no timers in this log" if every_state else "no pending timers"
        with Listing(title, _COLUMNS, listing_format(as_json), empty=empty) as listing:
            if every_state:

                def fetch(after: int, limit: int) -> Awaitable[list[TimerRow]]:
                    return reader.timers(
                        state=None, stream_prefix=stream_prefix, kind=kind, after=after, limit=limit
                    )

                async for row in pages(fetch, window):
                    listing.add(_cells(row), _document(row))
            else:  # due order: pending timers are few (one per schedule, approval, delegation)
                rows = await reader.timers(
                    stream_prefix=stream_prefix,
                    kind=kind,
                    after=window.after,
                    limit=window.limit or -1,
                )
                for row in rows:
                    listing.add(_cells(row), _document(row))
    if skipped:
        report_skipped(skipped.positions, skipped.damaged)


def _cells(row: TimerRow) -> list[Any]:
    return [
        row.stream,
        row.timer_id,
        row.kind,
        row.subject,
        utc_time(row.due_at),
        row.misfire,
        row.state,
        row.position,
    ]


def _document(row: TimerRow) -> dict[str, Any]:
    document: dict[str, Any] = msgspec.to_builtins(row)
    return document
