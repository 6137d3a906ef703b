"""A process with a routine on a clock the test sets, for the kill and two-process tests.

    python -m tests.timers.timer_child LOG CLOCK_START ACTION

LOG is an SQLite path, or ``postgresql://...#SCHEMA``. The clock starts at CLOCK_START
(epoch seconds) and moves only when ACTION says:

- ``define``: register agent ``ops`` with routine ``tick`` (every hour, first due an hour
  after CLOCK_START), print ``ready`` once that is durable, and wait to be killed;
- ``serve N``: register ``ops`` and wait until N runs of ``tick`` have ended, then print
  ``served`` (``owned elsewhere`` and exit 0 if another process owns the agent);
- ``advance S N``: as ``serve N``, after moving the clock S seconds forward (once the
  agent is running).

On the way out it prints ``runs K``: the ``routine.run_started`` events in the log.
"""

from __future__ import annotations

import asyncio
import sys

from clawlog.actors import StreamOwnedElsewhere, System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.automation import Trigger
from clawlog.actors.providers import ScriptedModel, reply
from clawlog.actors.timers import ManualClock
from clawlog.events.streams import routines_stream

STREAM = routines_stream("ops")


def opened(log: str, clock: ManualClock) -> object:
    if log.startswith("postgresql://"):
        url, schema = log.rsplit("#", 1)
        return System.open(url, schema=schema, clock=clock)
    return System.open(log, clock=clock)


async def runs_ended(system: System, wanted: int) -> None:
    seen = 0
    async with system.store.subscribe(1, stream_prefix=STREAM) as live:
        async for recorded in live:
            seen += recorded.type == "routine.run_ended"
            if seen >= wanted:
                return


async def main(log: str, start: float, action: str, *rest: str) -> None:
    clock = ManualClock(start)
    async with opened(log, clock) as system:  # type: ignore[attr-defined]
        model = ScriptedModel(lambda request: reply("tick done"))
        try:
            await system.register_agent(AgentConfig(key="ops"), model)
        except StreamOwnedElsewhere:
            print("owned elsewhere", flush=True)
            return
        if action == "define":
            await system.routines.define("ops", "tick", "Tick.", Trigger.every(3600))
            print("ready", flush=True)
            await asyncio.Event().wait()  # until killed
        if action == "advance":
            clock.advance(float(rest[0]))
            rest = rest[1:]
        await asyncio.wait_for(runs_ended(system, int(rest[0])), 60)
        page = await system.store.read_stream(STREAM)
        print("served", flush=True)
        print(f"runs {sum(e.type == 'routine.run_started' for e in page)}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2]), *sys.argv[3:]))
