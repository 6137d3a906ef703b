"""Rebuild read models from position 1 into a fresh file, then swap them in atomically.

The rebuild never writes the live file until it is complete: it folds the whole log into
``<views>.rebuilding`` (no fsync per batch: it is thrown away if anything goes wrong),
then either renames it into place (no read-model file yet) or copies its tables into the
live file in ONE transaction, which readers and a live runner in other processes see as
one atomic change. A live runner finds its checkpoint moved and carries on from there.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from clawlog.events import EventStore

from ._db import connect_views, on_thread
from .base import Projection
from .errors import ProjectionFailed, RebuildFailed
from .runner import ProjectionRunner
from .timeline import Skipped

__all__ = ["rebuild"]


async def rebuild(
    store: EventStore,
    target: str | Path,
    projections: Sequence[Projection],
    *,
    show_progress: bool = True,
    batch_size: int = 10_000,
    console: Console | None = None,
    skip: Skipped | None = None,
) -> int:
    """Fold the whole log into fresh tables for ``projections`` and swap them into
    ``target``; return the position the rebuilt read models reached.

    Other projections in ``target`` are left alone. A progress bar (rich) goes to
    stderr unless ``show_progress`` is false.

    Raises :class:`RebuildFailed` if any projection failed during the rebuild: its
    ``failures`` name each failed projection with the position of the event its handler
    raised on, and the error; ``position`` is what the others reached. The read models
    are swapped in all the same (a failed one as failed, which its readers report), so
    the healthy ones are current and the cause can be fixed before the next rebuild.

    With ``skip``, corrupt events and unreadable pages are stepped over instead (a row of
    an append-only log cannot be fixed: this is how its read models get past it for
    good) and their positions recorded there."""
    target = Path(target)
    building = target.with_name(target.name + ".rebuilding")
    _remove(building, "", "-journal", "-wal", "-shm")
    columns = (
        TextColumn("rebuilding read models"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    progress = Progress(
        *columns, console=console or Console(stderr=True), disable=not show_progress
    )
    try:
        with progress:
            task = progress.add_task("events", total=await store.head_position() or 1)
            async with ProjectionRunner(
                store,
                building,
                projections,
                batch_size=batch_size,
                building=True,
                skip_corrupt=skip is not None,
            ) as runner:
                try:
                    position = await runner.catch_up(  # then builds the indexes, once
                        lambda done, total: progress.update(task, completed=done, total=total)
                    )
                finally:
                    if skip is not None:
                        skip.positions.extend(sorted(runner.skipped))
                        skip.damaged.extend(runner.damaged)
                failures = tuple(
                    ProjectionFailed(s.name, s.failed_at or 0, s.error or "")
                    for s in runner.statuses()
                    if s.status != "ok"
                )
            await _swap(building, target, projections)
    finally:
        _remove(building, "", "-journal")
    if failures:
        raise RebuildFailed(position, failures)
    return position


async def _swap(building: Path, target: Path, projections: Sequence[Projection]) -> None:
    _fsync(building)
    if not target.exists():
        # Nobody has the file open, so a rename is atomic and safe; stale WAL files of a
        # deleted predecessor would be replayed into the new file: remove them first.
        _remove(target, "-wal", "-shm")
        os.replace(building, target)
        _fsync(target.parent)
        return
    conn = await connect_views(target, "write")
    try:
        await on_thread(conn, _copy_tables, str(building), list(projections))
    finally:
        await conn.close()


def _copy_tables(conn: sqlite3.Connection, building: str, projections: list[Projection]) -> None:
    """Replace each projection's tables and checkpoint in ``conn`` by the rebuilt ones."""
    conn.execute("ATTACH DATABASE ? AS rebuilt", (building,))
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for projection in projections:
                for table in projection.table_names:
                    conn.execute(f"DROP TABLE IF EXISTS main.{table}")
                for ddl in projection.tables:
                    conn.execute(ddl)  # unqualified CREATE statements create in main
                for table in projection.table_names:
                    conn.execute(f"INSERT INTO main.{table} SELECT * FROM rebuilt.{table}")
            marks = ",".join("?" * len(projections))
            conn.execute(
                "INSERT OR REPLACE INTO main.projection_checkpoints SELECT * FROM "
                f"rebuilt.projection_checkpoints WHERE name IN ({marks})",
                [p.name for p in projections],
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT (full disk, I/O) already rolled back
                conn.execute("ROLLBACK")
            raise
    finally:
        conn.execute("DETACH DATABASE rebuilt")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path, *suffixes: str) -> None:
    for suffix in suffixes:
        Path(f"{path}{suffix}").unlink(missing_ok=True)
