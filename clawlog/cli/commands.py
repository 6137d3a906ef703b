"""What each ``clawlog`` command runs, given its parsed arguments.

Each command imports what it needs when it runs: ``tail`` only the log, the readers the
read models, ``demo`` and ``replay`` the runtime.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys

from clawlog.events import EventStore

from .errors import CliError
from .listing import listing_format
from .logfile import open_log
from .points import Window

__all__ = ["run_command"]


async def run_command(args: argparse.Namespace) -> int:
    """Run one command; returns the exit status (``replay --rerun``: 1 if it diverged)."""
    if args.command == "demo":
        if args.json:
            raise CliError("demo prints for people; run a reader with --json (clawlog --help)")
        from .demo import run_demo

        await run_demo(args.db)
        return 0
    if args.command == "doctor":
        from .doctor import doctor

        # Not through open_log: the doctor also examines a log the store refuses to open
        # (a missing table, a truncated file), and opens a PostgreSQL log itself.
        return await doctor(args.db, as_json=args.json)
    if args.command == "ui":
        if args.json:
            raise CliError("ui serves web pages; it has no --json output")
        from .ui import serve

        return await serve(args)  # opens the log itself, before it listens
    if args.command == "verify":
        from .verify import verify

        return await verify(args)  # opens the log itself (--upgrade: for writing)
    async with open_log(args.db) as store:
        return await _READERS[args.command](store, args)


async def _tail(store: EventStore, args: argparse.Namespace) -> int:
    from .tail import tail

    await tail(
        store,
        follow=args.follow,
        last=args.last,
        stream_prefix=args.stream_prefix,
        types=args.types,
        as_json=args.json,
        since=args.since,
        limit=args.limit,
        skip_corrupt=args.skip_corrupt,
    )
    return 0


def _window(args: argparse.Namespace) -> Window:
    """The listing options every reader command takes."""
    return Window(since=args.since, limit=args.limit, skip_corrupt=args.skip_corrupt)


async def _history(store: EventStore, args: argparse.Namespace) -> int:
    from .readers import history

    form = listing_format(args.json)
    await history(store, args.agent, args.session_key, form=form, window=_window(args))
    return 0


async def _board(store: EventStore, args: argparse.Namespace) -> int:
    from .readers import board

    await board(store, args.team_id, form=listing_format(args.json), window=_window(args))
    return 0


async def _routes(store: EventStore, args: argparse.Namespace) -> int:
    from .readers import routes

    await routes(store, form=listing_format(args.json), window=_window(args))
    return 0


async def _delegations(store: EventStore, args: argparse.Namespace) -> int:
    from .readers import delegations

    form = listing_format(args.json)
    if args.unreturned:
        from .lineage import unreturned_listing

        if args.overdue:
            raise CliError("give --overdue or --unreturned, not both")
        await unreturned_listing(store, form=form, window=_window(args))
        return 0
    await delegations(store, overdue=args.overdue, form=form, window=_window(args))
    return 0


async def _lineage(store: EventStore, args: argparse.Namespace) -> int:
    from .lineage import lineage

    return await lineage(store, args.id, as_json=args.json)


async def _audit(store: EventStore, args: argparse.Namespace) -> int:
    form = listing_format(args.json)
    if args.what_if is not None:
        from .what_if import what_if

        if args.refused:
            raise CliError("--refused lists recorded refusals; --what-if lists changes: use one")
        await what_if(
            store,
            args.what_if,
            agent=args.agent,
            tool=args.tool,
            form=form,
            window=_window(args),
            until=args.until,
        )
        return 0
    if args.until is not None:
        raise CliError("--until applies to --what-if (the calls it decides again)")
    from .readers import audit

    await audit(
        store,
        tool=args.tool,
        agent=args.agent,
        refused=args.refused,
        form=form,
        window=_window(args),
    )
    return 0


async def _usage(store: EventStore, args: argparse.Namespace) -> int:
    from .usage import usage

    await usage(
        store,
        by=args.by,
        agent=args.agent,
        session=args.session,
        form=listing_format(args.json),
        window=_window(args),
    )
    return 0


async def _mcp(store: EventStore, args: argparse.Namespace) -> int:
    from .mcp import mcp

    await mcp(
        store,
        server=args.server,
        state=args.state,
        include_removed=args.all,
        form=listing_format(args.json),
        window=_window(args),
    )
    return 0


async def _rebuild(store: EventStore, args: argparse.Namespace) -> int:
    from clawlog.projections import (
        ALL_PROJECTIONS,
        ProjectionError,
        ProjectionFailed,
        RebuildFailed,
        rebuild,
    )
    from clawlog.projections.timeline import Skipped

    from .render import emit_json, report_skipped
    from .views import default_views_path

    # The file the readers query (PostgreSQL logs keep theirs under ~/.cache).
    views = args.views or str(default_views_path(store))
    projections = [p() for p in ALL_PROJECTIONS]
    progress = not args.json and sys.stderr.isatty()  # a bar is for people watching
    failures: tuple[ProjectionFailed, ...] = ()
    skipped = Skipped() if args.skip_corrupt else None
    try:
        head = await rebuild(store, views, projections, show_progress=progress, skip=skipped)
    except RebuildFailed as exc:
        head, failures = exc.position, exc.failures
    except (ProjectionError, OSError, sqlite3.Error) as exc:
        # A foreign, unwritable or full views file (the log's own failures arrive as
        # EventStoreErrors): name the views file, not the log.
        raise CliError(
            f"cannot rebuild the read models in {views}: {' '.join(str(exc).split())} "
            "(--views FILE puts them elsewhere)"
        ) from exc
    for failure in failures:
        sys.stderr.write(
            f"rebuild: projection {failure.name} failed at position {failure.position}: "
            f"{failure.error}\n"
        )
    if args.json:
        failed = [
            {"projection": f.name, "position": f.position, "error": f.error} for f in failures
        ]
        document = {"views": views, "position": head, "failed": failed}
        if skipped is not None:
            document |= {"skipped": skipped.positions, "damaged": skipped.damaged}
        emit_json(document)
    elif not failures:
        print(f"rebuilt {views} up to position {head}")
    if skipped is not None:
        report_skipped(skipped.positions, skipped.damaged)
    return 1 if failures else 0


async def _replay(store: EventStore, args: argparse.Namespace) -> int:
    from .replay import replay

    return await replay(store, args)


async def _export_otel(store: EventStore, args: argparse.Namespace) -> int:
    from .export_otel import export_otel

    return await export_otel(store, args)


async def _timeline(store: EventStore, args: argparse.Namespace) -> int:
    from .timeline import export_timeline

    return await export_timeline(store, args)


async def _timers(store: EventStore, args: argparse.Namespace) -> int:
    from .timers import timers

    await timers(
        store,
        every_state=args.all,
        stream_prefix=args.stream_prefix,
        kind=args.kind,
        as_json=args.json,
        window=_window(args),
    )
    return 0


async def _tools(store: EventStore, args: argparse.Namespace) -> int:
    from .tools import tools

    window = Window(since=args.since, limit=args.limit)
    await tools(store, agent=args.agent, as_json=args.json, window=window)
    return 0


_READERS = {
    "tail": _tail,
    "history": _history,
    "board": _board,
    "routes": _routes,
    "delegations": _delegations,
    "lineage": _lineage,
    "audit": _audit,
    "usage": _usage,
    "mcp": _mcp,
    "tools": _tools,
    "timers": _timers,
    "rebuild": _rebuild,
    "replay": _replay,
    "export-otel": _export_otel,
    "timeline": _timeline,
}
