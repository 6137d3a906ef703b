"""When a schedule runs next: cron expressions in a time zone, intervals, one time.

A cron expression is read as wall-clock times in its zone (croniter, on naive local
times), each of which runs once:

- a time that a DST change skips (02:30 on a spring-forward night) runs at the same
  distance after the change (03:30 the new time), unless that is a time the expression
  names anyway (then it runs once);
- a time that occurs twice (01:30 on a fall-back night) runs at its first occurrence
  only. So a daily job runs once a day through both changes; an every-15-minutes job does
  not run again during the repeated hour.

Intervals are real elapsed seconds from their anchor, whatever the zone does.
"""

from __future__ import annotations

import math
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from croniter.croniter import CroniterError

from clawlog.events.domain.routine import Schedule

from ..errors import InvalidSchedule

__all__ = ["check_schedule", "describe_schedule", "next_due"]


def check_schedule(schedule: Schedule, *, min_interval_s: float = 0.0) -> Schedule:
    """``schedule`` if it can run, with its interval at least ``min_interval_s``; else
    :class:`~actors.errors.InvalidSchedule` naming what is wrong."""
    if schedule.kind == "cron":
        _zone(schedule.tz)
        if not schedule.expr.strip() or len(schedule.expr.split()) != 5:
            raise InvalidSchedule(
                f"cron expression {schedule.expr!r} must have 5 fields: minute hour "
                "day-of-month month day-of-week (e.g. '0 9 * * 1-5')"
            )
        try:
            croniter(schedule.expr, datetime(2026, 1, 1))
        except (CroniterError, ValueError, KeyError) as exc:
            raise InvalidSchedule(f"cron expression {schedule.expr!r} is not valid: {exc}") from exc
        try:  # valid, but some expressions name no day that exists ('0 0 30 2 *')
            _next_cron(schedule.expr, _zone(schedule.tz), datetime(2026, 1, 1).timestamp())
            if min_interval_s > 0:
                _check_cron_interval(schedule, min_interval_s)
        except CroniterError as exc:
            raise InvalidSchedule(f"cron expression {schedule.expr!r} never runs: {exc}") from exc
    elif schedule.kind == "every":
        if not math.isfinite(schedule.every_s) or schedule.every_s <= 0:
            raise InvalidSchedule(
                f"every_s must be a positive number of seconds, not {schedule.every_s}"
            )
        if schedule.every_s < min_interval_s:
            raise InvalidSchedule(
                f"an interval of {schedule.every_s:g} s is shorter than the minimum of "
                f"{min_interval_s:g} s"
            )
    elif schedule.kind == "at" and (not math.isfinite(schedule.at) or schedule.at <= 0):
        raise InvalidSchedule("a one-time schedule needs 'at': an ISO time or epoch seconds")
    return schedule


def next_due(schedule: Schedule, after: float) -> float | None:
    """The first time strictly after ``after`` the schedule runs; None if never again."""
    if schedule.kind == "at":
        return schedule.at if schedule.at > after else None
    if schedule.kind == "every":
        anchor = schedule.anchor or after
        if anchor > after:
            return anchor
        steps = math.floor((after - anchor) / schedule.every_s) + 1
        return anchor + steps * schedule.every_s
    return _next_cron(schedule.expr, _zone(schedule.tz), after)


def describe_schedule(schedule: Schedule) -> str:
    """In a few words, for listings and the model."""
    if schedule.kind == "cron":
        return f"cron '{schedule.expr}' ({schedule.tz})"
    if schedule.kind == "every":
        return f"every {_duration(schedule.every_s)}"
    return "once at " + datetime.fromtimestamp(schedule.at, ZoneInfo("UTC")).isoformat()


def _next_cron(expr: str, zone: ZoneInfo, after: float) -> float:
    local = datetime.fromtimestamp(after, zone).replace(tzinfo=None)
    times = croniter(expr, local)
    while True:
        naive: datetime = times.get_next(datetime)
        # fold=0: a skipped time reads with the offset before the change (so later), a
        # repeated time is its first occurrence.
        due = naive.replace(tzinfo=zone, fold=0).timestamp()
        if due > after:
            return due


def _check_cron_interval(schedule: Schedule, min_interval_s: float) -> None:
    zone = _zone(schedule.tz)
    start = datetime(2026, 1, 5, tzinfo=zone).timestamp()
    previous = _next_cron(schedule.expr, zone, start)
    for _ in range(60):  # the shortest gap among its next runs
        due = _next_cron(schedule.expr, zone, previous)
        if due - previous < min_interval_s:
            raise InvalidSchedule(
                f"cron expression {schedule.expr!r} runs {_duration(due - previous)} apart; "
                f"the minimum interval is {_duration(min_interval_s)}"
            )
        previous = due


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidSchedule(
            f"unknown time zone {name!r} (an IANA name like 'Europe/Berlin')"
        ) from exc


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"
