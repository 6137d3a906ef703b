"""Delegations: each one's lifecycle; overdue ones visible.

overdue = await DelegationReader(views).delegations(overdue_only=True)
late_or_lost = overdue_delegations(conn)   # also the finished ones never delivered

An async delegation's outcome is ``delivered`` once the turn that announces it (sender
``delegate:{id}``) starts in the source session: that turn, not ``delegation.announced``,
is the proof (a process may stop between the outcome and the turn). Sync outcomes come
back as the end of the asking tool call, which this read model does not follow:
``clawlog delegations --unreturned`` (:mod:`.lineage`) covers both, and subagents.

This is the read side of delegations: it folds the ``link/`` streams with the rules the
DelegationLink itself folds with (``events/folds/delegation.py``: when a delegation is due,
how it ended, what is overdue).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any, ClassVar

import msgspec

from clawlog.events import RecordedEvent
from clawlog.events.domain.delegation import DelegationMode, DelegationStatus
from clawlog.events.folds.delegation import (
    DelegationEndReason,
    deadline_of,
    delegation_end,
    is_overdue,
)

from ..readers import Reader, check_page, where

__all__ = [
    "DelegationReader",
    "DelegationRecord",
    "Delegations",
    "overdue_delegations",
]


class Delegations:
    name: ClassVar[str] = "delegations"
    #: 2: ``position`` (of the request): the listing's order and cursor, by index.
    #: 3: ``source_session`` and ``delivered`` (the announcing turn started).
    version: ClassVar[int] = 3
    table_names = ("delegations",)
    tables = (
        """CREATE TABLE IF NOT EXISTS delegations (
        delegation_id TEXT PRIMARY KEY, source TEXT NOT NULL, target TEXT NOT NULL,
        mode TEXT, task TEXT, status TEXT NOT NULL, reason TEXT, attempts INTEGER DEFAULT 1,
        requested_at REAL, deadline_at REAL, finished_at REAL, announced INTEGER DEFAULT 0,
        delivered INTEGER DEFAULT 0, source_session TEXT, position INTEGER NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS delegations_position ON delegations (position)",
        # `clawlog delegations --overdue`: only the running ones are read.
        "CREATE INDEX IF NOT EXISTS delegations_running ON delegations (position) "
        "WHERE status = 'running'",
        # overdue_delegations: the finished async ones not delivered are read too.
        "CREATE INDEX IF NOT EXISTS delegations_undelivered ON delegations (position) "
        "WHERE mode = 'async' AND delivered = 0",
        "CREATE INDEX IF NOT EXISTS delegations_source ON delegations (source, position)",
        "CREATE INDEX IF NOT EXISTS delegations_target ON delegations (target, position)",
    )
    types: ClassVar[tuple[str, ...]] = (
        "delegation.requested",
        "delegation.completed",
        "delegation.failed",
        "delegation.cancelled",
        "delegation.retried",
        "delegation.announced",
        "session.turn_started",
    )

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        match recorded.type:
            case "session.turn_started":
                if event.sender.startswith("delegate:"):  # an announcement, or a target turn
                    conn.execute(
                        "UPDATE delegations SET delivered = 1 WHERE delegation_id = ? "
                        "AND source_session = ?",
                        (event.sender.removeprefix("delegate:"), recorded.stream),
                    )
            case "delegation.requested":
                conn.execute(
                    "INSERT OR REPLACE INTO delegations (delegation_id, source, target, "
                    "mode, task, status, requested_at, deadline_at, source_session, position) "
                    "VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                    (
                        event.delegation_id,
                        event.source,
                        event.target,
                        event.mode,
                        event.task,
                        event.at,
                        deadline_of(event),
                        event.source_session,
                        recorded.position,
                    ),
                )
            case "delegation.retried":
                conn.execute(
                    "UPDATE delegations SET attempts = ? WHERE delegation_id = ?",
                    (event.attempt, event.delegation_id),
                )
            case "delegation.announced":
                conn.execute(
                    "UPDATE delegations SET announced = 1 WHERE delegation_id = ?",
                    (event.delegation_id,),
                )
            case _:  # completed, failed, cancelled
                end = delegation_end(event)
                if end is not None:
                    conn.execute(
                        "UPDATE delegations SET status = ?, reason = ?, finished_at = ? WHERE "
                        "delegation_id = ?",
                        (end.status, end.reason, end.finished_at, end.delegation_id),
                    )


#: :func:`is_overdue` as a query condition (its parameter: now).
_OVERDUE = "status = 'running' AND deadline_at < ?"
#: An async outcome recorded and not delivered to the source session.
_UNDELIVERED = "mode = 'async' AND delivered = 0 AND status != 'running'"


def overdue_delegations(conn: sqlite3.Connection, now: float | None = None) -> list[str]:
    """Ids of delegations still running after their deadline, and of async ones that
    finished but whose outcome has not reached the source session (not yet, or lost by a
    stop: a DelegationLink delivers those when it starts), in request order."""
    now = time.time() if now is None else now
    return [
        row[0]
        for row in conn.execute(
            f"SELECT delegation_id FROM delegations WHERE ({_OVERDUE}) OR ({_UNDELIVERED}) "
            "ORDER BY position",
            (now,),
        )
    ]


class DelegationRecord(msgspec.Struct, frozen=True):
    """One delegation. ``overdue``: still running past its deadline when it was read."""

    delegation_id: str
    source: str
    target: str
    mode: DelegationMode | None
    task: str | None
    status: DelegationStatus
    reason: DelegationEndReason | None
    attempts: int
    requested_at: float | None
    deadline_at: float | None
    finished_at: float | None
    announced: bool
    #: The outcome reached the source session (async: its announcing turn started).
    delivered: bool
    #: Position of the request (the listing's order and pagination cursor).
    position: int
    overdue: bool


_DELEGATION_FIELDS = DelegationRecord.__struct_fields__
_DELEGATION_COLUMNS = ", ".join(_DELEGATION_FIELDS[:-1])


class DelegationReader(Reader):
    projection: ClassVar[str] = "delegations"

    async def delegations(
        self,
        *,
        source: str | None = None,
        target: str | None = None,
        status: DelegationStatus | None = None,
        overdue_only: bool = False,
        now: float | None = None,
        since: float | None = None,
        after: int = 0,
        limit: int = -1,
    ) -> list[DelegationRecord]:
        """Delegations in the order they were requested (log order; page with ``after``
        = the last row's ``position``); ``now`` decides what is overdue; ``since``:
        requested at or after it (the request's own time, filtered row by row)."""
        check_page(after, limit, since)
        now = time.time() if now is None else now
        clauses: list[str] = ["position > ?"]
        params: list[Any] = [after]
        for column, value in (("source", source), ("target", target), ("status", status)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if overdue_only:
            clauses.append(_OVERDUE)
            params.append(now)
        if since is not None:
            clauses.append("requested_at >= ?")
            params.append(since)
        rows = await self.models.query(
            f"SELECT {_DELEGATION_COLUMNS} FROM delegations{where(clauses)} "
            "ORDER BY position LIMIT ?",
            [*params, limit],
        )
        return [_delegation(row, now) for row in rows]


def _delegation(row: tuple[Any, ...], now: float) -> DelegationRecord:
    values = list(row)
    values[11], values[12] = bool(values[11]), bool(values[12])
    overdue = is_overdue(values[5], values[9], now)
    return DelegationRecord(**dict(zip(_DELEGATION_FIELDS, [*values, overdue], strict=True)))
