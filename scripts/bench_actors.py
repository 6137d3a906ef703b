"""Actor runtime benchmark: clawlog's typed ask/tell against raw pykka and autogen-core.

Run:  python3 scripts/bench_actors.py [--quick]

Side by side in one run:
  * raw pykka: blocking ``ref.ask`` round trip from a thread, and ``tell`` throughput;
  * clawlog: typed ``await handle.ask`` from asyncio and ``handle.tell`` throughput, without
    and with one durable event append (SQLite, synchronous=FULL) per message;
  * autogen-core: ``SingleThreadedAgentRuntime.send_message`` round trip between two agents.
Ends with ``RATIOS ask_vs_pykka=... ask_vs_autogen=... tell_vs_pykka=...``.
"""

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pykka
from autogen_core import (
    AgentId,
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    message_handler,
)
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawlog.actors import EventSourcedActor, Message, Request, System
from clawlog.events import Event


# -- raw pykka ------------------------------------------------------------------------
class RawEcho(pykka.ThreadingActor):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def on_receive(self, message: Any) -> Any:
        if message == "count":
            return self.count
        self.count += 1
        return message


def bench_pykka(n_ask: int, n_tell: int) -> tuple[float, float]:
    ref = RawEcho.start()
    try:
        for _ in range(200):
            ref.ask("warm")
        start = time.perf_counter()
        for _ in range(n_ask):
            ref.ask("ping")
        ask_rate = n_ask / (time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(n_tell):
            ref.tell("t")
        ref.ask("count")
        tell_rate = n_tell / (time.perf_counter() - start)
    finally:
        ref.stop()
    return ask_rate, tell_rate


# -- clawlog --------------------------------------------------------------------------
class Bumped(Event, tag="bench.bumped"):
    n: int = 0


class Ping(Request[int], frozen=True, kw_only=True):
    pass


class Bump(Message, frozen=True, kw_only=True):
    pass


class Count(Request[int], frozen=True, kw_only=True):
    pass


class BenchActor(EventSourcedActor[None]):
    kind = "bench"
    durable = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.count = 0

    def handle(self, message: Message) -> Any:
        if isinstance(message, Bump):
            self.count += 1
            if self.durable:
                self.emit([Bumped(n=self.count)])
            return None
        if isinstance(message, Count):
            return self.count
        if isinstance(message, Ping):
            if self.durable:
                self.emit([Bumped(n=self.count)])
            return 1
        return super().handle(message)


class DurableBenchActor(BenchActor):
    durable = True


async def bench_clawlog(path: Path, n_ask: int, n_tell: int, durable: bool) -> tuple[float, float]:
    async with System.open(path, event_types=[Bumped]) as system:
        cls = DurableBenchActor if durable else BenchActor
        handle = await system.spawn(cls, f"bench/{'durable' if durable else 'plain'}")
        for _ in range(100):
            await handle.ask(Ping())
        start = time.perf_counter()
        for _ in range(n_ask):
            await handle.ask(Ping())
        ask_rate = n_ask / (time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(n_tell):
            handle.tell(Bump())
        await handle.ask(Count(), timeout=600)
        tell_rate = n_tell / (time.perf_counter() - start)
    return ask_rate, tell_rate


# -- autogen-core ---------------------------------------------------------------------
@dataclass
class AgPing:
    n: int


class Echo(RoutedAgent):
    def __init__(self) -> None:
        super().__init__("echo")

    @message_handler
    async def on_ping(self, message: AgPing, ctx: MessageContext) -> AgPing:
        return message


class Caller(RoutedAgent):
    """Sends ``n`` pings to the echo agent, awaiting each reply (a round trip)."""

    def __init__(self) -> None:
        super().__init__("caller")

    @message_handler
    async def on_ping(self, message: AgPing, ctx: MessageContext) -> AgPing:
        for i in range(message.n):
            await self.send_message(AgPing(n=i), AgentId("echo", "default"))
        return message


async def bench_autogen(n_ask: int) -> float:
    runtime = SingleThreadedAgentRuntime()
    await Echo.register(runtime, "echo", Echo)
    await Caller.register(runtime, "caller", Caller)
    runtime.start()
    try:
        await runtime.send_message(AgPing(n=100), AgentId("caller", "default"))
        start = time.perf_counter()
        await runtime.send_message(AgPing(n=n_ask), AgentId("caller", "default"))
        return n_ask / (time.perf_counter() - start)
    finally:
        await runtime.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller counts (< 60 s)")
    args = parser.parse_args()
    n_ask, n_tell, n_durable = (3_000, 30_000, 1_000) if args.quick else (20_000, 200_000, 5_000)
    import logging

    logging.getLogger("pykka").setLevel(logging.ERROR)
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        pykka_ask, pykka_tell = bench_pykka(n_ask, n_tell)
        claw_ask, claw_tell = asyncio.run(bench_clawlog(Path(tmp) / "a.db", n_ask, n_tell, False))
        dur_ask, dur_tell = asyncio.run(
            bench_clawlog(Path(tmp) / "b.db", n_durable, n_durable, True)
        )
        autogen = asyncio.run(bench_autogen(n_ask))
    table = Table(title="actor round trips and throughput (messages/s, higher is better)")
    for column in ("system", "ask round trip /s", "tell /s"):
        table.add_column(column, justify="right" if column != "system" else "left")
    table.add_row("raw pykka (thread, blocking ask)", f"{pykka_ask:,.0f}", f"{pykka_tell:,.0f}")
    table.add_row("clawlog typed ask/tell (asyncio)", f"{claw_ask:,.0f}", f"{claw_tell:,.0f}")
    table.add_row("clawlog + 1 durable append/msg (FULL)", f"{dur_ask:,.0f}", f"{dur_tell:,.0f}")
    table.add_row("autogen-core send_message", f"{autogen:,.0f}", "-")
    console.print(table)
    print(
        "RATIOS "
        f"ask_vs_pykka={claw_ask / pykka_ask:.2f} ask_vs_autogen={claw_ask / autogen:.2f} "
        f"tell_vs_pykka={claw_tell / pykka_tell:.2f} "
        f"durable_ask_per_s={dur_ask:.0f} durable_tell_per_s={dur_tell:.0f}"
    )


if __name__ == "__main__":
    main()
