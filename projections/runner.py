"""Runs projections: catch up from each checkpoint, then follow the live log.

Each batch of events is applied to every projection inside ONE SQLite transaction that
also moves that projection's checkpoint, so a crash between batches never applies an
event twice nor skips one (exactly once). A projection whose handler raises is marked
failed at that position (with the error) and left behind; the others keep going.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import structlog

from events import EventStore, RecordedEvent

from .base import Projection
from .errors import NotCaughtUp

__all__ = ["ProjectionRunner", "ProjectionStatus"]

_log = structlog.get_logger("clawlog.projections")
_CHECKPOINTS = """CREATE TABLE IF NOT EXISTS projection_checkpoints (
    name TEXT PRIMARY KEY, version INTEGER NOT NULL, position INTEGER NOT NULL,
    status TEXT NOT NULL, error TEXT)"""


class ProjectionStatus(tuple[str, int, int, str, str | None]):
    """(name, version, position, status, error) as stored."""


class ProjectionRunner:
    """Owns one read-model SQLite file; feeds it from ``store`` (bound to its loop)."""

    def __init__(
        self,
        store: EventStore,
        path: str | Path,
        projections: Sequence[Projection],
        *,
        batch_size: int = 2000,
    ) -> None:
        self.store = store
        self.path = Path(path)
        self.projections = list(projections)
        self.batch_size = batch_size
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_CHECKPOINTS)
        self._positions: dict[str, int] = {}
        self._failed: set[str] = set()
        self._progress = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._prepare()

    # -- setup --------------------------------------------------------------------------
    def _prepare(self) -> None:
        for projection in self.projections:
            row = self._db.execute(
                "SELECT version, position, status FROM projection_checkpoints WHERE name = ?",
                (projection.name,),
            ).fetchone()
            if row is None or row[0] != projection.version:
                self._reset(projection)
                row = (projection.version, 0, "ok")
            for ddl in projection.tables:
                self._db.execute(ddl)
            self._positions[projection.name] = row[1]
            if row[2] == "failed":
                self._failed.add(projection.name)

    def _reset(self, projection: Projection) -> None:
        self._db.execute("BEGIN")
        for table in projection.table_names:
            self._db.execute(f"DROP TABLE IF EXISTS {table}")
        self._db.execute(
            "INSERT OR REPLACE INTO projection_checkpoints VALUES (?, ?, 0, 'ok', NULL)",
            (projection.name, projection.version),
        )
        self._db.execute("COMMIT")

    # -- running ------------------------------------------------------------------------
    async def catch_up(self) -> int:
        """Apply everything up to the current head; return the position reached."""
        head = await self.store.head_position()
        while min(self._active_positions(), default=head) < head:
            start = min(self._active_positions()) + 1
            batch = await self.store.read_all(start, self.batch_size, types=self._types())
            if not batch:
                self._advance_to(head)
                break
            await self._apply(batch)
        return head

    async def catch_up_step(self) -> int:
        """Apply one batch towards the head; return the lowest checkpoint (for progress)."""
        head = await self.store.head_position()
        lowest = min(self._active_positions(), default=head)
        if lowest < head:
            batch = await self.store.read_all(lowest + 1, self.batch_size, types=self._types())
            if batch:
                await self._apply(batch)
            else:
                self._advance_to(head)
        return min(self._active_positions(), default=head)

    def close(self) -> None:
        """Checkpoint the WAL into the file and close it (no runner task may be running)."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.close()

    async def run(self) -> None:
        """Catch up, then follow live until cancelled."""
        await self.catch_up()
        start = min(self._active_positions(), default=0) + 1
        async with self.store.subscribe(
            start, types=self._types(), batch_size=self.batch_size
        ) as events:
            while True:
                batch = await events.next_batch()
                await self._apply(batch)

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.create_task(self.run(), name="clawlog-projections")
        return self._task

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await self._task
            self._task = None
        self._db.close()

    async def wait_until(self, position: int, timeout: float = 10.0) -> None:
        """Return once every healthy projection has applied ``position`` (read your writes).

        Events the projections do not read count as applied: if nothing relevant lies
        between a checkpoint and ``position``, the checkpoint moves there."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    lowest = min(self._active_positions(), default=position)
                    if lowest >= position:
                        return
                    written = await self.store.head_position() >= position
                    pending = await self.store.read_all(lowest + 1, 1, types=self._types())
                    if written and (not pending or pending[0].position > position):
                        self._advance_to(position)
                        return
                    async with self._progress:
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(self._progress.wait(), 0.2)
        except TimeoutError as exc:
            raise NotCaughtUp(
                f"read models did not reach position {position} in {timeout} s"
            ) from exc

    def statuses(self) -> list[ProjectionStatus]:
        return [
            ProjectionStatus(row)
            for row in self._db.execute(
                "SELECT name, version, position, status, error FROM projection_checkpoints "
                "ORDER BY name"
            )
        ]

    # -- one batch, one transaction -------------------------------------------------------
    async def _apply(self, batch: list[RecordedEvent]) -> None:
        last = batch[-1].position
        self._db.execute("BEGIN")
        try:
            for projection in self.projections:
                if projection.name not in self._failed:
                    self._apply_one(projection, batch, last)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        async with self._progress:
            self._progress.notify_all()

    def _apply_one(self, projection: Projection, batch: list[RecordedEvent], last: int) -> None:
        done = self._positions[projection.name]
        wanted = set(projection.types) if projection.types is not None else None
        todo = [e for e in batch if e.position > done and (wanted is None or e.type in wanted)]
        self._db.execute(f"SAVEPOINT p_{projection.name}")
        batch_handler = getattr(projection, "handle_batch", None)
        if batch_handler is not None:
            try:
                batch_handler(self._db, todo)
                todo = []  # all applied; on failure fall back to one by one to find it
            except Exception:
                self._db.execute(f"ROLLBACK TO p_{projection.name}")
        for index, event in enumerate(todo):
            try:
                projection.handle(self._db, event)
            except Exception as exc:
                # Undo the half-applied batch, re-apply what came before the failing event
                # (handlers are deterministic), and stop just before it.
                self._db.execute(f"ROLLBACK TO p_{projection.name}")
                for earlier in todo[:index]:
                    projection.handle(self._db, earlier)
                self._db.execute(f"RELEASE p_{projection.name}")
                self._mark_failed(projection, event.position, exc)
                return
        self._db.execute(
            "UPDATE projection_checkpoints SET position = ? WHERE name = ?", (last, projection.name)
        )
        self._db.execute(f"RELEASE p_{projection.name}")
        self._positions[projection.name] = last

    def _mark_failed(self, projection: Projection, position: int, error: Exception) -> None:
        message = f"{type(error).__name__}: {error}"
        _log.error(
            "projection failed", projection=projection.name, position=position, error=message
        )
        self._db.execute(
            "UPDATE projection_checkpoints SET position = ?, status = 'failed', "
            "error = ? WHERE name = ?",
            (position - 1, message, projection.name),
        )
        self._positions[projection.name] = position - 1
        self._failed.add(projection.name)

    def _advance_to(self, head: int) -> None:
        for name in list(self._positions):
            if name not in self._failed and self._positions[name] < head:
                self._db.execute(
                    "UPDATE projection_checkpoints SET position = ? WHERE name = ?", (head, name)
                )
                self._positions[name] = head

    def _active_positions(self) -> list[int]:
        return [p for n, p in self._positions.items() if n not in self._failed]

    def _types(self) -> list[str] | None:
        kinds: set[str] = set()
        for projection in self.projections:
            if projection.types is None:
                return None
            kinds.update(projection.types)
        return sorted(kinds)
