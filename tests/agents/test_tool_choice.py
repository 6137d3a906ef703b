"""``AgentConfig.tool_choice``: checked when the agent is registered, put on the model
requests its sessions build (and recorded on ``session.model_requested``), reset after the
turn's first tool call unless told otherwise, and sent in each provider's form."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from clawlog.actors import InvalidArgument, System, TurnFailedError
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import (
    AnthropicModel,
    ModelReply,
    ModelRequest,
    OpenAIChatModel,
    ScriptedModel,
    call,
    reply,
)
from clawlog.events.domain.session import ModelRequested
from tests.providers.test_providers import FAST, KEY
from tests.providers.test_streaming import (
    ANTHROPIC_END,
    ANTHROPIC_START,
    anthropic_event,
    openai_chunk,
)
from tests.providers.test_streaming import _block_delta as anthropic_delta
from tests.providers.test_streaming import _block_start as anthropic_start
from tests.providers.wire_server import Canned, WireServer


def timekeeper(request: ModelRequest) -> ModelReply:
    """Asks for the time, then answers."""
    if request.messages[-1].role == "user":
        return call("time", call_id=f"c{len(request.messages)}")
    return reply("it is late")


async def recorded_choices(system: System, session_key: str = "u") -> list[str | None]:
    events = await system.store.read_stream(f"session/main/{session_key}")
    return [e.event.tool_choice for e in events if isinstance(e.event, ModelRequested)]


def test_the_config_refuses_a_tool_choice_that_is_no_name() -> None:
    with pytest.raises(TypeError, match="tool_choice must be a str or None"):
        AgentConfig(key="main", tool_choice=["time"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not an empty string"):
        AgentConfig(key="main", tool_choice=" ")


async def test_registering_refuses_a_tool_the_agent_does_not_have(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        with pytest.raises(InvalidArgument) as refused:
            await system.register_agent(
                AgentConfig(key="main", tool_choice="weather"), ScriptedModel([])
            )
        assert refused.value.parameter == "config"
        assert "'weather'" in str(refused.value) and "time" in str(refused.value)
        # A tool its policy denies is one it does not have.
        with pytest.raises(InvalidArgument, match="'time' is none of"):
            await system.register_agent(
                AgentConfig(key="main", tool_choice="time", tools_deny=["time"]),
                ScriptedModel([]),
            )
        with pytest.raises(InvalidArgument, match="'required' but agent 'main' has no tools"):
            await system.register_agent(
                AgentConfig(key="main", tool_choice="required", tools_allow=[]),
                ScriptedModel([]),
            )
        assert "main" not in system.registered_agents()  # nothing was started or recorded
        for choice in ("auto", "none", "required", "time"):
            await system.register_agent(
                AgentConfig(key="main", tool_choice=choice), ScriptedModel([])
            )


async def test_the_first_request_of_each_turn_carries_it_and_a_tool_call_resets_it(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(timekeeper)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main", tool_choice="time"), model)
        assert await system.send("main", "u", "what time is it?") == "it is late"
        assert await system.send("main", "u", "and now?") == "it is late"
        recorded = await recorded_choices(system)
    assert [r.tool_choice for r in model.requests] == ["time", None, "time", None]
    assert recorded == ["time", None, "time", None]


def obedient(request: ModelRequest) -> ModelReply:
    """Calls a tool when made to, never when told not to, else as :func:`timekeeper`."""
    if request.tool_choice in ("required", "time"):
        return call("time", call_id=f"c{len(request.messages)}")
    if request.tool_choice == "none":
        return reply("no tools asked")
    return timekeeper(request)


async def test_without_the_reset_every_request_carries_it(tmp_path: Path) -> None:
    model = ScriptedModel(obedient)
    async with System.open(tmp_path / "log.db") as system:
        config = AgentConfig(key="main", tool_choice="none", reset_tool_choice=False)
        await system.register_agent(config, model)
        assert await system.send("main", "u", "what time is it?") == "no tools asked"
        forced = msgspec.structs.replace(config, tool_choice="required", max_iterations=3)
        await system.register_agent(forced, model)
        # Made to call a tool on every request, the model never answers: why the reset is
        # the default.
        with pytest.raises(TurnFailedError, match="iteration"):
            await system.send("main", "v", "and now?")
        recorded = await recorded_choices(system, "u") + await recorded_choices(system, "v")
    assert [r.tool_choice for r in model.requests] == ["none", *["required"] * 3]
    assert recorded == ["none", *["required"] * 3]


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as running:
        yield running


async def test_each_provider_gets_it_in_its_own_form_streamed_or_not(
    tmp_path: Path, server: WireServer
) -> None:
    openai = OpenAIChatModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST)
    anthropic = AnthropicModel(model="m-1", api_key=KEY, base_url=server.url, retry=FAST)
    openai_done = [openai_chunk({"content": "ok"}, finish="stop"), "data: [DONE]\n\n"]
    anthropic_done = [
        ANTHROPIC_START,
        anthropic_start(0, {"type": "text", "text": ""}),
        anthropic_delta(0, {"type": "text_delta", "text": "ok"}),
        anthropic_event("content_block_stop", index=0),
        *ANTHROPIC_END,
    ]
    openai_json = {
        "model": "m-1",
        "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    }
    anthropic_json = {"model": "m-1", "content": [{"type": "text", "text": "ok"}]}
    server.responses.extend(
        [
            Canned(events=openai_done),
            Canned(200, openai_json),
            Canned(events=anthropic_done),
            Canned(200, anthropic_json),
        ]
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="oa", tool_choice="time"), openai)
        await system.register_agent(AgentConfig(key="an", tool_choice="required"), anthropic)
        for agent in ("oa", "an"):
            async with system.stream(agent, "u", "time?") as turn:
                [delta async for delta in turn]
            assert turn.reply == "ok"
            assert await system.send(agent, "u", "time?") == "ok"
        await openai.aclose()
        await anthropic.aclose()
    bodies = [request["body"] for request in server.requests]
    assert [body.get("stream", False) for body in bodies] == [True, False, True, False]
    assert [body["tool_choice"] for body in bodies] == [
        {"type": "function", "function": {"name": "time"}},
        {"type": "function", "function": {"name": "time"}},
        {"type": "any"},
        {"type": "any"},
    ]
