"""``clawlog timers`` and the timers read model: what is pending, when, for whom."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.automation import Trigger
from clawlog.actors.providers import ScriptedModel, reply
from clawlog.actors.timers import ManualClock
from clawlog.events.streams import routines_stream
from tests.actors.conftest import FAST
from tests.cli.support import clawlog
from tests.support.waiting import count, wait_for_events

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC).timestamp()


async def write_log(path: Path) -> None:
    clock = ManualClock(T0)
    async with System.open(path, clock=clock, policy=FAST) as system:
        await system.register_agent(AgentConfig(key="ops"), ScriptedModel(lambda r: reply("ok")))
        routines = system.routines
        await routines.define("ops", "hourly", "Check.", Trigger.every(3600), misfire="skip")
        await routines.define("ops", "daily", "Report.", Trigger.cron("0 18 * * *"))
        await routines.define("ops", "dropped", "Never.", Trigger.every(600))
        await routines.remove("ops", "dropped")
        clock.advance(3600)  # hourly fires once and is set again
        await wait_for_events(system, routines_stream("ops"), count("routine.run_ended"))


async def test_timers_lists_the_pending_ones_due_soonest_first(tmp_path: Path) -> None:
    log = tmp_path / "t.db"
    await write_log(log)
    done = clawlog("timers", "--db", str(log))
    assert done.returncode == 0, done.stderr
    header, *rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert header == ["owner", "timer", "kind", "for", "due (UTC)", "misfire", "state", "pos"]
    assert [(r[0], r[1], r[2], r[4], r[5]) for r in rows] == [
        ("routines/ops", "routine:hourly", "routine", "2026-12-07 11:00:00", "skip"),
        ("routines/ops", "routine:daily", "routine", "2026-12-07 18:00:00", "fire"),
    ]


async def test_timers_all_shows_how_each_ended_as_json(tmp_path: Path) -> None:
    log = tmp_path / "t.db"
    await write_log(log)
    done = clawlog("timers", "--all", "--json", "--db", str(log))
    assert done.returncode == 0, done.stderr
    rows = {r["timer_id"]: r for r in msgspec.json.decode(done.stdout)}
    assert rows["routine:dropped"]["state"] == "cancelled"
    assert rows["routine:dropped"]["reason"] == "routine removed"
    assert rows["routine:hourly"]["state"] == "pending"  # its next occurrence
    kinds = clawlog("timers", "--kind", "approval", "--db", str(log))
    assert kinds.returncode == 0 and kinds.stdout.splitlines()[1:] == []


async def test_replay_as_of_folds_a_routines_stream(tmp_path: Path) -> None:
    log = tmp_path / "t.db"
    await write_log(log)
    done = clawlog(
        "replay", "--as-of", "999999", "--stream", "routines/ops", "--json", "--db", str(log)
    )
    assert done.returncode == 0, done.stderr
    state = msgspec.json.decode(done.stdout)["state"]
    assert sorted(state["routines"]["routines"]) == ["daily", "hourly"]
    assert state["routines"]["routines"]["hourly"]["runs"] == 1
    assert sorted(state["timers"]["pending"]) == ["routine:daily", "routine:hourly"]


async def test_the_console_timeline_draws_runs_to_their_session_and_timers_on_their_owner(
    tmp_path: Path,
) -> None:
    from clawlog.events import open_store
    from clawlog.ui.timeline import TimelineFilter, window_before

    log = tmp_path / "t.db"
    await write_log(log)
    store = await open_store(log)
    try:
        window = await window_before(store, TimelineFilter(agent="ops"))
    finally:
        await store.close()
    runs = [i for i in window.items if i.kind == "routine" and i.label == "routine hourly"]
    assert [(r.lane, r.to_lane, r.outcome) for r in runs] == [
        ("routines/ops", "session/ops/routines", "completed")
    ]
    timers = [(i.label, i.outcome, i.detail) for i in window.items if i.kind == "timer"]
    assert ("timer routine", "completed", "fired") in timers  # the hourly run's timer
    assert ("timer routine", "interrupted", "cancelled: routine removed") in timers
    pending = [t for t in timers if t[1] == "waiting"]
    assert sorted(t[2] for t in pending) == [
        "due 2026-12-07 11:00:00 UTC",
        "due 2026-12-07 18:00:00 UTC",
    ]
