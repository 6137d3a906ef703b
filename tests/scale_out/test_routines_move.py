"""An agent's routines move to another process that runs the agent when the process that
ran them stops (two Systems on one PostgreSQL schema, as two processes would be)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.automation import Trigger
from clawlog.actors.providers import ScriptedModel, reply
from clawlog.actors.timers import ManualClock
from clawlog.events.streams import routines_stream
from tests.support.postgres import database_url
from tests.support.waiting import count, wait_for_events

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0


async def test_routines_a_stopped_process_ran_fire_in_another_that_runs_the_agent() -> None:
    url, schema = database_url(), f"t_{uuid.uuid4().hex[:16]}"
    first_clock, second_clock = ManualClock(T0), ManualClock(T0)
    first = await System.open(url, schema=schema, lease_ttl_s=3, clock=first_clock)
    second = await System.open(url, schema=schema, lease_ttl_s=3, clock=second_clock)
    try:
        await first.register_agent(AgentConfig(key="ops"), ScriptedModel(lambda r: reply("1")))
        await first.routines.define("ops", "tick", "Tick.", Trigger.every(HOUR))
        # The second process runs the agent too; the first holds its routines.
        await second.register_agent(AgentConfig(key="ops"), ScriptedModel(lambda r: reply("2")))
        assert first.runtime.ownership.holds(routines_stream("ops"))
        assert not second.runtime.ownership.holds(routines_stream("ops"))
        await first.close()  # releases the routines' lease: nobody fires the timer now
        second_clock.advance(HOUR)
        # The second process's scan finds the released lease and starts the routines,
        # which fire the hour's run there.
        seen = await wait_for_events(second, routines_stream("ops"), count("routine.run_ended"))
        (ended,) = [e.event for e in seen if e.type == "routine.run_ended"]
        assert ended.outcome == "completed"
        assert second.runtime.ownership.holds(routines_stream("ops"))
    finally:
        await first.close()
        await second.close()
