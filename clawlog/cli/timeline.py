"""``clawlog timeline --html FILE``: the console's swimlane timeline as one HTML file.

    clawlog timeline --html bug-1234.html --correlation 80e4c155638d497a
    clawlog timeline --html last-hour.html --since 2026-11-25T09:00 --agent lead

One self-contained file, for attaching to a bug report: the stylesheets and the script
are inlined, the items and every event's JSON are embedded, and the file's own
Content-Security-Policy forbids every request (it opens offline, and fetches nothing).
It looks and works like the served page (zoom, a click shows an item's events) minus
what needs a server: more windows and live updates.

It holds the last ``--limit`` matching events (default 10,000), or the first ones from
``--since`` on; it says when events were left out. Event text is escaped on the way in
(JSON with ``<``, ``>`` and ``&`` escaped) and set as text on the way out.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from clawlog.events import EventStore

from .errors import CliError
from .points import LogPoint

__all__ = ["DEFAULT_EXPORT_LIMIT", "export_timeline"]

#: Events an export holds unless --limit says otherwise.
DEFAULT_EXPORT_LIMIT = 10_000
_STATIC = Path(__file__).parents[1] / "ui" / "static"


async def export_timeline(store: EventStore, args: argparse.Namespace) -> int:
    """Write the timeline of the events matching ``args``' filters to ``args.html``."""
    from clawlog.ui.templating import environment
    from clawlog.ui.timeline import TimelineFilter, filter_params, first_window
    from clawlog.ui.timeline_pages import page_data

    target = Path(args.html)
    if target.is_dir():
        raise CliError(f"{target} is a directory: give --html a file name (timeline.html)")
    since: LogPoint | None = args.since
    until: LogPoint | None = args.until
    found = TimelineFilter(
        correlation=args.correlation,
        agent=args.agent,
        session=args.session,
        types=tuple(t for spec in args.types for t in spec.replace(",", " ").split())
        if args.types
        else None,
        since=since.time if since else None,
        until=until.time if until else None,
        since_position=since.position if since else None,
        until_position=until.position if until else None,
    )
    limit = args.limit or DEFAULT_EXPORT_LIMIT
    window = await first_window(store, found, limit=limit, documents=True, budget=sys.maxsize)
    truncated = window.more_before if since is None else window.more_after
    params = filter_params(
        found, since=since.text if since else "", until=until.text if until else ""
    )
    page = environment().get_template("timeline_export.html")
    html = page.render(
        export=True,
        error=None,
        data=page_data(window),
        params=params,
        source=_source(args.db),
        exported_at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        truncated=truncated,
        count=window.count,
        console_css=_asset("console.css"),
        timeline_css=_asset("timeline.css"),
        timeline_js=_asset("timeline.js"),
    )
    try:
        target.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {target}: {exc.strerror or exc}") from exc
    note = (
        f"; the {'first' if since else 'last'} {window.count} kept (--limit)" if truncated else ""
    )
    print(
        f"wrote {target}: {len(window.items)} items from {window.count} events in "
        f"{len(window.lanes)} lanes{note}",
        file=sys.stderr,
    )
    return 0


def _asset(name: str) -> str:
    """A static file's text, fit to sit inside a ``<style>`` or ``<script>`` element."""
    text = (_STATIC / name).read_text(encoding="utf-8")
    return text.replace("</", "<\\/")


def _source(db: str) -> str:
    """The log's name for the file's header: a path, or a URL without its password."""
    from .logfile import _redacted

    return _redacted(db) if "://" in db else Path(db).name
