"""One process of the scale-out tests: a System on a shared PostgreSQL log that sends to
every session and records each answer.

    python -m tests.scale_out.node URL SCHEMA NAME SESSIONS ROUNDS OUT [LEASE_TTL_S]

It registers agent ``main`` (its model answers ``answer: <message>``; with twenty sends
at a time and each turn several appends, turns are in flight when the test stops or
kills a process), sends ``warm`` to its own third of the sessions (so it holds their
leases), prints ``warm`` and waits for a line on stdin; then for each round sends
``NAME-ROUND-s<N>`` to every session ``s<N>`` (20 at a time, starting at a different
session in each process) and appends ``message<TAB>reply`` to OUT (flushed: what is in
OUT was answered). It prints ``round R`` after each round, ``done`` at the end, and
``stepped back N`` / ``fenced N``: how many of its actors stepped back because another
process took their stream over, and how many of its appends were fenced.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, reply


class Counter(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.stepped_back = 0
        self.fenced = 0

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        self.stepped_back += "stepping back" in text
        self.fenced += "fenced" in text.lower()


class EchoModel:
    name = "echo"
    provider = "test"

    async def complete(self, request: ModelRequest) -> ModelReply:
        return reply(f"answer: {request.messages[-1].content}")


async def main(
    url: str, schema: str, name: str, sessions: int, rounds: int, out: str, ttl: float
) -> None:
    counter = Counter()
    logging.getLogger("clawlog").addHandler(counter)
    logging.getLogger("clawlog").setLevel(logging.INFO)
    async with System.open(url, schema=schema, lease_ttl_s=ttl) as system:
        await system.register_agent(AgentConfig(key="main"), EchoModel())  # type: ignore[arg-type]
        index = int(name.removeprefix("n")) - 1
        mine = range(index * sessions // 3, (index + 1) * sessions // 3)
        await asyncio.gather(
            *(system.send("main", f"s{s}", f"warm {name} s{s}", timeout=120) for s in mine)
        )
        print("warm", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        start = mine.start
        order = [(start + n) % sessions for n in range(sessions)]
        gate = asyncio.Semaphore(20)
        with open(out, "a", buffering=1) as answers:

            async def one(text: str, session: int) -> None:
                async with gate:
                    answer = await system.send("main", f"s{session}", text, timeout=120)
                answers.write(f"{text}\t{answer}\n")

            for round_ in range(rounds):
                await asyncio.gather(*(one(f"{name}-{round_}-s{s}", s) for s in order))
                print(f"round {round_}", flush=True)
        print("done", flush=True)
        print(f"stepped back {counter.stepped_back}", flush=True)
        print(f"fenced {counter.fenced}", flush=True)


if __name__ == "__main__":
    url, schema, name, sessions, rounds, out, *rest = sys.argv[1:]
    ttl = float(rest[0]) if rest else 3.0
    asyncio.run(main(url, schema, name, int(sessions), int(rounds), out, ttl))
