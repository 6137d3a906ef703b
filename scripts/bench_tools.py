"""Tool pipeline benchmark (issue 4): a no-op tool through the full pipeline with durable
events (SQLite, synchronous=FULL), against a bare call of the same tool, with 1 and 100
concurrent sessions, in one run.

    python3 scripts/bench_tools.py [--quick]

Every pipeline call appends ``tool.call_requested`` + ``tool.call_started`` and then
``tool.call_completed`` to its session's stream (two durable appends per call).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawlog.events import open_store
from clawlog.events.streams import session_stream
from clawlog.tools import FunctionTool, RateLimitConfig, ToolContext, ToolPipeline, ToolRegistry
from clawlog.tools.driver import RecordingSink, StoreSink, run_tool_call
from clawlog.tools.ratelimit import RateLimiter


async def noop(ctx: ToolContext, args: dict[str, Any]) -> str:
    return "ok"


NOOP = FunctionTool(
    "noop",
    noop,
    description="does nothing",
    parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
)


async def bare(calls: int) -> float:
    ctx = ToolContext(agent="bench", session_key="bare")
    started = time.perf_counter()
    for i in range(calls):
        await NOOP.execute(ctx, {"n": i})
    return calls / (time.perf_counter() - started)


def unlimited_pipeline() -> ToolPipeline:
    # The benchmark measures the pipeline, not the limits: checked, but with no windows.
    unlimited = RateLimiter(RateLimitConfig(session=(), user_tool=()))
    return ToolPipeline(ToolRegistry([NOOP]), rate_limiter=unlimited)


async def in_memory(calls: int) -> tuple[float, float]:
    """The pipeline's own cost: every step, events kept in a list (no I/O)."""
    pipeline, ctx = unlimited_pipeline(), ToolContext(agent="bench", session_key="mem")
    sink = RecordingSink()
    started = time.perf_counter()
    for i in range(calls):
        await run_tool_call(pipeline, ctx, "noop", {"n": i}, sink, call_id=f"m{i}")
        if len(sink.events) > 3_000:
            sink.events.clear()
    elapsed = time.perf_counter() - started
    return calls / elapsed, elapsed / calls * 1e6


async def pipeline_run(
    path: Path, sessions: int, calls_per_session: int
) -> tuple[float, float, float]:
    store = await open_store(path)
    pipeline = unlimited_pipeline()
    latencies: list[float] = []

    async def session(k: int) -> None:
        ctx = ToolContext(agent="bench", session_key=f"s{k}")
        sink = StoreSink(store, session_stream("bench", f"s{k}"))
        for i in range(calls_per_session):
            started = time.perf_counter()
            await run_tool_call(pipeline, ctx, "noop", {"n": i}, sink, call_id=f"c{k}-{i}")
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(session(k) for k in range(sessions)))
    elapsed = time.perf_counter() - started
    await store.close()
    latencies.sort()
    return (
        sessions * calls_per_session / elapsed,
        statistics.median(latencies) * 1e6,
        latencies[int(len(latencies) * 0.99) - 1] * 1e6,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller counts (< 60 s)")
    args = parser.parse_args()
    single, per_session = (500, 20) if args.quick else (2_000, 60)
    with tempfile.TemporaryDirectory() as tmp:
        bare_rate = asyncio.run(bare(20_000))
        memory_rate, memory_us = asyncio.run(in_memory(5_000 if args.quick else 20_000))
        one = asyncio.run(pipeline_run(Path(tmp) / "one.db", 1, single))
        many = asyncio.run(pipeline_run(Path(tmp) / "many.db", 100, per_session))
    table = Table(title="no-op tool: bare call vs the full pipeline with durable events")
    for column in ("what", "calls/s", "p50 µs", "p99 µs"):
        table.add_column(column, justify="left" if column == "what" else "right")
    table.add_row("bare execute()", f"{bare_rate:,.0f}", "", "")
    table.add_row("pipeline, events in memory", f"{memory_rate:,.0f}", f"{memory_us:,.0f}*", "")
    table.add_row(
        "pipeline + events, 1 session", f"{one[0]:,.0f}", f"{one[1]:,.0f}", f"{one[2]:,.0f}"
    )
    table.add_row(
        "pipeline + events, 100 sessions", f"{many[0]:,.0f}", f"{many[1]:,.0f}", f"{many[2]:,.0f}"
    )
    Console().print(table)
    print("* mean per call: the pipeline's CPU cost without the store")
    print(
        f"RATIOS pipeline_p50_us={one[1]:.0f} pipeline_calls_per_s={many[0]:.0f} "
        f"pipeline_vs_bare={many[0] / bare_rate:.4f} pipeline_cpu_us={memory_us:.0f}"
    )


if __name__ == "__main__":
    main()
