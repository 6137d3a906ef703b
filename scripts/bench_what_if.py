"""Policy what-if benchmark (issue 20): every call of a log of 100,000 recorded calls
decided again under another policy (``clawlog audit --what-if``'s engine,
``tools.what_if``), on SQLite.

    python3 scripts/bench_what_if.py [--quick] [--profile]

The log is written by the real pipeline (``ToolPipeline.begin``, ``decide_approval``,
the outcome events), so every call carries its real verdict and facts: 1,000 sessions,
100 calls each, in appends of one call's events, as a session writes them. The mix: 70 %
``echo`` (allowed), 10 % ``exec`` ``ls`` (allowed), 5 % ``time`` (refused by the agent's
deny list), 5 % ``exec`` ``rm -rf /`` (refused by a deny pattern), 10 % ``deploy``
(approval; 4 in 5 allowed by a person, 1 in 5 denied). Each call leaves 3-4 events
(requested, [approval requested, decided], started or refused, completed).

Measured: calls examined per second by ``what_if`` (reading the log included) under a
stricter policy (deny echo, security=allowlist + ask=off: 90 % of the calls change), and
under the recorded policy itself (every digest matches: nothing to decide again); also
per second of the process's CPU time, which a busy machine does not skew.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawlog.events import Event, open_store
from clawlog.events.streams import session_stream
from clawlog.tools import (
    ApprovalConfig,
    FunctionTool,
    LoopDetectionConfig,
    PolicyConfig,
    RateLimitConfig,
    ToolContext,
    ToolPipeline,
    ToolPolicy,
    ToolRegistry,
    ToolResult,
)
from clawlog.tools.decisions import NeedsApproval, Ready
from clawlog.tools.execution import outcome_event
from clawlog.tools.loops import LoopDetector
from clawlog.tools.policy import PolicyEngine
from clawlog.tools.policy_file import PolicyFile
from clawlog.tools.ratelimit import RateLimiter
from clawlog.tools.what_if import what_if

SESSIONS = 1_000


async def _noop(ctx: ToolContext, args: dict[str, Any]) -> str:
    return "ok"


_COMMAND = {"type": "object", "properties": {"command": {"type": "string"}}}
TOOLS = [
    FunctionTool("echo", _noop, parameters={"type": "object", "properties": {"n": {}}}),
    FunctionTool("time", _noop, parameters={"type": "object", "properties": {"n": {}}}),
    FunctionTool("exec", _noop, parameters=_COMMAND),
    FunctionTool("deploy", _noop, requires_approval=True, parameters=_COMMAND),
]
RECORDED = PolicyConfig(agents={"bench": ToolPolicy(deny=["time"])})
STRICTER = PolicyFile(
    policy=PolicyConfig(agents={"bench": ToolPolicy(deny=["time", "echo"])}),
    approvals=ApprovalConfig(security="allowlist", ask="off"),
)


def _call(i: int) -> tuple[str, dict[str, Any]]:
    slot = i % 20
    if slot < 14:
        return "echo", {"n": i}
    if slot < 16:
        return "exec", {"command": f"ls -la dir{i % 7}"}
    if slot == 16:
        return "time", {"n": i}
    if slot == 17:
        return "exec", {"command": "rm -rf /"}
    return "deploy", {"command": f"release {i}"}


def _events(pipeline: ToolPipeline, ctx: ToolContext, i: int) -> list[Event]:
    name, args = _call(i)
    decision = pipeline.begin(ctx, f"c{i}", name, args)
    events = list(decision.events)
    if isinstance(decision, NeedsApproval):
        answer = "deny" if i % 5 == 0 else "allow-once"
        decision = pipeline.decide_approval(decision.request, answer, by="ops")
        events += decision.events
    if isinstance(decision, Ready):
        events.append(outcome_event(decision.plan, ToolResult.text("ok"), 0.1))
    for event in events:
        pipeline.apply(event)
    return events


async def write_log(path: Path, calls: int) -> None:
    store = await open_store(path)
    pipeline = ToolPipeline(
        ToolRegistry(TOOLS),
        policy=PolicyEngine(RECORDED),
        rate_limiter=RateLimiter(RateLimitConfig(session=(), user_tool=())),
        loop_detector=LoopDetector(LoopDetectionConfig(enabled=False)),
    )
    per_session = calls // SESSIONS

    async def session(k: int) -> None:
        ctx = ToolContext(agent="bench", session_key=f"s{k}", correlation_id=f"turn-{k}")
        stream, version = session_stream("bench", f"s{k}"), 0
        for i in range(k * per_session, (k + 1) * per_session):
            recorded = await store.append(stream, _events(pipeline, ctx, i), version)
            version = recorded[-1].version

    for first in range(0, SESSIONS, 100):  # 100 sessions at a time: group commits
        await asyncio.gather(*(session(k) for k in range(first, first + 100)))
    await store.close()


async def measure(path: Path, policy: PolicyFile, profile: bool) -> tuple[float, float, int, int]:
    """Calls examined per second of wall-clock time and per second of this process's CPU
    time (all its threads: the store reads in one): the second holds on a busy machine."""
    store = await open_store(path)
    profiler = cProfile.Profile() if profile else None
    started, cpu_started = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    report = await what_if(store, policy)
    if profiler is not None:
        profiler.disable()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    await store.close()
    examined = report.totals.examined
    return examined / elapsed, examined / cpu, examined, len(report.changes)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="20,000 calls instead of 100,000")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the run")
    args = parser.parse_args()
    calls = 20_000 if args.quick else 100_000
    same = PolicyFile(policy=RECORDED, approvals=ApprovalConfig())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "calls.db"
        started = time.perf_counter()
        asyncio.run(write_log(path, calls))
        written = time.perf_counter() - started
        stricter = asyncio.run(measure(path, STRICTER, args.profile))
        unchanged = asyncio.run(measure(path, same, False))
    table = Table(title=f"what-if over {calls:,} recorded calls (log written in {written:.1f} s)")
    for column in ("policy", "calls/s", "calls/CPU s", "examined", "changed"):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for name, (rate, cpu_rate, examined, changed) in (
        ("stricter", stricter),
        ("the recorded one", unchanged),
    ):
        table.add_row(name, f"{rate:,.0f}", f"{cpu_rate:,.0f}", f"{examined:,}", f"{changed:,}")
    Console().print(table)
    print(
        f"RATIOS what_if_calls_per_s={stricter[0]:.0f} "
        f"what_if_calls_per_cpu_s={stricter[1]:.0f} "
        f"what_if_same_policy_calls_per_s={unchanged[0]:.0f}"
    )


if __name__ == "__main__":
    main()
