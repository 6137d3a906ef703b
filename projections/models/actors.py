"""Actor lifecycle: per actor path its status and counters, plus every incident (failure,
restart, escalation, stop, dead letter) in log order."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, ClassVar

import msgspec

from events import RecordedEvent

from ..readers import Reader, where

__all__ = ["ActorIncident", "ActorLifecycle", "ActorLifecycleReader", "ActorSummary"]


class ActorSummary(msgspec.Struct, frozen=True):
    """One actor path. ``status``: running | failed | restarting | escalated | stopped,
    or not_started when only dead letters reached it."""

    path: str
    kind: str | None
    status: str
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
    """``kind``: failed | restarted | escalated | stopped | dead_letter."""

    position: int
    path: str
    kind: str
    #: The error type, the dead letter's message type, or the stop reason.
    detail: str
    message: str
    recorded_at: float


_COLUMNS = ", ".join(ActorSummary.__struct_fields__)
_ENSURE = (
    "INSERT OR IGNORE INTO actor_lifecycle (path, status, starts, failures, restarts, "
    "escalations, dead_letters, first_position, last_position, last_at) "
    "VALUES (?, 'not_started', 0, 0, 0, 0, 0, ?, ?, ?)"
)
_INCIDENT = "INSERT INTO actor_incidents VALUES (?, ?, ?, ?, ?, ?)"


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
        event: Any = recorded.event
        at = recorded.recorded_at
        conn.execute(_ENSURE, (event.path, recorded.position, recorded.position, at))
        assignments, params, incident = _change(recorded.type, event)
        conn.execute(
            f"UPDATE actor_lifecycle SET {', '.join(assignments)}, last_position = ?, "
            "last_at = ? WHERE path = ?",
            (*params, recorded.position, at, event.path),
        )
        if incident is not None:
            conn.execute(_INCIDENT, (recorded.position, event.path, *incident, at))


def _change(tag: str, event: Any) -> tuple[list[str], list[Any], tuple[str, str, str] | None]:
    """The SET clauses and parameters an event applies, and its incident row."""
    match tag:
        case "actor.started":
            return ["status = 'running'", "kind = ?", "starts = starts + 1"], [event.kind], None
        case "actor.failed":
            message = event.message[:500]
            return (
                [
                    "status = 'failed'",
                    "failures = failures + 1",
                    "last_error_type = ?",
                    "last_error = ?",
                    "last_traceback_digest = ?",
                ],
                [event.error_type, message, event.traceback_digest],
                ("failed", event.error_type, message),
            )
        case "actor.restarted":
            incident = ("restarted", f"attempt {event.attempt}", f"after {event.delay_s:g} s")
            return ["status = 'restarting'", "restarts = restarts + 1"], [], incident
        case "actor.escalated":
            text = f"{event.failures} failures in {event.window_s:g} s: {event.message}"
            incident = ("escalated", event.error_type, text[:500])
            return ["status = 'escalated'", "escalations = escalations + 1"], [], incident
        case "actor.stopped":
            incident = ("stopped", event.reason, "")
            return ["status = 'stopped'", "stop_reason = ?"], [event.reason], incident
        case _:  # actor.dead_letter: the status stays what it was
            incident = ("dead_letter", event.message_type, event.reason)
            return ["dead_letters = dead_letters + 1"], [], incident


class ActorLifecycleReader(Reader):
    projection: ClassVar[str] = "actor_lifecycle"

    async def actors(
        self,
        *,
        status: str | None = None,
        kind: str | None = None,
        prefix: str | None = None,
        after: str | None = None,
        limit: int = 100,
    ) -> list[ActorSummary]:
        """Actors by path; pass the last ``path`` of a page as ``after``."""
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("status", status), ("kind", kind)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if prefix is not None:
            clauses.append("substr(path, 1, ?) = ?")
            params += [len(prefix), prefix]
        if after is not None:
            clauses.append("path > ?")
            params.append(after)
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
        kinds: Sequence[str] | None = None,
        since: float | None = None,
        until: float | None = None,
        after: int = 0,
        limit: int = 100,
    ) -> list[ActorIncident]:
        """Incidents in log order (``kinds`` e.g. ``["dead_letter"]``); page with
        ``after`` = the last row's ``position``."""
        clauses: list[str] = ["position > ?"]
        params: list[Any] = [after]
        if path is not None:
            clauses.append("path = ?")
            params.append(path)
        if kinds:
            clauses.append(f"kind IN ({','.join('?' * len(kinds))})")
            params.extend(kinds)
        if since is not None:
            clauses.append("recorded_at >= ?")
            params.append(since)
        if until is not None:
            clauses.append("recorded_at < ?")
            params.append(until)
        rows = await self.models.query(
            f"SELECT * FROM actor_incidents{where(clauses)} ORDER BY position LIMIT ?",
            [*params, limit],
        )
        return [ActorIncident(*row) for row in rows]
