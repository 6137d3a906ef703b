"""Every reader command on every kind of damage: one line on stderr naming the position or
the problem, the right exit status, never a traceback (issue 26's damage matrix).

Each damage is made once per module, on a copy of one `clawlog demo` log: a flipped
payload byte (a corrupt event), an overwritten page, a dropped events table, a truncated
file, the good log on a read-only mount, the good log on a full disk, with and without a
live writer holding it open (small tmpfs disks: root only, skipped elsewhere and failed in
CI, as in tests/events/test_open_failures.py). A failing cell's id names the damage and
the reader.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clawlog.events import ANY, open_store
from clawlog.projections.testing import mixed_chunk

from .damage import (
    drop_table,
    fill,
    flip_payload_byte,
    mount_tmpfs,
    overwrite_page,
    remount_read_only,
    truncate_half,
    unmount,
)
from .support import clawlog

SESSION = "session/lead/demo-user"
#: Every reader, as a user types it (``{head}``: the log's head position).
READERS: dict[str, tuple[str, ...]] = {
    "tail -n 0": ("tail", "-n", "0"),
    "tail": ("tail",),
    "history": ("history", "lead", "demo-user"),
    "board": ("board", "release"),
    "routes": ("routes",),
    "delegations": ("delegations",),
    "audit": ("audit",),
    "mcp": ("mcp",),
    "timers": ("timers", "--all"),
    "usage": ("usage",),
    "rebuild": ("rebuild",),
    "replay": ("replay",),
    "replay --as-of": ("replay", "--as-of", "{head}", "--stream", SESSION),
    "replay --rerun": ("replay", "--rerun", "lead", "demo-user"),
    "doctor": ("doctor",),
}
#: The readers that can step over a bad row with --skip-corrupt.
SKIPPERS = (
    "tail -n 0",
    "tail",
    "history",
    "board",
    "routes",
    "delegations",
    "audit",
    "mcp",
    "timers",
    "usage",
    "replay",
    "replay --as-of",
)
DAMAGES = (
    "corrupt payload",
    "damaged page",
    "dropped events table",
    "truncated file",
    "read-only mount",
    "full disk",
    "full disk, log open by a writer",
)


@dataclass(frozen=True)
class DemoLog:
    path: Path
    head: int
    #: A row read by each family of readers, as the one to corrupt: a session's model
    #: reply among the last 50 events (tail, history, replay), a task, a handoff, a tool
    #: call, a delegation, an MCP server's event, a timer's (board, routes, audit,
    #: delegations, mcp, timers).
    rows: tuple[int, ...]


@dataclass(frozen=True)
class Damaged:
    kind: str
    log: Path
    head: int
    #: What the one stderr line (or doctor's report) must name: any one of these.
    marks: tuple[str, ...]


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> DemoLog:
    """A `clawlog demo` log, with a delegation and an MCP server added (the demo has
    neither), so that every reader has rows of its own to stumble on."""
    log = tmp_path_factory.mktemp("demo") / "demo.db"
    done = clawlog("demo", "--db", str(log))
    assert done.returncode == 0, done.stderr
    asyncio.run(_append_chunks(log, DELEGATION_AND_MCP))
    conn = sqlite3.connect(log)
    try:
        (head,) = conn.execute("SELECT max(position) FROM events").fetchone()
        rows = tuple(
            conn.execute(
                f"SELECT min(position) FROM events WHERE {where} AND position > ?",
                (head - 45,) if "session" in where else (0,),
            ).fetchone()[0]
            for where in ROWS_TO_CORRUPT
        )
    finally:
        conn.close()
    assert None not in rows, rows
    return DemoLog(log, head, rows)


#: Chunks of clawlog.projections.testing's mixed log: a failed delegation (with its
#: deadline timer), an MCP server.
DELEGATION_AND_MCP = (18, 19)
ROWS_TO_CORRUPT = (
    f"stream = '{SESSION}' AND type = 'session.model_replied'",
    "type = 'team.task_completed'",
    "type = 'handoff.routed'",
    "type = 'tool.call_completed'",
    "type = 'delegation.requested'",
    "type = 'mcp.server_configured'",
    "type = 'timer.set'",
)


async def _append_chunks(log: Path, chunks: tuple[int, ...]) -> None:
    store = await open_store(log)
    try:
        for i in chunks:
            stream, events, metadata = mixed_chunk(i)
            await store.append(stream, events, ANY, metadata)
    finally:
        await store.close()


@pytest.fixture(scope="module", params=DAMAGES)
def damaged(
    request: pytest.FixtureRequest, demo_log: DemoLog, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Damaged]:
    kind: str = request.param
    place = tmp_path_factory.mktemp(kind.replace(" ", "-").replace(",", ""))
    if kind == "full disk, log open by a writer":
        yield from _full_disk_under_a_writer(place, demo_log)
        return
    if kind in ("read-only mount", "full disk"):
        disk = place / "disk"
        mount_tmpfs(disk, demo_log.path.stat().st_size + 64 * 1024)
        try:
            log = disk / "app.db"
            shutil.copyfile(demo_log.path, log)
            if kind == "read-only mount":
                remount_read_only(disk)
                yield Damaged(kind, log, demo_log.head, ("",))
            else:
                fill(disk)
                yield Damaged(kind, log, demo_log.head, ("full",))
        finally:
            unmount(disk)
        return
    log = place / "app.db"
    shutil.copyfile(demo_log.path, log)
    marks: tuple[str, ...]
    if kind == "corrupt payload":
        for position in demo_log.rows:
            flip_payload_byte(log, position)
        marks = tuple(f"position {position}" for position in demo_log.rows)
    elif kind == "damaged page":
        overwrite_page(log, demo_log.rows[0])
        marks = ("damaged",)
    elif kind == "dropped events table":
        drop_table(log, "events")
        marks = ("events table is missing",)
    else:
        truncate_half(log)
        marks = ("truncated",)
    yield Damaged(kind, log, demo_log.head, marks)


def _full_disk_under_a_writer(place: Path, demo_log: DemoLog) -> Iterator[Damaged]:
    """The log on a full disk while a live system writes it (another process): its -wal
    and -shm exist, so it can be read, but nothing new can be written beside it (the
    readers' views file)."""
    disk = place / "disk"
    mount_tmpfs(disk, demo_log.path.stat().st_size + 256 * 1024)
    log = disk / "app.db"
    shutil.copyfile(demo_log.path, log)
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.events.writer_child", str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        fill(disk)
        yield Damaged("full disk, log open by a writer", log, demo_log.head, ("full",))
    finally:
        writer.communicate(timeout=60)  # end of input: it closes the store and exits
        unmount(disk)


def names_one(text: str, marks: tuple[str, ...]) -> bool:
    return any(mark in text for mark in marks)


def run(reader: str, damaged: Damaged, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [arg.replace("{head}", str(damaged.head)) for arg in READERS[reader]]
    return clawlog(*args, *extra, "--db", str(damaged.log))


def expected_status(reader: str, kind: str) -> int:
    if kind in ("read-only mount", "full disk, log open by a writer"):
        return 2 if reader == "rebuild" else 0  # rebuild writes its views beside the log
    if reader == "doctor" and kind != "full disk":
        return 1  # damage found and reported; a full disk cannot be read at all
    if reader == "rebuild" and kind == "corrupt payload":
        return 1  # a projection failed at the row: rebuild's own exit status for that
    return 2


@pytest.mark.parametrize("reader", list(READERS))
def test_a_reader_on_a_damaged_log_says_what_is_wrong_in_one_line(
    damaged: Damaged, reader: str
) -> None:
    done = run(reader, damaged)

    status = expected_status(reader, damaged.kind)
    assert "Traceback" not in done.stderr + done.stdout
    assert done.returncode == status, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    if status == 0:  # a good log that can only be read: read it
        assert done.stdout.strip(), done.stderr
        return
    if status == 1 and reader == "rebuild":  # one line per projection that failed
        assert all(line.startswith("rebuild: projection ") for line in lines), done.stderr
        assert all(names_one(line, damaged.marks) for line in lines), done.stderr
        return
    assert len(lines) == 1, done.stderr
    if status == 1 and reader == "doctor":  # the summary on stderr, each problem on stdout
        assert "damaged" in lines[0], lines[0]
        assert names_one(done.stdout, damaged.marks), done.stdout
    else:
        assert names_one(lines[0], damaged.marks), lines[0]
        if damaged.kind == "read-only mount":
            assert "read-only" in lines[0].lower(), lines[0]
        if damaged.kind == "full disk, log open by a writer":
            assert "full" in lines[0].lower() or "no space" in lines[0].lower(), lines[0]


@pytest.mark.parametrize("damaged", ["corrupt payload", "damaged page"], indirect=True)
@pytest.mark.parametrize("reader", SKIPPERS)
def test_a_reader_that_can_skip_steps_over_bad_rows_and_says_how_many(
    damaged: Damaged, reader: str
) -> None:
    done = run(reader, damaged, "--skip-corrupt")

    assert "Traceback" not in done.stderr + done.stdout
    assert done.returncode == 0, done.stderr
    assert "skipped" in done.stderr, done.stderr
    if damaged.kind == "corrupt payload":
        positions = [mark.removeprefix("position ") for mark in damaged.marks]
        assert any(position in done.stderr for position in positions), done.stderr
