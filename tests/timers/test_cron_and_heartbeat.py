"""The cron tool (an agent's jobs for itself) and the heartbeat (HEARTBEAT.md wake-ups)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig, CronLimits, HeartbeatConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.actors.timers import ManualClock
from clawlog.events import RecordedEvent
from clawlog.events.streams import routines_stream
from tests.actors.conftest import FAST
from tests.support.waiting import count, wait_for_events

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC).timestamp()
OWNER = "alice"


def tool_results(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "tool"]


def cron_agent(script: list[Any], **config: Any) -> tuple[AgentConfig, ScriptedModel]:
    """An agent whose owner is alice; the model follows ``script``, then echoes."""
    steps = iter(script)

    def model(request: ModelRequest) -> ModelReply:
        step = next(steps, None)
        if step is None:
            return reply(f"echo: {request.messages[-1].content}")
        return step(request) if callable(step) else step

    return AgentConfig(key="main", owner_ids=[OWNER], **config), ScriptedModel(model)


async def send(system: System, text: str, user: str = OWNER) -> str:
    return await system.send("main", "chat-1", text, channel="tg", chat_id="42", user=user)


async def test_an_agent_schedules_a_job_that_runs_in_its_session_and_replies_there(
    tmp_path: Path,
) -> None:
    clock = ManualClock(T0)
    seen_results: list[str] = []

    def after_add(request: ModelRequest) -> ModelReply:
        seen_results.extend(tool_results(request))
        return reply("Scheduled.")

    config, model = cron_agent(
        [
            call(
                "cron",
                action="add",
                job_id="water",
                message="Remind alice to drink water.",
                schedule={"kind": "every", "every": "2h"},
            ),
            after_add,
        ]
    )
    async with System.open(tmp_path / "c.db", clock=clock, policy=FAST) as system:
        await system.register_agent(config, model)
        assert await send(system, "Remind me to drink water every 2 hours") == "Scheduled."
        assert seen_results == ["added job water: every 2 h, next run 2026-12-07T11:00:00+00:00"]
        clock.advance(2 * 3600)
        seen = await wait_for_events(system, routines_stream("main"), count("routine.run_ended"))
        started = next(e.event for e in seen if e.type == "routine.run_started")
        assert (started.origin, started.session_key) == ("cron", "chat-1")
        messages = [m async for m in system.outbox(follow=False, kinds=["cron"])]
        assert [(m.channel, m.chat_id, m.user, m.text) for m in messages] == [
            ("tg", "42", OWNER, "echo: [cron:water] Remind alice to drink water.")
        ]


async def test_list_remove_and_runs_through_the_tool(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    answers: list[list[str]] = []

    def record(request: ModelRequest) -> ModelReply:
        answers.append(tool_results(request))
        return reply("ok")

    every_day = {"kind": "cron", "expr": "30 7 * * *", "tz": "Europe/Berlin"}
    config, model = cron_agent(
        [
            call("cron", action="add", job_id="daily", message="Plan the day.", schedule=every_day),
            record,
            call("cron", action="list"),
            record,
            call("cron", action="run", job_id="daily"),
            record,
            call("cron", action="remove", job_id="daily"),
            record,
            call("cron", action="remove", job_id="daily"),
            record,
        ]
    )
    async with System.open(tmp_path / "c.db", clock=clock, policy=FAST) as system:
        await system.register_agent(config, model)
        for text in ("add", "list", "run", "remove", "remove again"):
            await send(system, text)
        listed = msgspec.json.decode(answers[1][-1])
        assert listed[0]["job_id"] == "daily"
        assert listed[0]["next_run"] == "2026-12-08T06:30:00+00:00"  # 07:30 in Berlin
        assert answers[2][-1].startswith("job daily is running now")
        assert answers[3][-1] == "removed job daily"
        assert "no job 'daily'" in answers[4][-1]
        stream = routines_stream("main")
        page = await system.store.read_stream(stream)
        assert [e.type for e in page if e.type.startswith("timer.")] == [
            "timer.set",
            "timer.cancelled",
        ]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"schedule": {"kind": "every", "every": "10s"}}, "shorter than the minimum"),
        ({"schedule": {"kind": "cron", "expr": "* * * * *"}}, "the minimum interval is"),
        ({"schedule": {"kind": "cron", "expr": "0 25 * * *"}}, "not valid"),
        ({"schedule": {"kind": "at", "at": "soon"}}, "not an ISO 8601 time"),
        ({"schedule": {"kind": "weekly"}}, "kind"),
        ({"schedule": {"kind": "at", "at": True}}, "'schedule.at' must be string"),
        (
            {"schedule": {"kind": "every", "every": "1h"}, "enabled": "false"},
            "'enabled' must be boolean",
        ),
        ({}, "'schedule' is required"),
    ],
)
async def test_a_job_the_limits_refuse_tells_the_model_why(
    tmp_path: Path, arguments: dict[str, Any], error: str
) -> None:
    said: list[str] = []

    def record(request: ModelRequest) -> ModelReply:
        said.extend(tool_results(request))
        return reply("ok")

    config, model = cron_agent(
        [call("cron", action="add", message="x", **arguments), record],
        cron=CronLimits(max_jobs=5, min_interval_s=300),
    )
    async with System.open(tmp_path / "c.db", clock=ManualClock(T0), policy=FAST) as system:
        await system.register_agent(config, model)
        await send(system, "schedule it")
        assert len(said) == 1 and error in said[0]
        assert await system.store.stream_version(routines_stream("main")) <= 2  # no job


async def test_an_agent_cannot_pass_its_job_limit(tmp_path: Path) -> None:
    said: list[str] = []

    def record(request: ModelRequest) -> ModelReply:
        said.extend(tool_results(request)[-1:])
        return reply("ok")

    hourly = {"kind": "every", "every": "1h"}
    script: list[Any] = []
    for n in range(3):
        script += [call("cron", action="add", job_id=f"j{n}", message="x", schedule=hourly), record]
    config, model = cron_agent(script, cron=CronLimits(max_jobs=2))
    async with System.open(tmp_path / "c.db", clock=ManualClock(T0), policy=FAST) as system:
        await system.register_agent(config, model)
        for _ in range(3):
            await send(system, "one more")
        assert said[:2] == [
            "added job j0: every 1 h, next run 2026-12-07T10:00:00+00:00",
            "added job j1: every 1 h, next run 2026-12-07T10:00:00+00:00",
        ]
        assert "has 2 cron jobs, the most it may have" in said[2]


async def test_only_an_owner_has_the_cron_tool(tmp_path: Path) -> None:
    offered: list[list[str]] = []

    def model(request: ModelRequest) -> ModelReply:
        offered.append([t.name for t in request.tools])
        return reply("ok")

    config = AgentConfig(key="main", owner_ids=[OWNER])
    async with System.open(tmp_path / "c.db", clock=ManualClock(T0), policy=FAST) as system:
        await system.register_agent(config, ScriptedModel(model))
        await send(system, "hi", user=OWNER)
        await send(system, "hi", user="mallory")
    assert "cron" in offered[0] and "cron" not in offered[1]


# -- heartbeat ----------------------------------------------------------------------------
def heartbeat_agent(replies: list[str], heartbeat_md: str | None) -> tuple[AgentConfig, Any]:
    texts = iter(replies)
    files = {"HEARTBEAT.md": heartbeat_md} if heartbeat_md is not None else {}
    config = AgentConfig(
        key="main",
        context_files=files,
        heartbeat=HeartbeatConfig(every_s=1800, session_key="hb", channel="slack", chat_id="ops"),
    )
    return config, ScriptedModel(lambda request: reply(next(texts)))


def ended(seen: list[RecordedEvent]) -> list[Any]:
    return [e.event for e in seen if e.type == "routine.run_ended"]


async def test_a_heartbeat_that_says_nothing_needs_doing_stays_out_of_the_outbox(
    tmp_path: Path,
) -> None:
    clock = ManualClock(T0)
    config, model = heartbeat_agent(
        ["HEARTBEAT_OK", "The nightly backup failed: look at it."], "Check the backups."
    )
    async with System.open(tmp_path / "h.db", clock=clock, policy=FAST) as system:
        await system.register_agent(config, model)
        stream = routines_stream("main")
        clock.advance(1800)
        await wait_for_events(system, stream, count("routine.run_ended"))
        clock.advance(1800)
        seen = await wait_for_events(system, stream, count("routine.run_ended", 2))
        assert [(e.outcome, e.quiet) for e in ended(seen)] == [
            ("completed", True),
            ("completed", False),
        ]
        started = [e.event for e in seen if e.type == "routine.run_started"]
        assert started[0].message.startswith("Check the backups.")
        assert "reply HEARTBEAT_OK" in started[0].message
        messages = [m async for m in system.outbox(follow=False)]
        assert [(m.kind, m.channel, m.chat_id, m.text) for m in messages] == [
            ("heartbeat", "slack", "ops", "The nightly backup failed: look at it.")
        ]
        # Both replies are in the session: the quiet one is recorded, just not sent.
        session = await system.store.read_stream("session/main/hb")
        replies = [e.event.reply for e in session if e.type == "session.turn_completed"]
        assert replies == ["HEARTBEAT_OK", "The nightly backup failed: look at it."]


async def test_a_heartbeat_without_its_file_is_skipped_and_reconfiguring_removes_it(
    tmp_path: Path,
) -> None:
    clock = ManualClock(T0)
    config, model = heartbeat_agent([], heartbeat_md=None)
    async with System.open(tmp_path / "h.db", clock=clock, policy=FAST) as system:
        await system.register_agent(config, model)
        stream = routines_stream("main")
        clock.advance(1800)
        seen = await wait_for_events(system, stream, count("routine.run_skipped"))
        skipped = [e.event for e in seen if e.type == "routine.run_skipped"]
        assert [(s.name, s.reason) for s in skipped] == [("heartbeat", "empty")]
        await system.register_agent(msgspec.structs.replace(config, heartbeat=None), model)
        seen = await wait_for_events(system, stream, count("routine.removed"))
        assert await system.routines.list("main") == []
        assert "timer.cancelled" in [e.type for e in seen]


@pytest.mark.parametrize(
    ("text", "quiet"),
    [
        ("HEARTBEAT_OK", True),
        ("HEARTBEAT_OK. All calm.", True),
        ("Nothing new. HEARTBEAT_OK", True),
        ("The queue is stuck. " * 30 + "HEARTBEAT_OK", False),
        ("The queue is stuck.", False),
        ("I checked: HEARTBEAT_OK is what I would say, but no.", False),
    ],
)
def test_which_heartbeat_replies_are_quiet(text: str, quiet: bool) -> None:
    from clawlog.actors.agents.routine_config import quiet_reply

    assert quiet_reply(HeartbeatConfig(), text) is quiet


def test_a_heartbeat_config_refuses_what_cannot_work() -> None:
    with pytest.raises(ValueError, match="at least 60"):
        HeartbeatConfig(every_s=5)
    with pytest.raises(ValueError, match="ok_token"):
        HeartbeatConfig(ok_token=" ")


async def test_add_refuses_a_job_id_in_use_and_a_session_key_that_is_none(tmp_path: Path) -> None:
    said: list[str] = []

    def record(request: ModelRequest) -> ModelReply:
        said.extend(tool_results(request)[-1:])
        return reply("ok")

    hourly = {"kind": "every", "every": "1h"}
    config, model = cron_agent(
        [
            call("cron", action="add", job_id="j", message="x", schedule=hourly),
            record,
            call("cron", action="add", job_id="j", message="y", schedule=hourly),
            record,
            call("cron", action="add", message="z", schedule=hourly, session_key="a/b"),
            record,
        ]
    )
    async with System.open(tmp_path / "c.db", clock=ManualClock(T0), policy=FAST) as system:
        await system.register_agent(config, model)
        for _ in range(3):
            await send(system, "schedule")
        assert said[0].startswith("added job j")
        assert "'j' exists; update it, or choose another name" in said[1]
        assert "invalid session key 'a/b'" in said[2]
