"""The statement-per-event folds of the actor lifecycle and the task boards, as they were
before they folded a batch in memory: the specification the in-memory folds must meet row
for row (``test_rebuild.py`` runs both over the same log)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, ClassVar

from clawlog.events import RecordedEvent
from clawlog.projections.read_models.actor_lifecycle import ActorLifecycle
from clawlog.projections.read_models.task_boards import TaskBoards

_ENSURE = (
    "INSERT OR IGNORE INTO actor_lifecycle (path, status, starts, failures, restarts, "
    "escalations, dead_letters, first_position, last_position, last_at) "
    "VALUES (?, 'not_started', 0, 0, 0, 0, 0, ?, ?, ?)"
)
_ACTOR_SETS: dict[str, list[str]] = {
    "actor.started": ["status = 'running'", "kind = ?", "starts = starts + 1"],
    "actor.failed": [
        "status = 'failed'",
        "failures = failures + 1",
        "last_error_type = ?",
        "last_error = ?",
        "last_traceback_digest = ?",
    ],
    "actor.restarted": ["status = 'restarting'", "restarts = restarts + 1"],
    "actor.escalated": ["status = 'escalated'", "escalations = escalations + 1"],
    "actor.stopped": ["status = 'stopped'", "stop_reason = ?"],
    "actor.dead_letter": ["dead_letters = dead_letters + 1"],
}


class StatementActorLifecycle(ActorLifecycle):
    handle_batch: ClassVar[None] = None  # type: ignore[assignment]

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        at, tag = recorded.recorded_at, recorded.type
        conn.execute(_ENSURE, (event.path, recorded.position, recorded.position, at))
        params, incident = _actor_change(tag, event)
        conn.execute(
            f"UPDATE actor_lifecycle SET {', '.join(_ACTOR_SETS[tag])}, last_position = ?, "
            "last_at = ? WHERE path = ?",
            (*params, recorded.position, at, event.path),
        )
        if incident is not None:
            conn.execute(
                "INSERT INTO actor_incidents VALUES (?, ?, ?, ?, ?, ?)",
                (recorded.position, event.path, *incident, at),
            )


def _actor_change(tag: str, event: Any) -> tuple[list[Any], tuple[str, str, str] | None]:
    match tag:
        case "actor.started":
            return [event.kind], None
        case "actor.failed":
            message = event.message[:500]
            params = [event.error_type, message, event.traceback_digest]
            return params, ("failed", event.error_type, message)
        case "actor.restarted":
            return [], ("restarted", f"attempt {event.attempt}", f"after {event.delay_s:g} s")
        case "actor.escalated":
            text = f"{event.failures} failures in {event.window_s:g} s: {event.message}"
            return [], ("escalated", event.error_type, text[:500])
        case "actor.stopped":
            return [event.reason], ("stopped", event.reason, "")
        case _:
            return [], ("dead_letter", event.message_type, event.reason)


class StatementTaskBoards(TaskBoards):
    handle_batch: ClassVar[None] = None  # type: ignore[assignment]

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        team = recorded.stream.removeprefix("team/")
        key = (team, getattr(event, "task_id", ""))
        match recorded.type:
            case "team.created":
                members = json.dumps([m.agent for m in event.members])
                conn.execute(
                    "INSERT OR REPLACE INTO teams VALUES (?, ?, ?, ?, ?)",
                    (team, event.name, event.lead, members, recorded.position),
                )
            case "team.task_created":
                status = "blocked" if event.blocked_by else "pending"
                blocked_by = json.dumps(event.blocked_by)
                conn.execute(
                    "INSERT INTO task_boards VALUES (?, ?, ?, ?, ?, '', ?, '', ?, ?)",
                    (
                        *key,
                        event.subject,
                        event.priority,
                        status,
                        blocked_by,
                        recorded.position,
                        recorded.recorded_at,
                    ),
                )
                if event.blocked_by:
                    _unblock_if_free(conn, team, event.task_id, event.blocked_by)
            case "team.task_updated":
                _update(conn, "priority = ?", event.priority, key, event.priority is not None)
                if event.blocked_by is not None:
                    _update(
                        conn,
                        "blocked_by = ?, status = 'blocked'",
                        json.dumps(event.blocked_by),
                        key,
                    )
                    _unblock_if_free(conn, team, event.task_id, event.blocked_by)
            case "team.task_claimed":
                _update(conn, "status = 'claimed', claimed_by = ?", event.by, key)
            case "team.task_completed":
                _update(conn, "status = 'completed', result = ?", event.result, key)
            case "team.task_unblocked":
                conn.execute(
                    "UPDATE task_boards SET status = 'pending' WHERE team = ? AND "
                    "task_id = ? AND status = 'blocked'",
                    key,
                )


def _update(
    conn: sqlite3.Connection, sets: str, value: Any, key: tuple[str, str], run: bool = True
) -> None:
    if run:
        conn.execute(f"UPDATE task_boards SET {sets} WHERE team = ? AND task_id = ?", (value, *key))


def _unblock_if_free(
    conn: sqlite3.Connection, team: str, task_id: str, blockers: list[str]
) -> None:
    marks = ",".join("?" * len(blockers))
    open_count = conn.execute(
        f"SELECT count(*) FROM task_boards WHERE team = ? AND task_id IN ({marks}) AND "
        "status != 'completed'",
        (team, *blockers),
    ).fetchone()[0]
    if not open_count:
        conn.execute(
            "UPDATE task_boards SET status = 'pending' WHERE team = ? AND task_id = ?",
            (team, task_id),
        )
