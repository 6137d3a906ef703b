"""Running the ``clawlog`` command as a user does (a real subprocess), and the logs and
servers it is run against: a real SQLite file, and a PostgreSQL server that refuses."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from clawlog.events import ANY, Event, default_registry, open_store
from clawlog.events.domain.actor import ActorStarted
from clawlog.events.domain.team import TeamCreated, TeamMember, TeamTaskCreated

ROOT = Path(__file__).parents[2]


def clawlog(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m clawlog ARGS``, its output captured (so stdout is a pipe, not a tty)."""
    return subprocess.run(
        [sys.executable, "-m", "clawlog", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def run_in_a_terminal(*args: str) -> str:
    """The output of ``clawlog ARGS`` with a pseudo-terminal as stdout and stderr."""
    terminal, child_side = pty.openpty()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "clawlog", *args],
            stdin=subprocess.DEVNULL,
            stdout=child_side,
            stderr=child_side,
            cwd=ROOT,
            env={**os.environ, "COLUMNS": "300", "TERM": "xterm-256color"},
        )
    finally:
        os.close(child_side)
    chunks = []
    try:
        while chunk := os.read(terminal, 65536):
            chunks.append(chunk)
    except OSError:  # EIO: the child has closed the terminal
        pass
    finally:
        os.close(terminal)
    assert child.wait() == 0, b"".join(chunks)
    return b"".join(chunks).decode()


def python(code: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter running ``code`` (for what a command line cannot set up)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def assert_user_error(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Exit status 2, nothing on stdout, and one line on stderr that says what is wrong."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def write_log(path: Path, events: int, *, long_field: int = 0) -> None:
    """A clawlog log of ``events`` actor.started events on one stream per 100 events;
    ``long_field`` makes each event's ``kind`` that many characters long."""

    async def write() -> None:
        store = await open_store(path)
        try:
            kind = "k" * long_field or "worker"
            for first in range(0, events, 100):
                batch = [
                    ActorStarted(path=f"agent/a{n}", kind=kind)
                    for n in range(first, min(first + 100, events))
                ]
                await store.append(f"agent/batch{first // 100}", batch, expected_version=ANY)
        finally:
            await store.close()

    asyncio.run(write())


def write_board(path: Path, team_id: str, subjects: list[str]) -> None:
    """A log holding one team whose board has a task per subject."""

    async def write() -> None:
        store = await open_store(path)
        try:
            members = [TeamMember(agent="dev", role="developer")]
            events = [TeamCreated(team_id=team_id, name="Crew", lead="lead", members=members)]
            events += [
                TeamTaskCreated(task_id=f"t{n}", subject=subject)
                for n, subject in enumerate(subjects, 1)
            ]
            await store.append(f"team/{team_id}", events, expected_version=ANY)
        finally:
            await store.close()

    asyncio.run(write())


class AppNote(Event, frozen=True, tag="app.note"):
    """An application's own event: the clawlog command does not know its type."""

    text: str
    tags: list[str]


def write_app_notes(path: Path, texts: list[str]) -> None:
    """A log written by an application that registered its own event type."""

    async def write() -> None:
        registry = default_registry()
        registry.register(AppNote)
        store = await open_store(path, registry=registry)
        try:
            notes = [AppNote(text=text, tags=["app"]) for text in texts]
            await store.append("app/notes", notes, expected_version=ANY)
        finally:
            await store.close()

    asyncio.run(write())


def closed_port() -> int:
    """A local TCP port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def refusing_postgres() -> Iterator[int]:
    """A server that speaks just enough of PostgreSQL's protocol to refuse every login
    (FATAL 28P01, a wrong password); yields its port. A real server cannot be run here."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                _refuse_login(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (close alone may not)
        listener.close()
        thread.join()


_SSL_REQUEST = 80877103


def _refuse_login(conn: socket.socket) -> None:
    try:
        length, code = struct.unpack("!ii", _read(conn, 8))
        if code == _SSL_REQUEST:
            conn.sendall(b"N")  # no TLS here; the client then sends its startup message
            length, code = struct.unpack("!ii", _read(conn, 8))
        _read(conn, length - 8)
        fields = b"".join(
            kind + text.encode() + b"\0"
            for kind, text in (
                (b"S", "FATAL"),
                (b"V", "FATAL"),
                (b"C", "28P01"),
                (b"M", 'password authentication failed for user "u"'),
            )
        )
        conn.sendall(b"E" + struct.pack("!i", len(fields) + 5) + fields + b"\0")
    except OSError:
        pass  # the client went away first


def _read(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


#: Every command that reads a log, with the arguments the demo log answers.
READERS = [
    ("tail",),
    ("history", "lead", "demo-user"),
    ("board", "release"),
    ("routes",),
    ("delegations",),
    ("audit",),
    ("mcp",),
    ("rebuild",),
    ("replay",),
    ("replay", "--rerun", "lead", "demo-user"),
    ("doctor",),
    ("tools",),
    ("timers",),
]
