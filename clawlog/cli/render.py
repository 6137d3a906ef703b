"""Output for the CLI: tables and event lines for people, JSON for programs.

On a terminal rich draws tables and colours. Anywhere else (a pipe, a file) nothing is
wrapped: tables get an unbounded width and event lines are plain text, so
``clawlog tail | grep`` sees one event per line. rich is imported only when something
is drawn with it, which keeps ``clawlog tail | ...`` quick to start. The listings of the
reader commands print through :class:`~clawlog.cli.listing.Listing` (tables in chunks,
tab-separated lines off a terminal); :func:`table` draws the small fixed ones.
"""

from __future__ import annotations

import datetime as dt
import functools
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "cell_text",
    "console",
    "emit_json",
    "event_line",
    "report_skipped",
    "stdout_is_terminal",
    "table",
]

#: The width rich is given when stdout is not a terminal: no table row ever wraps.
_UNWRAPPED = 1_000_000
#: Positions named one by one in the skip report; the rest are counted.
_NAMED_POSITIONS = 20


@functools.cache
def stdout_is_terminal() -> bool:
    """Asked once: every event line would otherwise cost a system call."""
    return sys.stdout.isatty()


@functools.cache
def console() -> Console:
    """The rich console for stdout (made on first use)."""
    from rich.console import Console

    out = Console(highlight=False)
    if not out.is_terminal:
        out.width = _UNWRAPPED
        out.soft_wrap = True
    return out


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table; cells are text as is (a ``[tag]`` in a task subject is not markup)."""
    from rich.table import Table
    from rich.text import Text

    view = Table(title=Text(title, "table.title"), title_justify="left", show_lines=False)
    for column in columns:
        view.add_column(column, overflow="fold")
    for row in rows:
        view.add_row(*(Text(cell_text(v)) for v in row))
    console().print(view)


def event_line(position: int, when: str, stream: str, type_: str, text: str) -> None:
    """One event on one line: dim position and time, the stream, the type, the fields."""
    if not stdout_is_terminal():
        sys.stdout.write(f"{position:>7} {when} {stream} {type_} {text}\n")
        return
    from rich.text import Text

    line = Text.assemble(
        (f"{position:>7} {when}", "dim"), " ", (stream, "cyan"), " ", (type_, "bold"), " ", text
    )
    console().print(line, soft_wrap=True)


def emit_json(document: Any) -> None:
    """One JSON document on one line of stdout (a JSON Lines stream calls it per item)."""
    sys.stdout.write(msgspec.json.encode(document).decode())
    sys.stdout.write("\n")


def report_skipped(positions: Sequence[int], damaged: Sequence[tuple[int, int]]) -> None:
    """On stderr, what ``--skip-corrupt`` stepped over (nothing if it stepped over
    nothing): "skipped 2 corrupt event(s) at positions 17, 42 and unreadable
    positions 100-180"."""
    if not positions and not damaged:
        return
    parts = []
    if positions:
        named = ", ".join(map(str, positions[:_NAMED_POSITIONS]))
        more = len(positions) - _NAMED_POSITIONS
        if more > 0:
            named += f" and {more} more (`clawlog doctor` lists them all)"
        word = "position" if len(positions) == 1 else "positions"
        parts.append(f"{len(positions)} corrupt event(s) at {word} {named}")
    if damaged:
        ranges = ", ".join(
            f"{first}-{last}" if last != first else str(first) for first, last in damaged
        )
        word = "position" if len(damaged) == 1 and damaged[0][0] == damaged[0][1] else "positions"
        parts.append(f"unreadable {word} {ranges} (damaged pages)")
    sys.stdout.flush()  # what was printed comes before the report on a shared terminal
    sys.stderr.write(f"clawlog: skipped {' and '.join(parts)}\n")


def utc_time(epoch: float) -> str:
    """``epoch`` as ``YYYY-MM-DD HH:MM:SS`` in UTC (the listings' time column)."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def cell_text(value: Any) -> str:
    """A table cell's text: None empty, floats to the millisecond, long text cut."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    text = str(value)
    return text if len(text) <= 300 else text[:297] + "..."
