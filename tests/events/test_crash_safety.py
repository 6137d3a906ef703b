"""A writer killed with SIGKILL leaves a consistent log holding every acknowledged append."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import pytest

from clawlog.events import ANY, EventRegistry, EventStore, RecordedEvent, SqliteBackend, open_store
from clawlog.events.testing import Noted
from tests.events.crash_child import append_of

ROOT = Path(__file__).parents[2]


class Ack(NamedTuple):
    stream: str
    version: int
    position: int
    count: int
    tag: str


async def run_and_kill(path: Path, acks_wanted: int) -> list[Ack]:
    """Run the appending child until it has acknowledged ``acks_wanted`` appends, then
    SIGKILL it. Waits on its pipe, never on a clock."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.events.crash_child",
        str(path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    assert child.stdout is not None and child.stderr is not None
    acks: list[Ack] = []
    try:
        async with asyncio.timeout(60):
            while len(acks) < acks_wanted:
                line = await child.stdout.readline()
                if not line:
                    break
                stream, version, position, count, tag = line.decode().split()
                acks.append(Ack(stream, int(version), int(position), int(count), tag))
    finally:
        os.kill(child.pid, signal.SIGKILL)
        returncode = await child.wait()
    if len(acks) < acks_wanted:
        error = (await child.stderr.read()).decode()
        pytest.fail(f"the child stopped after {len(acks)} acks:\n{error}")
    assert returncode == -signal.SIGKILL
    return acks


def check_consistent(everything: list[RecordedEvent]) -> None:
    """Gapless positions from 1, gapless versions per stream, no append half written."""
    assert [e.position for e in everything] == list(range(1, len(everything) + 1))
    versions: dict[str, list[int]] = defaultdict(list)
    appends: dict[str, list[RecordedEvent]] = defaultdict(list)
    for recorded in everything:
        versions[recorded.stream].append(recorded.version)
        assert isinstance(recorded.event, Noted)
        appends[recorded.event.text.split("#")[0]].append(recorded)
    assert all(v == list(range(1, len(v) + 1)) for v in versions.values())
    for tag, events in appends.items():
        count = int(tag.rsplit("/", 1)[1])
        assert len(events) == count, f"append {tag} is half written: {events}"
        first = events[0].position
        assert [e.position for e in events] == list(range(first, first + count))


async def check_acknowledged(
    store: EventStore, everything: list[RecordedEvent], acks: list[Ack]
) -> None:
    by_position = {e.position: e for e in everything}
    for ack in acks:
        producer, i = (int(part) for part in ack.tag[1:].split("/")[0].split("-"))
        stream, events, meta = append_of(producer, i)
        stored = [by_position[ack.position + j] for j in range(ack.count)]
        assert [(e.stream, e.version, e.event) for e in stored] == [
            (stream, ack.version + j, event) for j, event in enumerate(events)
        ]
        if meta is not None:
            assert {(e.actor, e.idempotency_key) for e in stored} == {
                (meta.actor, meta.idempotency_key)
            }
            # The key survived the crash: repeating the append writes nothing.
            again = await store.append(stream, events, ANY, meta)
            assert [e.position for e in again] == [e.position for e in stored]


@pytest.mark.parametrize("acks_wanted", [30, 300, 1500])
async def test_sigkill_loses_no_acknowledged_append(tmp_path: Path, acks_wanted: int) -> None:
    path = tmp_path / "crash.db"
    acks = await run_and_kill(path, acks_wanted)

    store = await open_store(SqliteBackend(path), registry=EventRegistry([Noted]))
    try:
        everything = await store.read_all(1, 1_000_000)
        assert len(everything) >= sum(ack.count for ack in acks)
        check_consistent(everything)
        head = await store.head_position()
        await check_acknowledged(store, everything, acks)
        assert await store.head_position() == head  # the repeats above wrote nothing
        # The reopened log takes new appends right after the last surviving one.
        [fresh] = await store.append("crash/after", [Noted(text="after")], ANY)
        assert fresh.position == head + 1
    finally:
        await store.close()
