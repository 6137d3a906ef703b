"""The ``clawlog`` command: the demo, and readers over a log."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from .logfile import CliError, open_log

__all__ = ["main"]

DEFAULT_DB = "clawlog-demo.db"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clawlog",
        description="clawlog: an event-sourced actor "
        "backend for LLM agents. Readers never write to the log.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the scripted demo on a SQLite log (continues it)")
    demo.add_argument("--db", default=DEFAULT_DB)

    def reader(name: str, help_: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_)
        command.add_argument("--db", default=DEFAULT_DB, help="log file (or postgresql:// URL)")
        command.add_argument("--json", action="store_true", help="machine-readable output")
        return command

    tail = reader("tail", "print events (-f to follow live)")
    tail.add_argument("-f", "--follow", action="store_true")
    tail.add_argument("-n", "--last", type=int, default=50, help="last N events (0 = all)")
    tail.add_argument("--stream-prefix")
    tail.add_argument("--type", action="append", dest="types")
    history = reader("history", "a session's conversation")
    history.add_argument("agent")
    history.add_argument("session_key")
    board = reader("board", "a team's task board")
    board.add_argument("team_id")
    reader("routes", "current handoff routes")
    delegations = reader("delegations", "every delegation's lifecycle")
    delegations.add_argument(
        "--overdue", action="store_true", help="only those past their deadline without an outcome"
    )
    rebuild = reader("rebuild", "rebuild every read model from position 1 (atomic swap)")
    rebuild.add_argument("--views", help="read-model file (default: <log>.views.db)")
    audit = reader("audit", "tool calls: refusals, approvals and outcomes")
    audit.add_argument("--tool")
    audit.add_argument("--refused", action="store_true")
    mcp = reader("mcp", "MCP servers: state, tools, last error")
    mcp.add_argument("--server", help="one server, with its tool list and grants")
    mcp.add_argument("--state", help="only servers in this state (connected, failed, ...)")
    mcp.add_argument("--all", action="store_true", help="include removed servers")
    from .replay import add_replay_arguments

    add_replay_arguments(reader("replay", "timeline, state as of a position, or a re-run"))
    return parser


async def _run(args: argparse.Namespace) -> int:
    """Run one command; returns the exit status (``replay --rerun``: 1 if it diverged)."""
    from . import readers

    if args.command == "demo":
        from .demo import run_demo

        await run_demo(args.db)
        return 0
    async with open_log(args.db) as store:
        match args.command:
            case "tail":
                await readers.tail(
                    store,
                    follow=args.follow,
                    last=args.last,
                    stream_prefix=args.stream_prefix,
                    types=args.types,
                    as_json=args.json,
                )
            case "history":
                await readers.history(store, args.agent, args.session_key, as_json=args.json)
            case "board":
                await readers.board(store, args.team_id, as_json=args.json)
            case "routes":
                await readers.routes(store, as_json=args.json)
            case "delegations":
                await readers.delegations(store, overdue=args.overdue, as_json=args.json)
            case "rebuild":
                from clawlog.projections import ALL_PROJECTIONS, rebuild

                from .views import default_views_path

                # The file the readers query (PostgreSQL logs keep theirs under ~/.cache).
                views = args.views or str(default_views_path(store))
                head = await rebuild(
                    store, views, [p() for p in ALL_PROJECTIONS], show_progress=not args.json
                )
                if args.json:
                    from .render import emit_json

                    emit_json({"views": views, "position": head})
                else:
                    print(f"rebuilt {views} up to position {head}")
            case "audit":
                await readers.audit(store, tool=args.tool, refused=args.refused, as_json=args.json)
            case "replay":
                from .replay import replay

                return await replay(store, args)
            case "mcp":
                from .mcp import mcp

                await mcp(
                    store,
                    server=args.server,
                    state=args.state,
                    include_removed=args.all,
                    as_json=args.json,
                )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except CliError as exc:
        print(f"clawlog: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
