"""MCP call overhead: ``echo`` over stdio through the McpConnection actor and the tool
pipeline, against the official SDK called directly, in the same run.

    python3 scripts/bench_mcp.py            # 600 calls per side
    python3 scripts/bench_mcp.py --quick    # 200 calls per side (well under a minute)

Each side talks to its own ``@modelcontextprotocol/server-everything`` process over
stdio (installed by ``scripts/mcp_servers.sh``). Direct: ``ClientSession.call_tool`` on
the benchmark's loop. Ours: ``tools.run_tool_call`` (resolve, policy, validation, rate
limit with no windows, loop detection, approval lookup, execute, scrub, truncate) run on
the I/O hub as a Session runs it, events kept in memory. Agents' MCP tools call through
the connection actor's ``DirectCalls`` (straight to the ``McpClient`` the actor opened,
on the hub, under the call deadline); the mailbox row asks the actor instead
(``CallTool``: it admits the call and runs it on the hub), two thread hops more. The
last row adds the durable events a Session writes (two appends per call, SQLite FULL).
The sides run in alternating batches of 20 sequential calls, so load from elsewhere hits
both alike. Ends with the ``RATIOS`` line (our p50 / direct p50).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from clawlog.actors import System  # noqa: E402
from clawlog.actors.mcp import McpServerConfig, mcp_servers  # noqa: E402
from clawlog.actors.mcp.messages import CallTool  # noqa: E402
from clawlog.actors.mcp.tool import McpTool  # noqa: E402
from clawlog.events.streams import mcp_stream, session_stream  # noqa: E402
from clawlog.tools import (  # noqa: E402
    FunctionTool,
    RateLimitConfig,
    ToolContext,
    ToolPipeline,
    ToolRegistry,
    ToolResult,
    builtin_tools,
)
from clawlog.tools.driver import RecordingSink, StoreSink, run_tool_call  # noqa: E402
from clawlog.tools.ratelimit import RateLimiter  # noqa: E402

TOOL = "mcp_everything_echo"
MAILBOX_TOOL = "echo_via_actor_mailbox"
BATCH = 20


def everything_js() -> str:
    script = ROOT / "scripts" / "mcp_servers.sh"
    out = subprocess.run([str(script)], check=True, capture_output=True, text=True).stdout
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return values["MCP_EVERYTHING_JS"]


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e6, ordered[int(len(ordered) * 0.99) - 1] * 1e6


@contextlib.asynccontextmanager
async def direct_session(js: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command="node", args=[js, "stdio"])
    async with contextlib.AsyncExitStack() as stack:
        quiet = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115
        read, write = await stack.enter_async_context(stdio_client(params, errlog=quiet))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        await session.list_tools()
        yield session


async def direct_batch(session: ClientSession, start: int) -> list[float]:
    samples = []
    for i in range(start, start + BATCH):
        started = time.perf_counter()
        result = await session.call_tool("echo", {"message": f"hello {i}"})
        samples.append(time.perf_counter() - started)
        assert not result.is_error
    return samples


def mailbox_tool(system: System, echo: McpTool) -> FunctionTool:
    """``echo`` through the connection actor's mailbox (``CallTool``), as operators call."""
    handle = system.actor(mcp_stream("everything"))
    assert handle is not None

    async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        return echo.to_result(await handle.ask(CallTool(tool="echo", arguments=args)))

    return FunctionTool(MAILBOX_TOOL, run, parameters=echo.parameters)


class Ours:
    """The pipeline of an agent that was granted the server, run on the hub."""

    def __init__(self, system: System) -> None:
        registry = ToolRegistry(builtin_tools())
        for tool in mcp_servers(system).tools_for("bench"):
            registry.register(tool)
            if tool.name == TOOL:
                registry.register(mailbox_tool(system, tool))  # tools_for gives McpTools
        # No rate-limit windows: a benchmark exceeds the per-user 60/min on purpose.
        unlimited = RateLimiter(RateLimitConfig(session=(), user_tool=()))
        self.pipeline = ToolPipeline(registry, rate_limiter=unlimited)
        self.ctx = ToolContext(agent="bench", session_key="s", user="u")
        self.system = system
        self.durable = StoreSink(system.runtime.store, session_stream("bench", "durable"))

    async def batch(self, start: int, durable: bool = False, tool: str = TOOL) -> list[float]:
        return await self.system.runtime.hub.run_async(self._batch(start, durable, tool))

    async def _batch(self, start: int, durable: bool, tool: str) -> list[float]:
        samples = []
        for i in range(start, start + BATCH):
            sink = self.durable if durable else RecordingSink()
            started = time.perf_counter()
            result = await run_tool_call(
                self.pipeline, self.ctx, tool, {"message": f"hello {i}"}, sink
            )
            samples.append(time.perf_counter() - started)
            assert result.for_llm == f"Echo: hello {i}", result
            self.pipeline.reset_loops(self.ctx)  # a benchmark repeats itself on purpose
        return samples


async def main(quick: bool) -> None:
    js = everything_js()
    batches = 10 if quick else 30
    bare: list[float] = []
    ours: list[float] = []
    mailbox: list[float] = []
    durable: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with System.open(Path(tmp) / "bench.db") as system, direct_session(js) as session:
            servers = mcp_servers(system)
            config = McpServerConfig(name="everything", command="node", args=[js, "stdio"])
            await servers.add(config)
            await servers.grant_agent("everything", "bench")
            await servers.wait_connected("everything", 30)
            ours_side = Ours(system)
            await direct_batch(session, 0)  # warm-up, both sides
            await ours_side.batch(0)
            await ours_side.batch(0, tool=MAILBOX_TOOL)
            for n in range(1, batches + 1):
                bare += await direct_batch(session, n * BATCH)
                ours += await ours_side.batch(n * BATCH)
                mailbox += await ours_side.batch(n * BATCH, tool=MAILBOX_TOOL)
                durable += await ours_side.batch(n * BATCH, durable=True)
    rows = [
        ("SDK ClientSession.call_tool (direct)", bare),
        ("clawlog: pipeline + McpTool (DirectCalls)", ours),
        ("clawlog: pipeline + actor mailbox (CallTool)", mailbox),
        ("clawlog: DirectCalls + durable events (SQLite FULL)", durable),
    ]
    print(f"{'what':<50} {'calls':>6} {'p50 µs':>9} {'p99 µs':>9}")
    for name, samples in rows:
        p50, p99 = summary(samples)
        print(f"{name:<50} {len(samples):>6} {p50:>9.0f} {p99:>9.0f}")
    ours_p50, bare_p50 = summary(ours)[0], summary(bare)[0]
    print(
        f"RATIOS mcp_echo_overhead={ours_p50 / bare_p50:.2f} "
        f"mcp_echo_mailbox_overhead={summary(mailbox)[0] / bare_p50:.2f} "
        f"mcp_echo_durable_overhead={summary(durable)[0] / bare_p50:.2f} "
        f"mcp_echo_p50_us={ours_p50:.0f} sdk_echo_p50_us={bare_p50:.0f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 calls per side")
    asyncio.run(main(parser.parse_args().quick))
