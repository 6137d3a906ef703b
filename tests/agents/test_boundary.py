"""The System's boundary (issue 17): wrong arguments are refused at once with a typed error
naming the parameter, nothing unreadable reaches the log, sizes are bounded, a closed
System says so, and an unknown agent is named with a hint."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from clawlog.actors import (
    ActorDead,
    ArgumentTypeError,
    InvalidArgument,
    Limits,
    MessageTooLarge,
    System,
    SystemClosed,
    UnknownAgent,
)
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.events import ANY, InvalidEvent
from clawlog.events.domain.session import TurnStarted
from clawlog.tools import FunctionTool

#: "At once": far below any turn timeout, far above a slow machine's scheduling delay.
AT_ONCE_S = 10.0


def echo_model() -> ScriptedModel:
    return ScriptedModel(lambda request: reply(f"re: {request.messages[-1].content[:20]}"))


async def readable(system: System) -> int:
    """Read the whole log (raises CorruptEvent if any row cannot be decoded)."""
    position, count = 1, 0
    while page := await system.store.read_all(position, limit=1000):
        count += len(page)
        position = page[-1].position + 1
    return count


BAD_SENDS: list[tuple[str, dict[str, Any], type[InvalidArgument]]] = [
    ("user", {"user": 5}, ArgumentTypeError),
    ("channel", {"channel": 5}, ArgumentTypeError),
    ("chat_id", {"chat_id": ["c"]}, ArgumentTypeError),
    ("sender", {"sender": None}, ArgumentTypeError),
    ("sender", {"sender": ""}, InvalidArgument),
    ("user", {"user": "x" * 300}, InvalidArgument),
    ("user", {"user": "al\nice"}, InvalidArgument),
    ("channel", {"channel": "\ud800"}, InvalidArgument),
    ("timeout", {"timeout": 0}, InvalidArgument),
    ("timeout", {"timeout": True}, ArgumentTypeError),
    ("text", {"text": 5}, ArgumentTypeError),
    ("text", {"text": "  "}, InvalidArgument),
    ("text", {"text": "bad \udcff bytes"}, InvalidArgument),
    ("session_key", {"session_key": 5}, ArgumentTypeError),
    ("session_key", {"session_key": "a b"}, InvalidArgument),
    ("session_key", {"session_key": "ünï"}, InvalidArgument),
    ("agent", {"agent": 5}, ArgumentTypeError),
    ("agent", {"agent": "Not A Key"}, InvalidArgument),
]


@pytest.mark.parametrize(("parameter", "bad", "error"), BAD_SENDS, ids=lambda v: repr(v)[:30])
async def test_a_wrong_send_argument_is_refused_at_once_naming_it(
    tmp_path: Path, parameter: str, bad: dict[str, Any], error: type[InvalidArgument]
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        head = await system.store.head_position()
        arguments: dict[str, Any] = {"agent": "main", "session_key": "s1", "text": "hi"} | bad
        async with asyncio.timeout(AT_ONCE_S):
            with pytest.raises(error) as refused:
                await system.send(**arguments)
        assert refused.value.parameter == parameter
        assert isinstance(refused.value, ValueError)
        assert await system.store.head_position() == head  # nothing appended
        assert await system.send("main", "s1", "hello") == "re: hello"


async def test_send_with_user_5_leaves_the_log_readable_across_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        with pytest.raises(ArgumentTypeError, match="user: must be a str, not int"):
            await system.send("main", "s1", "hi", user=5)  # type: ignore[arg-type]
        # Nor can anything else write what the log could not read back.
        with pytest.raises(InvalidEvent) as refused:
            await system.store.append(
                "session/main/s1",
                [TurnStarted(turn_id="t1", text="hi", user=5)],  # type: ignore[arg-type]
                expected_version=ANY,
            )
        assert (refused.value.event_type, refused.value.field) == ("session.turn_started", "user")
        assert await system.send("main", "s1", "first") == "re: first"
        before = await readable(system)
    script = textwrap.dedent(
        f"""
        import asyncio
        from clawlog.actors import System
        from clawlog.actors.agents import AgentConfig
        from clawlog.actors.providers import ScriptedModel, reply

        async def main():
            async with System.open({str(path)!r}) as system:
                model = ScriptedModel(lambda r: reply("again: " + r.messages[-1].content))
                await system.register_agent(AgentConfig(key="main"), model)
                print(await system.send("main", "s1", "second"))
                page = await system.store.read_all(1, limit=100_000)
                print(len(page))

        asyncio.run(main())
        """
    )
    restarted = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert restarted.returncode == 0, restarted.stderr
    answer, count = restarted.stdout.splitlines()[-2:]
    assert answer == "again: second"
    assert int(count) > before


async def test_a_5_mb_message_is_refused_at_once_and_the_session_keeps_answering(
    tmp_path: Path,
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        assert await system.send("main", "s1", "before") == "re: before"
        async with asyncio.timeout(AT_ONCE_S):
            with pytest.raises(MessageTooLarge) as refused:
                await system.send("main", "s1", "x" * 5_000_000)
            # Bytes, not characters: 200,000 two-byte characters are 400,000 bytes.
            with pytest.raises(MessageTooLarge, match="400000 bytes"):
                await system.send("main", "s1", "é" * 200_000)
        assert (refused.value.parameter, refused.value.limit) == ("text", 256 * 1024)
        assert await system.send("main", "s1", "after") == "re: after"
        assert (await system.session_status("main", "s1")).busy is False
        assert await readable(system) > 0


async def test_the_limits_are_configurable_and_must_fit_the_store(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db", limits=Limits(max_message_bytes=10)) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        assert system.limits.max_message_bytes == 10
        assert await system.send("main", "s1", "0123456789") == "re: 0123456789"
        with pytest.raises(MessageTooLarge, match="11 bytes"):
            await system.send("main", "s1", "0123456789a")
    with pytest.raises(InvalidArgument, match="does not fit the store's event limit"):
        System.open(tmp_path / "log.db", limits=Limits(max_message_bytes=2 * 1024 * 1024))
    # The default message limit shrinks to fit a store with smaller events.
    async with System.open(tmp_path / "small.db", max_payload_bytes=64 * 1024) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        limit = system.limits.max_message_bytes
        assert 32 * 1024 < limit < 64 * 1024
        with pytest.raises(MessageTooLarge):
            await system.send("main", "s1", "x" * (limit + 1))
        assert await system.send("main", "s1", "x" * limit, user="u" * 256) == f"re: {'x' * 20}"
    with pytest.raises(InvalidArgument, match=r"Limits\.max_name_chars"):
        Limits(max_name_chars=0)
    with pytest.raises(ArgumentTypeError, match="limits"):
        System.open(tmp_path / "log.db", limits={"max_message_bytes": 10})  # type: ignore[arg-type]


async def test_register_agent_with_a_model_name_raises_at_once(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        config = AgentConfig(key="main")
        with pytest.raises(ArgumentTypeError, match="OpenAIChatModel") as refused:
            await system.register_agent(config, "gpt-4o")  # type: ignore[arg-type]
        assert refused.value.parameter == "model"
        assert isinstance(refused.value, TypeError)
        with pytest.raises(TypeError, match="missing or wrong: complete, name, provider"):
            await system.register_agent(config, object())  # type: ignore[arg-type]
        with pytest.raises(ArgumentTypeError, match=r"config: must be an actors\.agents"):
            await system.register_agent({"key": "main"}, echo_model())  # type: ignore[arg-type]
        assert system.registered_agents() == []
        with pytest.raises(UnknownAgent, match="no agent is registered"):
            await system.send("main", "s1", "hi")


async def test_every_public_call_on_a_closed_system_raises_system_closed(tmp_path: Path) -> None:
    system = await System.open(tmp_path / "log.db")
    await system.register_agent(AgentConfig(key="main"), echo_model())
    await system.register_agent(AgentConfig(key="dev"), echo_model())
    await system.close()
    calls = {
        "send": system.send("main", "s1", "hi"),
        "cancel": system.cancel("main", "s1"),
        "approve": system.approve("main", "s1", "call-1", "deny"),
        "session_status": system.session_status("main", "s1"),
        "register_agent": system.register_agent(AgentConfig(key="main"), echo_model()),
        "create_team": system.create_team("t", name="T", lead="main", members=[("dev", "dev")]),
        "team_board": system.team_board("t"),
        "link_agents": system.link_agents("main", "dev"),
        "routed_agent": system.routed_agent("tg", "1"),
    }
    for name, pending in calls.items():
        try:
            await pending
        except SystemClosed:
            continue
        except Exception as exc:
            raise AssertionError(f"{name} raised {exc!r}, not SystemClosed") from exc
        raise AssertionError(f"{name} did not raise")


async def test_an_unknown_agent_raises_unknown_agent_naming_the_registered_ones(
    tmp_path: Path,
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        await system.register_agent(AgentConfig(key="dev"), echo_model())
        for pending in (
            system.send("ghost", "s1", "hi"),
            system.cancel("ghost", "s1"),
            system.approve("ghost", "s1", "call-1", "deny"),
            system.session_status("ghost", "s1"),
        ):
            with pytest.raises(UnknownAgent, match="registered agents: dev, main") as unknown:
                await pending
            assert isinstance(unknown.value, ActorDead)  # what it was before it had a name
            assert (unknown.value.agent, unknown.value.registered) == ("ghost", ["dev", "main"])
        with pytest.raises(UnknownAgent, match="members: unknown agent 'qa'"):
            await system.create_team("t", name="T", lead="main", members=[("qa", "tester")])
        with pytest.raises(UnknownAgent, match="lead: unknown agent 'boss'"):
            await system.create_team("t", name="T", lead="boss", members=[("dev", "dev")])
        with pytest.raises(UnknownAgent, match="target: unknown agent 'ghost'"):
            await system.link_agents("main", "ghost")
        assert system.actor("team/t") is None


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda s: s.approve("main", "s1", "call-1", "maybe"), "decision"),
        (lambda s: s.approve("main", "s1", "", "deny"), "call_id"),
        (lambda s: s.approve("main", "s1", "call-1", "deny", by=7), "by"),
        (lambda s: s.cancel("main", "a/b"), "session_key"),
        (lambda s: s.create_team("T!", name="T", lead="main", members=[]), "team_id"),
        (lambda s: s.create_team("t", name="", lead="main", members=[]), "name"),
        (lambda s: s.create_team("t", name="T", lead="main", members="dev"), "members"),
        (lambda s: s.create_team("t", name="T", lead="main", members=[("dev",)]), "members"),
        (lambda s: s.create_team("t", name="T", lead="main", members=[("main", "x")]), "members"),
        (lambda s: s.link_agents("main", "main"), "target"),
        (lambda s: s.link_agents("main", "dev", max_concurrent=0), "max_concurrent"),
        (lambda s: s.link_agents("main", "dev", user_allow="alice"), "user_allow"),
        (lambda s: s.link_agents("main", "dev", bidirectional="yes"), "bidirectional"),
        (lambda s: s.register_agent(AgentConfig(key="x"), echo_model(), tools="echo"), "tools"),
    ],
)
async def test_other_public_calls_name_the_wrong_parameter(
    tmp_path: Path, call: Any, parameter: str
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        await system.register_agent(AgentConfig(key="dev"), echo_model())
        head = await system.store.head_position()
        with pytest.raises(InvalidArgument) as refused:
            await call(system)
        assert refused.value.parameter == parameter
        assert await system.store.head_position() == head


def huge_output_tool(text: str) -> FunctionTool:
    async def produce(ctx: object, args: dict[str, object]) -> str:
        return text

    return FunctionTool(
        "produce", produce, description="prints a lot", parameters={"type": "object"}
    )


def tool_then_reply(request: ModelRequest) -> ModelReply:
    return call("produce") if request.messages[-1].role == "user" else reply("done")


@pytest.mark.parametrize(
    "output",
    ["😀" * 5_000_000, "\udcff" * 300_000 + "tail"],
    ids=["20-MB-of-emoji", "undecodable-bytes"],
)
async def test_a_huge_tool_result_is_cut_and_recorded_never_failing_the_append(
    tmp_path: Path, output: str
) -> None:
    tool = huge_output_tool(output)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(
            AgentConfig(key="main"), ScriptedModel(tool_then_reply), tools=[tool]
        )
        assert await system.send("main", "s1", "go") == "done"
        events = await system.store.read_stream("session/main/s1")
        [completed] = [e.event for e in events if e.type == "tool.call_completed"]
        assert completed.truncated  # type: ignore[union-attr]
        assert "[output truncated" in completed.for_llm  # type: ignore[union-attr]
        assert len(completed.for_llm) <= 100_000 + 200  # type: ignore[union-attr]
        assert await readable(system) > 0
