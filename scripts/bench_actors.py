"""Actor runtime benchmark: clawlog's typed ask/tell against raw pykka and autogen-core.

Run:  python3 scripts/bench_actors.py [--quick]

Side by side in one run:
  * raw pykka: blocking ``ref.ask`` round trip from a thread, and ``tell`` throughput;
  * clawlog: typed ``await handle.ask`` from asyncio and ``handle.tell`` throughput, without
    and with one durable event append (SQLite, synchronous=FULL) per message;
  * autogen-core: ``SingleThreadedAgentRuntime.send_message`` round trip between two agents.
Ends with ``RATIOS ask_vs_pykka=... ask_vs_autogen=... tell_vs_pykka=...``.

Where the threads run moves the ask ratio more than anything we do (issue 24): a round trip
between two CPUs costs about 40 µs more than on one, and the scheduler decides which it is.
So the asks are also run with the threads pinned (``os.sched_setaffinity`` from each thread):
the asker and the actor on one CPU (``ask_vs_pykka_one_cpu``) and on two
(``ask_vs_pykka_two_cpus``). Every figure is the median of ``--rounds`` rounds, the
frameworks alternating.
"""

import argparse
import asyncio
import os
import statistics
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
        if isinstance(message, frozenset):  # pin this actor's thread to these CPUs
            os.sched_setaffinity(0, message)
            return None
        if message == "count":
            return self.count
        self.count += 1
        return message


#: Which CPUs the asker's thread and the actor's thread run on (None: where the scheduler
#: puts them).
Pinning = tuple[frozenset[int], frozenset[int]] | None
ALL_CPUS = frozenset(os.sched_getaffinity(0))
PLACEMENTS: dict[str, Pinning] = {"scheduler": None}
if len(ALL_CPUS) >= 2:
    _first, _second = sorted(ALL_CPUS)[:2]
    PLACEMENTS["one_cpu"] = (frozenset({_first}), frozenset({_first}))
    PLACEMENTS["two_cpus"] = (frozenset({_first}), frozenset({_second}))


class pinned:
    """Pin the calling thread to ``pin[0]`` and, through ``pin_actor``, the actor's thread to
    ``pin[1]`` for the block; both go back to every CPU after it."""

    def __init__(self, pin: Pinning, pin_actor: Any) -> None:
        self.pin, self.pin_actor = pin, pin_actor

    def __enter__(self) -> None:
        if self.pin is not None:
            os.sched_setaffinity(0, self.pin[0])
            self.pin_actor(self.pin[1])

    def __exit__(self, *exc: object) -> None:
        if self.pin is not None:
            self.pin_actor(ALL_CPUS)
            os.sched_setaffinity(0, ALL_CPUS)


def bench_pykka(n_ask: int, n_tell: int, pin: Pinning = None) -> tuple[float, float]:
    ref = RawEcho.start()
    try:
        with pinned(pin, ref.ask):
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


class Pin(Request[None], frozen=True, kw_only=True):
    cpus: frozenset[int]


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
        if isinstance(message, Pin):
            os.sched_setaffinity(0, message.cpus)
            return None
        if isinstance(message, Ping):
            if self.durable:
                self.emit([Bumped(n=self.count)])
            return 1
        return super().handle(message)


class DurableBenchActor(BenchActor):
    durable = True


async def bench_clawlog(
    path: Path, n_ask: int, n_tell: int, durable: bool, pin: Pinning = None
) -> tuple[float, float]:
    async with System.open(path, event_types=[Bumped]) as system:
        cls = DurableBenchActor if durable else BenchActor
        handle = await system.spawn(cls, f"bench/{'durable' if durable else 'plain'}")
        if pin is not None:
            await handle.ask(Pin(cpus=pin[1]))
            os.sched_setaffinity(0, pin[0])
        try:
            for _ in range(100):
                await handle.ask(Ping())
            start = time.perf_counter()
            for _ in range(n_ask):
                await handle.ask(Ping())
            ask_rate = n_ask / (time.perf_counter() - start)
        finally:
            if pin is not None:
                os.sched_setaffinity(0, ALL_CPUS)
                await handle.ask(Pin(cpus=ALL_CPUS))
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
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 5; quick 3)")
    args = parser.parse_args()
    n_ask, n_tell, n_durable = (3_000, 30_000, 1_000) if args.quick else (20_000, 200_000, 5_000)
    rounds = args.rounds or (3 if args.quick else 5)
    import logging

    logging.getLogger("pykka").setLevel(logging.ERROR)
    console = Console()
    runs: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        runs.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(rounds):
            for placement, pin in PLACEMENTS.items():
                pykka_ask, pykka_tell = bench_pykka(n_ask, n_tell, pin)
                claw_ask, claw_tell = asyncio.run(
                    bench_clawlog(Path(tmp) / f"a{round_}{placement}.db", n_ask, n_tell, False, pin)
                )
                add(f"pykka_ask_{placement}", pykka_ask)
                add(f"claw_ask_{placement}", claw_ask)
                if pin is None:
                    add("pykka_tell", pykka_tell)
                    add("claw_tell", claw_tell)
            dur_ask, dur_tell = asyncio.run(
                bench_clawlog(Path(tmp) / f"b{round_}.db", n_durable, n_durable, True)
            )
            add("durable_ask", dur_ask)
            add("durable_tell", dur_tell)
            add("autogen", asyncio.run(bench_autogen(n_ask)))
    median = {name: statistics.median(values) for name, values in runs.items()}
    table = Table(title=f"actor round trips and throughput (messages/s, median of {rounds} rounds)")
    for column in ("system", "ask round trip /s", "tell /s"):
        table.add_column(column, justify="right" if column != "system" else "left")
    for placement in PLACEMENTS:
        where = "" if placement == "scheduler" else f", pinned to {placement.replace('_', ' ')}"
        tells = placement == "scheduler"
        table.add_row(
            f"raw pykka (thread, blocking ask){where}",
            f"{median[f'pykka_ask_{placement}']:,.0f}",
            f"{median['pykka_tell']:,.0f}" if tells else "-",
        )
        table.add_row(
            f"clawlog typed ask/tell (asyncio){where}",
            f"{median[f'claw_ask_{placement}']:,.0f}",
            f"{median['claw_tell']:,.0f}" if tells else "-",
        )
    table.add_row(
        "clawlog + 1 durable append/msg (FULL)",
        f"{median['durable_ask']:,.0f}",
        f"{median['durable_tell']:,.0f}",
    )
    table.add_row("autogen-core send_message", f"{median['autogen']:,.0f}", "-")
    console.print(table)
    pinned_ratios = "".join(
        f" ask_vs_pykka_{p}={median[f'claw_ask_{p}'] / median[f'pykka_ask_{p}']:.2f}"
        for p in PLACEMENTS
        if p != "scheduler"
    )
    print(
        "RATIOS "
        f"ask_vs_pykka={median['claw_ask_scheduler'] / median['pykka_ask_scheduler']:.2f}"
        f"{pinned_ratios} "
        f"ask_vs_autogen={median['claw_ask_scheduler'] / median['autogen']:.2f} "
        f"tell_vs_pykka={median['claw_tell'] / median['pykka_tell']:.2f} "
        f"durable_ask_per_s={median['durable_ask']:.0f} "
        f"durable_tell_per_s={median['durable_tell']:.0f}"
    )


if __name__ == "__main__":
    main()
