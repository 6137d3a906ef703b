"""Three processes on one PostgreSQL log serve any session: one is killed, one is paused
past its lease and woken, and every message is still answered exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import asyncpg

from clawlog.events import LogPages, open_store
from clawlog.events.backends.postgres import PostgresBackend
from clawlog.events.domain.session import TurnCompleted, TurnStarted
from tests.support.postgres import database_url

ROOT = Path(__file__).parents[2]
SESSIONS = 300
TTL = 3.0


class Node:
    def __init__(self, url: str, schema: str, name: str, out: Path, rounds: int) -> None:
        self.name, self.out = name, out
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.scale_out.node",
                url,
                schema,
                name,
                str(SESSIONS),
                str(rounds),
                str(out),
                str(TTL),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def finish(self) -> list[str]:
        out, err = self.process.communicate(timeout=600)
        assert self.process.returncode == 0, err[-3000:]
        return out.splitlines()

    def reap(self) -> None:
        """Kill it if it runs, and close its pipes (however the test ended)."""
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(ValueError, OSError):
            self.process.communicate(timeout=60)

    def answers(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        if self.out.exists():
            for line in self.out.read_text().splitlines():
                message, reply = line.split("\t", 1)
                found.setdefault(message, []).append(reply)
        return found


async def lease_owners(url: str, schema: str) -> dict[str, str]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            f"SELECT stream, owner FROM {schema}.stream_leases WHERE NOT released "
            f"AND stream LIKE 'session/%'"
        )
    finally:
        await conn.close()
    return {row["stream"]: row["owner"] for row in rows}


async def wait_until_taken_over(url: str, schema: str, pid: int) -> None:
    """Until another process starts a session process ``pid`` held: an ``actor.started``
    on its stream after the pause (the paused process writes nothing)."""
    mine = f":{pid}:"
    held = {s for s, owner in (await lease_owners(url, schema)).items() if mine in owner}
    assert held, "the paused process held no session"
    store = await open_store(PostgresBackend(url, schema=schema, read_only=True))
    try:
        head = await store.head_position()
        async with asyncio.timeout(120):
            async with store.subscribe(head + 1, types=["actor.started"]) as started:
                async for recorded in started:
                    if recorded.stream in held:
                        return
    finally:
        await store.close()


async def turns(url: str, schema: str) -> tuple[Counter[str], Counter[str], int, int]:
    """How often each message text started and completed a turn, and the log's row count
    and head position."""
    store = await open_store(PostgresBackend(url, schema=schema))
    started: Counter[str] = Counter()
    completed: Counter[str] = Counter()
    try:
        types = ["session.turn_started", "session.turn_completed"]
        async for page in LogPages(store, 1, types=types):
            for recorded in page:
                event = recorded.event
                if isinstance(event, TurnStarted):
                    started[event.text] += 1
                elif isinstance(event, TurnCompleted):
                    completed[event.reply.removeprefix("answer: ")] += 1
        head = await store.head_position()
    finally:
        await store.close()
    conn = await asyncpg.connect(url)
    try:
        count = await conn.fetchval(f"SELECT count(*) FROM {schema}.events")
    finally:
        await conn.close()
    return started, completed, count, head


def test_any_process_serves_any_session_through_a_kill_and_a_pause(tmp_path: Path) -> None:
    url = database_url()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    nodes = [Node(url, schema, f"n{i}", tmp_path / f"n{i}.tsv", rounds=3) for i in (1, 2, 3)]
    killed, paused, steady = nodes
    try:
        # Each holds its own third of the sessions, then all send to every session.
        assert [node.line() for node in nodes] == ["warm"] * 3
        for node in nodes:
            node.go()
        assert killed.line() == "round 0"  # every process has reached every session
        os.kill(killed.process.pid, signal.SIGKILL)
        os.kill(paused.process.pid, signal.SIGSTOP)
        try:  # past its lease: the others take its sessions over while it sleeps
            asyncio.run(wait_until_taken_over(url, schema, paused.process.pid))
        finally:
            os.kill(paused.process.pid, signal.SIGCONT)
        killed.process.communicate(timeout=60)
        finished = {node.name: node.finish() for node in (paused, steady)}
    finally:
        for node in nodes:
            node.reap()
    # Every message of the surviving processes was answered, once, with its own answer.
    for node in (paused, steady):
        answers = node.answers()
        sent = {f"{node.name}-{r}-s{s}" for r in range(3) for s in range(SESSIONS)}
        assert set(answers) == sent
        assert all(replies == [f"answer: {m}"] for m, replies in answers.items())
    started, completed, count, head = asyncio.run(turns(url, schema))
    # The log: positions gapless; no message started or completed a turn twice; every
    # answer a process acknowledged (the killed one's too) is a completed turn.
    assert count == head
    assert max(started.values()) == 1 and max(completed.values()) == 1
    acknowledged = {m for node in nodes for m in node.answers()}
    assert acknowledged <= set(completed)
    # The paused process woke to find its sessions taken over, and stepped back.
    summary = dict(line.rsplit(" ", 1) for line in finished["n2"][-2:])
    assert int(summary["stepped back"]) >= 1, finished["n2"]
