"""Durable timers on an actor's stream: fire once, on time, across restarts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from clawlog.actors import System
from clawlog.actors.timers import ManualClock, SystemClock
from clawlog.events import RecordedEvent
from tests.actors.conftest import FAST
from tests.support.waiting import count, wait_for_events
from tests.timers.reminder import Forget, Postpone, Remind, Reminded, Reminder, Reminders

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC).timestamp()
STREAM = "reminder/a"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "timers.db"


def opened(db: Path, clock: object) -> object:
    return System.open(db, event_types=[Reminded], policy=FAST, clock=clock)


async def events_of(system: System, kind: str) -> list[RecordedEvent]:
    page = await system.store.read_stream(STREAM)
    return [e for e in page if e.type == kind]


async def test_a_timer_fires_once_when_the_clock_reaches_its_due_time(db: Path) -> None:
    clock = ManualClock(T0)
    async with opened(db, clock) as system:
        reminder = await system.spawn(Reminder, STREAM)
        due = await reminder.ask(Remind(timer_id="t1", after_s=60))
        assert due == T0 + 60
        clock.advance(59)
        clock.advance(1)
        seen = await wait_for_events(system, STREAM, count("test.reminded"))
        fired = [e.event for e in seen if e.type == "timer.fired"]
        assert len(fired) == 1
        assert (fired[0].due_at, fired[0].fired_at, fired[0].late_s) == (T0 + 60, T0 + 60, 0)
        assert fired[0].misfired is False
        clock.advance(3600)
        assert await reminder.ask(Reminders()) == ["t1"]
    async with opened(db, clock) as system:  # reopened: nothing left to fire
        reminder = await system.spawn(Reminder, STREAM)
        assert await reminder.ask(Reminders()) == ["t1"]
        assert system.runtime.timers.armed() == 0


async def test_timers_due_at_once_fire_in_due_order(db: Path) -> None:
    clock = ManualClock(T0)
    async with opened(db, clock) as system:
        reminder = await system.spawn(Reminder, STREAM)
        for timer_id, after in [("late", 30), ("early", 10), ("middle", 20)]:
            await reminder.ask(Remind(timer_id=timer_id, after_s=after))
        clock.advance(60)
        await wait_for_events(system, STREAM, count("test.reminded", 3))
        assert await reminder.ask(Reminders()) == ["early", "middle", "late"]
        fired = await events_of(system, "timer.fired")
        assert [e.event.late_s for e in fired] == [50, 40, 30]  # all within the grace
        assert not any(e.event.misfired for e in fired)


async def test_a_timer_set_before_a_restart_fires_after_it_at_its_time(db: Path) -> None:
    async with opened(db, ManualClock(T0)) as system:
        reminder = await system.spawn(Reminder, STREAM)
        await reminder.ask(Remind(timer_id="t1", after_s=60))
    clock = ManualClock(T0 + 30)
    async with opened(db, clock) as system:
        reminder = await system.spawn(Reminder, STREAM)
        assert system.runtime.timers.armed() == 1
        clock.advance(30)
        await wait_for_events(system, STREAM, count("test.reminded"))
        assert (await events_of(system, "timer.fired"))[0].event.late_s == 0


@pytest.mark.parametrize("policy", ["fire", "skip"])
async def test_a_timer_due_while_the_process_was_down_fires_once_or_is_skipped(
    db: Path, policy: str
) -> None:
    async with opened(db, ManualClock(T0)) as system:
        reminder = await system.spawn(Reminder, STREAM)
        await reminder.ask(Remind(timer_id="t1", after_s=60, misfire=policy, grace_s=10))
    late_start = T0 + 3600
    async with opened(db, ManualClock(late_start)) as system:
        await system.spawn(Reminder, STREAM)
        outcome = "timer.fired" if policy == "fire" else "timer.skipped"
        seen = await wait_for_events(system, STREAM, count(outcome))
        event = next(e.event for e in seen if e.type == outcome)
        assert event.late_s == 3540
        if policy == "fire":
            assert event.misfired is True
    for _ in range(2):  # started again, later still: it never fires a second time
        async with opened(db, ManualClock(late_start + 7200)) as system:
            reminder = await system.spawn(Reminder, STREAM)
            expected = ["t1"] if policy == "fire" else []
            assert await reminder.ask(Reminders()) == expected
            assert len(await events_of(system, "timer.fired")) == len(expected)
            assert system.runtime.timers.armed() == 0


async def test_a_cancelled_timer_never_fires_and_a_moved_one_fires_at_its_new_time(
    db: Path,
) -> None:
    clock = ManualClock(T0)
    async with opened(db, clock) as system:
        reminder = await system.spawn(Reminder, STREAM)
        await reminder.ask(Remind(timer_id="gone", after_s=10))
        await reminder.ask(Remind(timer_id="moved", after_s=20))
        await reminder.ask(Remind(timer_id="marker", after_s=100))
        await reminder.ask(Forget(timer_id="gone"))
        await reminder.ask(Postpone(timer_id="moved", to=T0 + 50))
        clock.advance(30)  # past the cancelled and the old due time: the marker comes first
        clock.advance(70)
        await wait_for_events(system, STREAM, count("test.reminded", 2))
        assert await reminder.ask(Reminders()) == ["moved", "marker"]
        fired = {e.event.timer_id: e.event for e in await events_of(system, "timer.fired")}
        assert fired["moved"].due_at == T0 + 50


async def test_timers_survive_a_snapshot(db: Path) -> None:
    # Reminder snapshots every 3 events: the book must come back from the snapshot.
    async with opened(db, ManualClock(T0)) as system:
        reminder = await system.spawn(Reminder, STREAM)
        for n in range(7):
            await reminder.ask(Remind(timer_id=f"t{n}", after_s=10 + n))
    clock = ManualClock(T0)
    async with opened(db, clock) as system:
        reminder = await system.spawn(Reminder, STREAM)
        assert system.runtime.timers.armed() == 7
        clock.advance(100)
        await wait_for_events(system, STREAM, count("test.reminded", 7))
        assert await reminder.ask(Reminders()) == [f"t{n}" for n in range(7)]


async def test_on_real_time_a_timer_fires_by_itself(db: Path) -> None:
    async with opened(db, SystemClock()) as system:
        reminder = await system.spawn(Reminder, STREAM)
        await reminder.ask(Remind(timer_id="soon", after_s=0.05))
        seen = await wait_for_events(system, STREAM, count("test.reminded"))
        fired = next(e.event for e in seen if e.type == "timer.fired")
        assert fired.fired_at >= fired.due_at


def test_a_manual_clock_only_moves_forward() -> None:
    clock = ManualClock(T0)
    with pytest.raises(ValueError, match="forward"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="before"):
        clock.set(T0 - 1)
    with pytest.raises(ValueError, match="aware"):
        ManualClock(datetime(2026, 1, 1))
    assert (
        clock.set(datetime(2026, 12, 8, tzinfo=UTC))
        == datetime(2026, 12, 8, tzinfo=UTC).timestamp()
    )


async def test_open_refuses_a_clock_that_is_not_one(db: Path) -> None:
    from clawlog.actors import ArgumentTypeError

    with pytest.raises(ArgumentTypeError, match="clock"):
        System.open(db, clock=123)  # type: ignore[arg-type]
