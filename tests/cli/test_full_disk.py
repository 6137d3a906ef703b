"""The readers on a real full disk (a small tmpfs): where the read models cannot be written
-- no room for the views file, or no room left in the middle of a catch-up -- they are
built in a temporary file instead, and the command answers as it would with room."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from clawlog.events import EventStore, open_store
from clawlog.projections import views_path_for
from clawlog.projections.testing import write_mixed_log, write_mixed_log_file

from .support import clawlog

DISK_SIZE = 3 * 1024 * 1024


def _unavailable(reason: str) -> None:
    """Skip here, fail in CI: a missing service never skips there."""
    if os.environ.get("CI"):
        pytest.fail(f"no tmpfs for the full-disk tests: {reason}")
    pytest.skip(f"no tmpfs for the full-disk tests: {reason}")


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of its own, unmounted afterwards."""
    if os.geteuid() != 0:
        _unavailable("mounting one needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        _unavailable(f"mount failed: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True, timeout=60)


def fill(disk: Path) -> Path:
    """Fill the disk to the last page; return the filler, to delete for room again."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        try:
            while out.write(b"x" * 4096):
                pass
        except OSError:  # full
            pass
    assert os.statvfs(disk).f_bavail == 0
    return filler


@pytest.fixture
async def live_log(disk: Path) -> AsyncIterator[tuple[Path, EventStore]]:
    """A log on the disk with its writer open, as beside a running application (its
    -wal and -shm files exist, so a reader needs no room to open the log)."""
    log = disk / "app.db"
    await write_mixed_log_file(log, 600)
    store = await open_store(log)
    try:
        yield log, store
    finally:
        await store.close()


def answer(log: Path, *command: str) -> Any:
    done = clawlog(*command, "--db", str(log), "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def checkpoint(views: Path, projection: str) -> int | None:
    db = sqlite3.connect(f"file:{views}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT position FROM projection_checkpoints WHERE name = ?", (projection,)
        ).fetchone()
    finally:
        db.close()
    return None if row is None else int(row[0])


async def test_readers_answer_when_the_views_file_cannot_be_made(
    live_log: tuple[Path, EventStore], disk: Path
) -> None:
    log, _ = live_log
    filler = fill(disk)
    history = answer(log, "history", "agent0", "user0")
    audit = answer(log, "audit")
    assert history and audit
    filler.unlink()  # room again: the shared views file is made, and agrees
    assert answer(log, "history", "agent0", "user0") == history
    assert answer(log, "audit") == audit


async def test_a_views_file_that_fills_up_in_a_catch_up_is_replaced_by_a_temporary_one(
    live_log: tuple[Path, EventStore], disk: Path
) -> None:
    log, store = live_log
    views = views_path_for(log)
    first = answer(log, "history", "agent0", "user0")  # the views file made, with room
    caught_up = checkpoint(views, "session_history")
    await write_mixed_log(store, 1500)  # more to catch up than the file has room for
    filler = fill(disk)
    history = answer(log, "history", "agent0", "user0")
    assert len(history) > len(first) and history[: len(first)] == first
    assert checkpoint(views, "session_history") == caught_up  # the shared file is as it was
    filler.unlink()
    assert answer(log, "history", "agent0", "user0") == history
    assert checkpoint(views, "session_history") == await store.head_position()
