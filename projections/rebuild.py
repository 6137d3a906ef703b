"""Rebuild read models from position 1 into a fresh file, then swap it in atomically."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from events import EventStore

from .base import Projection
from .runner import ProjectionRunner

__all__ = ["rebuild"]


async def rebuild(
    store: EventStore,
    target: str | Path,
    projections: Sequence[Projection],
    *,
    show_progress: bool = True,
    batch_size: int = 5000,
) -> int:
    """Fold the whole log into ``target`` (replacing it only when complete); return the
    position reached. Readers of the old file keep reading it until the swap."""
    target = Path(target)
    building = target.with_name(target.name + ".rebuilding")
    for leftover in (building, Path(f"{building}-wal"), Path(f"{building}-shm")):
        leftover.unlink(missing_ok=True)
    head = await store.head_position()
    runner = ProjectionRunner(store, building, projections, batch_size=batch_size)
    columns = (
        TextColumn("rebuilding read models"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, disable=not show_progress) as progress:
        task = progress.add_task("events", total=head or 1)
        position = 0
        while position < head:
            position = await runner.catch_up_step()
            progress.update(task, completed=min(position, head))
    runner.close()
    os.replace(building, target)
    for stale in (Path(f"{target}-wal"), Path(f"{target}-shm")):
        stale.unlink(missing_ok=True)
    return head
