"""The command line of ``clawlog``: every command and option, with what it does.

Only argparse is imported here, so ``clawlog --help`` and a mistyped option answer at
once, without loading the log, the read models or the runtime. The global options
(``--db``, ``--json``, ``-v``, ``-q``) are accepted before or after the command: each
command repeats them with no default of its own, so one given before the command is not
reset by the command's parser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from .points import parse_point

__all__ = ["DEFAULT_DB", "build_parser", "parse_command_line"]

DEFAULT_DB = "clawlog-demo.db"

#: The commands whose ``--json`` output is one JSON document (the others stream lines).
_SNAPSHOTS = (
    "history",
    "board",
    "routes",
    "delegations",
    "audit",
    "mcp",
    "tools",
    "rebuild",
    "doctor",
)

_DESCRIPTION = """\
clawlog: an event-sourced actor backend for LLM agents.

`clawlog demo` writes a log; every other command only reads one (an SQLite file or a
PostgreSQL database), so it is safe to run beside a live system."""

_EPILOG = f"""\
output:
  On a terminal: tables (of 500 rows at most, the header repeated) and one line per
  event. Elsewhere (a pipe, a file): one tab-separated line per row under one header
  line (a cell's tab, newline and backslash escaped as \\t, \\n, \\\\), and one line per
  event, never wrapped. Everything is printed as it is read, in bounded memory.
  With --json: one JSON document (an object or an array) for the snapshot commands
  ({", ".join(_SNAPSHOTS)}, replay --as-of, replay --rerun),
  and JSON Lines, one event object per line, for the streams (tail, the replay
  timeline). Log messages and errors go to stderr only, so stdout always parses.

where to start:
  --since and --until take a log position (1200), an ISO 8601 time (2026-11-25T09:30,
  UTC unless it has an offset) or epoch seconds after an @ (@1795599000). A plain number
  of 10^9 or more is refused: write @N for epoch seconds. --limit N prints at most N rows.

damaged logs:
  A corrupt event or an unreadable page stops a reader with one line naming the
  position (exit status 2). With --skip-corrupt the readers that can step over it do,
  and say on stderr which positions they skipped; `clawlog doctor` lists them all.

exit status:
  0 done (also when --skip-corrupt skipped rows), 1 a replay --rerun diverged, a
  projection failed during a rebuild, doctor found damage (or stdout was closed
  early), 2 a usage error or a problem with the log (one line on stderr), 130
  interrupted."""


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line on stderr, with exit status 2 (argparse's own status)."""

    #: Each command's own parser (on the top-level parser only).
    commands: dict[str, argparse.ArgumentParser]

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def parse_command_line(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The parsed command line. An option the command does not take is that command's
    usage error (``clawlog tools: unrecognized arguments: --limit 2 (see `clawlog tools
    --help`)``), not the top level's, as argparse alone would report it."""
    parser = build_parser()
    parsed, extra = parser.parse_known_args(argv)
    if extra:
        command = parser.commands.get(getattr(parsed, "command", "") or "", parser)
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    return parsed


class _VersionAction(argparse.Action):
    """``--version``; the version is looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        from clawlog import __version__

        sys.stdout.write(f"clawlog {__version__}\n")
        parser.exit(0)


def build_parser() -> _Parser:
    parser = _Parser(
        prog="clawlog",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    _add_global_options(parser, top=True)
    commands = parser.add_subparsers(
        title="commands",
        dest="command",
        required=True,
        metavar="COMMAND",
        help="one of these; `clawlog COMMAND --help` shows its options",
    )
    parser.commands = {}
    for name, summary, details, add_arguments in _COMMANDS:
        command = commands.add_parser(name, help=summary, description=f"{summary}. {details}")
        _add_global_options(command, top=False, json=name != "demo")
        if add_arguments is not None:
            add_arguments(command)
        parser.commands[name] = command
    return parser


def _add_history(history: argparse.ArgumentParser) -> None:
    history.add_argument("agent", help="the agent's key (e.g. lead)")
    history.add_argument("session_key", help="the session's key, usually the user (demo-user)")
    _add_window(history, rows="entries")


def _add_board(board: argparse.ArgumentParser) -> None:
    board.add_argument("team_id", help="the team's id (e.g. release)")
    _add_window(board, rows="tasks")


def _add_routes(routes: argparse.ArgumentParser) -> None:
    _add_window(routes, rows="routes")


def _add_delegations(delegations: argparse.ArgumentParser) -> None:
    delegations.add_argument(
        "--overdue", action="store_true", help="only those past their deadline without an outcome"
    )
    _add_window(delegations, rows="delegations")


def _add_window(
    command: argparse.ArgumentParser, *, rows: str, limit: bool = True, skip: bool = True
) -> None:
    """``--since``, ``--limit`` and ``--skip-corrupt``, as every listing takes them."""
    window = command.add_argument_group("which rows")
    window.add_argument(
        "--since",
        type=parse_point,
        metavar="WHEN",
        help=f"only {rows} from this log position (1200), ISO time (2026-11-25T09:30) "
        "or @EPOCH seconds on",
    )
    if limit:
        window.add_argument(
            "--limit", type=_count, default=0, metavar="N", help=f"at most N {rows} (0: all)"
        )
    if skip:
        window.add_argument(
            "--skip-corrupt",
            action="store_true",
            help="step over corrupt events and unreadable pages of the log, and say which "
            "positions were skipped (default: stop at the first, exit status 2)",
        )


def _add_rebuild(rebuild: argparse.ArgumentParser) -> None:
    rebuild.add_argument(
        "--views", metavar="FILE", help="the read-model file (default: the readers' own)"
    )
    rebuild.add_argument(
        "--skip-corrupt",
        action="store_true",
        help="step over corrupt events and unreadable pages for good (a row of the log "
        "cannot be fixed), and say which positions were skipped",
    )


def _add_global_options(parser: argparse.ArgumentParser, *, top: bool, json: bool = True) -> None:
    def default(value: Any) -> Any:
        return value if top else argparse.SUPPRESS

    options = parser.add_argument_group("global options (before or after the command)")
    options.add_argument(
        "--db",
        metavar="LOG",
        default=default(DEFAULT_DB),
        help=f"the log: an SQLite file or a postgresql:// URL (default: {DEFAULT_DB})",
    )
    if json:
        options.add_argument(
            "--json",
            action="store_true",
            default=default(False),
            help="machine-readable output on stdout: one JSON document, or JSON Lines "
            "for tail and the replay timeline",
        )
    options.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=default(0),
        help="log more on stderr: -v info, -vv debug (default: warnings and errors)",
    )
    options.add_argument(
        "-q", "--quiet", action="store_true", default=default(False), help="log only errors"
    )


def _add_tail(tail: argparse.ArgumentParser) -> None:
    tail.add_argument(
        "-f", "--follow", action="store_true", help="then print new events as they are appended"
    )
    tail.add_argument(
        "-n",
        "--last",
        type=_count,
        metavar="N",
        help="the last N matching events (0: all; default 50, or all with --since/--limit)",
    )
    tail.add_argument(
        "--stream-prefix", metavar="PREFIX", help="only streams starting with PREFIX (session/)"
    )
    tail.add_argument(
        "--type",
        action="append",
        dest="types",
        metavar="TYPE",
        help="only events of this exact type (tool.call_refused); repeat for several",
    )
    _add_window(tail, rows="events")


def _add_audit(audit: argparse.ArgumentParser) -> None:
    audit.add_argument("--tool", metavar="NAME", help="only calls of this tool (exec)")
    audit.add_argument("--refused", action="store_true", help="only refused calls")
    _add_window(audit, rows="calls")


def _add_tools(tools: argparse.ArgumentParser) -> None:
    tools.add_argument(
        "--agent", metavar="KEY", help="only the tools this agent gets: the global ones and its own"
    )
    _add_window(tools, rows="tools defined", skip=False)


def _add_mcp(mcp: argparse.ArgumentParser) -> None:
    mcp.add_argument("--server", metavar="NAME", help="one server in detail: its tools and grants")
    mcp.add_argument(
        "--state", help="only servers in this state (connected, failed, disconnected, ...)"
    )
    mcp.add_argument("--all", action="store_true", help="include removed servers")
    _add_window(mcp, rows="servers (with --server: tools)")


def _add_replay(command: argparse.ArgumentParser) -> None:
    what = command.add_argument_group("what to show (default: the timeline)")
    what.add_argument(
        "--as-of",
        type=int,
        metavar="POSITION",
        help="the state of --stream as of this log position (one JSON document with --json)",
    )
    what.add_argument(
        "--rerun",
        nargs=2,
        metavar=("AGENT", "SESSION"),
        help="re-run a session's turns on a throwaway System and compare with the log",
    )
    filters = command.add_argument_group("timeline filters (all must match)")
    filters.add_argument("--stream", help="one stream (team/release, session/lead/demo-user)")
    filters.add_argument("--stream-prefix", metavar="PREFIX", help="streams starting with PREFIX")
    filters.add_argument("--correlation", metavar="ID", help="correlation id (a turn, a job)")
    filters.add_argument("--actor", metavar="PATH", help="writer actor path (and those below it)")
    filters.add_argument(
        "--type",
        action="append",
        dest="types",
        metavar="TYPE",
        help="event type, or a family such as 'tool.*'; repeat for several",
    )
    filters.add_argument(
        "--since",
        type=parse_point,
        metavar="WHEN",
        help="from this log position (1200), ISO time (2026-11-25T09:30) or @EPOCH seconds on",
    )
    filters.add_argument(
        "--until",
        type=parse_point,
        metavar="WHEN",
        help="before this position, ISO time or @EPOCH seconds (exclusive)",
    )
    filters.add_argument(
        "-n", "--limit", type=_count, default=0, metavar="N", help="at most N events (0: all)"
    )
    filters.add_argument(
        "--skip-corrupt",
        action="store_true",
        help="step over corrupt events and unreadable pages (the timeline and --as-of; "
        "not --rerun, which compares with every recorded event)",
    )
    rerun = command.add_argument_group("re-run options")
    rerun.add_argument(
        "--deny",
        action="append",
        default=[],
        metavar="TOOL",
        help="re-run as if this tool were denied; repeat for several",
    )
    rerun.add_argument(
        "--from-turn", type=int, default=1, metavar="N", help="first turn to re-run (default 1)"
    )
    rerun.add_argument("--to-turn", type=int, metavar="N", help="last turn (default: the last)")


def _add_export_otel(command: argparse.ArgumentParser) -> None:
    command.add_argument("agent", help="the agent's key (e.g. lead)")
    command.add_argument("session_key", help="the session's key, usually the user (demo-user)")
    where = command.add_mutually_exclusive_group()
    where.add_argument(
        "--console",
        action="store_true",
        help="print the spans on stdout, one JSON object per line (the default)",
    )
    where.add_argument(
        "--otlp",
        metavar="ENDPOINT",
        help="send them to an OTLP/HTTP collector (http://127.0.0.1:4318); needs "
        "pip install opentelemetry-exporter-otlp",
    )
    turns = command.add_argument_group("which turns")
    turns.add_argument(
        "--from-turn", type=int, default=1, metavar="N", help="first turn to export (default 1)"
    )
    turns.add_argument("--to-turn", type=int, metavar="N", help="last turn (default: the last)")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a count (0 or more): {text!r}")
    return value


def _add_doctor(doctor: argparse.ArgumentParser) -> None:
    doctor.add_argument(
        "db",
        nargs="?",
        default=argparse.SUPPRESS,
        metavar="LOG",
        help="the log to examine (the same as --db)",
    )


_SNAPSHOT_JSON = "--json prints one JSON document."
_STREAM_JSON = "--json prints JSON Lines: one event object per line."

#: Every command: its name, what it does (listed by ``clawlog --help``), more for its own
#: ``--help``, and what adds its own arguments.
_COMMANDS: tuple[tuple[str, str, str, Callable[[argparse.ArgumentParser], None] | None], ...] = (
    (
        "demo",
        "run a scripted release team on an SQLite log, then show what the log says",
        "Creates the log, or continues it: a second run adds to the same sessions and board.",
        None,
    ),
    ("tail", "print the log's last events; -f follows new ones", _STREAM_JSON, _add_tail),
    (
        "history",
        "a session's conversation: messages, tool calls, approvals and replies",
        _SNAPSHOT_JSON,
        _add_history,
    ),
    ("board", "a team's task board: tasks, status, who claimed them", _SNAPSHOT_JSON, _add_board),
    ("routes", "which agent answers each chat after a handoff", _SNAPSHOT_JSON, _add_routes),
    (
        "delegations",
        "every delegation's lifecycle: source, target, status",
        _SNAPSHOT_JSON,
        _add_delegations,
    ),
    ("audit", "tool calls: refusals, approvals and outcomes", _SNAPSHOT_JSON, _add_audit),
    ("mcp", "MCP servers: state, transport, tools, last error", _SNAPSHOT_JSON, _add_mcp),
    (
        "tools",
        "custom tools the log defines: scope, command template, parameters, env names",
        "Env values are never shown, only their names. --json prints one JSON array.",
        _add_tools,
    ),
    (
        "rebuild",
        "rebuild every read model from position 1, then swap it in atomically",
        "The readers keep their read models up to date on their own; rebuild after a "
        "projection failed or changed. Exits with status 1, one line per failed projection "
        "on stderr, if a projection fails again. --json prints {views, position, failed}.",
        _add_rebuild,
    ),
    (
        "replay",
        "a timeline of events, a stream's state as of a position, or a session re-run",
        "With --json the timeline is JSON Lines; --as-of and --rerun print one document. "
        "A re-run that diverges from the log exits with status 1.",
        _add_replay,
    ),
    (
        "export-otel",
        "a recorded session as OpenTelemetry spans: one trace per turn, recorded times",
        "The same span tree the live run emits (turns, model requests, tool calls, subagents, "
        "delegations, handoffs, MCP calls), with ids derived from the log: a re-export gives "
        "the same trace ids. Needs pip install opentelemetry-sdk. A turn still running is "
        "left out.",
        _add_export_otel,
    ),
    (
        "doctor",
        "examine a log: SQLite's integrity check, the schema, a decode of every event",
        "Lists each problem (a corrupt event: its position, stream, type and what is wrong; "
        "unreadable positions; a missing table). Exit status 0 healthy, 1 damage found, "
        "2 the log cannot be examined. --json prints {log, integrity, schema, rows, "
        "corrupt, damaged, unread, healthy}.",
        _add_doctor,
    ),
)
