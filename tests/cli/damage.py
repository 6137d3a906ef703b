"""Real damage to a real SQLite log, as a bad disk, a partial copy or a careless hand
leaves it: a flipped payload byte, an overwritten page, a dropped table, a truncated file;
and the small tmpfs disks (read-only, full) that the mount-based cases need.

Each helper works on a closed log (its WAL checkpointed into the file), so what it
changes is what a reader opening the file finds.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

__all__ = [
    "drop_table",
    "fill",
    "flip_payload_byte",
    "leaf_pages",
    "mount_tmpfs",
    "overwrite_page",
    "remount_read_only",
    "truncate_half",
    "unavailable",
    "unmount",
]


def flip_payload_byte(log: Path, position: int) -> None:
    """Invert the first byte of the payload at ``position`` (msgpack's map header becomes
    a plain integer): SQLite reads the row, clawlog cannot decode it."""
    conn = sqlite3.connect(log)
    try:
        (payload,) = conn.execute(
            "SELECT payload FROM events WHERE position = ?", (position,)
        ).fetchone()
        flipped = bytes([payload[0] ^ 0xFF]) + payload[1:]
        with conn:
            conn.execute("UPDATE events SET payload = ? WHERE position = ?", (flipped, position))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def leaf_pages(log: Path) -> list[tuple[int, int, int]]:
    """The events table's leaf pages in key order: ``(page number, first, last position)``.
    Positions are gapless from 1 in a log nothing was deleted from, and a table's leaves
    hold its rows in key order, so the running count of cells gives each leaf's rows."""
    conn = sqlite3.connect(log)
    try:
        pages = conn.execute(
            "SELECT pageno, ncell FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' "
            "ORDER BY path"
        ).fetchall()
        (rows,) = conn.execute("SELECT count(*) FROM events").fetchone()
    finally:
        conn.close()
    found, first = [], 1
    for pageno, cells in pages:
        found.append((pageno, first, first + cells - 1))
        first += cells
    assert first - 1 == rows, "positions are not gapless: the leaves cannot be mapped"
    return found


def overwrite_page(log: Path, position: int) -> tuple[int, int]:
    """Overwrite the whole leaf page holding ``position`` (as a bad sector would); the
    ``(first, last)`` positions it held, which no read can reach any more."""
    pageno, first, last = next(page for page in leaf_pages(log) if page[1] <= position <= page[2])
    conn = sqlite3.connect(log)
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    with log.open("r+b") as file:
        file.seek((pageno - 1) * page_size)
        file.write(b"\xa5" * page_size)
    return first, last


def drop_table(log: Path, table: str) -> None:
    conn = sqlite3.connect(log)
    try:
        conn.execute(f"DROP TABLE {table}")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def truncate_half(log: Path) -> None:
    """Cut the file to half its pages, as an interrupted copy leaves it."""
    conn = sqlite3.connect(log)
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    size = log.stat().st_size
    os.truncate(log, size // page_size // 2 * page_size)


def unavailable(reason: str) -> None:
    """Skip here, fail in CI: a missing service never skips there."""
    if os.environ.get("CI"):
        pytest.fail(f"no tmpfs for the mount-based damage: {reason}")
    pytest.skip(f"no tmpfs for the mount-based damage: {reason}")


def mount_tmpfs(mount_point: Path, size: int) -> None:
    """A tmpfs of ``size`` bytes at ``mount_point`` (root only: skipped, or failed in CI)."""
    if os.geteuid() != 0:
        unavailable("mounting one needs root")
    mount_point.mkdir(parents=True, exist_ok=True)
    done = _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point))
    if done.returncode != 0:
        unavailable(f"mount failed: {done.stderr.strip()}")


def remount_read_only(mount_point: Path) -> None:
    done = _mount("-o", "remount,ro", str(mount_point))
    if done.returncode != 0:
        unmount(mount_point)
        unavailable(f"remount read-only failed: {done.stderr.strip()}")


def fill(disk: Path) -> None:
    """Write a filler file until the disk is full."""
    chunk = b"x" * 4096
    with (disk / "filler").open("wb", buffering=0) as out:
        try:
            while out.write(chunk):
                pass
        except OSError:  # full
            pass
    assert os.statvfs(disk).f_bavail == 0


def unmount(mount_point: Path) -> None:
    subprocess.run(["umount", str(mount_point)], check=True, timeout=60)


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=60)
