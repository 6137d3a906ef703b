"""Re-running a recorded session: served replies and results, the first divergence."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import msgspec
import pytest

from clawlog.actors.agents import AgentConfig
from clawlog.actors.errors import NothingRecorded, ReplayError
from clawlog.actors.providers import Model, ScriptedModel, calls, reply
from clawlog.actors.replay import deny_tools, rerun, stream_state_as_of
from clawlog.actors.replay.serving import ReplayModel
from clawlog.events import EventStore, open_store
from clawlog.tools import FunctionTool
from tests.replay.support import (
    SESSION,
    Deploys,
    first_reply,
    log_rows,
    position_of,
    record_looping_session,
    record_session,
)


def max_iterations(limit: int) -> Callable[[AgentConfig], AgentConfig]:
    return lambda config: msgspec.structs.replace(config, max_iterations=limit)


@pytest.fixture
async def recorded(tmp_path: Path) -> AsyncIterator[tuple[EventStore, Deploys]]:
    deploys = Deploys()
    await record_session(tmp_path / "clawlog.db", deploys)
    assert deploys.runs == ["prod"]
    async with await open_store(tmp_path / "clawlog.db") as store:
        yield store, deploys


async def test_an_unchanged_rerun_matches_the_recording_and_runs_no_tool(
    recorded: tuple[EventStore, Deploys],
) -> None:
    store, deploys = recorded
    report = await rerun(store, "main", "u1", tools=[deploys.tool])
    assert report.matched and report.divergence is None
    assert (report.turns, report.model_replies, report.tool_calls) == (2, 4, 3)
    assert report.context == [] and not report.config_changed
    assert deploys.runs == ["prod"]  # the approved deploy was served from the log
    assert isinstance(ReplayModel([], name="recorded", provider="scripted"), Model)


async def test_a_rerun_never_writes_the_source_log(recorded: tuple[EventStore, Deploys]) -> None:
    store, deploys = recorded
    before = await log_rows(store)
    await rerun(store, "main", "u1", tools=[deploys.tool])
    await rerun(store, "main", "u1", tools=[deploys.tool], config=deny_tools("echo"))
    assert await log_rows(store) == before
    assert await store.head_position() == before[-1][0]


@pytest.mark.parametrize(("tool", "call_id"), [("deploy", "c-deploy"), ("echo", "c-echo")])
async def test_denying_a_tool_the_session_used_diverges_at_that_call(
    recorded: tuple[EventStore, Deploys], tool: str, call_id: str
) -> None:
    store, deploys = recorded
    report = await rerun(store, "main", "u1", tools=[deploys.tool], config=deny_tools(tool))
    divergence = report.divergence
    assert not report.matched and divergence is not None and report.config_changed
    assert (divergence.kind, divergence.turn, divergence.iteration) == ("refusal", 1, 1)
    assert (divergence.call_id, divergence.tool) == (call_id, tool)
    assert divergence.position == await position_of(store, "tool.call_completed", call_id)
    assert divergence.recorded.startswith(f"{tool} ran")
    assert divergence.now.startswith(f"{tool} refused at policy")
    assert [n.what for n in report.context] == ["tools", "messages"]
    assert report.context[0].now == f"-{tool}"


async def test_a_tool_that_no_longer_asks_for_approval_diverges_at_its_call(
    recorded: tuple[EventStore, Deploys],
) -> None:
    store, deploys = recorded
    unguarded = FunctionTool("deploy", deploys.tool.execute, parameters=deploys.tool.parameters)
    report = await rerun(store, "main", "u1", tools=[unguarded])
    divergence = report.divergence
    assert divergence is not None
    assert (divergence.kind, divergence.call_id) == ("outcome", "c-deploy")
    assert divergence.recorded == "deploy ran (approval asked, answered allow-once)"
    assert divergence.now == "deploy ran"
    assert deploys.runs == ["prod"]


async def test_a_config_given_whole_replaces_the_recorded_one(
    recorded: tuple[EventStore, Deploys],
) -> None:
    store, deploys = recorded
    config = AgentConfig(key="main", tools_allow=["echo"])
    report = await rerun(store, "main", "u1", tools=[deploys.tool], config=config)
    assert report.divergence is not None
    assert (report.divergence.kind, report.divergence.call_id) == ("refusal", "c-deploy")


@pytest.mark.parametrize(
    ("script", "kind", "iteration"),
    [
        ([first_reply(message="HELLO")], "arguments", 1),
        ([first_reply(target="staging")], "arguments", 1),
        ([calls([("echo", {"message": "hi"})], ids=["c-echo"])], "tool_call", 1),
        ([reply("no tools today")], "tool_call", 1),
        ([first_reply(), reply("something else")], "reply", 2),
    ],
)
async def test_another_model_diverges_at_its_first_other_reply(
    recorded: tuple[EventStore, Deploys], script: list[object], kind: str, iteration: int
) -> None:
    store, deploys = recorded
    model = ScriptedModel(script, name="other")  # type: ignore[arg-type]
    report = await rerun(store, "main", "u1", tools=[deploys.tool], model=model)
    divergence = report.divergence
    assert divergence is not None and report.model == "other"
    assert (divergence.kind, divergence.turn, divergence.iteration) == (kind, 1, iteration)
    replied = [e for e in await store.read_stream(SESSION) if e.type == "session.model_replied"]
    assert divergence.position == replied[iteration - 1].position
    assert deploys.runs == ["prod"]


async def test_a_lower_iteration_limit_misses_the_recorded_steps(
    recorded: tuple[EventStore, Deploys],
) -> None:
    store, deploys = recorded
    report = await rerun(store, "main", "u1", tools=[deploys.tool], config=max_iterations(1))
    divergence = report.divergence
    assert divergence is not None
    assert (divergence.kind, divergence.iteration) == ("missing_step", 2)
    assert divergence.now == "the turn ended: failed (iteration_limit)"
    assert (report.model_replies, report.tool_calls) == (1, 2)


async def test_a_higher_iteration_limit_asks_for_a_reply_never_recorded(tmp_path: Path) -> None:
    await record_looping_session(tmp_path / "loop.db")
    async with await open_store(tmp_path / "loop.db") as store:
        assert (await rerun(store, "loop", "u1")).matched
        report = await rerun(store, "loop", "u1", config=max_iterations(3))
    divergence = report.divergence
    assert divergence is not None and (divergence.kind, divergence.iteration) == ("extra_step", 2)
    assert divergence.recorded == "the turn ended: failed (iteration_limit)"
    assert "never recorded" in divergence.now


async def test_a_rerun_from_a_later_turn_starts_from_the_recorded_conversation(
    recorded: tuple[EventStore, Deploys],
) -> None:
    store, deploys = recorded
    report = await rerun(store, "main", "u1", tools=[deploys.tool], first_turn=2)
    assert report.matched and report.turns == 1 and report.context == []
    only_first = await rerun(store, "main", "u1", tools=[deploys.tool], last_turn=1)
    assert only_first.matched and (only_first.turns, only_first.model_replies) == (1, 2)


async def test_a_tool_nobody_passed_gets_a_stand_in_and_still_matches(
    recorded: tuple[EventStore, Deploys],
) -> None:
    store, deploys = recorded
    report = await rerun(store, "main", "u1")
    assert report.matched and report.context == []
    assert deploys.runs == ["prod"]


async def test_nothing_to_rerun_is_a_clear_error(recorded: tuple[EventStore, Deploys]) -> None:
    store, _ = recorded
    with pytest.raises(NothingRecorded, match="session/main/nobody"):
        await rerun(store, "main", "nobody")
    with pytest.raises(NothingRecorded, match="2 turns"):
        await rerun(store, "main", "u1", first_turn=3)


async def test_state_as_of_folds_the_session_and_the_agent_config(
    recorded: tuple[EventStore, Deploys],
) -> None:
    store, _ = recorded
    first_end = next(
        e.position for e in await store.read_stream(SESSION) if e.type == "session.turn_completed"
    )
    session = await stream_state_as_of(store, SESSION, position=first_end)
    assert session.position == first_end and session.state.turns_completed == 1
    assert [m.role for m in session.state.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    now = await stream_state_as_of(store, SESSION)
    assert now.state.turns_completed == 2 and now.state.last_reply == "bye"
    agent = await stream_state_as_of(store, "agent/main")
    assert agent.state.config["key"] == "main" and agent.state.registrations == 1
    with pytest.raises(ReplayError, match="no state is known"):
        await stream_state_as_of(store, "system/guardian")


async def test_a_turn_whose_stream_was_cut_reruns_to_a_match(tmp_path: Path) -> None:
    """A recorded ``stream_cut`` failure is served back as the same kind, not a plain
    ModelError, so the re-run of a session whose stream was cut still matches."""
    from clawlog.actors import System, TurnFailedError
    from clawlog.actors.providers import stream_cut

    path = tmp_path / "cut.db"
    key = "u-cut"
    async with System.open(path) as system:
        model = ScriptedModel([stream_cut("half a rep"), reply("whole reply")])
        await system.register_agent(AgentConfig(key="main"), model)
        with pytest.raises(TurnFailedError, match="stream_cut"):
            async with system.stream("main", key, "first") as turn:
                async for _ in turn:
                    pass
        assert await system.send("main", key, "second") == "whole reply"
    async with await open_store(path) as store:
        kinds = [
            e.event.kind
            for e in await store.read_stream(f"session/main/{key}")
            if e.type == "session.model_failed"
        ]
        assert kinds == ["stream_cut"]
        report = await rerun(store, "main", key)
    assert report.matched, report.divergence
