"""The ways to write a routine's trigger (``Trigger.cron(...)``, ``Trigger.on_event(...)``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from clawlog.events.domain.routine import EventMatch, RoutineTrigger, Schedule

from ..errors import InvalidSchedule
from .schedule import check_schedule

__all__ = ["Trigger"]


class Trigger:
    """Builds a :class:`RoutineTrigger`; each checks its arguments at once."""

    @staticmethod
    def cron(expr: str, tz: str = "UTC") -> RoutineTrigger:
        """A 5-field cron expression read in time zone ``tz`` (an IANA name)."""
        schedule = check_schedule(Schedule(kind="cron", expr=expr, tz=tz))
        return RoutineTrigger(kind="schedule", schedule=schedule)

    @staticmethod
    def every(seconds: float, *, start: float | datetime | None = None) -> RoutineTrigger:
        """Every ``seconds``, first at ``start`` (default: one interval after it is defined)."""
        anchor = _epoch(start) if start is not None else 0.0
        schedule = check_schedule(Schedule(kind="every", every_s=float(seconds), anchor=anchor))
        return RoutineTrigger(kind="schedule", schedule=schedule)

    @staticmethod
    def at(when: float | datetime | str) -> RoutineTrigger:
        """Once, at ``when``: epoch seconds, an aware datetime or an ISO 8601 time (UTC
        unless it has an offset)."""
        schedule = check_schedule(Schedule(kind="at", at=_epoch(when)))
        return RoutineTrigger(kind="schedule", schedule=schedule)

    @staticmethod
    def on_event(
        *types: str, stream_prefix: str = "", fields: Mapping[str, str] | None = None
    ) -> RoutineTrigger:
        """Each event of one of ``types`` (a tag, or a domain's glob like ``tool.*``)
        recorded after the routine is defined, on streams starting with
        ``stream_prefix``, whose payload has ``fields`` (compared as text)."""
        if not types or not all(isinstance(t, str) and t for t in types):
            raise InvalidSchedule(
                "on_event needs at least one event type, e.g. 'tool.call_refused'"
            )
        match = EventMatch(
            types=list(types), stream_prefix=stream_prefix, fields=dict(fields or {})
        )
        return RoutineTrigger(kind="event", event=match)

    @staticmethod
    def webhook() -> RoutineTrigger:
        """Runs when the application forwards a webhook (``System.routines.webhook``)."""
        return RoutineTrigger(kind="webhook")

    @staticmethod
    def manual() -> RoutineTrigger:
        """Runs only when asked (``System.routines.run``)."""
        return RoutineTrigger(kind="manual")


def _epoch(when: float | datetime | str) -> float:
    if isinstance(when, str):
        try:
            when = datetime.fromisoformat(when)
        except ValueError as exc:
            raise InvalidSchedule(f"{when!r} is not an ISO 8601 time") from exc
        if when.tzinfo is None:
            from datetime import UTC

            when = when.replace(tzinfo=UTC)
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise InvalidSchedule("give an aware datetime (with a tzinfo), not a naive one")
        return when.timestamp()
    if isinstance(when, bool) or not isinstance(when, int | float):
        raise InvalidSchedule(
            f"a time is epoch seconds, a datetime or ISO text, not {type(when).__name__}"
        )
    return float(when)
