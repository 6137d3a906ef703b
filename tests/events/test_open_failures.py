"""A failed open of an SQLite log on a real full or read-only disk (a small tmpfs): the error
is the store's own, names the file, and leaves nothing locked or open behind; and a good
log on a read-only disk is still read, unless that would miss events in its -wal."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from clawlog.events import (
    ANY,
    EventStoreError,
    SqliteBackend,
    StoreLocked,
    StoreUnavailable,
    open_store,
)
from clawlog.events.domain.actor import ActorStarted

DISK_SIZE = 96 * 1024  # a new log (its -wal and 32 KiB -shm included) fits, with room to spare


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=60)


def _unavailable(reason: str) -> None:
    """Skip here, fail in CI: a missing service never skips there."""
    if os.environ.get("CI"):
        pytest.fail(f"no tmpfs for the open-failure tests: {reason}")
    pytest.skip(f"no tmpfs for the open-failure tests: {reason}")


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 96 KiB tmpfs of its own, unmounted afterwards."""
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


async def write_events(path: Path, count: int) -> None:
    store = await open_store(path)
    try:
        for n in range(count):
            await store.append("agent/a", [ActorStarted(path=f"a{n}", kind="w")], ANY)
    finally:
        await store.close()


def remount_read_only(disk: Path) -> None:
    done = _mount("-o", "remount,ro", str(disk))
    if done.returncode != 0:
        _unavailable(f"remount read-only failed: {done.stderr.strip()}")


async def test_a_good_log_on_a_read_only_disk_opens_read_only_and_reads_everything(
    disk: Path, tmp_path: Path
) -> None:
    written = tmp_path / "app.db"
    await write_events(written, 20)
    path = disk / "app.db"
    shutil.copyfile(written, path)  # closed: the WAL is checkpointed, no -wal or -shm
    remount_read_only(disk)

    store = await open_store(SqliteBackend(path, read_only=True))
    try:
        events = await store.read_all()
        assert [e.event.path for e in events] == [f"a{n}" for n in range(20)]
        assert await store.head_position() == 20
    finally:
        await store.close()
    assert files_open_under(disk) == []


async def test_a_log_whose_wal_holds_events_on_a_read_only_disk_cannot_be_read(
    disk: Path, tmp_path: Path
) -> None:
    written = tmp_path / "app.db"
    await write_events(written, 3)
    writer = await open_store(written)  # open: the next events stay in the -wal file
    try:
        await writer.append("agent/a", [ActorStarted(path="in-wal", kind="w")], ANY)
        path = disk / "app.db"
        shutil.copyfile(written, path)
        shutil.copyfile(written.with_name("app.db-wal"), disk / "app.db-wal")
    finally:
        await writer.close()
    assert (disk / "app.db-wal").stat().st_size > 0
    remount_read_only(disk)

    with pytest.raises(EventStoreError) as failure:
        await SqliteBackend(path, read_only=True).open()

    # Read as immutable, the event in the -wal would be silently missing: refused instead.
    assert isinstance(failure.value, StoreUnavailable)
    assert f"cannot read {path}: read-only mount/permissions" in str(failure.value)
    assert "app.db-wal" in str(failure.value)
    assert files_open_under(disk) == []


async def test_a_good_log_on_a_full_disk_cannot_be_read_and_says_the_disk_is_full(
    disk: Path, tmp_path: Path
) -> None:
    written = tmp_path / "app.db"
    await write_events(written, 5)
    path = disk / "app.db"
    shutil.copyfile(written, path)
    fill(disk, 0)

    with pytest.raises(EventStoreError) as failure:
        await SqliteBackend(path, read_only=True).open()

    assert isinstance(failure.value, StoreUnavailable)
    assert f"cannot read {path}: the disk is full" in str(failure.value)
    assert files_open_under(disk) == []


_OPEN_AND_COUNT = """
import asyncio, sys
from clawlog.events import EventStoreError, SqliteBackend, open_store

async def main():
    try:
        store = await open_store(SqliteBackend(sys.argv[1], read_only=True))
    except EventStoreError as exc:
        print(type(exc).__name__, exc)
        return
    try:
        print("read", len(await store.read_all()))
    finally:
        await store.close()

asyncio.run(main())
"""


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory another user can reach (pytest's own are root's alone)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        _unavailable("acting as another user needs root and setpriv")
    directory = Path(tempfile.mkdtemp(prefix="clawlog-perm-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        directory.chmod(0o755)
        shutil.rmtree(directory)


def as_nobody(log: Path) -> str:
    """Open ``log`` read-only as user nobody; what it printed."""
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    done = subprocess.run(
        [*nobody, sys.executable, "-c", _OPEN_AND_COUNT, str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout.strip()


async def test_a_good_log_in_a_directory_the_reader_cannot_write_is_read(
    shared_dir: Path, tmp_path: Path
) -> None:
    written = tmp_path / "app.db"
    await write_events(written, 12)
    log = shared_dir / "app.db"
    shutil.copyfile(written, log)
    log.chmod(0o444)
    shared_dir.chmod(0o555)

    assert as_nobody(log) == "read 12"


async def test_a_log_the_reader_may_not_read_is_unavailable_and_says_why(
    shared_dir: Path, tmp_path: Path
) -> None:
    written = tmp_path / "app.db"
    await write_events(written, 2)
    log = shared_dir / "app.db"
    shutil.copyfile(written, log)
    log.chmod(0o000)

    printed = as_nobody(log)

    assert printed.startswith(f"StoreUnavailable cannot open {log}: permission denied"), printed
