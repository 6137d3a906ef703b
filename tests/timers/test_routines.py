"""Routines an application defines: on a schedule, on events in the log, on a webhook."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import msgspec
import pytest

from clawlog.actors import ArgumentTypeError, InvalidArgument, Rejected, System, UnknownAgent
from clawlog.actors.agents import AgentConfig
from clawlog.actors.automation import Trigger
from clawlog.actors.providers import ModelRequest, ScriptedModel, reply
from clawlog.actors.timers import ManualClock
from clawlog.events import Event, EventMetadata, RecordedEvent
from clawlog.events.domain.routine import RunStarted
from clawlog.events.streams import routines_stream
from tests.actors.conftest import FAST
from tests.support.waiting import count, wait_for_events

BERLIN = ZoneInfo("Europe/Berlin")
#: Monday 7 December 2026, 07:59 in Berlin.
T0 = datetime(2026, 12, 7, 7, 59, tzinfo=BERLIN).timestamp()
AGENT = "ops"
STREAM = routines_stream(AGENT)


class Deployed(Event, tag="test.deployed"):
    service: str
    status: str = "ok"


def echo(request: ModelRequest) -> Any:
    return reply(f"done: {request.messages[-1].content}")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "routines.db"


async def start(db: Path, clock: ManualClock, model: Any = None) -> System:
    system = await System.open(db, clock=clock, policy=FAST, event_types=[Deployed])
    await system.register_agent(AgentConfig(key=AGENT), model or ScriptedModel(echo))
    return system


@pytest.fixture
async def running(db: Path) -> AsyncIterator[tuple[System, ManualClock]]:
    clock = ManualClock(T0)
    system = await start(db, clock)
    try:
        yield system, clock
    finally:
        await system.close()


async def outbox(system: System) -> list[Any]:
    return [m async for m in system.outbox(follow=False)]


def of_type(seen: list[RecordedEvent], kind: str) -> list[Any]:
    return [e.event for e in seen if e.type == kind]


async def test_a_cron_routine_runs_at_its_time_in_its_zone_and_sets_the_next(
    running: tuple[System, ManualClock],
) -> None:
    system, clock = running
    info = await system.routines.define(
        AGENT,
        "morning",
        "Summarize the night.",
        Trigger.cron("0 8 * * 1-5", tz="Europe/Berlin"),
        session_key="daily",
        channel="slack",
        chat_id="ops-room",
    )
    assert info.next_due == datetime(2026, 12, 7, 8, 0, tzinfo=BERLIN).timestamp()
    clock.advance(60)
    seen = await wait_for_events(system, STREAM, count("routine.run_ended"))
    started = of_type(seen, "routine.run_started")[0]
    assert (started.trigger, started.session_key, started.due_at) == (
        "schedule",
        "daily",
        info.next_due,
    )
    assert of_type(seen, "routine.run_ended")[0].outcome == "completed"
    (message,) = await outbox(system)
    assert (message.kind, message.channel, message.chat_id, message.turn_id) == (
        "routine",
        "slack",
        "ops-room",
        started.turn_id,
    )
    assert message.text == "done: [routine:morning] Summarize the night."
    (listed,) = await system.routines.list(AGENT)
    tuesday = datetime(2026, 12, 8, 8, 0, tzinfo=BERLIN).timestamp()
    assert (listed.next_due, listed.runs, listed.running) == (tuesday, 1, False)


async def test_an_event_routine_runs_once_per_matching_event_also_after_a_restart(
    db: Path,
) -> None:
    clock = ManualClock(T0)
    system = await start(db, clock)
    await system.store.append("deploys/web", [Deployed(service="old")], 0)  # before: never
    await system.routines.define(
        AGENT,
        "on-deploy",
        "A deploy finished; check it.",
        Trigger.on_event("test.*", fields={"status": "ok"}),
    )
    await system.store.append("deploys/web", [Deployed(service="web")], 1)
    await system.store.append("deploys/web", [Deployed(service="web", status="failed")], 2)
    seen = await wait_for_events(system, STREAM, count("routine.run_ended"))
    started = of_type(seen, "routine.run_started")
    assert len(started) == 1 and '"service":"web"' in started[0].message
    await system.close()
    # While the process is down, two more deploys happen.
    async with System.open(db, event_types=[Deployed]) as offline:
        await offline.store.append("deploys/api", [Deployed(service="api")], 0)
        await offline.store.append("deploys/db", [Deployed(service="db")], 0)
    system = await start(db, clock)
    seen = await wait_for_events(system, STREAM, count("routine.run_ended", 3))
    services = [
        msgspec.json.decode(s.message.split("\n", 3)[-1])["service"]
        for s in of_type(seen, "routine.run_started")
    ]
    assert services == ["web", "api", "db"]
    await system.close()
    system = await start(db, clock)  # started again: nothing is run twice
    (listed,) = await system.routines.list(AGENT)
    assert listed.runs == 3
    page = await system.store.read_stream(STREAM)
    assert sum(e.type == "routine.run_started" for e in page) == 3
    await system.close()


async def test_a_webhook_runs_the_routine_with_its_payload(
    running: tuple[System, ManualClock],
) -> None:
    system, _ = running
    await system.routines.define(AGENT, "hook", "A webhook came:", Trigger.webhook())
    body = {"release": "v2", "by": "ci"}
    turn_id = await system.routines.webhook(AGENT, "hook", body)
    seen = await wait_for_events(system, STREAM, count("routine.run_ended"))
    started = of_type(seen, "routine.run_started")[0]
    encoded = msgspec.json.encode(body)
    assert started.turn_id == turn_id
    assert started.webhook_digest == hashlib.sha256(encoded).hexdigest()
    assert started.message == f"A webhook came:\n\n{encoded.decode()}"
    with pytest.raises(Rejected, match="not triggered by a webhook"):
        await system.routines.define(AGENT, "manual-one", "Go.", Trigger.manual())
        await system.routines.webhook(AGENT, "manual-one", "x")


async def test_a_long_payload_is_cut_in_the_runs_message_with_a_notice(
    running: tuple[System, ManualClock],
) -> None:
    from clawlog.actors.automation.routines import PAYLOAD_CHARS

    system, _ = running
    await system.routines.define(AGENT, "hook", "A webhook came:", Trigger.webhook())
    body = "x" * (PAYLOAD_CHARS + 10)
    await system.routines.webhook(AGENT, "hook", body)
    seen = await wait_for_events(system, STREAM, count("routine.run_started"))
    started = of_type(seen, "routine.run_started")[0]
    cut = f"{'x' * PAYLOAD_CHARS} …(cut: {PAYLOAD_CHARS + 10} characters in all)"
    assert started.message == f"A webhook came:\n\n{cut}"


async def test_cooldown_and_busy_skip_a_run_and_say_why(
    running: tuple[System, ManualClock],
) -> None:
    system, clock = running
    await system.routines.define(AGENT, "tidy", "Tidy up.", Trigger.manual(), cooldown_s=600)
    await system.routines.run(AGENT, "tidy")
    await wait_for_events(system, STREAM, count("routine.run_ended"))
    with pytest.raises(Rejected, match="less than its cooldown ago"):
        await system.routines.run(AGENT, "tidy")
    clock.advance(601)
    await system.routines.run(AGENT, "tidy")
    seen = await wait_for_events(system, STREAM, count("routine.run_ended", 2))
    skipped = of_type(seen, "routine.run_skipped")
    assert [(s.reason, s.trigger) for s in skipped] == [("cooldown", "manual")]
    runs = await system.routines.runs(AGENT, "tidy")
    assert [r.outcome for r in runs] == ["completed", "completed"]


async def test_a_missed_scheduled_run_fires_once_or_is_skipped_after_downtime(
    db: Path,
) -> None:
    system = await start(db, ManualClock(T0))
    for name, misfire in (("catch-up", "fire"), ("skipper", "skip")):
        await system.routines.define(
            AGENT,
            name,
            "Daily report.",
            Trigger.cron("0 8 * * *", "Europe/Berlin"),
            misfire=misfire,
        )
    await system.close()
    three_days_later = T0 + 3 * 86400 + 3600  # Thursday 08:59: three 08:00s were missed
    system = await start(db, ManualClock(three_days_later))
    seen = await wait_for_events(
        system,
        STREAM,
        lambda s: bool(of_type(s, "routine.run_ended") and of_type(s, "routine.run_skipped")),
    )
    started = of_type(seen, "routine.run_started")
    assert [s.name for s in started] == ["catch-up"]  # once, however many were missed
    assert of_type(seen, "routine.run_skipped")[0].name == "skipper"
    friday = datetime(2026, 12, 11, 8, 0, tzinfo=BERLIN).timestamp()
    assert {r.name: r.next_due for r in await system.routines.list(AGENT)} == {
        "catch-up": friday,
        "skipper": friday,
    }
    await system.close()


async def test_removing_a_routine_cancels_its_timer(running: tuple[System, ManualClock]) -> None:
    system, clock = running
    await system.routines.define(AGENT, "gone", "Never.", Trigger.every(3600))
    assert await system.routines.remove(AGENT, "gone") is True
    assert await system.routines.remove(AGENT, "gone") is False
    await system.routines.define(AGENT, "marker", "Soon.", Trigger.every(7200))
    clock.advance(7200)
    seen = await wait_for_events(system, STREAM, count("routine.run_ended"))
    assert [s.name for s in of_type(seen, "routine.run_started")] == ["marker"]
    cancelled = of_type(seen, "timer.cancelled")
    assert [c.timer_id for c in cancelled] == ["routine:gone"]


async def record_open_run(store: Any, turn_id: str) -> None:
    """Append the start of a manual run of ``job`` with no end, as a process leaves it
    that stopped after recording it."""
    version = await store.stream_version(STREAM)
    lost = RunStarted(
        turn_id=turn_id,
        name="job",
        origin="api",
        trigger="manual",
        session_key="routines",
        message="Do the job.",
        started_at=T0,
    )
    await store.append(STREAM, [lost], version, EventMetadata(actor=STREAM))


async def test_a_run_the_process_lost_before_its_session_had_it_is_sent_once(db: Path) -> None:
    clock = ManualClock(T0)
    system = await start(db, clock)
    await system.routines.define(AGENT, "job", "Do the job.", Trigger.manual())
    await system.close()
    # The log as a process leaves it that stopped right after recording a run's start.
    async with System.open(db) as offline:
        await record_open_run(offline.store, "lost-turn-1")
    for _ in range(2):
        system = await start(db, clock)
        seen = await wait_for_events(system, STREAM, count("routine.run_ended"))
        (ended,) = of_type(seen, "routine.run_ended")
        assert (ended.turn_id, ended.outcome) == ("lost-turn-1", "completed")
        session = await system.store.read_stream(f"session/{AGENT}/routines")
        assert [e.event.turn_id for e in session if e.type == "session.turn_started"] == [
            "lost-turn-1"
        ]
        await system.close()


async def test_a_run_whose_turn_was_cancelled_ends_at_start_and_is_not_sent_again(
    db: Path,
) -> None:
    from clawlog.events.domain.session import TurnCancelled, TurnCompleted, TurnStarted

    clock = ManualClock(T0)
    system = await start(db, clock)
    await system.routines.define(AGENT, "job", "Do the job.", Trigger.manual())
    await system.close()
    # The log as a process leaves it that stopped after the run's turn was cancelled and
    # before the run's end was recorded; a session with a longer key holds a turn of the
    # same id (its stream shares the run's session stream as a prefix).
    turn = "cancelled-turn-1"
    async with System.open(db) as offline:
        await record_open_run(offline.store, turn)
        started = TurnStarted(turn_id=turn, text="Do the job.")
        await offline.store.append(
            f"session/{AGENT}/routines", [started, TurnCancelled(turn_id=turn)], 0
        )
        await offline.store.append(
            f"session/{AGENT}/routines-2",
            [started, TurnCompleted(turn_id=turn, reply="not this one", iterations=1)],
            0,
        )
    system = await start(db, clock)
    seen = await wait_for_events(system, STREAM, count("routine.run_ended"))
    (ended,) = of_type(seen, "routine.run_ended")
    assert (ended.turn_id, ended.outcome) == (turn, "failed")
    assert "cancelled" in ended.message
    session = await system.store.read_stream(f"session/{AGENT}/routines")
    assert [e.type for e in session] == ["session.turn_started", "session.turn_cancelled"]
    await system.close()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda r: r.define(AGENT, "bad name!", "x", Trigger.manual()), Rejected, "routine name"),
        (lambda r: r.define(AGENT, "x", "", Trigger.manual()), InvalidArgument, "prompt"),
        (lambda r: r.define(AGENT, "x", "p", "0 8 * * *"), ArgumentTypeError, "trigger"),
        (
            lambda r: r.define(AGENT, "x", "p", Trigger.manual(), misfire="later"),
            InvalidArgument,
            "misfire",
        ),
        (
            lambda r: r.define(AGENT, "x", "p", Trigger.manual(), cooldown_s=-1),
            InvalidArgument,
            "cooldown_s",
        ),
        (
            lambda r: r.define(AGENT, "x", "p", Trigger.manual(), grace_s=float("inf")),
            InvalidArgument,
            "grace_s",
        ),
        (
            lambda r: r.define(AGENT, "x", "p", Trigger.manual(), enabled="no"),
            ArgumentTypeError,
            "enabled",
        ),
        (
            lambda r: r.define(AGENT, "x", "p", Trigger.manual(), session_key="a b"),
            InvalidArgument,
            "session",
        ),
        (lambda r: r.define(AGENT, "x", "p", Trigger.at(T0 - 60)), Rejected, "in the future"),
        (
            lambda r: r.define(AGENT, "x", "p", Trigger.on_event("test.deployd")),
            Rejected,
            "no event type is 'test.deployd'",
        ),
        (lambda r: r.define(AGENT, "x", "p", Trigger.on_event("nope.*")), Rejected, "nope"),
        (lambda r: r.define("nobody", "x", "p", Trigger.manual()), UnknownAgent, "nobody"),
        (lambda r: r.run(AGENT, "missing"), Rejected, "no routine named 'missing'"),
        (lambda r: r.remove(AGENT, "heartbeat"), InvalidArgument, "AgentConfig.heartbeat"),
        (lambda r: r.enable(AGENT, "missing"), Rejected, "no routine named 'missing'"),
    ],
)
async def test_bad_routine_calls_are_refused_with_their_reason(
    running: tuple[System, ManualClock],
    call: Callable[[Any], Any],
    error: type[Exception],
    match: str,
) -> None:
    system, _ = running
    with pytest.raises(error, match=match):
        await call(system.routines)
    assert await system.store.stream_version(STREAM) in (0, 1)  # nothing was defined


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Trigger.cron("61 * * * *"), "not valid"),
        (lambda: Trigger.cron("0 8 * *"), "5 fields"),
        (lambda: Trigger.cron("0 8 * * *", tz="Mars/Olympus"), "unknown time zone"),
        (lambda: Trigger.every(0), "positive"),
        (lambda: Trigger.at("tomorrow"), "ISO 8601"),
        (lambda: Trigger.on_event(), "at least one event type"),
        (lambda: Trigger.cron("0 0 30 2 *"), "never runs"),
    ],
)
def test_a_trigger_that_cannot_run_is_refused_where_it_is_written(
    build: Callable[[], Any], match: str
) -> None:
    with pytest.raises(InvalidArgument, match=match):
        build()


class SilentModel:
    """A model that never answers (its turns stay in flight until the System closes)."""

    name = "silent"
    provider = "test"

    async def complete(self, request: ModelRequest) -> Any:
        import asyncio

        await asyncio.Event().wait()


async def test_runs_a_shutdown_interrupted_are_finished_once_after_the_restart(db: Path) -> None:
    clock = ManualClock(T0)
    system = await System.open(db, clock=clock, policy=FAST)
    await system.register_agent(AgentConfig(key=AGENT), SilentModel())
    await system.routines.define(AGENT, "hook", "Deploy:", Trigger.webhook())
    first = await system.routines.webhook(AGENT, "hook", "one")  # in flight at the close
    second = await system.routines.webhook(AGENT, "hook", "two")  # queued behind it
    await wait_for_events(system, "session/ops/routines", count("session.model_requested"))
    await system.close()
    async with System.open(db) as offline:  # the close recorded no end for either
        types = [e.type for e in await offline.store.read_stream(STREAM)]
        assert types.count("routine.run_started") == 2 and "routine.run_ended" not in types
    system = await start(db, clock)  # the model answers now
    seen = await wait_for_events(system, STREAM, count("routine.run_ended", 2))
    ended = {e.turn_id: e.outcome for e in of_type(seen, "routine.run_ended")}
    assert ended == {first: "completed", second: "completed"}
    session = await system.store.read_stream("session/ops/routines")
    started = [e.event.turn_id for e in session if e.type == "session.turn_started"]
    assert sorted(started) == sorted([first, second])  # each turn started once
    await system.close()


async def test_a_turn_sent_twice_runs_once_and_both_askers_hear_it(
    running: tuple[System, ManualClock],
) -> None:
    from clawlog.actors.agents.messages import SendMessage
    from clawlog.events.streams import agent_stream

    system, _ = running
    supervisor = system.actor(agent_stream(AGENT))
    assert supervisor is not None
    message = SendMessage(session_key="s1", text="hello", turn_id="turn-once")
    first = await system.ask(supervisor, message)
    again = await system.ask(supervisor, message)
    assert first == again == "done: hello"
    session = await system.store.read_stream("session/ops/s1")
    assert [e.type for e in session].count("session.turn_started") == 1


async def test_a_schedule_whose_last_run_is_open_skips_as_busy(db: Path) -> None:
    clock = ManualClock(T0)
    system = await System.open(db, clock=clock, policy=FAST)
    await system.register_agent(AgentConfig(key=AGENT), SilentModel())
    await system.routines.define(AGENT, "often", "Check.", Trigger.every(600))
    clock.advance(600)
    await wait_for_events(system, STREAM, count("routine.run_started"))
    clock.advance(600)
    seen = await wait_for_events(system, STREAM, count("routine.run_skipped"))
    (skipped,) = of_type(seen, "routine.run_skipped")
    assert (skipped.reason, skipped.due_at) == ("busy", T0 + 1200)
    (listed,) = await system.routines.list(AGENT)
    assert listed.running and listed.next_due == T0 + 1800
    await system.close()


async def test_an_event_trigger_never_fires_for_events_from_before_it_or_while_it_was_off(
    running: tuple[System, ManualClock],
) -> None:
    system, _ = running
    routines = system.routines
    await routines.define(AGENT, "deploys", "Deployed:", Trigger.manual())
    await system.store.append("deploys/web", [Deployed(service="before")], 0)
    await routines.define(AGENT, "deploys", "Deployed:", Trigger.on_event("test.deployed"))
    await routines.enable(AGENT, "deploys", False)
    await system.store.append("deploys/web", [Deployed(service="while-off")], 1)
    info = await routines.enable(AGENT, "deploys")
    assert info.enabled
    await system.store.append("deploys/web", [Deployed(service="after")], 2)
    seen = await wait_for_events(system, STREAM, count("routine.run_ended"))
    started = of_type(seen, "routine.run_started")
    assert len(started) == 1 and '"service":"after"' in started[0].message


async def test_the_application_disables_and_removes_an_agents_cron_job(
    running: tuple[System, ManualClock],
) -> None:
    from clawlog.actors.automation.messages import DefineRoutine
    from clawlog.events.domain.routine import RoutineDefined, RoutineTrigger, Schedule
    from clawlog.events.streams import agent_stream

    system, _ = running
    supervisor = system.actor(agent_stream(AGENT))
    assert supervisor is not None
    job = DefineRoutine(
        routine=RoutineDefined(
            name="job-1",
            origin="cron",
            trigger=RoutineTrigger(kind="schedule", schedule=Schedule(kind="every", every_s=3600)),
            prompt="Ping.",
            session_key="chat",
        )
    )
    await system.ask(supervisor, job)
    off = await system.routines.enable(AGENT, "job-1", False)
    assert (off.enabled, off.next_due) == (False, None)
    assert await system.routines.remove(AGENT, "job-1") is True
    assert await system.routines.list(AGENT) == []


async def test_webhook_secrets_never_reach_the_log(running: tuple[System, ManualClock]) -> None:
    system, _ = running
    await system.routines.define(AGENT, "hook", "Incoming:", Trigger.webhook())
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    await system.routines.webhook(AGENT, "hook", {"auth": f"Bearer {token}"})
    seen = await wait_for_events(system, STREAM, count("routine.run_ended"))
    (started,) = of_type(seen, "routine.run_started")
    assert token not in started.message and "[REDACTED]" in started.message
