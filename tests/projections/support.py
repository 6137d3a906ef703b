"""Test projections and log writers shared by the projection tests."""

from __future__ import annotations

import random
import sqlite3
import sys
from pathlib import Path
from typing import Any, ClassVar

from clawlog.events import ANY, NO_STREAM, Event, EventMetadata, EventStore, RecordedEvent
from clawlog.events.domain.actor import (
    ActorEscalated,
    ActorFailed,
    ActorRestarted,
    ActorStarted,
    ActorStopped,
    DeadLetter,
)
from clawlog.events.domain.mcp import (
    McpConnected,
    McpConnecting,
    McpDisconnected,
    McpServerConfigured,
    McpServerEnabledChanged,
    McpServerRemoved,
)
from clawlog.events.domain.session import TurnCompleted, TurnStarted
from clawlog.events.domain.team import (
    TeamCreated,
    TeamMember,
    TeamTaskClaimed,
    TeamTaskCompleted,
    TeamTaskCreated,
    TeamTaskUnblocked,
    TeamTaskUpdated,
)
from clawlog.events.envelope import NewRecord

ROOT = Path(__file__).parents[2]


class PositionLog:
    """One row per event it sees, with no key: an event applied twice shows up twice.

    ``stop_at``: on that position, print a line and block (the crash tests kill the
    process there, inside the batch's open transaction). ``fail_at``: raise there."""

    name: ClassVar[str] = "position_log"
    version: ClassVar[int] = 1
    table_names: ClassVar[tuple[str, ...]] = ("position_log",)
    tables: ClassVar[tuple[str, ...]] = (
        "CREATE TABLE IF NOT EXISTS position_log (position INTEGER NOT NULL, type TEXT)",
    )
    types: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, *, stop_at: int | None = None, fail_at: int | None = None) -> None:
        self.stop_at, self.fail_at = stop_at, fail_at

    def handle(self, conn: sqlite3.Connection, event: RecordedEvent) -> None:
        if event.position == self.fail_at:
            raise ValueError(f"cannot fold position {event.position}")
        if event.position == self.stop_at:
            sys.stdout.write(f"blocked at {event.position}\n")
            sys.stdout.flush()
            sys.stdin.readline()  # the test kills us while we wait here
        conn.execute("INSERT INTO position_log VALUES (?, ?)", (event.position, event.type))


class TurnTexts:
    """Folds user turns only; fails on a turn whose text is ``"poison"``."""

    name: ClassVar[str] = "turn_texts"
    version: ClassVar[int] = 1
    table_names: ClassVar[tuple[str, ...]] = ("turn_texts",)
    tables: ClassVar[tuple[str, ...]] = (
        "CREATE TABLE IF NOT EXISTS turn_texts (position INTEGER PRIMARY KEY, text TEXT)",
    )
    types: ClassVar[tuple[str, ...]] = ("session.turn_started",)

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        if event.text == "poison":
            raise ValueError("cannot fold this one")
        conn.execute("INSERT INTO turn_texts VALUES (?, ?)", (recorded.position, event.text))


async def write_turns(store: EventStore, stream: str, texts: list[str]) -> list[RecordedEvent]:
    """One append per turn (started + completed); returns every recorded event."""
    recorded: list[RecordedEvent] = []
    for text in texts:
        turn = f"turn-{text}"
        recorded += await store.append(
            stream,
            [
                TurnStarted(turn_id=turn, text=text),
                TurnCompleted(turn_id=turn, reply=f"re: {text}", iterations=1),
            ],
            ANY,
            EventMetadata(correlation_id=turn, actor=stream),
        )
    return recorded


async def write_corrupt_turn(store: EventStore, stream: str) -> int:
    """A ``session.turn_started`` row whose payload cannot be decoded (as a damaged file
    or a buggy writer would leave it), written past the facade's checks."""
    version = await store.stream_version(stream)
    expected = version if version else NO_STREAM
    record = NewRecord("session.turn_started", 1, b"\xc1\xc1")
    [stored] = await store.backend.append(stream, [record], expected, EventMetadata())
    return stored.position


async def write_state_changes(store: EventStore, appends: int, seed: int = 7) -> int:
    """Appends of one to three events, in a seeded random order, that change the same
    rows again and again: tasks created (with blockers, some unknown, some done, some
    the task itself), updated, claimed, completed and unblocked, teams renamed, actors
    started, failing and stopping, MCP servers moving between states. Returns the head."""
    rnd = random.Random(seed)
    tasks = ["t0"]
    for step in range(appends):
        stream, events = _state_change(rnd, step, tasks)
        await store.append(stream, events, ANY, EventMetadata(actor=stream))
    return await store.head_position()


def _state_change(rnd: random.Random, step: int, tasks: list[str]) -> tuple[str, list[Event]]:
    kind = rnd.random()
    if kind < 0.2:
        path = f"session/a/u{rnd.randrange(4)}"
        message = "boom " * rnd.randrange(200)
        return "system/actors", rnd.sample(
            [
                ActorStarted(path=path, kind="session"),
                ActorFailed(path=path, error_type="E", message=message, traceback_digest="d"),
                ActorRestarted(path=path, attempt=step, delay_s=0.25),
                ActorEscalated(path=path, error_type="E", failures=3, window_s=1.5, message="m"),
                ActorStopped(path=path, reason="passivated"),
                DeadLetter(path=path, message_type="Steer", reason="stopped"),
            ],
            rnd.randrange(1, 4),
        )
    if kind < 0.3:
        server = f"srv{rnd.randrange(3)}"
        return f"mcp/{server}", rnd.sample(
            [
                McpServerConfigured(server=server, transport="stdio", enabled=rnd.random() < 0.7),
                McpServerEnabledChanged(server=server, enabled=rnd.random() < 0.5),
                McpServerRemoved(server=server),
                McpConnecting(server=server, attempt=step),
                McpConnected(server=server, attempt=step, server_name="s", server_version="1"),
                McpDisconnected(server=server, cause="eof", message=rnd.choice(["", "gone"])),
            ],
            rnd.randrange(1, 4),
        )
    return f"team/x{rnd.randrange(2)}", [_board_edit(rnd, step, tasks)]


def _board_edit(rnd: random.Random, step: int, tasks: list[str]) -> Event:
    task, kind = rnd.choice(tasks), rnd.random()
    if kind < 0.3:
        tasks.append(new := f"t{step}")
        blockers = rnd.sample(tasks, min(len(tasks), rnd.randrange(3)))
        return TeamTaskCreated(
            task_id=new, subject=f"s{step}", priority=step % 4, blocked_by=blockers
        )
    if kind < 0.45:
        blockers = rnd.choice([None, [], rnd.sample(tasks, min(len(tasks), 2)), ["unknown"]])
        return TeamTaskUpdated(
            task_id=task, by="lead", priority=rnd.choice([None, 9]), blocked_by=blockers
        )
    if kind < 0.6:
        return TeamTaskClaimed(task_id=task, by=f"m{step % 3}")
    if kind < 0.8:
        return TeamTaskCompleted(task_id=task, by="m", result=f"r{step}")
    if kind < 0.95:
        return TeamTaskUnblocked(task_id=task)
    member = TeamMember(agent=f"m{step % 3}")
    return TeamCreated(team_id="x", name=f"renamed {step}", lead="lead", members=[member])


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()
