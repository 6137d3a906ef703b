"""Where a listing starts or stops: a log position or a time (``--since``, ``--until``).

One syntax for every reader command:

- a plain integer is a log position (``--since 1200``: the event at position 1200 and
  after);
- an ISO 8601 time (``2026-11-25T09:30``, UTC when it has no offset) or ``@EPOCH``
  seconds (``@1795599000``, GNU date's convention) is a time.

A plain integer of 10**9 or more is refused with "did you mean @N?": ``replay --since``
used to read a plain number as epoch seconds, and the same text now means a position, so
the changed meaning must not pass silently (no log holds a billion events by accident).

The log scanners (``tail``, the replay timeline) turn a time into a position by binary
search on ``recorded_at`` (:func:`first_position_at`), O(log n) one-row reads, instead of
reading from position 1: the log is appended in time order. Only nearly so with several
PostgreSQL writers: each stamps its batch with its own clock before it waits for the
table lock that assigns positions, so an event can follow one stamped a little later. The
search therefore aims :data:`CLOCK_SLACK_S` earlier and the caller filters on the exact
time after the jump; an event stamped more than that before an event ahead of it in the
log (a writer whose clock is off by more) can be missed.

Only the standard library is imported at module level: ``arguments.py`` parses with it
before anything heavy loads.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clawlog.events import EventStore

__all__ = [
    "CLOCK_SLACK_S",
    "EPOCH_LIKE",
    "EVERY_ROW",
    "LogPoint",
    "Window",
    "first_position_at",
    "parse_point",
]

#: How far out of time order the log's events may be (several PostgreSQL writers).
CLOCK_SLACK_S = 10.0
#: Plain integers from here on look like epoch seconds, not positions: refused.
EPOCH_LIKE = 10**9


@dataclass(frozen=True, slots=True)
class LogPoint:
    """A point in the log as given on the command line: exactly one of ``position``
    (a log position, 1 or more) and ``time`` (epoch seconds) is set."""

    text: str
    position: int | None = None
    time: float | None = None

    def __str__(self) -> str:
        return self.text


def parse_point(text: str) -> LogPoint:
    """A log position, an ISO 8601 time or ``@EPOCH`` seconds (argparse ``type=``)."""
    import datetime as dt  # only when a point is given: `clawlog --help` stays quick

    spelled = text.strip()
    if spelled.isdigit():
        position = int(spelled)
        if position >= EPOCH_LIKE:
            raise argparse.ArgumentTypeError(
                f"{text!r} is read as a log position, and no log is that long: did you mean "
                f"@{position} (epoch seconds)?"
            )
        if position < 1:
            raise argparse.ArgumentTypeError("log positions start at 1")
        return LogPoint(text, position=position)
    if spelled.startswith("@"):
        try:
            return LogPoint(text, time=float(spelled[1:]))
        except ValueError:
            pass
    else:
        try:
            when = dt.datetime.fromisoformat(spelled)
        except ValueError:
            pass
        else:
            return LogPoint(
                text, time=(when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()
            )
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a log position (1200), an ISO time (2026-11-25T09:30, UTC unless "
        "it has an offset) or @EPOCH seconds (@1795599000)"
    )


async def first_position_at(
    store: EventStore, when: float, *, skip_corrupt: bool = False, otherwise: int = 1
) -> int:
    """The first position whose event was recorded at ``when - CLOCK_SLACK_S`` or later
    (the head + 1 if none): where a scan for events since ``when`` starts. The caller
    filters on the exact time. Rows are read undecoded (a corrupt payload does not stop
    the search); a damaged page in its way does, unless ``skip_corrupt``: then the answer
    is ``otherwise`` (the scan then reads the whole range, stepping over the damage)."""
    from clawlog.events import StoreDamaged  # not at import: arguments.py parses with us

    try:
        return await _bisect(store, when)
    except StoreDamaged:
        if not skip_corrupt:
            raise
        return otherwise


async def _bisect(store: EventStore, when: float) -> int:
    target = when - CLOCK_SLACK_S
    low, high = 1, await store.head_position() + 1
    while low < high:
        middle = (low + high) // 2
        rows = await store.backend.read_all(middle, 1, None, None)
        # No row at or after the middle (the log cannot shrink, but be safe): go left.
        if not rows or rows[0].recorded_at >= target:
            high = middle
        else:
            low = rows[0].position + 1
    return low


@dataclass(frozen=True, slots=True)
class Window:
    """Which rows a listing prints: from ``since`` on, at most ``limit`` (0: all), and
    whether corrupt events are stepped over (``--since``, ``--limit``, ``--skip-corrupt``)."""

    since: LogPoint | None = None
    limit: int = 0
    skip_corrupt: bool = False

    @property
    def after(self) -> int:
        """The position cursor a read-model listing starts after (``since`` a position)."""
        return self.since.position - 1 if self.since and self.since.position else 0

    @property
    def since_time(self) -> float | None:
        """``since`` as epoch seconds, if it is a time."""
        return self.since.time if self.since else None


#: No ``--since``, no ``--limit``, no skipping.
EVERY_ROW = Window()
