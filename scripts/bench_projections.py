"""Projection rebuild benchmark (issue 8): rebuild every read model from a mixed log,
against a raw read + msgpack decode of the same log, in one run.

    python3 scripts/bench_projections.py [--quick]      (full: 200k events, quick: 30k)
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from events import ANY, Event, open_store
from events.domain.session import (
    ModelReplied,
    ModelRequested,
    ToolCall,
    TurnCompleted,
    TurnStarted,
)
from events.domain.team import TeamTaskClaimed, TeamTaskCompleted, TeamTaskCreated
from events.domain.tool import ToolCallCompleted, ToolCallRequested, ToolCallStarted
from projections import ALL_PROJECTIONS, rebuild


def turn(i: int) -> list[Event]:
    call = ToolCall(id=f"c{i}", name="read_file", arguments='{"path": "notes.md"}')
    return [
        TurnStarted(turn_id=f"t{i}", text=f"question {i}"),
        ModelRequested(turn_id=f"t{i}", iteration=1, model="m", message_count=3),
        ModelReplied(turn_id=f"t{i}", iteration=1, tool_calls=[call]),
        ToolCallRequested(call_id=f"c{i}", tool="read_file", arguments={"path": "notes.md"}),
        ToolCallStarted(call_id=f"c{i}", tool="read_file"),
        ToolCallCompleted(call_id=f"c{i}", tool="read_file", for_llm="hello " * 20),
        ModelRequested(turn_id=f"t{i}", iteration=2, model="m", message_count=5),
        ModelReplied(turn_id=f"t{i}", iteration=2, text="done"),
        TurnCompleted(turn_id=f"t{i}", reply=f"answer {i}", iterations=2),
    ]


def task(i: int) -> list[Event]:
    return [
        TeamTaskCreated(task_id=f"k{i}", subject=f"task {i}", priority=i % 5),
        TeamTaskClaimed(task_id=f"k{i}", by="dev"),
        TeamTaskCompleted(task_id=f"k{i}", by="dev", result="ok"),
    ]


async def make_log(path: Path, total: int) -> int:
    store = await open_store(path)
    written, i = 0, 0
    while written < total:
        batch = turn(i)
        await store.append(f"session/agent{i % 20}/user{i % 500}", batch, ANY, metadata=None)
        written += len(batch)
        if i % 3 == 0:
            tasks = task(i)
            await store.append(f"team/team{i % 10}", tasks, ANY)
            written += len(tasks)
        i += 1
    head = await store.head_position()
    await store.close()
    return head


def raw_read(path: Path) -> float:
    conn = sqlite3.connect(path)
    started, count, position = time.perf_counter(), 0, 0
    while True:
        rows = conn.execute(
            "SELECT position, payload FROM events WHERE position > ? ORDER BY position LIMIT 5000",
            (position,),
        ).fetchall()
        if not rows:
            break
        for row in rows:
            msgspec.msgpack.decode(row[1])
        count += len(rows)
        position = rows[-1][0]
    conn.close()
    return count / (time.perf_counter() - started)


async def timed_rebuild(path: Path, views: Path) -> tuple[float, int]:
    store = await open_store(path)
    started = time.perf_counter()
    head = await rebuild(store, views, [p() for p in ALL_PROJECTIONS], show_progress=False)
    elapsed = time.perf_counter() - started
    await store.close()
    return head / elapsed, head


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    total = 30_000 if args.quick else 200_000
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.db"
        head = asyncio.run(make_log(log, total))
        raw = raw_read(log)
        rate, _ = asyncio.run(timed_rebuild(log, Path(tmp) / "views.db"))
    print(f"mixed log: {head:,} events (sessions with tool calls, team boards)")
    print(f"raw read + msgpack decode: {raw:,.0f} events/s")
    print(f"rebuild of {len(ALL_PROJECTIONS)} read models: {rate:,.0f} events/s")
    print(f"RATIOS rebuild_events_per_s={rate:.0f} rebuild_vs_raw={rate / raw:.2f}")


if __name__ == "__main__":
    main()
