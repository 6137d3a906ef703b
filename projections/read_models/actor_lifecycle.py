"""Actor lifecycle: per actor path its status and counters, plus every incident (failure,
restart, escalation, stop, dead letter) in log order."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import msgspec

from clawlog.events import RecordedEvent

from .._sql import insert_rows, select_in
from ..readers import Reader, check_page, log_order, where

__all__ = [
    "ActorIncident",
    "ActorLifecycle",
    "ActorLifecycleReader",
    "ActorStatus",
    "ActorSummary",
    "IncidentKind",
]


#: Where an actor stands after its latest lifecycle event; not_started when only dead
#: letters reached it.
ActorStatus = Literal["not_started", "running", "failed", "restarting", "escalated", "stopped"]
#: The lifecycle event an incident comes from.
IncidentKind = Literal["failed", "restarted", "escalated", "stopped", "dead_letter"]


class ActorSummary(msgspec.Struct, frozen=True):
    """One actor path."""

    path: str
    kind: str | None
    status: ActorStatus
    starts: int
    failures: int
    restarts: int
    escalations: int
    dead_letters: int
    last_error_type: str | None
    last_error: str | None
    #: Groups identical crashes (first 16 hex digits of the traceback's sha256).
    last_traceback_digest: str | None
    stop_reason: str | None
    first_position: int
    last_position: int
    last_at: float


class ActorIncident(msgspec.Struct, frozen=True):
    """A failure, restart, escalation, stop or dead letter of one actor."""

    position: int
    path: str
    kind: IncidentKind
    #: The error type, the dead letter's message type, or the stop reason.
    detail: str
    message: str
    recorded_at: float


_COLUMNS = ", ".join(ActorSummary.__struct_fields__)
_STORE = (
    f"INSERT OR REPLACE INTO actor_lifecycle ({_COLUMNS}) "
    f"VALUES ({', '.join('?' * len(ActorSummary.__struct_fields__))})"
)
_INCIDENT = "INSERT INTO actor_incidents"
(
    _KIND,
    _STATUS,
    _STARTS,
    _FAILURES,
    _RESTARTS,
    _ESCALATIONS,
    _DEAD_LETTERS,
    _ERROR_TYPE,
    _ERROR,
    _DIGEST,
    _STOP_REASON,
    _FIRST,
    _LAST,
    _LAST_AT,
) = range(1, len(ActorSummary.__struct_fields__))


class ActorLifecycle:
    name: ClassVar[str] = "actor_lifecycle"
    version: ClassVar[int] = 1
    table_names: ClassVar[tuple[str, ...]] = ("actor_lifecycle", "actor_incidents")
    tables: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS actor_lifecycle (
        path TEXT PRIMARY KEY, kind TEXT, status TEXT NOT NULL, starts INTEGER NOT NULL,
        failures INTEGER NOT NULL, restarts INTEGER NOT NULL, escalations INTEGER NOT NULL,
        dead_letters INTEGER NOT NULL, last_error_type TEXT, last_error TEXT,
        last_traceback_digest TEXT, stop_reason TEXT, first_position INTEGER NOT NULL,
        last_position INTEGER NOT NULL, last_at REAL NOT NULL) WITHOUT ROWID""",
        "CREATE INDEX IF NOT EXISTS actor_lifecycle_status ON actor_lifecycle (status, path)",
        """CREATE TABLE IF NOT EXISTS actor_incidents (
        position INTEGER PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL,
        detail TEXT NOT NULL, message TEXT NOT NULL, recorded_at REAL NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS actor_incidents_path ON actor_incidents (path, position)",
        "CREATE INDEX IF NOT EXISTS actor_incidents_recorded ON actor_incidents (recorded_at)",
    )
    types: ClassVar[tuple[str, ...]] = (
        "actor.dead_letter",
        "actor.escalated",
        "actor.failed",
        "actor.restarted",
        "actor.started",
        "actor.stopped",
    )

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        self.handle_batch(conn, [recorded])

    def handle_batch(self, conn: sqlite3.Connection, events: list[RecordedEvent]) -> None:
        """Each actor's row is read once, folded in memory and written once per batch
        (a busy actor has thousands of events, each an update of the same row)."""
        paths = list(dict.fromkeys(e.event.path for e in events))  # type: ignore[union-attr]
        actors = {row[0]: list(row) for row in select_in(conn, _SELECT_PATHS, paths)}
        incidents = []
        for recorded in events:
            event: Any = recorded.event
            row = actors.get(event.path)
            if row is None:  # known only from now on (a dead letter may come first)
                first = (recorded.position, recorded.position, recorded.recorded_at)
                row = actors[event.path] = [event.path, None, "not_started", *_ZEROS, *first]
            incident = _change(recorded.type, event, row)
            row[_LAST], row[_LAST_AT] = recorded.position, recorded.recorded_at
            if incident is not None:
                incidents.append((recorded.position, event.path, *incident, recorded.recorded_at))
        conn.executemany(_STORE, actors.values())
        insert_rows(conn, _INCIDENT, incidents)


_SELECT_PATHS = f"SELECT {_COLUMNS} FROM actor_lifecycle WHERE path IN"
#: The five counters, then the error columns and the stop reason, of a new row.
_ZEROS = (0, 0, 0, 0, 0, None, None, None, None)


def _change(tag: str, event: Any, row: list[Any]) -> tuple[IncidentKind, str, str] | None:
    """Apply an event to its actor's row; return its incident row, if it makes one."""
    match tag:
        case "actor.started":
            row[_STATUS], row[_KIND], row[_STARTS] = "running", event.kind, row[_STARTS] + 1
            return None
        case "actor.failed":
            message = event.message[:500]
            row[_STATUS], row[_FAILURES] = "failed", row[_FAILURES] + 1
            row[_ERROR_TYPE], row[_ERROR] = event.error_type, message
            row[_DIGEST] = event.traceback_digest
            return ("failed", event.error_type, message)
        case "actor.restarted":
            row[_STATUS], row[_RESTARTS] = "restarting", row[_RESTARTS] + 1
            return ("restarted", f"attempt {event.attempt}", f"after {event.delay_s:g} s")
        case "actor.escalated":
            row[_STATUS], row[_ESCALATIONS] = "escalated", row[_ESCALATIONS] + 1
            text = f"{event.failures} failures in {event.window_s:g} s: {event.message}"
            return ("escalated", event.error_type, text[:500])
        case "actor.stopped":
            row[_STATUS], row[_STOP_REASON] = "stopped", event.reason
            return ("stopped", event.reason, "")
        case _:  # actor.dead_letter: the status stays what it was
            row[_DEAD_LETTERS] += 1
            return ("dead_letter", event.message_type, event.reason)


class ActorLifecycleReader(Reader):
    projection: ClassVar[str] = "actor_lifecycle"

    async def actors(
        self,
        *,
        status: ActorStatus | None = None,
        kind: str | None = None,
        prefix: str | None = None,
        after: str | None = None,
        limit: int = 100,
        since: float | None = None,
    ) -> list[ActorSummary]:
        """Actors by path; pass the last ``path`` of a page as ``after`` (a listing by
        name pages by name). ``since``: whose last event was at or after it."""
        check_page(0, limit, since)
        clauses: list[str] = ["path > ?"]
        params: list[Any] = [after or ""]
        for column, value in (("status", status), ("kind", kind)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if prefix is not None:
            clauses.append("substr(path, 1, ?) = ?")
            params += [len(prefix), prefix]
        if since is not None:
            clauses.append("last_at >= ?")
            params.append(since)
        rows = await self.models.query(
            f"SELECT {_COLUMNS} FROM actor_lifecycle{where(clauses)} ORDER BY path LIMIT ?",
            [*params, limit],
        )
        return [ActorSummary(*row) for row in rows]

    async def get(self, path: str) -> ActorSummary | None:
        rows = await self.models.query(
            f"SELECT {_COLUMNS} FROM actor_lifecycle WHERE path = ?", (path,)
        )
        return ActorSummary(*rows[0]) if rows else None

    async def incidents(
        self,
        *,
        path: str | None = None,
        kinds: Sequence[IncidentKind] | None = None,
        since: float | None = None,
        until: float | None = None,
        after: int = 0,
        limit: int = 100,
    ) -> list[ActorIncident]:
        """Incidents in log order (``kinds`` e.g. ``["dead_letter"]``); page with
        ``after`` = the last row's ``position``."""
        check_page(after, limit, since)
        clauses, params = log_order("actor_incidents", "recorded_at", after, since)
        if path is not None:
            clauses.append("path = ?")
            params.append(path)
        if kinds:
            clauses.append(f"kind IN ({','.join('?' * len(kinds))})")
            params.extend(kinds)
        if until is not None:
            clauses.append("recorded_at < ?")
            params.append(until)
        rows = await self.models.query(
            f"SELECT * FROM actor_incidents{where(clauses)} ORDER BY position LIMIT ?",
            [*params, limit],
        )
        return [ActorIncident(*row) for row in rows]
