"""``clawlog replay``: a timeline, the state of a stream as of a position, or a re-run.

    clawlog replay --correlation TURN --type 'tool.*'        # what one turn did
    clawlog replay --as-of 900 --stream team/release         # the board at position 900
    clawlog replay --rerun lead demo-user --deny exec        # what if exec were denied

The log is only read: a re-run drives the agent loop on a throwaway in-memory System.

``--since``/``--until`` take a position, an ISO time or ``@EPOCH`` (``points.py``); a time
is turned into a position range by binary search, then filtered exactly, so a window at
the end of a long log does not read it from position 1. ``--skip-corrupt`` steps over
corrupt events in the timeline and in ``--as-of``; ``--rerun`` refuses it: a re-run
compares the agent's turns with every recorded event, and a hole where a skipped event
was (a model reply, a tool result) would show as a divergence that never happened.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from rich.markup import escape

from clawlog.events import EventStore
from clawlog.projections import TimelineQuery
from clawlog.projections.timeline import Skipped, timeline

from .errors import CliError
from .points import CLOCK_SLACK_S, LogPoint, first_position_at
from .render import console, emit_json, report_skipped, table
from .tail import print_event

if TYPE_CHECKING:
    from clawlog.actors.replay import RerunReport

__all__ = ["print_report", "replay"]

_T = TypeVar("_T")


async def replay(store: EventStore, args: argparse.Namespace) -> int:
    """Run the replay command; the exit status is 1 when a re-run diverged, else 0."""
    skipped = Skipped() if args.skip_corrupt else None
    try:
        if args.rerun is not None:
            if args.as_of is not None or _filters(args):
                raise CliError("--rerun takes no timeline filters and no --as-of")
            if args.skip_corrupt:
                raise CliError(
                    "--rerun cannot --skip-corrupt: it compares with every recorded event "
                    "(`clawlog doctor` lists the corrupt ones)"
                )
            return await _with_the_runtime(_rerun(store, args))
        elif args.as_of is not None:
            if not args.stream:
                raise CliError("--as-of needs --stream (team/..., session/..., agent/...)")
            found = _as_of(store, args.stream, args.as_of, as_json=args.json, skip=skipped)
            await _with_the_runtime(found)
        else:
            if args.deny:
                raise CliError("--deny goes with --rerun")
            if args.model_catalog:
                raise CliError("--model-catalog goes with --rerun")
            await _timeline(store, args, skipped)  # the log alone: no runtime to load
    finally:
        if skipped:
            report_skipped(skipped.positions, skipped.damaged)
    return 0


async def _with_the_runtime(work: Awaitable[_T]) -> _T:
    """``work``'s result, its ReplayError (the runtime's) as a CliError. Imported here:
    the runtime loads only for --as-of and --rerun."""
    from clawlog.actors.errors import ReplayError

    try:
        return await work
    except ReplayError as exc:
        raise CliError(str(exc)) from exc


def _filters(args: argparse.Namespace) -> bool:
    names = ("stream", "stream_prefix", "correlation", "actor", "types", "since", "until")
    return any(getattr(args, n) is not None for n in names)


async def _timeline(store: EventStore, args: argparse.Namespace, skip: Skipped | None) -> None:
    since: LogPoint | None = args.since
    until: LogPoint | None = args.until
    after, up_to = await _bounds(store, since, until, skip_corrupt=skip is not None)
    query = TimelineQuery(
        stream=args.stream,
        stream_prefix=args.stream_prefix,
        correlation_id=args.correlation,
        actor=args.actor,
        types=tuple(args.types) if args.types else None,
        since=since.time if since else None,
        until=until.time if until else None,
    )
    shown = 0
    found = timeline(store, query, after=after, up_to=up_to, limit=args.limit or None, skip=skip)
    async for recorded in found:
        shown += 1
        print_event(recorded, as_json=args.json)
    if not shown and not args.json:
        console().print("[dim]no events match[/dim]")


async def _bounds(
    store: EventStore, since: LogPoint | None, until: LogPoint | None, *, skip_corrupt: bool
) -> tuple[int, int | None]:
    """The position range to read: after ``after``, up to ``up_to`` (None: the head).
    Times are found by binary search with room for writers' clocks (``points.py``); the
    query then filters on the exact times."""
    after, up_to = 0, None
    if since is not None and since.position is not None:
        after = since.position - 1
    elif since is not None and since.time is not None:
        after = await first_position_at(store, since.time, skip_corrupt=skip_corrupt) - 1
    if until is not None and until.position is not None:
        up_to = until.position - 1
    elif until is not None and until.time is not None:
        # Past this position every event is (within the slack) at or after ``until``.
        later = until.time + 2 * CLOCK_SLACK_S
        head = await store.head_position()
        up_to = await first_position_at(store, later, skip_corrupt=skip_corrupt, otherwise=head + 1)
        up_to -= 1
    return after, up_to


async def _as_of(
    store: EventStore, stream: str, position: int, *, as_json: bool, skip: Skipped | None
) -> None:
    if position < 1:
        raise CliError("--as-of takes a log position (1 or more)")
    from clawlog.actors.replay import stream_state_as_of

    found = await stream_state_as_of(store, stream, position=position, skip=skip)
    if found.events == 0:
        raise CliError(f"nothing is recorded on {stream!r} up to position {position}")
    state = msgspec.to_builtins(found.state)
    if as_json:
        emit_json(
            {
                "stream": stream,
                "as_of": position,
                "position": found.position,
                "events": found.events,
                "state": state,
            }
        )
        return
    console().print(
        f"[bold]{escape(stream)}[/bold] as of position {position} "
        f"({found.events} events, the last at {found.position})"
    )
    if stream.startswith("team/"):
        rows = [
            [t["task_id"], t["subject"], t.get("status", ""), t.get("claimed_by") or ""]
            for t in state["tasks"].values()
        ]
        table("task board", ["task", "subject", "status", "by"], rows)
    elif stream.startswith("session/"):
        rows = [[m["role"], _message_text(m)] for m in state["messages"]]
        table("conversation", ["role", "text"], rows)
        state.pop("messages")
        console().print_json(data=state)
    else:
        console().print_json(data=state)


def _message_text(message: dict[str, Any]) -> str:
    calls = ", ".join(f"{c['name']}({c['arguments']})" for c in message.get("tool_calls", []))
    return " ".join(p for p in (message.get("content", ""), calls) if p)


async def _rerun(store: EventStore, args: argparse.Namespace) -> int:
    from clawlog.actors.replay import deny_tools, rerun

    from .model_catalog import load_model_catalog

    agent, session_key = args.rerun
    if args.from_turn < 1 or (args.to_turn is not None and args.to_turn < args.from_turn):
        raise CliError("--from-turn starts at 1 and --to-turn is not before it")
    catalog = load_model_catalog(args.model_catalog) if args.model_catalog else None
    report = await rerun(
        store,
        agent,
        session_key,
        first_turn=args.from_turn,
        last_turn=args.to_turn,
        config=deny_tools(*args.deny) if args.deny else None,
        model_catalog=catalog,
    )
    if args.json:
        emit_json(report)
    else:
        print_report(report, denied=args.deny)
    return 0 if report.divergence is None else 1


def print_report(report: RerunReport, *, denied: list[str]) -> None:
    change = f"denying {', '.join(denied)}" if denied else "the recorded config"
    out = console()
    out.print(
        f"[bold]re-run of {escape(report.stream)}[/bold] ({escape(change)}, "
        f"{report.model} model replies, tool results from the log): "
        f"{report.turns} turn(s) replayed",
        soft_wrap=True,
    )
    same = f"{report.model_replies} model replies and {report.tool_calls} tool calls"
    if report.divergence is None:
        out.print(f"[green]matched[/green]: {same} as recorded")
    else:
        d = report.divergence
        call = f", call {d.call_id} {d.tool}" if d.call_id else ""
        out.print(
            f"[red]diverged[/red] ({d.kind}) at position {d.position}: turn {d.turn} "
            f"({escape(d.turn_id)}), model iteration {d.iteration}{escape(call)}; "
            f"{same} matched before"
        )
        out.print(f"  recorded: {d.recorded}", markup=False)
        out.print(f"  now:      {d.now}", markup=False)
    for note in report.context:
        if note.what == "tools":
            text = f"the tools offered differ ({note.now})"
        else:
            what = {"messages": "conversation"}.get(note.what, note.what.replace("_", " "))
            text = f"the {what} differs: recorded {note.recorded!r}, "
            text += f"now {note.now!r}"
        out.print(f"context at position {note.position}: {text}", markup=False)
