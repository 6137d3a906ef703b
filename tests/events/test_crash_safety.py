"""A writer killed with SIGKILL leaves a consistent log holding every acknowledged append."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from events import EventRegistry, SqliteBackend, open_store
from tests.contracts.sample_events import Noted

ROOT = Path(__file__).parents[2]


async def test_sigkill_loses_no_acknowledged_append(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.events.crash_child", str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    acknowledged: list[tuple[str, int, int, str]] = []
    assert child.stdout is not None
    for line in child.stdout:
        stream, version, position, text = line.split()
        acknowledged.append((stream, int(version), int(position), text))
        if len(acknowledged) >= 300:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    store = await open_store(SqliteBackend(path), registry=EventRegistry([Noted]))
    try:
        everything = await store.read_all(1, 1_000_000)
        assert [e.position for e in everything] == list(range(1, len(everything) + 1))
        by_stream: dict[str, list[int]] = {}
        for recorded in everything:
            by_stream.setdefault(recorded.stream, []).append(recorded.version)
        assert all(v == list(range(1, len(v) + 1)) for v in by_stream.values())
        stored = {e.position: (e.stream, e.version, e.event.text) for e in everything}  # type: ignore[union-attr]
        for stream, version, position, text in acknowledged:
            assert stored[position] == (stream, version, text)
        assert len(everything) >= len(acknowledged)
    finally:
        await store.close()
