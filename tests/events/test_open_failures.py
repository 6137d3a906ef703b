"""A failed open of an SQLite log on a real full or read-only disk (a small tmpfs): the error
is the store's own, names the file, and leaves nothing locked or open behind."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from clawlog.events import EventStoreError, SqliteBackend, StoreLocked, StoreUnavailable

DISK_SIZE = 64 * 1024


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=60)


def _unavailable(reason: str) -> None:
    """Skip here, fail in CI: a missing service never skips there."""
    if os.environ.get("CI"):
        pytest.fail(f"no tmpfs for the open-failure tests: {reason}")
    pytest.skip(f"no tmpfs for the open-failure tests: {reason}")


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs of its own, unmounted afterwards."""
    if os.geteuid() != 0:
        _unavailable("mounting one needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = _mount("-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(mount_point))
    if done.returncode != 0:
        _unavailable(f"mount failed: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True, timeout=60)


def fill(disk: Path, leave_pages: int) -> Path:
    """Fill the disk, then free ``leave_pages`` pages; return the filler to delete later."""
    filler = disk / "filler"
    chunk = b"x" * 4096
    with filler.open("wb", buffering=0) as out:
        try:
            while out.write(chunk):
                pass
        except OSError:  # full
            pass
    page = os.statvfs(disk).f_frsize
    os.truncate(filler, max(0, filler.stat().st_size - leave_pages * page))
    assert os.statvfs(disk).f_bavail == leave_pages
    return filler


def files_open_under(directory: Path) -> list[str]:
    """What this process still holds open under ``directory`` (/proc/self/fd)."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, already closed
            continue
        if target.startswith(f"{directory}/"):
            held.append(target)
    return held


def assert_typed_error(failure: pytest.ExceptionInfo[EventStoreError], path: Path) -> None:
    assert isinstance(failure.value, StoreUnavailable)
    assert not isinstance(failure.value, OSError | sqlite3.Error | StoreLocked)
    cause = failure.value.__cause__
    assert isinstance(cause, OSError | sqlite3.Error)
    assert str(path) in str(failure.value)
    assert (cause.strerror if isinstance(cause, OSError) else str(cause)) in str(failure.value)


# 0 pages: the lock's pid cannot be written; 1: SQLite cannot switch to WAL; 3: SQLite
# cannot read the new file's header. Each fails at its own step after the lock is taken.
@pytest.mark.parametrize("free_pages", [0, 1, 3])
async def test_an_open_on_a_full_disk_raises_a_store_error_and_unlocks(
    disk: Path, free_pages: int
) -> None:
    path = disk / "app.db"
    filler = fill(disk, free_pages)

    with pytest.raises(EventStoreError) as failure:
        await SqliteBackend(path).open()

    assert_typed_error(failure, path)
    assert files_open_under(disk) == []
    filler.unlink()
    retry = SqliteBackend(path)
    await retry.open()  # no StoreLocked: the failed open left no lock behind
    await retry.close()
    assert files_open_under(disk) == []


async def test_an_open_on_a_read_only_disk_raises_a_store_error_and_holds_nothing(
    disk: Path,
) -> None:
    path = disk / "app.db"
    store = SqliteBackend(path)
    await store.open()
    await store.close()
    (disk / "app.db.lock").unlink()
    done = _mount("-o", "remount,ro", str(disk))
    if done.returncode != 0:
        _unavailable(f"remount read-only failed: {done.stderr.strip()}")

    with pytest.raises(EventStoreError) as failure:
        await SqliteBackend(path).open()

    assert_typed_error(failure, disk / "app.db.lock")
    assert "Read-only file system" in str(failure.value)
    assert files_open_under(disk) == []
