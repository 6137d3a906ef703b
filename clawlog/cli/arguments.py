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
    "lineage",
    "audit",
    "usage",
    "mcp",
    "tools",
    "timers",
    "rebuild",
    "doctor",
    "verify",
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
  projection failed during a rebuild, doctor found damage, verify found a break in
  the hash chain (or stdout was closed early), 2 a usage error or a problem with the
  log (one line on stderr), 130 interrupted."""


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
        _add_global_options(command, top=False, json=name not in ("demo", "ui", "timeline"))
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
    delegations.add_argument(
        "--unreturned",
        action="store_true",
        help="every delegation and subagent result that never reached its caller (finished "
        "but not delivered included), read from the log",
    )
    _add_window(delegations, rows="delegations")


def _add_lineage(lineage: argparse.ArgumentParser) -> None:
    lineage.add_argument(
        "id",
        metavar="ID",
        help="a delegation id (dg-...), a subagent task id (sa-...), the tool call that asked "
        "(delegate, spawn or handoff) or the caller's turn id (every request of that turn)",
    )


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
    audit.add_argument("--agent", metavar="KEY", help="only calls of this agent's sessions")
    audit.add_argument("--refused", action="store_true", help="only refused calls")
    audit.add_argument(
        "--what-if",
        metavar="POLICY_FILE",
        help="decide every recorded call again under this policy (.toml or .json) and list "
        "the calls whose outcome would change, both ways, with totals (--limit: rows listed); "
        "the policy's digest shown is --agent's (as its verdicts record it), else the global "
        "one",
    )
    audit.add_argument(
        "--until",
        type=parse_point,
        metavar="WHEN",
        help="with --what-if: only calls requested before this log position, ISO time or "
        "@EPOCH seconds (exclusive)",
    )
    _add_window(audit, rows="calls")


def _add_usage(usage: argparse.ArgumentParser) -> None:
    usage.add_argument("--agent", metavar="KEY", help="only this agent's model replies")
    usage.add_argument(
        "--session", metavar="KEY", help="only the replies of sessions with this session key"
    )
    usage.add_argument(
        "--by",
        choices=("agent", "session", "model", "day"),
        default="agent",
        help="one row per agent (default), session, model or UTC day",
    )
    _add_window(usage, rows="replies recorded", limit=False)
    usage.add_argument(
        "--limit", type=_count, default=0, metavar="N", help="at most N rows (0: all)"
    )


def _add_tools(tools: argparse.ArgumentParser) -> None:
    tools.add_argument(
        "--agent", metavar="KEY", help="only the tools this agent gets: the global ones and its own"
    )
    _add_window(tools, rows="tools defined", skip=False)


def _add_timers(timers: argparse.ArgumentParser) -> None:
    timers.add_argument(
        "--all", action="store_true", help="fired, skipped and cancelled timers too (log order)"
    )
    timers.add_argument(
        "--stream-prefix", metavar="P", help="only timers of owners whose stream starts with P"
    )
    timers.add_argument(
        "--kind", help="only this kind (approval, delegation_deadline, cron, heartbeat, routine)"
    )
    _add_window(timers, rows="timers")


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
    rerun.add_argument(
        "--model-catalog",
        metavar="FILE",
        help="JSON file of the application's models and prices, added to the default "
        'catalog ({"models": [{"name": ..., "context_window": ..., ...}]}): needed when '
        "the agent has a cost budget on a model only the application prices",
    )


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


def _port(text: str) -> int:
    value = _count(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a port (0 to 65535): {text!r}")
    return value


def _add_ui(ui: argparse.ArgumentParser) -> None:
    ui.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only; on any other "
        "every request needs a token: --token, CLAWLOG_UI_TOKEN, or one made at start)",
    )
    ui.add_argument(
        "--port", type=_port, default=8765, help="the port (default: 8765; 0: any free one)"
    )
    ui.add_argument(
        "--token",
        default=None,
        help="a secret every request must carry (the printed URL has it); default "
        "CLAWLOG_UI_TOKEN, else off loopback a random one is made and printed",
    )


def _add_timeline(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--html",
        required=True,
        metavar="FILE",
        help="write the timeline to FILE: one self-contained HTML page (no external assets)",
    )
    filters = command.add_argument_group("filters (all must match)")
    filters.add_argument("--correlation", metavar="ID", help="correlation id (a turn, a job)")
    filters.add_argument(
        "--agent", metavar="KEY", help="an agent's streams and the events that name it"
    )
    filters.add_argument(
        "--session",
        metavar="STREAM",
        help="one stream (session/lead/demo-user, subagent/sa-1), or a prefix ending in /",
    )
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
        "-n",
        "--limit",
        type=_count,
        default=0,
        metavar="N",
        help="at most N events: the last N, or the first N from --since on (default 10000)",
    )


def _add_doctor(doctor: argparse.ArgumentParser) -> None:
    doctor.add_argument(
        "db",
        nargs="?",
        default=argparse.SUPPRESS,
        metavar="LOG",
        help="the log to examine (the same as --db)",
    )


def _add_verify(verify: argparse.ArgumentParser) -> None:
    verify.add_argument(
        "--from",
        dest="from_position",
        type=_position,
        default=1,
        metavar="POS",
        help="check from this position on, trusting the hash stored at the one before",
    )
    what = verify.add_mutually_exclusive_group()
    what.add_argument(
        "--head",
        action="store_true",
        help="print the head's position and hash (to anchor elsewhere; --json: a checkpoint)",
    )
    what.add_argument(
        "--sign",
        metavar="KEYFILE",
        help="check the chain, then print the head as a checkpoint signed with this Ed25519 "
        "private key (PEM)",
    )
    what.add_argument(
        "--checkpoint",
        metavar="FILE",
        help="also check the log against a checkpoint (--head --json or --sign output): "
        "the chain must reproduce its hash at its position",
    )
    what.add_argument(
        "--new-key",
        metavar="FILE",
        help="write a new Ed25519 key pair: FILE (private, mode 600) and FILE.pub",
    )
    verify.add_argument(
        "--public-key",
        metavar="PUB",
        help="the Ed25519 public key (PEM) that must have signed --checkpoint",
    )
    verify.add_argument(
        "--upgrade",
        action="store_true",
        help="open the log for writing first (SQLite or PostgreSQL): a log from before "
        "the chain gets one",
    )


def _position(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a log position (1 or more): {text!r}")
    return value


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
    (
        "lineage",
        "one request's chain: the turn that asked, who worked, what came back, where it landed",
        "For a delegation, a subagent task or a handoff: the asking turn and call (agent, "
        "session, position), the target's turns, the outcome and its position, and the "
        "caller's turn or call end that received it, or 'not delivered'. Read from the log. "
        "An ID no request has is an error (exit status 2). --json prints one JSON array.",
        _add_lineage,
    ),
    (
        "audit",
        "tool calls: refusals, approvals, outcomes and verdicts; --what-if: under another policy",
        "--json prints one JSON document (with --what-if: {policy, agent, digest, changes, "
        "totals}, where digest is the policy's for --agent KEY, as KEY's recorded verdicts "
        "carry it; without --agent, global_digest: over every agent, matching no verdict). "
        "--what-if lists the recorded calls another policy would decide differently (exit "
        "status 0 whatever changes); the totals follow the table, on stderr off a terminal.",
        _add_audit,
    ),
    (
        "usage",
        "model tokens and estimated cost: totals per agent, session, model or day",
        "Tokens as the providers reported them (est.: replies without a report, estimated); "
        "costs estimated from the model catalog's prices when each reply was recorded "
        "(unpriced: replies of models without a price). --limit counts groups. On a "
        "terminal a last row sums them. --json prints one JSON array.",
        _add_usage,
    ),
    ("mcp", "MCP servers: state, transport, tools, last error", _SNAPSHOT_JSON, _add_mcp),
    (
        "tools",
        "custom tools the log defines: scope, command template, parameters, env names",
        "Env values are never shown, only their names. --json prints one JSON array.",
        _add_tools,
    ),
    (
        "timers",
        "durable timers: pending ones due soonest first, with owner and misfire policy",
        "Approval timeouts, delegation deadlines, cron jobs, heartbeats and routines, read "
        "from the timers read model; --all adds the ones that fired, were skipped or "
        "cancelled. --json prints one JSON array.",
        _add_timers,
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
        "ui",
        "serve a read-only web console over the log: pages, a live timeline, the audit",
        "Prints its URL. Loopback by default; --host elsewhere needs a token (--token, "
        "CLAWLOG_UI_TOKEN, or a random one printed in the URL), checked on every request "
        "(401 without it). Never writes the log; follows it while writers run.",
        _add_ui,
    ),
    (
        "timeline",
        "write the swimlane timeline to one self-contained HTML file, for a bug report",
        "The console's timeline (lanes per actor, tool calls by outcome, arrows for "
        "delegations, subagents and handoffs; zoom; a click shows the events as JSON) with "
        "its styles, script and events inlined: it opens offline and makes no request.",
        _add_timeline,
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
    (
        "verify",
        "check the log's hash chain: the first edited, deleted, inserted or moved event",
        "Exit status 0 intact, 1 a break (one line naming its position and kind), 2 the "
        "log cannot be checked. --head prints the head to anchor elsewhere; --sign and "
        "--checkpoint sign it and check the log against it later. --json prints one JSON "
        "document.",
        _add_verify,
    ),
)
